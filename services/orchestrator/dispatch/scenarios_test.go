package dispatch_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"github.com/google/uuid"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

// The Gherkin scenarios of seed 002, through the JetStream dispatcher and an
// agent-worker pool, with the state in PostgreSQL and in SQLite.

const registry = "agents:\n  mock: {kind: mock}\n"

const chainABC = `name: chain
agents: agents.yaml
tasks:
  - id: a
    agent: mock
    inputs: [brief.md]
    outputs: [a.md]
  - id: b
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [b.md]
  - id: c
    agent: mock
    depends_on: [b]
    inputs: ["b:b.md"]
    outputs: [c.md]
`

const diamond = `name: diamond
agents: agents.yaml
tasks:
  - id: a
    agent: mock
    outputs: [a.md]
  - id: b
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [b.md]
  - id: c
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [c.md]
  - id: d
    agent: mock
    depends_on: [b, c]
    inputs: [b.md, c.md]
    outputs: [d.md]
`

func router(rt agent.Runtime) *agent.Router {
	return agent.NewRouter(map[string]agent.Runtime{"mock": rt})
}

func answer(t agent.Task) agent.Result {
	r := agent.Result{Outputs: map[string][]byte{}, Handover: []byte(`{"from":"` + t.TaskID + `"}`)}
	for _, o := range t.Outputs {
		r.Outputs[o] = []byte("content of " + o)
	}
	if t.Kind == agent.KindApproval {
		r.Approval = &agent.Approval{Approved: true}
	}
	return r
}

// Scenario: Full pipeline execution — A → B → C in order, each with its
// inputs, all COMPLETED; and replay: the events on the stream fold to the
// live state's hash.
func TestScenarioFullPipeline(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{
			"a": {Outputs: map[string]string{"a.md": "A SAYS HELLO"}},
			"b": {Outputs: map[string]string{"b.md": "B BUILT ON A"}},
		}})
		c.worker(router(m), []string{"mock"}, nil)
		o := c.orchestrator()
		b := orchtest.Bundle(t, chainABC, registry, map[string]string{"brief.md": "BRIEF TEXT"})
		s, err := o.executor(t, nil).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-abc"})
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
		if got := strings.Join(m.TaskIDs(), ","); got != "a,b,c" {
			t.Fatalf("order %s, want a,b,c", got)
		}
		want := []string{"BRIEF TEXT", "A SAYS HELLO", "B BUILT ON A"}
		for i, call := range m.Calls() {
			if len(call.Context.Inputs) != 1 || call.Context.Inputs[0].Content != want[i] {
				t.Errorf("task %s inputs = %+v, want %q", call.Task.TaskID, call.Context.Inputs, want[i])
			}
		}
		for _, id := range []string{"a", "b", "c"} {
			if ts := s.Tasks[id]; ts.Status != engine.TaskCompleted || ts.Iterations != 1 {
				t.Errorf("task %s = %+v", id, ts)
			}
		}
		art := s.Artifacts["c:c.md"]
		if content, err := o.store.Get(orchtest.Ctx(t), engine.OutputRef{Path: art.Path, SHA256: art.SHA256}); err != nil || len(content) == 0 {
			t.Fatalf("c's output in the store: %q %v", content, err)
		}
		if o.dispatches("published") != 3 {
			t.Fatalf("published %d dispatches, want 3", o.dispatches("published"))
		}

		// Replay: the workflow events reached the stream through the outbox,
		// and folding them gives the live hash.
		c.drained()
		folded, evs, err := runevents.Rebuild(orchtest.Ctx(t), o.bus, tenant, "run-abc")
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(evs)) != s.Seq {
			t.Fatalf("%d events on the stream, the run is at %d", len(evs), s.Seq)
		}
		if got, want := mustHash(t, folded), mustHash(t, s); got != want {
			t.Fatalf("replayed hash %s, live %s", got, want)
		}
	})
}

