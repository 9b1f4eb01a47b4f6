package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 2, 27, 10, 0, 0, 0, time.UTC)

func task(id string, deps ...string) PlanTask {
	return PlanTask{ID: id, Agent: "mock", Kind: KindWork, DependsOn: deps,
		Outputs: []string{id + ".md"}, Timeout: Duration(time.Minute)}
}

// diamond is A -> B, C -> D.
func diamond() Plan {
	return Plan{Tasks: []PlanTask{task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c")}}
}

func start(t *testing.T, p Plan, l Limits) State {
	t.Helper()
	s, ev, err := Start(StartInfo{RunID: "run-1", Workflow: "wf", Project: "/p", Seed: 42, Limits: l, Plan: p}, NewCtx(t0, 42, 1))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if ev.Seq != 1 || ev.Type != EventRunStarted {
		t.Fatalf("Start event = %+v, want seq 1 RUN_STARTED", ev)
	}
	return s
}

// step applies fn with the next context at now and fails the test on error.
func step(t *testing.T, s State, now time.Time, fn func(State, Ctx) (State, Event, error)) (State, Event) {
	t.Helper()
	n, ev, err := fn(s, Next(s, now))
	if err != nil {
		t.Fatalf("transition at seq %d: %v", s.Seq+1, err)
	}
	return n, ev
}

func request(id string) func(State, Ctx) (State, Event, error) {
	return func(s State, c Ctx) (State, Event, error) {
		return ApplyAction(s, Action{Type: RequestWork, TaskID: id}, c)
	}
}

func okResponse(s State, id string) Response {
	ts := s.Tasks[id]
	pt, _ := s.Plan.Task(id)
	var outs []OutputRef
	for _, o := range pt.Outputs {
		outs = append(outs, OutputRef{Name: o, Path: id + "/" + o, SHA256: "ab" + o, Size: 3})
	}
	return Response{TaskID: id, Attempt: ts.Iterations, DispatchID: ts.DispatchID, OK: true,
		Outputs: outs, Handover: json.RawMessage(`{"z":1, "a":"` + id + `"}`)}
}

func respond(r Response) func(State, Ctx) (State, Event, error) {
	return func(s State, c Ctx) (State, Event, error) { return ApplyResponse(s, r, c) }
}

func failResponse(s State, id string, retryable bool) Response {
	ts := s.Tasks[id]
	return Response{TaskID: id, Attempt: ts.Iterations, DispatchID: ts.DispatchID,
		Error: &TaskError{Kind: ErrorAgent, Message: "boom", Retryable: retryable}}
}

func TestStartRejectsBadPlans(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		info StartInfo
		want string
	}{
		{"bad run id", StartInfo{RunID: "a b", Plan: diamond()}, "run id"},
		{"no tasks", StartInfo{RunID: "r", Plan: Plan{}}, "no tasks"},
		{"duplicate", StartInfo{RunID: "r", Plan: Plan{Tasks: []PlanTask{task("a"), task("a")}}}, "duplicate task id"},
		{"dependency after", StartInfo{RunID: "r", Plan: Plan{Tasks: []PlanTask{task("b", "a"), task("a")}}}, "not an earlier task"},
		{"self cycle", StartInfo{RunID: "r", Plan: Plan{Tasks: []PlanTask{task("a", "a")}}}, "not an earlier task"},
		{"no timeout", StartInfo{RunID: "r", Plan: Plan{Tasks: []PlanTask{{ID: "a", Agent: "m", Kind: KindWork}}}}, "timeout"},
		{"bad kind", StartInfo{RunID: "r", Plan: Plan{Tasks: []PlanTask{{ID: "a", Agent: "m", Kind: "x", Timeout: 1}}}}, "kind"},
		{"colon id", StartInfo{RunID: "r", Plan: Plan{Tasks: []PlanTask{{ID: "a:b", Agent: "m", Kind: KindWork, Timeout: 1}}}}, "':'"},
		{"negative limit", StartInfo{RunID: "r", Plan: diamond(), Limits: Limits{Timeout: -1}}, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Start(tc.info, NewCtx(t0, 1, 1))
			if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start error = %v, want ErrInvalidPlan mentioning %q", err, tc.want)
			}
		})
	}
}

