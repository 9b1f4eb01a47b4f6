package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// EventType names what a transition did.
type EventType string

// Event types, one per transition.
const (
	// EventRunStarted opens the run (Start). Start holds the plan.
	EventRunStarted EventType = "RUN_STARTED"
	// EventWorkRequested moves a work task to RUNNING (REQUEST_WORK).
	EventWorkRequested EventType = "WORK_REQUESTED"
	// EventApprovalRequested moves an approval task to RUNNING (REQUEST_APPROVAL).
	EventApprovalRequested EventType = "APPROVAL_REQUESTED"
	// EventAnnotated stores Key=Value in the artifacts (ANNOTATE).
	EventAnnotated EventType = "ANNOTATED"
	// EventAgentResponded applies an agent's answer; Status is the task's
	// new status: COMPLETED, FAILED, or PENDING when it will be retried.
	EventAgentResponded EventType = "AGENT_RESPONDED"
	// EventRunFinalized closes the run; Status is COMPLETED or FAILED and
	// Reason is the run's error when FAILED.
	EventRunFinalized EventType = "RUN_FINALIZED"
)

// StartInfo is the input of Start: who the run is and what it will do.
type StartInfo struct {
	// RunID identifies the run: 1-128 of [A-Za-z0-9_-], so it can be a
	// subject token.
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	// Project is the project directory (or name) the run works on.
	Project string `json:"project"`
	// Seed seeds every random draw of the run.
	Seed   int64  `json:"seed"`
	Limits Limits `json:"limits"`
	Plan   Plan   `json:"plan"`
}

// Event is one entry of a run's log: the input of one transition and its
// outcome. Events of a run have consecutive Seq from 1; folding them in
// order rebuilds the run's state.
//
// Mapping to pkg/contracts: RUN_STARTED is workflow.started (Definition =
// JSON of Start); WORK_REQUESTED, APPROVAL_REQUESTED and AGENT_RESPONDED are
// workflow.task.updated; RUN_FINALIZED is workflow.finished (Error = Reason);
// ANNOTATED has no contract yet.
type Event struct {
	Seq   int64     `json:"seq"`
	At    time.Time `json:"at"`
	Type  EventType `json:"type"`
	RunID string    `json:"run_id"`
	// TaskID is the task a task event is about, or the task a hook annotated.
	TaskID     string `json:"task_id,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	DispatchID string `json:"dispatch_id,omitempty"`
	// Status is the task's status after a task event, the run's status
	// after RUN_STARTED and RUN_FINALIZED.
	Status   string          `json:"status,omitempty"`
	Outputs  []OutputRef     `json:"outputs,omitempty"`
	Handover json.RawMessage `json:"handover,omitempty"`
	Error    *TaskError      `json:"error,omitempty"`
	// Key and Value are an annotation.
	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Reason is why a run was finalized as FAILED.
	Reason string     `json:"reason,omitempty"`
	Start  *StartInfo `json:"start,omitempty"`
}

// ID is a stable id for the event, derived from the run and the sequence
// number, so a re-published event is recognised as a duplicate.
func (e Event) ID() string { return fmt.Sprintf("%s/%d", e.RunID, e.Seq) }

// Apply folds one event into s: it rebuilds the transition's input and
// context from the event, applies the transition, and checks that the
// transition emits the very same event. For RUN_STARTED, s is ignored.
func Apply(s State, e Event) (State, error) {
	ch := NewChange(s)
	if err := ch.Apply(e); err != nil {
		return s, err
	}
	return ch.State(), nil
}

// Apply folds one event into the change's state, as Apply does. After an
// error the change is of no further use: a transition that emitted another
// event than the recorded one has already been applied to it.
func (ch *Change) Apply(e Event) error {
	if e.Type == EventRunStarted {
		if e.Start == nil {
			return fmt.Errorf("%w: event %d: RUN_STARTED without start", ErrBadEvent, e.Seq)
		}
		if e.Seq != 1 {
			return fmt.Errorf("%w: RUN_STARTED has seq %d, want 1", ErrBadEvent, e.Seq)
		}
		got, ev, err := Start(*e.Start, NewCtx(e.At, e.Start.Seed, 1))
		if err != nil {
			return fmt.Errorf("replay event 1: %w", err)
		}
		if err := same(ev, e); err != nil {
			return err
		}
		// The new state's maps are its own: nobody else holds them yet.
		*ch = Change{s: got, ownTasks: true, ownArts: true}
		return nil
	}
	s := ch.s
	if e.RunID != s.RunID {
		return fmt.Errorf("%w: event %d belongs to run %q, state to %q", ErrBadEvent, e.Seq, e.RunID, s.RunID)
	}
	if e.Seq != s.Seq+1 {
		return fmt.Errorf("%w: event seq %d does not follow state seq %d", ErrBadEvent, e.Seq, s.Seq)
	}
	c := NewCtx(e.At, s.Seed, e.Seq)
	var (
		ev  Event
		err error
	)
	switch e.Type {
	case EventWorkRequested:
		ev, err = ch.ApplyAction(Action{Type: RequestWork, TaskID: e.TaskID}, c)
	case EventApprovalRequested:
		ev, err = ch.ApplyAction(Action{Type: RequestApproval, TaskID: e.TaskID}, c)
	case EventAnnotated:
		ev, err = ch.ApplyAction(Action{Type: Annotate, TaskID: e.TaskID, Key: e.Key, Value: e.Value}, c)
	case EventAgentResponded:
		r := Response{TaskID: e.TaskID, Attempt: e.Attempt, DispatchID: e.DispatchID,
			Outputs: e.Outputs, Handover: e.Handover, Error: e.Error}
		r.OK = TaskStatus(e.Status) == TaskCompleted
		ev, err = ch.ApplyResponse(r, c)
	case EventRunFinalized:
		ev, err = ch.Finalize(Finalization{Reason: e.Reason}, c)
	default:
		return fmt.Errorf("%w: event %d has unknown type %q", ErrBadEvent, e.Seq, e.Type)
	}
	if err != nil {
		return fmt.Errorf("replay event %d (%s): %w", e.Seq, e.Type, err)
	}
	return same(ev, e)
}

// Fold rebuilds a run's state from its events, in order.
func Fold(events []Event) (State, error) {
	if len(events) == 0 {
		return State{}, fmt.Errorf("%w: no events", ErrBadEvent)
	}
	var ch Change
	for _, e := range events {
		if err := ch.Apply(e); err != nil {
			return State{}, err
		}
	}
	return ch.State(), nil
}

// same checks that a re-applied transition emitted the recorded event.
func same(got, want Event) error {
	g, err := CanonicalJSON(got)
	if err != nil {
		return err
	}
	w, err := CanonicalJSON(want)
	if err != nil {
		return fmt.Errorf("%w: event %d: %v", ErrBadEvent, want.Seq, err)
	}
	if !bytes.Equal(g, w) {
		return fmt.Errorf("%w at event %d: recorded %s, re-applied %s", ErrReplayDivergence, want.Seq, w, g)
	}
	return nil
}