func mustHash(t *testing.T, s engine.State) string {
	t.Helper()
	h, err := engine.Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Scenario: State persistence between runs — the orchestrator stops when
// its write of A's answer and B's dispatch (one change) fails, so B never
// goes out; a fresh one resumes from the store, finds A's answer recorded
// by the dispatcher (A is not run again), and runs B and C.
func TestScenarioResumeSkipsCompleted(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{})
		c.worker(router(m), []string{"mock"}, nil)
		b := orchtest.Bundle(t, chainABC, registry, map[string]string{"brief.md": "brief"})

		o1 := c.orchestrator()
		crashing := failingStore{Store: o1.store, fail: func(evs []engine.Event) bool {
			return slices.ContainsFunc(evs, func(ev engine.Event) bool { return ev.Type == engine.EventWorkRequested && ev.TaskID == "b" })
		}}
		_, err := o1.executor(t, func(cfg *executor.Config) { cfg.Store = crashing }).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-resume"})
		if !errors.Is(err, executor.ErrPersist) {
			t.Fatalf("first run = %v, want ErrPersist", err)
		}
		if got := m.TaskIDs(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Fatalf("first run dispatched %v", got)
		}

		o2 := c.orchestrator()
		s, err := o2.executor(t, nil).Resume(orchtest.Ctx(t), b, "run-resume")
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("resume: %v %s", err, s.Status)
		}
		if got := strings.Join(m.TaskIDs(), ","); got != "a,b,c" {
			t.Fatalf("agent calls %s, want a,b,c (a once)", got)
		}
		if in := m.CallsFor("b")[0].Context.Inputs; len(in) != 1 || !strings.Contains(in[0].Content, "Mock output of task a") {
			t.Fatalf("b's input after resume = %+v", in)
		}
	})
}

// Scenario: Failed task halts downstream — A FAILED, nothing after it runs,
// on-failure fires, the run ends FAILED.
func TestScenarioFailureHaltsDownstream(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{"a": {Fail: "model refused"}}})
		c.worker(router(m), []string{"mock"}, nil)
		o := c.orchestrator()
		h := hooks.New()
		var mu sync.Mutex
		var failures []hooks.Event
		h.OnFailure("*", func(_ context.Context, e hooks.Event) error {
			mu.Lock()
			failures = append(failures, e)
			mu.Unlock()
			return nil
		})
		s, err := o.executor(t, func(cfg *executor.Config) { cfg.Hooks = h }).Run(orchtest.Ctx(t), orchtest.Bundle(t, diamond, registry, nil),
			executor.RunOptions{RunID: "run-fail"})
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != engine.RunFailed || s.Tasks["a"].Status != engine.TaskFailed ||
			!strings.Contains(s.Error, "task a failed: mock: configured failure: model refused") {
			t.Fatalf("run %s %q, a %s", s.Status, s.Error, s.Tasks["a"].Status)
		}
		if got := m.TaskIDs(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Fatalf("dispatched %v", got)
		}
		if a := s.Tasks["a"]; a.Error.Kind != engine.ErrorAgent || !a.Error.Retryable {
			t.Fatalf("a's error = %+v: the worker's failure must keep its class", a.Error)
		}
		if len(failures) != 1 || failures[0].TaskID != "a" || !strings.Contains(failures[0].Error.Message, "model refused") {
			t.Fatalf("on-failure calls = %+v", failures)
		}
	})
}

// Scenario: Parallel task execution — B and C in flight together after A:
// each waits at a barrier that opens only when both are inside an agent.
func TestScenarioParallelExecution(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		var mu sync.Mutex
		arrived := 0
		both := make(chan struct{})
		m := mock.New(mock.Config{Func: func(ctx context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
			if task.TaskID == "b" || task.TaskID == "c" {
				mu.Lock()
				if arrived++; arrived == 2 {
					close(both)
				}
				mu.Unlock()
				select {
				case <-both:
				case <-ctx.Done():
					return agent.Result{}, ctx.Err()
				}
			}
			return answer(task), nil
		}})
		// Two worker processes of one pool: B and C may land on either.
		c.worker(router(m), []string{"mock"}, func(cfg *worker.Config) { cfg.Concurrency = 1 })
		c.worker(router(m), []string{"mock"}, func(cfg *worker.Config) { cfg.Concurrency = 1 })
		o := c.orchestrator()
		s, err := o.executor(t, nil).Run(orchtest.Ctx(t), orchtest.Bundle(t, diamond, registry, nil), executor.RunOptions{RunID: "run-par"})
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
		if ids := m.TaskIDs(); ids[0] != "a" || ids[3] != "d" {
			t.Fatalf("order %v", ids)
		}
	})
}