func TestStartState(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	if s.Status != RunRunning || s.Seq != 1 || s.LogHash == "" || !s.StartedAt.Equal(t0) {
		t.Fatalf("started state = %+v", s)
	}
	if got := s.Limits.MaxIterations; got != 1000 {
		t.Fatalf("default MaxIterations = %d, want 1000", got)
	}
	for id, ts := range s.Tasks {
		if ts.Status != TaskPending || ts.StartedAt != nil || ts.Outputs == nil {
			t.Fatalf("task %s = %+v, want PENDING, no start, empty outputs", id, ts)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// A large plan gets room for every attempt.
	var big Plan
	for i := range 700 {
		pt := task(fmt.Sprintf("t%d", i))
		pt.Retries = 1
		big.Tasks = append(big.Tasks, pt)
	}
	if got := start(t, big, Limits{}).Limits.MaxIterations; got != 1400 {
		t.Fatalf("MaxIterations for 700 tasks with 1 retry = %d, want 1400", got)
	}
}

func TestTransitionsChangeStatus(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	s, ev := step(t, s, t0.Add(time.Second), request("a"))
	a := s.Tasks["a"]
	if a.Status != TaskRunning || a.Iterations != 1 || a.DispatchID != "run-1/a/1" || !a.StartedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("a after REQUEST_WORK = %+v", a)
	}
	if ev.Type != EventWorkRequested || ev.Status != "RUNNING" || ev.Attempt != 1 || ev.DispatchID != "run-1/a/1" || ev.Seq != 2 {
		t.Fatalf("event = %+v", ev)
	}
	if s.Iterations != 1 {
		t.Fatalf("run iterations = %d, want 1", s.Iterations)
	}
	s, ev = step(t, s, t0.Add(2*time.Second), respond(okResponse(s, "a")))
	a = s.Tasks["a"]
	if a.Status != TaskCompleted || !a.CompletedAt.Equal(t0.Add(2*time.Second)) || !reflect.DeepEqual(a.Outputs, []string{"a.md"}) {
		t.Fatalf("a after OK = %+v", a)
	}
	if string(a.Handover) != `{"a":"a","z":1}` {
		t.Fatalf("handover = %s, want canonical JSON", a.Handover)
	}
	if art := s.Artifacts["a:a.md"]; art.Kind != ArtifactOutput || art.SHA256 != "aba.md" || art.Task != "a" {
		t.Fatalf("artifact a:a.md = %+v", art)
	}
	if ev.Status != "COMPLETED" || len(ev.Outputs) != 1 {
		t.Fatalf("response event = %+v", ev)
	}
	s, _ = step(t, s, t0.Add(3*time.Second), func(s State, c Ctx) (State, Event, error) {
		return ApplyAction(s, Action{Type: Annotate, TaskID: "a", Key: "review", Value: json.RawMessage(`{ "ok" : true }`)}, c)
	})
	if got := string(s.Artifacts["review"].Value); got != `{"ok":true}` {
		t.Fatalf("annotation = %s", got)
	}
}

func TestTransitionErrors(t *testing.T) {
	t.Parallel()
	base := start(t, diamond(), Limits{})
	running, _ := step(t, base, t0, request("a"))
	approval := start(t, Plan{Tasks: []PlanTask{{ID: "ok", Agent: "human", Kind: KindApproval, Timeout: 1}}}, Limits{})
	limited := start(t, diamond(), Limits{MaxIterations: 1})
	limited, _ = step(t, limited, t0, request("a"))
	limited, _ = step(t, limited, t0, respond(okResponse(limited, "a")))
	missing := okResponse(running, "a")
	missing.Outputs = nil
	extra := okResponse(running, "a")
	extra.Outputs = append(extra.Outputs, OutputRef{Name: "x.md", Path: "p", SHA256: "s"})
	badHandover := okResponse(running, "a")
	badHandover.Handover = json.RawMessage(`[1]`)
	stale := okResponse(running, "a")
	stale.Attempt = 2
	noErr := failResponse(running, "a", true)
	noErr.Error = nil
	finished, _ := step(t, base, t0, func(s State, c Ctx) (State, Event, error) {
		return Finalize(s, Finalization{Reason: "stop"}, c)
	})

	cases := []struct {
		name string
		s    State
		fn   func(State, Ctx) (State, Event, error)
		want error
	}{
		{"unknown task", base, request("zz"), ErrUnknownTask},
		{"deps not done", base, request("b"), ErrInvalidAction},
		{"already running", running, request("a"), ErrInvalidAction},
		{"wrong action kind", approval, request("ok"), ErrInvalidAction},
		{"max iterations", limited, request("b"), ErrMaxIterations},
		{"annotation key with colon", base, func(s State, c Ctx) (State, Event, error) {
			return ApplyAction(s, Action{Type: Annotate, Key: "a:b", Value: json.RawMessage(`1`)}, c)
		}, ErrInvalidAction},
		{"annotation not JSON", base, func(s State, c Ctx) (State, Event, error) {
			return ApplyAction(s, Action{Type: Annotate, Key: "k", Value: json.RawMessage(`{`)}, c)
		}, ErrInvalidAction},
		{"unknown action", base, func(s State, c Ctx) (State, Event, error) {
			return ApplyAction(s, Action{Type: "JUMP"}, c)
		}, ErrInvalidAction},
		{"response to pending task", base, respond(Response{TaskID: "a", Attempt: 0, OK: true}), ErrStaleResponse},
		{"stale attempt", running, respond(stale), ErrStaleResponse},
		{"missing output", running, respond(missing), ErrInvalidResponse},
		{"undeclared output", running, respond(extra), ErrInvalidResponse},
		{"handover not object", running, respond(badHandover), ErrInvalidResponse},
		{"failure without error", running, respond(noErr), ErrInvalidResponse},
		{"finalize while running", running, func(s State, c Ctx) (State, Event, error) {
			return Finalize(s, Finalization{}, c)
		}, ErrTasksRunning},
		{"input after finalize", finished, request("a"), ErrRunNotRunning},
		{"no rand", base, func(s State, _ Ctx) (State, Event, error) {
			return ApplyAction(s, Action{Type: RequestWork, TaskID: "a"}, Ctx{Now: t0})
		}, ErrBadContext},
		{"no time", base, func(s State, _ Ctx) (State, Event, error) {
			return ApplyAction(s, Action{Type: RequestWork, TaskID: "a"}, Ctx{Rand: rand.New(rand.NewPCG(1, 1))})
		}, ErrBadContext},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := mustHash(t, tc.s)
			got, _, err := tc.fn(tc.s, Next(tc.s, t0))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if h := mustHash(t, got); h != before {
				t.Fatalf("a rejected input changed the state")
			}
		})
	}
}

