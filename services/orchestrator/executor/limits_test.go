package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
)

const single = `name: single
agents: agents.yaml
tasks:
  - id: slow
    agent: mock
    timeout: 100ms
    outputs: [s.md]
  - id: after
    agent: mock
    depends_on: [slow]
`

// A task that hangs times out, and fails with that reason.
func TestHangingTaskTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, single, nil)
	m := mock.New(mock.Config{Default: mock.Outcome{Delay: time.Hour}})
	s := e.run(t, e.executor(t, router(m), nil), "run-hang")
	slow := s.Tasks["slow"]
	if slow.Status != engine.TaskFailed || slow.Error.Kind != engine.ErrorTimeout || !strings.Contains(slow.Error.Message, "timed out after 100ms") {
		t.Fatalf("slow = %+v", slow)
	}
	if len(m.CallsFor("after")) != 0 || s.Status != engine.RunFailed {
		t.Fatalf("run %s; after ran %d times", s.Status, len(m.CallsFor("after")))
	}
}

// A dispatcher that ignores its context is abandoned after the grace.
func TestDispatcherIgnoringContextIsAbandoned(t *testing.T) {
	t.Parallel()
	e := newEnv(t, single, nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // lets the abandoned goroutine end before goleak looks
	m := mock.New(mock.Config{Func: func(context.Context, agent.Task, agent.Context) (agent.Result, error) {
		<-release
		return agent.Result{}, errors.New("too late")
	}})
	s := e.run(t, e.executor(t, router(m), func(c *executor.Config) { c.AbandonGrace = 50 * time.Millisecond }), "run-deaf")
	if slow := s.Tasks["slow"]; slow.Status != engine.TaskFailed || slow.Error.Kind != engine.ErrorTimeout ||
		!strings.Contains(slow.Error.Message, "dispatcher did not return") {
		t.Fatalf("slow = %+v", slow)
	}
}

// The run timeout aborts running attempts; the run fails with its reason.
func TestRunTimeoutAborts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `name: bounded
agents: agents.yaml
limits:
  timeout: 150ms
tasks:
  - id: long
    agent: mock
    retries: 3
    timeout: 1h
`, nil)
	m := mock.New(mock.Config{Default: mock.Outcome{Delay: time.Hour}})
	s := e.run(t, e.executor(t, router(m), nil), "run-bounded")
	long := s.Tasks["long"]
	if s.Status != engine.RunFailed || s.Error != "run timeout (150ms) exceeded" {
		t.Fatalf("run = %s %q", s.Status, s.Error)
	}
	if long.Status != engine.TaskFailed || long.Error.Kind != engine.ErrorAborted || long.Iterations != 1 {
		t.Fatalf("long = %+v, want FAILED (aborted) without retries", long)
	}
}

func TestMaxIterationsStopsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `name: capped
agents: agents.yaml
limits:
  max_iterations: 2
tasks:
  - id: a
    agent: mock
  - id: b
    agent: mock
    depends_on: [a]
  - id: c
    agent: mock
    depends_on: [b]
`, nil)
	m := mock.New(mock.Config{})
	s := e.run(t, e.executor(t, router(m), nil), "run-capped")
	if s.Status != engine.RunFailed || s.Error != "maximum iterations (2) reached" || len(m.CallsFor("c")) != 0 {
		t.Fatalf("run = %s %q, c calls %d", s.Status, s.Error, len(m.CallsFor("c")))
	}
}