const sddWorkflow = `name: sdd
agents: agents.yaml
constitution:
  project: rules/project.md
tasks:
  - id: define-requirements
    agent: mock
    instructions: Write the requirements from the brief.
    inputs: [brief.md]
    outputs: [requirements.md]
  - id: design-l1
    agent: mock
    depends_on: [define-requirements]
    inputs: [requirements.md]
    outputs: [design-l1.md]
    constitution: rules/design.md
`

// Scenarios: Pre-task hook, Post-task hook, and Context assembly — hooks
// run in the orchestrator around the remote dispatch, and the context the
// worker's agent receives holds the constitution, the input's content and
// the upstream handover.
func TestScenarioHooksAndContext(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		order := &seq{}
		m := mock.New(mock.Config{Func: func(_ context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
			order.add("dispatch:" + task.TaskID)
			r := answer(task)
			if task.TaskID == "define-requirements" {
				r.Outputs["requirements.md"] = []byte("# Requirements\n\nR1: book a room.")
				r.Handover = []byte(`{"open_questions":["payment?"],"features":3}`)
			}
			return r, nil
		}})
		c.worker(router(m), []string{"mock"}, nil)
		o := c.orchestrator()
		h := hooks.New()
		var post *agent.Result
		h.OnPreTask("design-l1", func(_ context.Context, e hooks.Event) error {
			order.add("pre:" + e.Task.DispatchID)
			return e.Annotate("checked-by", "design-overlay")
		})
		h.OnPostTask("design-l1", func(_ context.Context, e hooks.Event) error {
			order.add("post:" + e.TaskID)
			post = e.Result
			return nil
		})
		b := orchtest.Bundle(t, sddWorkflow, registry, map[string]string{"brief.md": "We need a booking system.",
			"rules/project.md": "## Tests\nEvery feature has a test.\n", "rules/design.md": "## Diagrams\nUse C4.\n"})
		s, err := o.executor(t, func(cfg *executor.Config) { cfg.Hooks = h }).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-hooks"})
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
		want := []string{"dispatch:define-requirements", "pre:run-hooks/design-l1/1", "dispatch:design-l1", "post:design-l1"}
		if got := order.get(); !reflect.DeepEqual(got, want) {
			t.Fatalf("order\n got %v\nwant %v", got, want)
		}
		if post == nil || string(post.Outputs["design-l1.md"]) != "content of design-l1.md" {
			t.Fatalf("post-task hook got %+v", post)
		}
		if a := s.Artifacts["checked-by"]; string(a.Value) != `"design-overlay"` {
			t.Fatalf("annotation = %+v", a)
		}
		ctx := m.CallsFor("design-l1")[0].Context
		if !strings.Contains(ctx.Constitution, "Every feature has a test.") || !strings.Contains(ctx.Constitution, "Use C4.") {
			t.Fatalf("constitution:\n%s", ctx.Constitution)
		}
		if len(ctx.Inputs) != 1 || ctx.Inputs[0].Content != "# Requirements\n\nR1: book a room." {
			t.Fatalf("inputs = %+v", ctx.Inputs)
		}
		if len(ctx.Handover) != 1 || string(ctx.Handover[0].State) != `{"features":3,"open_questions":["payment?"]}` {
			t.Fatalf("handover = %+v", ctx.Handover)
		}
	})
}

// Scenario: Runtime adapter decoupling — the worker's mock records every
// call, each with its dispatch id.
func TestScenarioMockRecordsEveryCall(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{})
		c.worker(router(m), []string{"mock"}, nil)
		o := c.orchestrator()
		if _, err := o.executor(t, nil).Run(orchtest.Ctx(t), orchtest.Bundle(t, diamond, registry, nil), executor.RunOptions{RunID: "run-mock"}); err != nil {
			t.Fatal(err)
		}
		calls := m.Calls()
		if len(calls) != 4 {
			t.Fatalf("%d calls recorded, want 4", len(calls))
		}
		for _, call := range calls {
			if call.Task.DispatchID != "run-mock/"+call.Task.TaskID+"/1" || call.Context.Definition == "" {
				t.Fatalf("call = %+v", call.Task)
			}
		}
	})
}