func TestRetryThenFail(t *testing.T) {
	t.Parallel()
	p := Plan{Tasks: []PlanTask{task("a")}}
	p.Tasks[0].Retries = 2
	l := Limits{RetryBackoff: Duration(time.Second), MaxRetryBackoff: Duration(3 * time.Second)}
	s := start(t, p, l)
	now := t0
	waits := []time.Duration{}
	for attempt := 1; attempt <= 3; attempt++ {
		s, _ = step(t, s, now, request("a"))
		var ev Event
		s, ev = step(t, s, now, respond(failResponse(s, "a", true)))
		a := s.Tasks["a"]
		if attempt < 3 {
			if a.Status != TaskPending || a.RetryAt == nil || ev.Status != "PENDING" {
				t.Fatalf("attempt %d: task = %+v, event status %s; want PENDING with retry_at", attempt, a, ev.Status)
			}
			wait := a.RetryAt.Sub(now)
			full := time.Second << (attempt - 1)
			if wait < full/2 || wait > full {
				t.Fatalf("attempt %d: backoff %s outside [%s, %s]", attempt, wait, full/2, full)
			}
			waits = append(waits, wait)
			// Before the backoff ends the task is not ready and cannot be requested.
			if d := Decide(s, now); len(d.Actions) != 0 || d.WakeAt == nil || !d.WakeAt.Equal(*a.RetryAt) {
				t.Fatalf("Decide during backoff = %+v, want no actions and WakeAt %s", d, a.RetryAt)
			}
			if _, _, err := ApplyAction(s, Action{Type: RequestWork, TaskID: "a"}, Next(s, now)); !errors.Is(err, ErrInvalidAction) {
				t.Fatalf("request during backoff: %v, want ErrInvalidAction", err)
			}
			now = *a.RetryAt
		} else if a.Status != TaskFailed || a.Error.Attempt != 3 || a.CompletedAt == nil {
			t.Fatalf("after the last attempt task = %+v, want FAILED at attempt 3", a)
		}
	}
	if len(waits) != 2 {
		t.Fatalf("waits = %v", waits)
	}
	d := Decide(s, now)
	if d.Finalize == nil {
		t.Fatalf("Decide after failure = %+v, want Finalize", d)
	}
	s, ev := step(t, s, now, func(s State, c Ctx) (State, Event, error) { return Finalize(s, *d.Finalize, c) })
	if s.Status != RunFailed || !strings.Contains(s.Error, "task a failed: boom") || ev.Reason != s.Error {
		t.Fatalf("finalized = %s %q (event reason %q)", s.Status, s.Error, ev.Reason)
	}
}

