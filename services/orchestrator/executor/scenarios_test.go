package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
)

// Scenario: Full pipeline execution.
//
//	Given a valid workflow with tasks A → B → C
//	When engine.run() is called
//	Then tasks execute in dependency order
//	And each task receives its inputs and produces its outputs
//	And all tasks reach COMPLETED status
func TestScenarioFullPipeline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, chainABC, map[string]string{"brief.md": "BRIEF TEXT"})
	m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{
		"a": {Outputs: map[string]string{"a.md": "A SAYS HELLO"}},
		"b": {Outputs: map[string]string{"b.md": "B BUILT ON A"}},
	}})
	s := e.run(t, e.executor(t, router(m), nil), "run-abc")

	if got := strings.Join(m.TaskIDs(), ","); got != "a,b,c" {
		t.Fatalf("dispatch order = %s, want a,b,c", got)
	}
	calls := m.Calls()
	wantInputs := []string{"BRIEF TEXT", "A SAYS HELLO", "B BUILT ON A"}
	for i, c := range calls {
		if len(c.Context.Inputs) != 1 || c.Context.Inputs[0].Content != wantInputs[i] {
			t.Errorf("task %s inputs = %+v, want %q", c.Task.TaskID, c.Context.Inputs, wantInputs[i])
		}
	}
	if s.Status != engine.RunCompleted {
		t.Fatalf("run %s: %s", s.Status, s.Error)
	}
	for _, id := range []string{"a", "b", "c"} {
		ts := s.Tasks[id]
		if ts.Status != engine.TaskCompleted || ts.Iterations != 1 || !reflect.DeepEqual(ts.Outputs, []string{id + ".md"}) {
			t.Errorf("task %s = %+v", id, ts)
		}
		art := s.Artifacts[id+":"+id+".md"]
		content, err := e.store.Get(context.Background(), engine.OutputRef{Path: art.Path, SHA256: art.SHA256})
		if err != nil || len(content) == 0 {
			t.Errorf("stored output of %s: %v", id, err)
		}
	}
	// The state file on disk follows the seed's schema.
	raw, err := os.ReadFile(e.store.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Version   string `json:"version"`
		Workflow  string `json:"workflow"`
		Project   string `json:"project"`
		StartedAt string `json:"started_at"`
		Tasks     map[string]struct {
			Status      string   `json:"status"`
			StartedAt   *string  `json:"started_at"`
			CompletedAt *string  `json:"completed_at"`
			Outputs     []string `json:"outputs"`
			Iterations  int      `json:"iterations"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.Version != "1" || file.Workflow != "chain" || file.Project != e.dir || file.StartedAt == "" {
		t.Fatalf("state file header = %+v", file)
	}
	if a := file.Tasks["a"]; a.Status != "COMPLETED" || a.StartedAt == nil || a.CompletedAt == nil || a.Outputs[0] != "a.md" || a.Iterations != 1 {
		t.Fatalf("state file task a = %+v", a)
	}
}

// Scenario: State persistence between runs.
//
//	Given a workflow where task A is COMPLETED and task B is PENDING
//	When the engine is started fresh (simulating a crash/restart)
//	Then the engine loads state from disk
//	And skips task A (already COMPLETED)
//	And continues from task B
//
// The Given is the state a first process leaves when it dies right after
// saving A's answer: written here with the engine's transitions, A's output
// in the store. (The executor saves an answer together with the dispatches
// it makes ready, so a crash of its own leaves either both or neither; see
// TestCrashBeforeDispatchResumes.)
func TestScenarioResumeSkipsCompleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, chainABC, map[string]string{"brief.md": "brief"})
	ctx := context.Background()
	const runID = "run-resume"
	now := time.Now()
	s, start, err := engine.Start(engine.StartInfo{RunID: runID, Workflow: e.bundle.Workflow.Name, Project: e.bundle.ProjectDir,
		Seed: 7, Limits: e.bundle.Limits(), Plan: e.bundle.Plan()}, engine.NewCtx(now, 7, 1))
	if err != nil {
		t.Fatal(err)
	}
	s, requested, err := engine.ApplyAction(s, engine.Action{Type: engine.RequestWork, TaskID: "a"}, engine.Next(s, now))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := e.store.Put(ctx, runID, "a", "a.md", []byte("A's design, from the first process"))
	if err != nil {
		t.Fatal(err)
	}
	s, answered, err := engine.ApplyResponse(s, engine.Response{TaskID: "a", Attempt: 1, DispatchID: s.Tasks["a"].DispatchID,
		OK: true, Outputs: []engine.OutputRef{ref}}, engine.Next(s, now))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Save(ctx, s, []engine.Event{start, requested, answered}); err != nil {
		t.Fatal(err)
	}
	if got := statuses(s); got["a"] != engine.TaskCompleted || got["b"] != engine.TaskPending {
		t.Fatalf("given state = %v, want a COMPLETED, b PENDING", got)
	}

	// A fresh process: new store over the same directory, new executor, new agent.
	fresh := newStore(t, e.dir)
	second := mock.New(mock.Config{})
	x2, err := executor.New(executor.Config{Dispatcher: router(second), Store: fresh, Artifacts: fresh})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := x2.Resume(ctx, e.bundle, runID)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got := strings.Join(second.TaskIDs(), ","); got != "b,c" {
		t.Fatalf("resumed run dispatched %s, want b,c (a skipped)", got)
	}
	if s2.Status != engine.RunCompleted || s2.Tasks["a"].Iterations != 1 {
		t.Fatalf("resumed run = %s, a iterations %d", s2.Status, s2.Tasks["a"].Iterations)
	}
	// B read A's output as stored by the first process.
	if in := second.CallsFor("b")[0].Context.Inputs; len(in) != 1 || in[0].Content != "A's design, from the first process" {
		t.Fatalf("b's input after resume = %+v", in)
	}
}

// A state write that fails is critical: when the save of A's answer and
// B's dispatch fails, B is never dispatched and the run stops. The saved
// state still has A in flight, so a fresh process dispatches A again under
// the same dispatch id (a worker or a durable runtime answers it once) and
// goes on to B and C.
func TestCrashBeforeDispatchResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, chainABC, map[string]string{"brief.md": "brief"})
	first := mock.New(mock.Config{})
	crashing := failingStore{Store: e.store, fail: func(_ engine.State, evs []engine.Event) bool {
		return slices.ContainsFunc(evs, func(ev engine.Event) bool { return ev.Type == engine.EventWorkRequested && ev.TaskID == "b" })
	}}
	x1 := e.executor(t, router(first), func(c *executor.Config) { c.Store = crashing })
	s1, err := x1.Run(context.Background(), e.bundle, executor.RunOptions{RunID: "run-crash"})
	if !errors.Is(err, executor.ErrPersist) || !errors.Is(err, errDiskFull) {
		t.Fatalf("first run error = %v, want ErrPersist wrapping the write error", err)
	}
	if got := first.TaskIDs(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("first run dispatched %v; after the failed write it must not proceed to b", got)
	}
	if got := statuses(s1); got["a"] != engine.TaskRunning || got["b"] != engine.TaskPending {
		t.Fatalf("returned state = %v, want the last saved one (a RUNNING, b PENDING)", got)
	}
	aID := s1.Tasks["a"].DispatchID

	fresh := newStore(t, e.dir)
	second := mock.New(mock.Config{})
	x2, err := executor.New(executor.Config{Dispatcher: router(second), Store: fresh, Artifacts: fresh})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := x2.Resume(context.Background(), e.bundle, "run-crash")
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got := strings.Join(second.TaskIDs(), ","); got != "a,b,c" {
		t.Fatalf("resumed run dispatched %s, want a (in flight), b, c", got)
	}
	if a := second.CallsFor("a")[0].Task; a.DispatchID != aID || a.Attempt != 1 {
		t.Fatalf("a re-dispatched as %s attempt %d, want %s attempt 1", a.DispatchID, a.Attempt, aID)
	}
	if s2.Status != engine.RunCompleted || s2.Tasks["a"].Iterations != 1 {
		t.Fatalf("resumed run = %s, a iterations %d", s2.Status, s2.Tasks["a"].Iterations)
	}
}

// A task in flight when the orchestrator stops is dispatched again under
// the same dispatch id and attempt; a worker that deduplicates by id answers
// from memory, so the agent runs it once.
func TestResumeRedispatchesInFlightUnderSameID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, chainABC, map[string]string{"brief.md": "brief"})
	agentRuns := mock.New(mock.Config{})
	lost := make(chan struct{})
	worker := &dedup{inner: agentRuns, seen: map[string]agent.Result{}, lose: map[string]chan struct{}{"b": lost}}

	ctx, crash := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		_, runErr = e.executor(t, worker, nil).Run(ctx, e.bundle, executor.RunOptions{RunID: "run-inflight"})
	}()
	within(t, lost, "b to be answered by the worker")
	crash() // the orchestrator dies before it hears b's answer
	within(t, done, "the run to stop")
	if !errors.Is(runErr, executor.ErrInterrupted) || !errors.Is(runErr, context.Canceled) {
		t.Fatalf("run error = %v, want ErrInterrupted", runErr)
	}
	saved, err := newStore(t, e.dir).Load(context.Background(), "run-inflight")
	if err != nil {
		t.Fatal(err)
	}
	b := saved.Tasks["b"]
	if b.Status != engine.TaskRunning || b.DispatchID != "run-inflight/b/1" || b.Iterations != 1 {
		t.Fatalf("saved b = %+v, want RUNNING attempt 1", b)
	}

	fresh := newStore(t, e.dir)
	x2, err := executor.New(executor.Config{Dispatcher: worker, Store: fresh, Artifacts: fresh})
	if err != nil {
		t.Fatal(err)
	}
	s, err := x2.Resume(context.Background(), e.bundle, "run-inflight")
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if s.Status != engine.RunCompleted || s.Tasks["b"].Iterations != 1 || s.Tasks["b"].DispatchID != "run-inflight/b/1" {
		t.Fatalf("resumed = %s, b = %+v", s.Status, s.Tasks["b"])
	}
	if n := len(agentRuns.CallsFor("b")); n != 1 {
		t.Fatalf("the agent ran b %d times, want once", n)
	}
	if got := strings.Join(agentRuns.TaskIDs(), ","); got != "a,b,c" {
		t.Fatalf("agent calls = %s", got)
	}
}

// Scenario: Failed task halts downstream.
//
//	Given task A fails during execution
//	When the engine detects the failure
//	Then task A's status is set to FAILED
//	And all tasks that depend on A are NOT executed
//	And the engine emits an on-failure event
func TestScenarioFailureHaltsDownstream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, diamond, nil)
	m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{"a": {Fail: "model refused"}}})
	h := hooks.New()
	var failures []hooks.Event
	var mu sync.Mutex
	h.OnFailure("*", func(_ context.Context, ev hooks.Event) error {
		mu.Lock()
		failures = append(failures, ev)
		mu.Unlock()
		return nil
	})
	var events []engine.Event
	x := e.executor(t, router(m), func(c *executor.Config) {
		c.Hooks = h
		c.Observe = func(_ engine.State, evs []engine.Event) { events = append(events, evs...) }
	})
	s := e.run(t, x, "run-fail")

	if s.Status != engine.RunFailed || s.Tasks["a"].Status != engine.TaskFailed {
		t.Fatalf("run %s, a %s; want both FAILED", s.Status, s.Tasks["a"].Status)
	}
	if !strings.Contains(s.Error, "task a failed: mock: configured failure: model refused") {
		t.Fatalf("run error = %q", s.Error)
	}
	if got := m.TaskIDs(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("dispatched %v; nothing downstream of a may run", got)
	}
	for _, id := range []string{"b", "c", "d"} {
		if s.Tasks[id].Status != engine.TaskPending || s.Tasks[id].Iterations != 0 {
			t.Fatalf("task %s = %+v, want never run", id, s.Tasks[id])
		}
	}
	if len(failures) != 1 || failures[0].TaskID != "a" || failures[0].Error == nil ||
		!strings.Contains(failures[0].Error.Message, "model refused") || failures[0].Task.DispatchID != "run-fail/a/1" {
		t.Fatalf("on-failure hook calls = %+v", failures)
	}
	// The failure is in the event log, and the log ends with the run's end.
	last := events[len(events)-1]
	if last.Type != engine.EventRunFinalized || last.Status != "FAILED" {
		t.Fatalf("last event = %+v", last)
	}
	var failedEvent bool
	for _, ev := range events {
		failedEvent = failedEvent || (ev.Type == engine.EventAgentResponded && ev.TaskID == "a" && ev.Status == "FAILED")
	}
	if !failedEvent {
		t.Fatal("no AGENT_RESPONDED FAILED event for a")
	}
	// The state on disk is the failed one.
	onDisk, err := newStore(t, e.dir).Load(context.Background(), "run-fail")
	if err != nil || onDisk.Status != engine.RunFailed {
		t.Fatalf("state on disk = %s (%v)", onDisk.Status, err)
	}
}

// Adapter dispatch errors are retried up to the task's retries, then the
// task is FAILED; an attempt that succeeds within them completes the task.
func TestDispatchErrorsRetriedThenFailed(t *testing.T) {
	t.Parallel()
	const wf = `name: retries
agents: agents.yaml
defaults:
  retry_backoff: 1ms
tasks:
  - id: t
    agent: mock
    retries: 2
    outputs: [t.md]
`
	e := newEnv(t, wf, nil)
	m := mock.New(mock.Config{Default: mock.Outcome{FailAttempts: 2}})
	s := e.run(t, e.executor(t, router(m), nil), "run-flaky")
	if ts := s.Tasks["t"]; s.Status != engine.RunCompleted || ts.Status != engine.TaskCompleted || ts.Iterations != 3 || ts.Error != nil {
		t.Fatalf("run %s, t = %+v; want COMPLETED on attempt 3", s.Status, ts)
	}

	e = newEnv(t, wf, nil)
	m = mock.New(mock.Config{Default: mock.Outcome{Fail: "always"}})
	s = e.run(t, e.executor(t, router(m), nil), "run-broken")
	broken := s.Tasks["t"]
	if s.Status != engine.RunFailed || broken.Status != engine.TaskFailed || broken.Iterations != 3 || broken.Error.Attempt != 3 || !broken.Error.Retryable {
		t.Fatalf("run %s, t = %+v; want FAILED after 3 attempts", s.Status, broken)
	}
	var attempts []int
	for _, c := range m.Calls() {
		attempts = append(attempts, c.Task.Attempt)
	}
	if !reflect.DeepEqual(attempts, []int{1, 2, 3}) {
		t.Fatalf("attempts = %v", attempts)
	}
}

// Scenario: Parallel task execution.
//
//	Given tasks B and C both depend on A but not on each other
//	When task A completes
//	Then the engine dispatches B and C concurrently
//
// B and C each wait at a barrier that opens only when both are inside the
// agent at once; run one at a time, the first would wait for ever (here: it
// fails after a generous safety timeout), so completing proves concurrency.
func TestScenarioParallelExecution(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, parallel int, patience time.Duration) (engine.State, *mock.Runtime) {
		e := newEnv(t, diamond, nil)
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
				case <-time.After(patience):
					return agent.Result{}, errors.New("b and c were not in flight together")
				}
			}
			return answer(task), nil
		}})
		return e.run(t, e.executor(t, router(m), func(c *executor.Config) { c.MaxParallel = parallel }), "run-par"), m
	}

	s, m := run(t, 4, 30*time.Second)
	if s.Status != engine.RunCompleted {
		t.Fatalf("run = %s: %s", s.Status, s.Error)
	}
	ids := m.TaskIDs()
	if ids[0] != "a" || ids[3] != "d" {
		t.Fatalf("order = %v, want a first and d last", ids)
	}
	// Control: one at a time, the barrier never opens.
	s, _ = run(t, 1, 200*time.Millisecond)
	if s.Status != engine.RunFailed || !strings.Contains(s.Error, "not in flight together") {
		t.Fatalf("serial run = %s %q; the barrier should have caught it", s.Status, s.Error)
	}
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

// Scenarios: Pre-task hook, Post-task hook, On-failure hook.
//
//	Given a pre-task hook registered for task "design-l1"
//	When task "design-l1" is about to execute
//	Then the pre-task hook is called before agent dispatch
//
//	Given a post-task hook registered for task "design-l1"
//	When task "design-l1" completes
//	Then the post-task hook is called with the task result
func TestScenarioHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sddWorkflow, map[string]string{"brief.md": "brief",
		"rules/project.md": "## Tests\nTests first.\n", "rules/design.md": "## Diagrams\nUse C4.\n"})
	order := &seq{}
	m := mock.New(mock.Config{Func: func(_ context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
		order.add("dispatch:" + task.TaskID)
		return answer(task), nil
	}})
	h := hooks.New()
	var post *agent.Result
	h.OnPreTask("*", recorder(order))
	h.OnPreTask("design-l1", func(_ context.Context, ev hooks.Event) error {
		order.add("pre-design:" + ev.Task.DispatchID)
		return ev.Annotate("checked-by", "design-overlay")
	})
	h.OnPostTask("design-l1", func(_ context.Context, ev hooks.Event) error {
		order.add("post:" + ev.TaskID)
		post = ev.Result
		return nil
	})
	h.OnLoopExit("*", func(_ context.Context, ev hooks.Event) error {
		order.add(fmt.Sprintf("loop-exit:%s:%s:%d", ev.TaskID, ev.Status, ev.Iterations))
		return nil
	})
	h.OnFailure("*", recorder(order))
	s := e.run(t, e.executor(t, router(m), func(c *executor.Config) { c.Hooks = h }), "run-hooks")

	want := []string{
		"pre-task:define-requirements", "dispatch:define-requirements", "loop-exit:define-requirements:COMPLETED:1",
		"pre-task:design-l1", "pre-design:run-hooks/design-l1/1", "dispatch:design-l1", "post:design-l1",
		"loop-exit:design-l1:COMPLETED:1",
	}
	if got := order.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hook order\n got %v\nwant %v", got, want)
	}
	if post == nil || string(post.Outputs["design-l1.md"]) != "content of design-l1.md" {
		t.Fatalf("post-task hook got result %+v", post)
	}
	if a := s.Artifacts["checked-by"]; a.Kind != engine.ArtifactAnnotation || string(a.Value) != `"design-overlay"` || a.Task != "design-l1" {
		t.Fatalf("hook annotation = %+v", a)
	}
}

// A pre-task hook's error vetoes the attempt; a post-task hook's error
// rejects the result. Both fail the attempt like any other failure.
func TestHooksVetoAndReject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sddWorkflow, map[string]string{"brief.md": "brief",
		"rules/project.md": "## Tests\nTests first.\n", "rules/design.md": "## Diagrams\nUse C4.\n"})
	m := mock.New(mock.Config{})
	h := hooks.New()
	h.OnPostTask("define-requirements", func(context.Context, hooks.Event) error {
		return errors.New("requirements lack acceptance criteria")
	})
	var failed *engine.TaskError
	h.OnFailure("define-requirements", func(_ context.Context, ev hooks.Event) error { failed = ev.Error; return nil })
	s := e.run(t, e.executor(t, router(m), func(c *executor.Config) { c.Hooks = h }), "run-reject")
	if s.Tasks["define-requirements"].Status != engine.TaskFailed || failed == nil || failed.Kind != engine.ErrorHook ||
		!strings.Contains(failed.Message, "acceptance criteria") {
		t.Fatalf("rejected result: task %+v, failure %+v", s.Tasks["define-requirements"], failed)
	}
	if s.Artifacts["define-requirements:requirements.md"].Path != "" {
		t.Fatal("a rejected result's output was recorded")
	}

	e2 := newEnv(t, sddWorkflow, map[string]string{"brief.md": "brief",
		"rules/project.md": "## Tests\nTests first.\n", "rules/design.md": "## Diagrams\nUse C4.\n"})
	m2 := mock.New(mock.Config{})
	h2 := hooks.New()
	h2.OnPreTask("*", func(context.Context, hooks.Event) error { return errors.New("change freeze") })
	s2 := e2.run(t, e2.executor(t, router(m2), func(c *executor.Config) { c.Hooks = h2 }), "run-veto")
	if len(m2.Calls()) != 0 || s2.Tasks["define-requirements"].Error.Kind != engine.ErrorHook {
		t.Fatalf("vetoed: calls %d, task %+v", len(m2.Calls()), s2.Tasks["define-requirements"])
	}
}

// Scenario: Context assembly.
//
//	Given task "design-l1" with inputs ["requirements.md"]
//	And an active constitution with rules
//	And handover state from task "define-requirements"
//	When the engine assembles context for "design-l1"
//	Then the assembled context includes: constitution content,
//	requirements.md content, and handover state
func TestScenarioContextAssembly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sddWorkflow, map[string]string{
		"brief.md":         "We need a booking system.",
		"rules/project.md": "## Tests {#tests}\nEvery feature has a test.\n\n## Language\nBritish English.\n",
		"rules/design.md":  "## Language\nPlain English, short sentences.\n",
	})
	m := mock.New(mock.Config{Tasks: map[string]mock.Outcome{"define-requirements": {
		Outputs:  map[string]string{"requirements.md": "# Requirements\n\nR1: book a room."},
		Handover: map[string]any{"open_questions": []string{"payment?"}, "features": 3},
	}}})
	s := e.run(t, e.executor(t, router(m), nil), "run-ctx")
	if s.Status != engine.RunCompleted {
		t.Fatalf("run = %s %s", s.Status, s.Error)
	}
	c := m.CallsFor("design-l1")[0].Context
	if !strings.Contains(c.Constitution, "Every feature has a test.") || !strings.Contains(c.Constitution, "Plain English, short sentences.") ||
		strings.Contains(c.Constitution, "British English.") {
		t.Fatalf("constitution (task rule must override project rule):\n%s", c.Constitution)
	}
	if !strings.Contains(c.Constitution, "_Source: task — rules/design.md:1; overrides project — rules/project.md:4_") {
		t.Fatalf("constitution lacks provenance:\n%s", c.Constitution)
	}
	if len(c.Inputs) != 1 || c.Inputs[0].Content != "# Requirements\n\nR1: book a room." ||
		c.Inputs[0].Source != "output requirements.md of task define-requirements" {
		t.Fatalf("inputs = %+v", c.Inputs)
	}
	if len(c.Handover) != 1 || c.Handover[0].TaskID != "define-requirements" ||
		string(c.Handover[0].State) != `{"features":3,"open_questions":["payment?"]}` {
		t.Fatalf("handover = %+v", c.Handover)
	}
	if !strings.Contains(c.Definition, "id: design-l1") || !strings.Contains(c.Definition, "depends_on:") {
		t.Fatalf("definition = %s", c.Definition)
	}
	first := m.CallsFor("define-requirements")[0].Context
	if first.Instructions != "Write the requirements from the brief." || first.Inputs[0].Content != "We need a booking system." ||
		first.Inputs[0].Source != "file brief.md" || len(first.Handover) != 0 {
		t.Fatalf("first task context = %+v", first)
	}
	rendered := agent.Render(m.CallsFor("design-l1")[0].Task, c)
	for _, want := range []string{"## Constitution", "Every feature has a test.", "## Handover from upstream tasks", `"open_questions"`, "R1: book a room."} {
		if !strings.Contains(rendered, want) {
			t.Errorf("rendered context lacks %q", want)
		}
	}
}

// Scenario: Runtime adapter decoupling (the executor side; the registry
// side, with an LLM client that must not be called, is in package
// orchestrator).
//
//	Given the engine is initialized with a MockRuntimeAdapter
//	When any task is dispatched
//	Then the mock adapter records the call
func TestScenarioMockRecordsEveryCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, diamond, nil)
	m := mock.New(mock.Config{})
	e.run(t, e.executor(t, router(m), nil), "run-mock")
	calls := m.Calls()
	if len(calls) != 4 {
		t.Fatalf("recorded %d calls, want 4", len(calls))
	}
	for _, c := range calls {
		if c.Task.RunID != "run-mock" || c.Task.DispatchID != "run-mock/"+c.Task.TaskID+"/1" || c.Task.Agent != "mock" || c.Context.Definition == "" {
			t.Fatalf("recorded call = %+v", c.Task)
		}
	}
}