// A result too large for one event fails its task with the reason, and the
// run stops there.
func TestOversizedResultFailsTheTask(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{"a": {Outputs: map[string]string{"a.md": strings.Repeat("x", 4096)}}}})
		c.worker(router(m), []string{"mock"}, func(cfg *worker.Config) { cfg.MaxResultBytes = 2048 })
		o := c.orchestrator()
		s, err := o.executor(t, nil).Run(orchtest.Ctx(t), orchtest.Bundle(t, diamond, registry, nil), executor.RunOptions{RunID: "run-big"})
		if err != nil {
			t.Fatal(err)
		}
		a := s.Tasks["a"]
		if s.Status != engine.RunFailed || a.Status != engine.TaskFailed || a.Error.Retryable ||
			!strings.Contains(a.Error.Message, "a.md 4096 bytes") || !strings.Contains(a.Error.Message, "limit of 2048") {
			t.Fatalf("run %s, a = %+v %+v", s.Status, a, a.Error)
		}
	})
}

// A worker killed in the middle of an attempt (its connection closed, the
// attempt never acknowledged) loses it to another worker after AckWait; the
// task completes once — one answer on the stream, one response applied —
// even when the killed worker's runtime comes back and tries to commit.
func TestWorkerKilledMidTask(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		started := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		first := mock.New(mock.Config{Func: func(_ context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
			if task.TaskID == "b" {
				once.Do(func() { close(started) })
				<-release // killed: this process never answers in time
			}
			return answer(task), nil
		}})
		ended := make(chan error, 8)
		killed := c.worker(router(first), []string{"mock"}, func(cfg *worker.Config) {
			cfg.AckWait = time.Second
			cfg.DB = txSignal{DB: db, ended: ended}
		})
		o := c.orchestrator()
		b := orchtest.Bundle(t, chainABC, registry, map[string]string{"brief.md": "brief"})
		done := make(chan struct{})
		var s engine.State
		var runErr error
		go func() {
			defer close(done)
			s, runErr = o.executor(t, nil).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-kill"})
		}()
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("b never reached the first worker")
		}
		killed.bus.Conn().Close()
		second := mock.New(mock.Config{})
		c.worker(router(second), []string{"mock"}, func(cfg *worker.Config) { cfg.AckWait = time.Second })
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("the run did not finish after the worker was killed")
		}
		if runErr != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", runErr, s.Status, s.Error)
		}
		if n := len(second.CallsFor("b")); n != 1 {
			t.Fatalf("the second worker ran b %d times, want 1", n)
		}
		// The killed worker's runtime finishes late and tries to commit.
		for len(ended) > 0 {
			<-ended
		}
		close(release)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			t.Fatal("the killed worker's late answer was never tried")
		}
		c.drained()
		if n := c.answers(o.bus, "run-kill/b/1"); n != 1 {
			t.Fatalf("%d answers for b on the stream, want 1", n)
		}
		if bs := s.Tasks["b"]; bs.Iterations != 1 || bs.Status != engine.TaskCompleted {
			t.Fatalf("b = %+v", bs)
		}
		evs, err := o.store.Events(orchtest.Ctx(t), "run-kill")
		if err != nil {
			t.Fatal(err)
		}
		responses := 0
		for _, e := range evs {
			if e.Type == engine.EventAgentResponded && e.TaskID == "b" {
				responses++
			}
		}
		if responses != 1 {
			t.Fatalf("%d responses of b applied, want 1", responses)
		}
	})
}