func TestNonRetryableFailsAtOnce(t *testing.T) {
	t.Parallel()
	p := Plan{Tasks: []PlanTask{task("a")}}
	p.Tasks[0].Retries = 5
	s := start(t, p, Limits{})
	s, _ = step(t, s, t0, request("a"))
	s, _ = step(t, s, t0, respond(failResponse(s, "a", false)))
	if got := s.Tasks["a"].Status; got != TaskFailed {
		t.Fatalf("status = %s, want FAILED (not retryable)", got)
	}
}

// Seed 004: the same input and the same context give equal states.
func TestDeterminismSameContextEqualState(t *testing.T) {
	t.Parallel()
	p := Plan{Tasks: []PlanTask{task("a")}}
	p.Tasks[0].Retries = 1
	s := start(t, p, Limits{RetryBackoff: Duration(time.Minute)})
	s, _ = step(t, s, t0, request("a"))
	r := failResponse(s, "a", true)

	s1, e1, err1 := ApplyResponse(s, r, NewCtx(t0, 42, 3))
	s2, e2, err2 := ApplyResponse(s, r, NewCtx(t0, 42, 3))
	if err1 != nil || err2 != nil {
		t.Fatalf("errors %v %v", err1, err2)
	}
	if !reflect.DeepEqual(s1, s2) || !reflect.DeepEqual(e1, e2) {
		t.Fatalf("same context gave different results:\n%+v\n%+v", s1, s2)
	}
	if mustHash(t, s1) != mustHash(t, s2) {
		t.Fatal("same context gave different hashes")
	}
	// The random draw really is used: other seeds move the retry time.
	differs := false
	for seed := int64(1); seed < 20 && !differs; seed++ {
		s3, _, err := ApplyResponse(s, r, NewCtx(t0, seed, 3))
		if err != nil {
			t.Fatal(err)
		}
		differs = !s3.Tasks["a"].RetryAt.Equal(*s1.Tasks["a"].RetryAt)
	}
	if !differs {
		t.Fatal("the retry time does not depend on the random source")
	}
}

