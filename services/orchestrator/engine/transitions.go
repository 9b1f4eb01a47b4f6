package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ActionType names an action.
type ActionType string

// The actions of seed 004.
const (
	// RequestWork dispatches a PENDING work task whose dependencies are
	// COMPLETED: a new attempt, a new dispatch id, RUNNING.
	RequestWork ActionType = "REQUEST_WORK"
	// RequestApproval does the same for an approval task.
	RequestApproval ActionType = "REQUEST_APPROVAL"
	// Annotate stores Value under Key in the run's artifacts.
	Annotate ActionType = "ANNOTATE"
)

// Action is an input of ApplyAction.
type Action struct {
	Type ActionType `json:"type"`
	// TaskID is the task to dispatch; for Annotate, the task the annotation
	// is about (optional).
	TaskID string `json:"task_id,omitempty"`
	// Key and Value are an annotation: the key holds no colon (those name
	// task outputs), the value is any JSON.
	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Response is an agent's answer to one attempt, the input of ApplyResponse.
type Response struct {
	TaskID     string `json:"task_id"`
	Attempt    int    `json:"attempt"`
	DispatchID string `json:"dispatch_id"`
	// OK is true for a successful attempt.
	OK bool `json:"ok"`
	// Outputs are the stored outputs of a successful attempt, one per
	// declared output.
	Outputs []OutputRef `json:"outputs,omitempty"`
	// Handover is a JSON object (or empty) the task hands downstream.
	Handover json.RawMessage `json:"handover,omitempty"`
	// Error describes a failed attempt.
	Error *TaskError `json:"error,omitempty"`
}

// Finalization is the input of Finalize.
type Finalization struct {
	// Reason, when set, fails the run with it (a safety limit, an abort).
	// Without it the run is COMPLETED when every task is, FAILED otherwise.
	Reason string `json:"reason,omitempty"`
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Start opens a run: every task PENDING, the run RUNNING.
func Start(info StartInfo, c Ctx) (State, Event, error) {
	if err := c.validate(); err != nil {
		return State{}, Event{}, err
	}
	if !runIDPattern.MatchString(info.RunID) {
		return State{}, Event{}, fmt.Errorf("%w: run id %q must be 1-128 of [A-Za-z0-9_-]", ErrInvalidPlan, info.RunID)
	}
	if err := info.Plan.validate(); err != nil {
		return State{}, Event{}, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
	}
	if info.Limits.MaxIterations < 0 || info.Limits.Timeout < 0 || info.Limits.RetryBackoff < 0 || info.Limits.MaxRetryBackoff < 0 {
		return State{}, Event{}, fmt.Errorf("%w: limits must not be negative", ErrInvalidPlan)
	}
	info.Limits = info.Limits.withDefaults(info.Plan)
	now := c.now()
	s := State{
		Version:   StateVersion,
		RunID:     info.RunID,
		Workflow:  info.Workflow,
		Project:   info.Project,
		StartedAt: now,
		Status:    RunRunning,
		Seed:      info.Seed,
		Limits:    info.Limits,
		Plan:      info.Plan,
		Tasks:     make(map[string]*TaskState, len(info.Plan.Tasks)),
		Artifacts: map[string]Artifact{},
	}
	for _, t := range info.Plan.Tasks {
		s.Tasks[t.ID] = &TaskState{Status: TaskPending, Outputs: []string{}}
	}
	ev := Event{Type: EventRunStarted, At: now, Status: string(RunRunning), Start: &info}
	return s.emit(ev)
}

// ApplyAction applies a REQUEST_WORK, REQUEST_APPROVAL or ANNOTATE action.
func ApplyAction(s State, a Action, c Ctx) (State, Event, error) {
	ch := NewChange(s)
	ev, err := ch.ApplyAction(a, c)
	if err != nil {
		return s, Event{}, err
	}
	return ch.State(), ev, nil
}

// ApplyAction applies a REQUEST_WORK, REQUEST_APPROVAL or ANNOTATE action
// to the change's state.
func (ch *Change) ApplyAction(a Action, c Ctx) (Event, error) {
	if err := ch.s.accepting(c); err != nil {
		return Event{}, err
	}
	now := c.now()
	switch a.Type {
	case RequestWork, RequestApproval:
		return ch.request(a, now)
	case Annotate:
		return ch.annotate(a, now)
	default:
		return Event{}, fmt.Errorf("%w: unknown action type %q", ErrInvalidAction, a.Type)
	}
}

func (ch *Change) request(a Action, now time.Time) (Event, error) {
	s := ch.s
	pt, ok := s.Plan.Task(a.TaskID)
	if !ok {
		return Event{}, fmt.Errorf("%w: %q", ErrUnknownTask, a.TaskID)
	}
	want := RequestWork
	if pt.Kind == KindApproval {
		want = RequestApproval
	}
	if a.Type != want {
		return Event{}, fmt.Errorf("%w: task %q is a %s task, request it with %s", ErrInvalidAction, pt.ID, pt.Kind, want)
	}
	t := s.task(pt.ID)
	if t.Status != TaskPending {
		return Event{}, fmt.Errorf("%w: task %q is %s, not PENDING", ErrInvalidAction, pt.ID, t.Status)
	}
	for _, d := range pt.DependsOn {
		if st := s.Tasks[d].Status; st != TaskCompleted {
			return Event{}, fmt.Errorf("%w: task %q depends on %q, which is %s", ErrInvalidAction, pt.ID, d, st)
		}
	}
	if t.RetryAt != nil && now.Before(*t.RetryAt) {
		return Event{}, fmt.Errorf("%w: task %q may retry at %s, not before", ErrInvalidAction, pt.ID, t.RetryAt.Format(time.RFC3339Nano))
	}
	if s.Iterations >= s.Limits.MaxIterations {
		return Event{}, fmt.Errorf("%w (%d)", ErrMaxIterations, s.Limits.MaxIterations)
	}
	t.Status = TaskRunning
	t.Iterations++
	t.DispatchID = DispatchID(s.RunID, pt.ID, t.Iterations)
	t.RetryAt = nil
	if t.StartedAt == nil {
		t.StartedAt = &now
	}
	typ := EventWorkRequested
	if a.Type == RequestApproval {
		typ = EventApprovalRequested
	}
	ev, h, err := s.stamp(Event{Type: typ, At: now, TaskID: pt.ID, Attempt: t.Iterations,
		DispatchID: t.DispatchID, Status: string(TaskRunning)})
	if err != nil {
		return Event{}, err
	}
	ch.s.Iterations++
	ch.putTask(pt.ID, &t)
	ch.commit(ev, h)
	return ev, nil
}

func (ch *Change) annotate(a Action, now time.Time) (Event, error) {
	if a.Key == "" || strings.Contains(a.Key, ":") {
		return Event{}, fmt.Errorf("%w: annotation key %q must be non-empty and hold no ':' (reserved for task outputs)", ErrInvalidAction, a.Key)
	}
	if a.TaskID != "" {
		if _, ok := ch.s.Plan.Task(a.TaskID); !ok {
			return Event{}, fmt.Errorf("%w: annotation of %q", ErrUnknownTask, a.TaskID)
		}
	}
	if len(a.Value) == 0 {
		return Event{}, fmt.Errorf("%w: annotation %q has no value", ErrInvalidAction, a.Key)
	}
	v, err := canonicalize(a.Value)
	if err != nil {
		return Event{}, fmt.Errorf("%w: annotation %q is not JSON: %v", ErrInvalidAction, a.Key, err)
	}
	ev, h, err := ch.s.stamp(Event{Type: EventAnnotated, At: now, TaskID: a.TaskID, Key: a.Key, Value: v})
	if err != nil {
		return Event{}, err
	}
	ch.putArtifact(a.Key, Artifact{Kind: ArtifactAnnotation, Task: a.TaskID, Value: v, At: now})
	ch.commit(ev, h)
	return ev, nil
}

// ApplyResponse applies an agent's answer to the task's current attempt.
func ApplyResponse(s State, r Response, c Ctx) (State, Event, error) {
	ch := NewChange(s)
	ev, err := ch.ApplyResponse(r, c)
	if err != nil {
		return s, Event{}, err
	}
	return ch.State(), ev, nil
}

// ApplyResponse applies an agent's answer to the task's current attempt in
// the change's state.
func (ch *Change) ApplyResponse(r Response, c Ctx) (Event, error) {
	s := ch.s
	if err := s.accepting(c); err != nil {
		return Event{}, err
	}
	pt, ok := s.Plan.Task(r.TaskID)
	if !ok {
		return Event{}, fmt.Errorf("%w: %q", ErrUnknownTask, r.TaskID)
	}
	t := s.task(pt.ID)
	if t.Status != TaskRunning || r.Attempt != t.Iterations || r.DispatchID != t.DispatchID {
		return Event{}, fmt.Errorf("%w: task %q is %s at attempt %d (%s); response is for attempt %d (%s)",
			ErrStaleResponse, pt.ID, t.Status, t.Iterations, t.DispatchID, r.Attempt, r.DispatchID)
	}
	now := c.now()
	ev := Event{Type: EventAgentResponded, At: now, TaskID: pt.ID, Attempt: r.Attempt, DispatchID: r.DispatchID}
	var arts []Artifact
	if r.OK {
		if r.Error != nil {
			return Event{}, fmt.Errorf("%w: task %q: a successful response carries an error", ErrInvalidResponse, pt.ID)
		}
		outs, err := matchOutputs(pt, r.Outputs)
		if err != nil {
			return Event{}, err
		}
		handover, err := canonicalHandover(pt.ID, r.Handover)
		if err != nil {
			return Event{}, err
		}
		t.Status = TaskCompleted
		t.CompletedAt = &now
		t.Outputs = make([]string, len(outs))
		arts = make([]Artifact, len(outs))
		for i, o := range outs {
			t.Outputs[i] = o.Name
			arts[i] = Artifact{Kind: ArtifactOutput, Task: pt.ID, Name: o.Name, Path: o.Path, SHA256: o.SHA256, Size: o.Size, At: now}
		}
		t.Handover = handover
		t.Error = nil
		ev.Outputs, ev.Handover = outs, handover
	} else {
		if r.Error == nil || r.Error.Message == "" {
			return Event{}, fmt.Errorf("%w: task %q: a failed response needs an error message", ErrInvalidResponse, pt.ID)
		}
		if len(r.Outputs) > 0 || len(r.Handover) > 0 {
			return Event{}, fmt.Errorf("%w: task %q: a failed response carries outputs", ErrInvalidResponse, pt.ID)
		}
		e := *r.Error
		e.Attempt = r.Attempt
		t.Error = &e
		if e.Retryable && t.Iterations < 1+pt.Retries {
			at := now.Add(backoff(s.Limits, t.Iterations, c)).Truncate(time.Microsecond)
			t.Status = TaskPending
			t.RetryAt = &at
		} else {
			t.Status = TaskFailed
			t.CompletedAt = &now
		}
		ev.Error = &e
	}
	ev.Status = string(t.Status)
	ev, h, err := s.stamp(ev)
	if err != nil {
		return Event{}, err
	}
	for _, a := range arts {
		ch.putArtifact(pt.ID+":"+a.Name, a)
	}
	ch.putTask(pt.ID, &t)
	ch.commit(ev, h)
	return ev, nil
}

// matchOutputs checks that a successful response has exactly the declared
// outputs, and returns them in declared order.
func matchOutputs(pt PlanTask, got []OutputRef) ([]OutputRef, error) {
	byName := make(map[string]OutputRef, len(got))
	for _, o := range got {
		if !slices.Contains(pt.Outputs, o.Name) {
			return nil, fmt.Errorf("%w: task %q: output %q is not declared (declared: %s)", ErrInvalidResponse, pt.ID, o.Name, strings.Join(pt.Outputs, ", "))
		}
		if _, dup := byName[o.Name]; dup {
			return nil, fmt.Errorf("%w: task %q: output %q given twice", ErrInvalidResponse, pt.ID, o.Name)
		}
		if o.SHA256 == "" || o.Path == "" {
			return nil, fmt.Errorf("%w: task %q: output %q has no stored path and sha256", ErrInvalidResponse, pt.ID, o.Name)
		}
		byName[o.Name] = o
	}
	outs := make([]OutputRef, 0, len(pt.Outputs))
	for _, name := range pt.Outputs {
		o, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%w: task %q: missing output %q", ErrInvalidResponse, pt.ID, name)
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func canonicalHandover(task string, h json.RawMessage) (json.RawMessage, error) {
	if len(h) == 0 {
		return nil, nil
	}
	c, err := canonicalize(h)
	if err != nil {
		return nil, fmt.Errorf("%w: task %q: handover is not JSON: %v", ErrInvalidResponse, task, err)
	}
	if c[0] != '{' {
		return nil, fmt.Errorf("%w: task %q: handover must be a JSON object", ErrInvalidResponse, task)
	}
	if string(c) == "{}" {
		return nil, nil
	}
	return c, nil
}

// backoff is the wait before attempt+1: exponential with equal jitter from
// the context's seeded source.
func backoff(l Limits, attempt int, c Ctx) time.Duration {
	base := time.Duration(l.RetryBackoff)
	if base <= 0 {
		return 0
	}
	limit := time.Duration(l.MaxRetryBackoff)
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	half := d / 2
	return half + time.Duration(c.Rand.Int64N(int64(d-half)+1))
}

// Finalize closes the run. It needs no attempt out: the executor lets running
// attempts finish, or aborts them, first.
func Finalize(s State, f Finalization, c Ctx) (State, Event, error) {
	ch := NewChange(s)
	ev, err := ch.Finalize(f, c)
	if err != nil {
		return s, Event{}, err
	}
	return ch.State(), ev, nil
}

// Finalize closes the run of the change's state.
func (ch *Change) Finalize(f Finalization, c Ctx) (Event, error) {
	s := ch.s
	if err := s.accepting(c); err != nil {
		return Event{}, err
	}
	var running, failed, notRun []string
	for _, pt := range s.Plan.Tasks {
		switch s.Tasks[pt.ID].Status {
		case TaskRunning:
			running = append(running, pt.ID)
		case TaskFailed:
			failed = append(failed, pt.ID)
		case TaskPending:
			notRun = append(notRun, pt.ID)
		}
	}
	if len(running) > 0 {
		return Event{}, fmt.Errorf("%w: %s", ErrTasksRunning, strings.Join(running, ", "))
	}
	now := c.now()
	var (
		status RunStatus
		reason string
	)
	switch {
	case f.Reason != "":
		status, reason = RunFailed, f.Reason
	case len(failed) > 0:
		e := s.Tasks[failed[0]].Error
		msg := "failed"
		if e != nil {
			msg = e.Message
		}
		status = RunFailed
		reason = fmt.Sprintf("task %s failed: %s", failed[0], msg)
		if len(failed) > 1 {
			reason += fmt.Sprintf(" (and %d more failed: %s)", len(failed)-1, strings.Join(failed[1:], ", "))
		}
	case len(notRun) > 0:
		status = RunFailed
		reason = "tasks never ran: " + strings.Join(notRun, ", ")
	default:
		status = RunCompleted
	}
	// The event carries the run's error as its reason, so a replay of it
	// yields the same error and status.
	ev, h, err := s.stamp(Event{Type: EventRunFinalized, At: now, Status: string(status), Reason: reason})
	if err != nil {
		return Event{}, err
	}
	ch.s.FinishedAt = &now
	ch.s.Status, ch.s.Error = status, reason
	ch.commit(ev, h)
	return ev, nil
}

// accepting checks the context and that the run still takes inputs.
func (s State) accepting(c Ctx) error {
	if err := c.validate(); err != nil {
		return err
	}
	if s.Version == "" || s.Tasks == nil {
		return fmt.Errorf("%w: state was never started", ErrInvalidState)
	}
	if s.Status != RunRunning {
		return fmt.Errorf("%w: run %s is %s", ErrRunNotRunning, s.RunID, s.Status)
	}
	return nil
}

// emit numbers the event, extends the log hash, and returns both.
func (s State) emit(e Event) (State, Event, error) {
	e, h, err := s.stamp(e)
	if err != nil {
		return s, Event{}, err
	}
	s.Seq = e.Seq
	s.LogHash = h
	return s, e, nil
}

// stamp numbers the event that follows s and computes the log hash after
// it, changing nothing: a transition stamps its event before it changes the
// state, so a failure leaves the state as it was.
func (s State) stamp(e Event) (Event, string, error) {
	e.Seq = s.Seq + 1
	e.RunID = s.RunID
	h, err := chain(s.LogHash, e)
	if err != nil {
		return Event{}, "", err
	}
	return e, h, nil
}