// An answer that arrives while the orchestrator is down is recorded by the
// next one's consumer; the resumed run finds it in the store and applies it
// without dispatching the attempt again, and the agent ran once.
func TestAnswerReceivedWhileOrchestratorWasDown(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		started := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		m := mock.New(mock.Config{Func: func(_ context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
			if task.TaskID == "b" {
				once.Do(func() { close(started) })
				<-release
			}
			return answer(task), nil
		}})
		c.worker(router(m), []string{"mock"}, nil)
		b := orchtest.Bundle(t, chainABC, registry, map[string]string{"brief.md": "brief"})

		o1 := c.orchestrator()
		ctx, crash := context.WithCancel(orchtest.Ctx(t))
		done := make(chan error, 1)
		go func() {
			_, err := o1.executor(t, nil).Run(ctx, b, executor.RunOptions{RunID: "run-down"})
			done <- err
		}()
		<-started
		crash()
		if err := <-done; !errors.Is(err, executor.ErrInterrupted) {
			t.Fatalf("first orchestrator = %v, want ErrInterrupted", err)
		}
		if err := o1.disp.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(release) // the worker answers while no orchestrator listens

		o2 := c.orchestrator()
		eventually(t, "b's answer to be recorded", func() bool {
			_, err := o2.results.Load(context.Background(), tenant, "run-down/b/1")
			return err == nil
		})
		s, err := o2.executor(t, nil).Resume(orchtest.Ctx(t), b, "run-down")
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("resume: %v %s", err, s.Status)
		}
		if n := len(m.CallsFor("b")); n != 1 {
			t.Fatalf("the agent ran b %d times, want once", n)
		}
		if got := o2.dispatches("recorded"); got != 1 {
			t.Fatalf("%d attempts answered from the store, want 1 (b)", got)
		}
		if got := o2.dispatches("published"); got != 1 {
			t.Fatalf("the resumed orchestrator published %d dispatches, want 1 (c)", got)
		}
		if bs := s.Tasks["b"]; bs.Iterations != 1 || bs.DispatchID != "run-down/b/1" {
			t.Fatalf("b = %+v", bs)
		}
	})
}

// A dispatch published again after the stream's duplicate window — an
// orchestrator that restarted long after it first dispatched, or a dead
// letter redriven twice — is acknowledged by the worker pool without running
// the agent again, since the redispatch mark (or the redrive header) makes
// the worker look in its inbox first; and even an unmarked copy gets no
// second answer.
func TestRedispatchBeyondTheDuplicateWindow(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{})
		c.worker(router(m), []string{"mock"}, nil)
		bus := c.nats.Bus(t)
		task := agent.Task{RunID: "run-w", TaskID: "a", DispatchID: "run-w/a/1", Attempt: 1, Agent: "mock", Kind: agent.KindWork,
			Outputs: []string{"a.md"}, Timeout: time.Minute}
		ev, err := taskmsg.Dispatched(tenant, task, agent.Context{Definition: "id: a\n"}, time.Now(), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := bus.Publish(orchtest.Ctx(t), ev); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the first answer", func() bool { c.drained(); return c.answers(bus, task.DispatchID) == 1 })

		// The same event again, under a Nats-Msg-Id the window does not know.
		republish := func(redispatch, redriven bool) {
			t.Helper()
			again := ev.Clone()
			if redispatch {
				again.SetExtension(taskmsg.ExtRedispatch, "true")
			}
			msg, err := bus.Encode(orchtest.Ctx(t), again)
			if err != nil {
				t.Fatal(err)
			}
			if redriven {
				msg.Header.Set(events.HeaderRedriven, "7")
			}
			msg.Header.Set(events.HeaderMsgID, uuid.NewString())
			if err := bus.PublishMsg(orchtest.Ctx(t), msg); err != nil {
				t.Fatal(err)
			}
		}
		republish(true, false)
		republish(false, true)
		republish(false, false)
		eventually(t, "the copies to be handled", func() bool {
			info, err := bus.JetStream().Consumer(orchtest.Ctx(t), contracts.StreamTasks, "agent-worker-mock")
			if err != nil {
				return false
			}
			ci, err := info.Info(orchtest.Ctx(t))
			return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0 && ci.Delivered.Consumer >= 4
		})
		c.drained()
		if n := c.answers(bus, task.DispatchID); n != 1 {
			t.Fatalf("%d answers, want 1", n)
		}
		if n := len(m.Calls()); n != 2 {
			t.Fatalf("the agent ran %d times, want 2: once, and once for the unmarked copy (the marked and the redriven ones are looked up)", n)
		}
	})
}