func TestTransitionsDoNotModifyTheirInput(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	s, _ = step(t, s, t0, request("a"))
	before := mustHash(t, s)
	snapshot := s.Clone()

	n, _ := step(t, s, t0, respond(okResponse(s, "a")))
	n, _ = step(t, n, t0, request("b"))
	n, _ = step(t, n, t0, func(s State, c Ctx) (State, Event, error) {
		return ApplyAction(s, Action{Type: Annotate, Key: "k", Value: json.RawMessage(`1`)}, c)
	})
	if n.Tasks["a"].Status != TaskCompleted || s.Tasks["a"].Status != TaskRunning {
		t.Fatal("the new state does not have its own task states")
	}

	if got := mustHash(t, s); got != before {
		t.Fatal("a transition or a change to its result modified the input state")
	}
	if !reflect.DeepEqual(s, snapshot) {
		t.Fatal("input state differs from its clone")
	}
	// Clone is deep: changing a clone's nested values leaves the original.
	c := s.Clone()
	c.Plan.Tasks[0].DependsOn = append(c.Plan.Tasks[0].DependsOn, "zz")
	*c.Tasks["a"].StartedAt = t0.Add(time.Hour)
	if mustHash(t, s) != before {
		t.Fatal("Clone shares memory with the original")
	}
}

func TestDecideOrderAndHalting(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	if got := actionIDs(Decide(s, t0)); got != "a" {
		t.Fatalf("first decision = %q, want a", got)
	}
	s, _ = step(t, s, t0, request("a"))
	if d := Decide(s, t0); len(d.Actions) != 0 || d.Finalize != nil {
		t.Fatalf("decision while a runs = %+v, want wait", d)
	}
	s, _ = step(t, s, t0, respond(okResponse(s, "a")))
	// B and C are both ready, in definition order, every time.
	for range 5 {
		if got := actionIDs(Decide(s, t0)); got != "b,c" {
			t.Fatalf("after a = %q, want b,c", got)
		}
	}
	s, _ = step(t, s, t0, request("b"))
	s, _ = step(t, s, t0, request("c"))
	s, _ = step(t, s, t0, respond(failResponse(s, "b", false)))
	// b failed: d is never requested; wait for c, then finalize.
	if d := Decide(s, t0); len(d.Actions) != 0 || d.Finalize != nil {
		t.Fatalf("decision after b failed with c running = %+v, want wait", d)
	}
	s, _ = step(t, s, t0, respond(okResponse(s, "c")))
	d := Decide(s, t0)
	if d.Finalize == nil || len(d.Actions) != 0 {
		t.Fatalf("decision after c = %+v, want finalize", d)
	}
	s, _ = step(t, s, t0, func(s State, c Ctx) (State, Event, error) { return Finalize(s, *d.Finalize, c) })
	if s.Status != RunFailed || s.Tasks["d"].Status != TaskPending {
		t.Fatalf("run %s, d %s; want FAILED with d never run", s.Status, s.Tasks["d"].Status)
	}
	if d := Decide(s, t0); !reflect.DeepEqual(d, Decision{}) {
		t.Fatalf("decision on finished run = %+v", d)
	}
}

func TestDecideLimits(t *testing.T) {
	t.Parallel()
	t.Run("run timeout aborts running tasks then finalizes", func(t *testing.T) {
		s := start(t, diamond(), Limits{Timeout: Duration(time.Minute)})
		if d := Decide(s, t0); d.WakeAt == nil || !d.WakeAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("WakeAt = %v, want the deadline", d.WakeAt)
		}
		s, _ = step(t, s, t0, request("a"))
		d := Decide(s, t0.Add(time.Minute))
		if d.Abort != "run timeout (1m0s) exceeded" {
			t.Fatalf("decision at deadline = %+v, want abort", d)
		}
		r := failResponse(s, "a", false)
		r.Error.Kind = ErrorAborted
		s, _ = step(t, s, t0.Add(time.Minute), respond(r))
		d = Decide(s, t0.Add(time.Minute))
		if d.Finalize == nil || d.Finalize.Reason != "run timeout (1m0s) exceeded" {
			t.Fatalf("decision after abort = %+v, want finalize with timeout reason", d)
		}
	})
	t.Run("max iterations stops new dispatches", func(t *testing.T) {
		s := start(t, diamond(), Limits{MaxIterations: 2})
		s, _ = step(t, s, t0, request("a"))
		s, _ = step(t, s, t0, respond(okResponse(s, "a")))
		if got := actionIDs(Decide(s, t0)); got != "b" {
			t.Fatalf("with one iteration left = %q, want b only", got)
		}
		s, _ = step(t, s, t0, request("b"))
		s, _ = step(t, s, t0, respond(okResponse(s, "b")))
		d := Decide(s, t0)
		if d.Finalize == nil || d.Finalize.Reason != "maximum iterations (2) reached" {
			t.Fatalf("decision = %+v, want finalize at the limit", d)
		}
	})
	t.Run("all completed finalizes COMPLETED", func(t *testing.T) {
		s := runAll(t, diamond(), nil)
		if s.Status != RunCompleted || s.Error != "" || s.FinishedAt == nil {
			t.Fatalf("run = %s %q", s.Status, s.Error)
		}
	})
}