// An agent output that is missing or malformed fails the task with the reason.
func TestBadOutputsFailTheTask(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		result agent.Result
		want   string
	}{
		{"missing", agent.Result{Outputs: map[string][]byte{"x.md": []byte("x")}}, "output data.json: missing"},
		{"malformed", agent.Result{Outputs: map[string][]byte{"x.md": []byte("x"), "data.json": []byte("{nope")}}, "output data.json: malformed JSON"},
		{"bad handover", agent.Result{Outputs: map[string][]byte{"x.md": []byte("x"), "data.json": []byte("{}")}, Handover: []byte(`"text"`)}, "handover: must be a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, `name: out
agents: agents.yaml
tasks:
  - id: produce
    agent: mock
    outputs: [x.md, data.json]
  - id: consume
    agent: mock
    depends_on: [produce]
    inputs: [data.json]
`, nil)
			m := mock.New(mock.Config{Func: func(context.Context, agent.Task, agent.Context) (agent.Result, error) {
				return tc.result, nil
			}})
			s := e.run(t, e.executor(t, router(m), nil), "run-out")
			p := s.Tasks["produce"]
			if p.Status != engine.TaskFailed || p.Error.Kind != engine.ErrorOutput || !strings.Contains(p.Error.Message, tc.want) {
				t.Fatalf("produce = %+v, want FAILED with %q", p, tc.want)
			}
			if len(m.CallsFor("consume")) != 0 {
				t.Fatal("consume ran after a bad output")
			}
		})
	}
}

// A refused approval fails the task at once, retries or not.
func TestApprovalRefusedIsNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `name: gated
agents: agents.yaml
tasks:
  - id: draft
    agent: mock
    outputs: [draft.md]
  - id: sign-off
    agent: mock
    kind: approval
    retries: 3
    depends_on: [draft]
    inputs: [draft.md]
  - id: publish
    agent: mock
    depends_on: [sign-off]
`, nil)
	m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{"sign-off": {Reject: "too long"}}})
	var events []engine.Event
	s := e.run(t, e.executor(t, router(m), func(c *executor.Config) {
		c.Observe = func(_ engine.State, evs []engine.Event) { events = append(events, evs...) }
	}), "run-gated")
	so := s.Tasks["sign-off"]
	if so.Status != engine.TaskFailed || so.Iterations != 1 || so.Error.Kind != engine.ErrorRejected || so.Error.Message != "permanent: approval refused: too long" {
		t.Fatalf("sign-off = %+v", so)
	}
	if len(m.CallsFor("publish")) != 0 {
		t.Fatal("publish ran after a refusal")
	}
	var requested bool
	for _, ev := range events {
		requested = requested || (ev.Type == engine.EventApprovalRequested && ev.TaskID == "sign-off")
	}
	if !requested {
		t.Fatal("no APPROVAL_REQUESTED event")
	}
	if c := m.CallsFor("sign-off")[0]; c.Task.Kind != agent.KindApproval || c.Context.Inputs[0].Name != "draft.md" {
		t.Fatalf("approval call = %+v", c.Task)
	}
}

// Folding the run's stored events rebuilds a byte-identical state, retries
// and hook annotations included.
func TestFoldOfStoredEventsEqualsLiveState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `name: replay
agents: agents.yaml
defaults:
  retry_backoff: 2ms
tasks:
  - id: a
    agent: mock
    outputs: [a.md]
  - id: b
    agent: mock
    retries: 2
    depends_on: [a]
    outputs: [b.md]
  - id: c
    agent: mock
    depends_on: [a]
  - id: d
    agent: mock
    depends_on: [b, c]
`, nil)
	m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{"b": {FailAttempts: 2}}})
	h := hooks.New()
	h.OnLoopExit("*", func(_ context.Context, ev hooks.Event) error {
		return ev.Annotate("done-"+ev.TaskID, map[string]any{"attempts": ev.Iterations})
	})
	live := e.run(t, e.executor(t, router(m), func(c *executor.Config) { c.Hooks = h }), "run-replay")
	if live.Status != engine.RunCompleted || live.Tasks["b"].Iterations != 3 {
		t.Fatalf("live run = %s, b %+v", live.Status, live.Tasks["b"])
	}
	events, err := e.store.Events(context.Background(), "run-replay")
	if err != nil {
		t.Fatal(err)
	}
	folded, err := engine.Fold(events)
	if err != nil {
		t.Fatalf("Fold: %v", err)
	}
	lb, _ := json.Marshal(live)
	fb, _ := json.Marshal(folded)
	if string(lb) != string(fb) {
		t.Fatalf("folded state differs from the live one:\nlive   %s\nfolded %s", lb, fb)
	}
	lh, _ := engine.Hash(live)
	fh, _ := engine.Hash(folded)
	if lh != fh || live.LogHash != folded.LogHash || int(live.Seq) != len(events) {
		t.Fatalf("hashes %s / %s, seq %d events %d", lh, fh, live.Seq, len(events))
	}
	if string(folded.Artifacts["done-b"].Value) != `{"attempts":3}` {
		t.Fatalf("annotation after fold = %s", folded.Artifacts["done-b"].Value)
	}
}

// A failed state write after an answer stops the run at once: nothing more
// is dispatched, and the error says the run stopped.
func TestPersistFailureStopsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, chainABC, map[string]string{"brief.md": "brief"})
	m := mock.New(mock.Config{})
	broken := failingStore{Store: e.store, fail: func(_ engine.State, evs []engine.Event) bool {
		return slices.ContainsFunc(evs, func(ev engine.Event) bool { return ev.Type == engine.EventAgentResponded && ev.TaskID == "a" })
	}}
	s, err := e.executor(t, router(m), func(c *executor.Config) { c.Store = broken }).
		Run(context.Background(), e.bundle, executor.RunOptions{RunID: "run-critical"})
	if !errors.Is(err, executor.ErrPersist) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("error = %v", err)
	}
	if len(m.Calls()) != 1 || s.Tasks["a"].Status != engine.TaskRunning {
		t.Fatalf("calls %v, a %s; want only a dispatched and a still RUNNING in the saved state", m.TaskIDs(), s.Tasks["a"].Status)
	}
}

func TestResumeAndRunErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, diamond, nil)
	x := e.executor(t, router(mock.New(mock.Config{})), nil)
	e.run(t, x, "run-done")
	ctx := context.Background()
	if _, err := x.Resume(ctx, e.bundle, "run-done"); !errors.Is(err, executor.ErrRunFinished) {
		t.Fatalf("resume finished run: %v", err)
	}
	if _, err := x.Resume(ctx, e.bundle, "nope"); !errors.Is(err, executor.ErrRunNotFound) {
		t.Fatalf("resume unknown run: %v", err)
	}
	if _, err := x.Run(ctx, e.bundle, executor.RunOptions{RunID: "run-done"}); !errors.Is(err, executor.ErrRunExists) {
		t.Fatalf("run with a used id: %v", err)
	}

	// A run interrupted, then resumed with a changed workflow, is refused.
	e2 := newEnv(t, chainABC, map[string]string{"brief.md": "b"})
	ctx2, cancel := context.WithCancel(ctx)
	started := make(chan struct{})
	blocking := mock.New(mock.Config{Func: func(c context.Context, _ agent.Task, _ agent.Context) (agent.Result, error) {
		close(started)
		<-c.Done()
		return agent.Result{}, c.Err()
	}})
	done := make(chan error, 1)
	go func() {
		_, err := e2.executor(t, router(blocking), nil).Run(ctx2, e2.bundle, executor.RunOptions{RunID: "run-changed"})
		done <- err
	}()
	within(t, started, "a to start")
	cancel()
	if err := <-done; !errors.Is(err, executor.ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	e3 := newEnv(t, diamond, nil)
	x2 := e2.executor(t, router(mock.New(mock.Config{})), nil)
	if _, err := x2.Resume(ctx, e3.bundle, "run-changed"); !errors.Is(err, executor.ErrPlanChanged) {
		t.Fatalf("resume with another workflow: %v", err)
	}
	s, err := x2.Resume(ctx, e2.bundle, "run-changed")
	if err != nil || s.Status != engine.RunCompleted {
		t.Fatalf("resume with the same workflow: %v %s", err, s.Status)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, diamond, nil)
	reg := prometheus.NewRegistry()
	m := mock.New(mock.Config{})
	e.run(t, e.executor(t, router(m), func(c *executor.Config) { c.Registerer = reg }), "run-metrics")
	// A second executor on the same registry reuses the collectors.
	e2 := newEnv(t, diamond, nil)
	e2.run(t, e2.executor(t, router(m), func(c *executor.Config) { c.Registerer = reg }), "run-metrics-2")
	if n, err := testutil.GatherAndCount(reg, "praetor_workflow_attempts_total"); err != nil || n != 1 {
		t.Fatalf("attempt series = %d (%v)", n, err)
	}
	want := `
# HELP praetor_workflow_runs_finished_total Workflow runs finished, by status.
# TYPE praetor_workflow_runs_finished_total counter
praetor_workflow_runs_finished_total{status="COMPLETED"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "praetor_workflow_runs_finished_total"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP praetor_workflow_attempts_in_flight Task attempts dispatched and not yet answered.
# TYPE praetor_workflow_attempts_in_flight gauge
praetor_workflow_attempts_in_flight 0
`), "praetor_workflow_attempts_in_flight"); err != nil {
		t.Fatal(err)
	}
}