func actionIDs(d Decision) string {
	var ids []string
	for _, a := range d.Actions {
		ids = append(ids, a.TaskID)
	}
	return strings.Join(ids, ",")
}

// runAll drives a plan to its end the way the executor does, with a fake
// clock: decide, request, respond (failing the tasks in fail once, retryably),
// finalize. It returns the final state and, through events, every event.
func runAll(t *testing.T, p Plan, fail map[string]bool, events ...*[]Event) State {
	t.Helper()
	var log []Event
	s, ev, err := Start(StartInfo{RunID: "run-1", Workflow: "wf", Project: "/p", Seed: 7, Plan: p,
		Limits: Limits{RetryBackoff: Duration(time.Second)}}, NewCtx(t0, 7, 1))
	if err != nil {
		t.Fatal(err)
	}
	log = append(log, ev)
	now := t0
	apply := func(fn func(State, Ctx) (State, Event, error)) {
		now = now.Add(1234567 * time.Nanosecond)
		var e Event
		s, e = step(t, s, now, fn)
		log = append(log, e)
	}
	for i := 0; s.Status == RunRunning; i++ {
		if i > 100 {
			t.Fatal("run does not end")
		}
		d := Decide(s, now)
		switch {
		case d.Finalize != nil:
			apply(func(s State, c Ctx) (State, Event, error) { return Finalize(s, *d.Finalize, c) })
		case len(d.Actions) > 0:
			for _, a := range d.Actions {
				apply(func(s State, c Ctx) (State, Event, error) { return ApplyAction(s, a, c) })
			}
			for _, a := range d.Actions {
				if fail[a.TaskID] {
					delete(fail, a.TaskID)
					apply(respond(failResponse(s, a.TaskID, true)))
					continue
				}
				apply(func(s State, c Ctx) (State, Event, error) {
					return ApplyAction(s, Action{Type: Annotate, TaskID: a.TaskID, Key: "seen-" + a.TaskID, Value: json.RawMessage(`[1,2]`)}, c)
				})
				apply(respond(okResponse(s, a.TaskID)))
			}
		case d.WakeAt != nil:
			now = *d.WakeAt
		default:
			t.Fatalf("decision %+v does nothing", d)
		}
	}
	for _, out := range events {
		*out = log
	}
	return s
}

func TestFoldRebuildsByteIdenticalState(t *testing.T) {
	t.Parallel()
	p := diamond()
	p.Tasks[1].Retries = 1
	var events []Event
	live := runAll(t, p, map[string]bool{"b": true}, &events)
	if live.Status != RunCompleted || live.Tasks["b"].Iterations != 2 {
		t.Fatalf("live run = %s, b iterations %d; want COMPLETED after a retry of b", live.Status, live.Tasks["b"].Iterations)
	}
	// The events travel as JSON (a stream, a table), then are folded.
	raw, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []Event
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	folded, err := Fold(decoded)
	if err != nil {
		t.Fatalf("Fold: %v", err)
	}
	lb, _ := json.Marshal(live)
	fb, _ := json.Marshal(folded)
	if string(lb) != string(fb) {
		t.Fatalf("folded state differs:\nlive   %s\nfolded %s", lb, fb)
	}
	if mustHash(t, live) != mustHash(t, folded) {
		t.Fatal("hashes differ")
	}
	// The state also survives its own JSON form unchanged (the state file).
	var reloaded State
	if err := json.Unmarshal(lb, &reloaded); err != nil {
		t.Fatal(err)
	}
	if mustHash(t, reloaded) != mustHash(t, live) {
		t.Fatal("state JSON round trip changes the hash")
	}
	// Folding a prefix gives an intermediate state that the rest extends.
	mid, err := Fold(decoded[:5])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range decoded[5:] {
		if mid, err = Apply(mid, e); err != nil {
			t.Fatal(err)
		}
	}
	if mustHash(t, mid) != mustHash(t, live) {
		t.Fatal("prefix fold + apply differs from the live state")
	}
}

func TestFoldDetectsTampering(t *testing.T) {
	t.Parallel()
	var events []Event
	runAll(t, diamond(), nil, &events)
	cases := []struct {
		name   string
		change func([]Event) []Event
		want   error
	}{
		{"status changed", func(e []Event) []Event { e[2].Status = "FAILED"; return e }, ErrReplayDivergence},
		{"dispatch id changed", func(e []Event) []Event { e[1].DispatchID = "x"; return e }, nil},
		{"event dropped", func(e []Event) []Event { return append(e[:2], e[3:]...) }, ErrBadEvent},
		{"wrong run", func(e []Event) []Event { e[3].RunID = "other"; return e }, ErrBadEvent},
		{"unknown type", func(e []Event) []Event { e[3].Type = "NOPE"; return e }, ErrBadEvent},
		{"no events", func([]Event) []Event { return nil }, ErrBadEvent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs := tc.change(append([]Event(nil), events...))
			_, err := Fold(evs)
			if err == nil {
				t.Fatal("Fold accepted a tampered log")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	a, err := CanonicalJSON(json.RawMessage(`{"b": [1, 2.50, {"y":1,"x":"<"}], "a": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(a), `{"a":null,"b":[1,2.50,{"x":"<","y":1}]}`; got != want {
		t.Fatalf("canonical = %s, want %s", got, want)
	}
}

func TestValidateState(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	bad := s.Clone()
	bad.Version = "9"
	delete(bad.Tasks, "d")
	r := *bad.Tasks["a"]
	r.Status = TaskRunning
	bad.Tasks["a"] = &r
	err := bad.Validate()
	if !errors.Is(err, ErrInvalidState) {
		t.Fatalf("Validate = %v", err)
	}
	for _, want := range []string{"version", `"d"`, "dispatch_id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
}

func TestPlanUpstream(t *testing.T) {
	t.Parallel()
	p := Plan{Tasks: []PlanTask{task("a"), task("x"), task("b", "a"), task("c", "b"), task("d", "c", "x")}}
	if got := strings.Join(p.Upstream("d"), ","); got != "a,x,b,c" {
		t.Fatalf("Upstream(d) = %s, want a,x,b,c", got)
	}
	if got := p.Upstream("a"); len(got) != 0 {
		t.Fatalf("Upstream(a) = %v", got)
	}
}

func mustHash(t *testing.T, s State) string {
	t.Helper()
	h, err := Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDecideN(t *testing.T) {
	t.Parallel()
	p := Plan{Tasks: []PlanTask{task("a"), task("b"), task("c")}}
	s := start(t, p, Limits{})
	if got := actionIDs(DecideN(s, t0, 2)); got != "a,b" {
		t.Fatalf("DecideN(2) = %s, want a,b", got)
	}
	d := DecideN(s, t0, 0)
	if len(d.Actions) != 0 || d.Finalize != nil {
		t.Fatalf("DecideN(0) = %+v, want nothing to do yet but no finalize", d)
	}
	if got := actionIDs(DecideN(s, t0, -1)); got != "a,b,c" {
		t.Fatalf("DecideN(-1) = %s", got)
	}
}
