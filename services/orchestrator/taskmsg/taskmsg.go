// Package taskmsg is the wire form of workflow task attempts on the task
// stream: the task.dispatched event an orchestrator publishes for an agent
// worker, and the task.completed or task.failed event the worker answers
// with. Both sides use it, so they cannot disagree.
//
// A dispatch is one attempt of one task (agent.Task.DispatchID,
// run/task/attempt). Its task.dispatched event has TaskID = the dispatch
// id, OwnerID = the run, Kind = the agent (the subject's last token, so a
// worker pool of an agent filters praetor.task.dispatched.*.<agent>),
// Handler = "workflow.agent", and Input = the task and its assembled context
// (Request). Its id is derived from the tenant and the dispatch id, so an
// orchestrator that re-dispatches the attempt after a restart publishes the
// same id: the stream's duplicate window and the worker's inbox drop it.
//
// The answer's id is derived from the dispatch event's id. task.completed
// carries the agent.Result as its Output — outputs as base64 in the JSON —
// up to a size limit; task.failed carries the error's text, whether it is
// permanent, and its class in the "errorclass" extension (agent, output,
// rejected, timeout), so the orchestrator classifies a remote failure
// exactly as it would a local one.
package taskmsg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// Handler is the TaskDispatched.Handler of workflow attempts.
const Handler = "workflow.agent"

// ExtErrorClass is the CloudEvents extension of a task.failed event that
// classifies the error.
const ExtErrorClass = "errorclass"

// ExtRedispatch marks ("true") a task.dispatched event published again for
// an attempt that was in flight when its orchestrator stopped: only such an
// event, or a redelivery, can be one a worker has already handled.
const ExtRedispatch = "redispatch"

// ExtReadyAt carries (RFC 3339, nanoseconds) when the orchestrator found a
// dispatched attempt ready to go out: the start of its dispatch latency,
// which a worker measures to its start. Informational only.
const ExtReadyAt = "readyat"

// SetReadyAt stamps a task.dispatched event with ExtReadyAt.
func SetReadyAt(ev *event.Event, at time.Time) {
	ev.SetExtension(ExtReadyAt, at.UTC().Format(time.RFC3339Nano))
}

// ReadyAt reads ExtReadyAt; zero when absent or malformed.
func ReadyAt(ev event.Event) time.Time {
	t, err := time.Parse(time.RFC3339Nano, events.ExtensionString(ev, ExtReadyAt))
	if err != nil {
		return time.Time{}
	}
	return t
}

// Redispatch reports whether a task.dispatched event carries ExtRedispatch.
func Redispatch(ev event.Event) bool {
	v := events.ExtensionString(ev, ExtRedispatch)
	return v == "true"
}

// Error classes.
const (
	ClassAgent    = "agent"
	ClassOutput   = "output"
	ClassRejected = "rejected"
	ClassTimeout  = "timeout"
)

// Sources of the events.
const (
	SourceOrchestrator = "/praetor/orchestrator"
	SourceWorker       = "/praetor/agent-worker"
)

// ErrTooLarge is wrapped when an event would exceed its size limit. It is
// permanent: the same attempt would be as large again.
var ErrTooLarge = errors.New("taskmsg: too large for one event")

// ErrNotWorkflow is returned by DecodeDispatched and DecodeOutcome for task
// events of other owners (the runner's background tasks share the stream).
var ErrNotWorkflow = errors.New("taskmsg: not a workflow task")

// Request is the Input of a workflow task.dispatched event.
type Request struct {
	Task    agent.Task    `json:"task"`
	Context agent.Context `json:"context"`
}

// DispatchEventID is the id of a dispatch's task.dispatched event.
func DispatchEventID(tenant, dispatchID string) string {
	return events.DeriveID("workflow-dispatch/"+tenant+"/"+dispatchID, "task.dispatched")
}

// ResultEventID is the id of the answer to a task.dispatched event.
func ResultEventID(dispatchEventID string) string {
	return events.DeriveID(dispatchEventID, "result")
}

// Dispatched builds the task.dispatched event of an attempt, at time at,
// that its dispatcher waits for until deadline (zero: no deadline). It
// fails with ErrTooLarge (permanent) when the event's data would exceed
// maxBytes (0: no limit).
func Dispatched(tenant string, t agent.Task, c agent.Context, at, deadline time.Time, maxBytes int) (event.Event, error) {
	input, err := json.Marshal(Request{Task: t, Context: c})
	if err != nil {
		return event.Event{}, events.Permanent(fmt.Errorf("taskmsg: encode task %s: %w", t.DispatchID, err))
	}
	p := contracts.TaskDispatched{TenantID: tenant, TaskID: t.DispatchID, Kind: t.Agent, Handler: Handler,
		OwnerID: t.RunID, Attempt: t.Attempt, Timeout: t.Timeout, Deadline: deadline.UTC(), Input: input}
	if maxBytes > 0 && len(input) > maxBytes {
		return event.Event{}, events.Permanent(fmt.Errorf("%w: the assembled context of task %s is %d bytes encoded, over the limit of %d; "+
			"shrink its inputs (input files and upstream outputs) or raise the limit (and the NATS server's max_payload)",
			ErrTooLarge, t.TaskID, len(input), maxBytes))
	}
	return contracts.NewEvent(contracts.Meta{ID: DispatchEventID(tenant, t.DispatchID), Source: SourceOrchestrator, Time: at}, p)
}

// Dispatch is a workflow task.dispatched event read back.
type Dispatch struct {
	Tenant string
	Request
	// Deadline is when the dispatcher stops waiting for the answer; zero
	// when it did not say.
	Deadline time.Time
}

// DecodeDispatched reads a workflow task.dispatched event. A broken one is a
// permanent error; another owner's task wraps ErrNotWorkflow.
func DecodeDispatched(ev event.Event) (Dispatch, error) {
	td, err := contracts.DecodeAs[contracts.TaskDispatched](ev)
	if err != nil {
		return Dispatch{}, err
	}
	if td.Handler != Handler {
		return Dispatch{}, events.Permanent(fmt.Errorf("%w: handler %q", ErrNotWorkflow, td.Handler))
	}
	var r Request
	if err := json.Unmarshal(td.Input, &r); err != nil {
		return Dispatch{}, events.Permanent(fmt.Errorf("taskmsg: task %s: input: %w", td.TaskID, err))
	}
	t := r.Task
	if t.DispatchID != td.TaskID || t.RunID != td.OwnerID || t.Agent != td.Kind || t.Attempt != td.Attempt {
		return Dispatch{}, events.Permanent(fmt.Errorf("taskmsg: task %s: the input's task (%s, run %s, agent %s, attempt %d) does not match the event",
			td.TaskID, t.DispatchID, t.RunID, t.Agent, t.Attempt))
	}
	return Dispatch{Tenant: td.TenantID, Request: r, Deadline: td.Deadline}, nil
}

// Completed builds the task.completed answer to the dispatch event
// parentID. It fails with ErrTooLarge when the result's encoding (outputs in
// base64) exceeds maxBytes (0: no limit).
func Completed(tenant, parentID string, t agent.Task, r agent.Result, at time.Time, maxBytes int) (event.Event, error) {
	out, err := json.Marshal(r)
	if err != nil {
		return event.Event{}, fmt.Errorf("taskmsg: encode result of %s: %w", t.DispatchID, err)
	}
	if maxBytes > 0 && len(out) > maxBytes {
		sizes := make([]string, 0, len(r.Outputs))
		for name, c := range r.Outputs {
			sizes = append(sizes, fmt.Sprintf("%s %d bytes", name, len(c)))
		}
		return event.Event{}, events.Permanent(fmt.Errorf("%w: the result of task %s is %d bytes encoded (outputs travel base64 in the event: %s), "+
			"over the limit of %d; produce smaller outputs or raise the limit (and the NATS server's max_payload)",
			ErrTooLarge, t.TaskID, len(out), strings.Join(sizes, ", "), maxBytes))
	}
	p := contracts.TaskCompleted{TenantID: tenant, TaskID: t.DispatchID, Kind: t.Agent, OwnerID: t.RunID, Attempt: t.Attempt, Output: out}
	return contracts.NewEvent(contracts.Meta{ID: ResultEventID(parentID), Source: SourceWorker, Time: at}, p)
}

// Failed builds the task.failed answer to the dispatch event parentID.
func Failed(tenant, parentID string, t agent.Task, cause error, at time.Time) (event.Event, error) {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	p := contracts.TaskFailed{TenantID: tenant, TaskID: t.DispatchID, Kind: t.Agent, OwnerID: t.RunID, Attempt: t.Attempt,
		Error: msg, Permanent: events.IsPermanent(cause)}
	ev, err := contracts.NewEvent(contracts.Meta{ID: ResultEventID(parentID), Source: SourceWorker, Time: at}, p)
	if err != nil {
		return event.Event{}, err
	}
	ev.SetExtension(ExtErrorClass, Class(cause))
	return ev, nil
}

// Class classifies an attempt's error as the executor would.
func Class(err error) string {
	var rejected *agent.RejectedError
	var output *agent.OutputError
	switch {
	case errors.As(err, &rejected):
		return ClassRejected
	case errors.As(err, &output):
		return ClassOutput
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	}
	return ClassAgent
}

// Outcome is an answer read back.
type Outcome struct {
	TenantID   string `json:"tenant_id"`
	RunID      string `json:"run_id"`
	DispatchID string `json:"dispatch_id"`
	Attempt    int    `json:"attempt"`
	// EventID is the answer's event id.
	EventID string `json:"event_id"`
	OK      bool   `json:"ok"`
	// Result is a completed attempt's result.
	Result agent.Result `json:"result,omitempty"`
	// Error, Class and Permanent describe a failed attempt.
	Error     string `json:"error,omitempty"`
	Class     string `json:"class,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`
}

// DecodeOutcome reads a task.completed or task.failed event. Answers to
// other owners' tasks wrap ErrNotWorkflow.
func DecodeOutcome(ev event.Event) (Outcome, error) {
	p, err := contracts.Decode(ev)
	if err != nil {
		return Outcome{}, err
	}
	switch a := p.(type) {
	case *contracts.TaskCompleted:
		if err := workflowDispatch(a.TaskID, a.OwnerID, a.Attempt); err != nil {
			return Outcome{}, err
		}
		o := Outcome{TenantID: a.TenantID, RunID: a.OwnerID, DispatchID: a.TaskID, Attempt: a.Attempt, EventID: ev.ID(), OK: true}
		if err := json.Unmarshal(a.Output, &o.Result); err != nil {
			return Outcome{}, events.Permanent(fmt.Errorf("taskmsg: result of %s: %w", a.TaskID, err))
		}
		return o, nil
	case *contracts.TaskFailed:
		if err := workflowDispatch(a.TaskID, a.OwnerID, a.Attempt); err != nil {
			return Outcome{}, err
		}
		class := events.ExtensionString(ev, ExtErrorClass)
		switch class {
		case ClassAgent, ClassOutput, ClassRejected, ClassTimeout:
		default:
			class = ClassAgent
		}
		return Outcome{TenantID: a.TenantID, RunID: a.OwnerID, DispatchID: a.TaskID, Attempt: a.Attempt, EventID: ev.ID(),
			Error: a.Error, Class: class, Permanent: a.Permanent}, nil
	}
	return Outcome{}, fmt.Errorf("%w: %s is not an answer", ErrNotWorkflow, ev.Type())
}

// workflowDispatch checks that a task id is a workflow dispatch id of the
// owner run: run/task/attempt.
func workflowDispatch(taskID, owner string, attempt int) error {
	rest, ok := strings.CutPrefix(taskID, owner+"/")
	i := strings.LastIndexByte(rest, '/')
	if !ok || i <= 0 || rest[i+1:] != strconv.Itoa(attempt) {
		return fmt.Errorf("%w: task %s of %s", ErrNotWorkflow, taskID, owner)
	}
	return nil
}

// Err rebuilds a failed attempt's error: its text as the worker saw it,
// and the classes the executor tests for (agent.RejectedError,
// agent.OutputError, context.DeadlineExceeded, events.Permanent).
func (o Outcome) Err() error {
	if o.OK {
		return nil
	}
	e := &remoteError{msg: o.Error}
	switch o.Class {
	case ClassRejected:
		e.wrapped = append(e.wrapped, &agent.RejectedError{Reason: o.Error})
	case ClassOutput:
		e.wrapped = append(e.wrapped, &agent.OutputError{Reason: o.Error})
	case ClassTimeout:
		e.wrapped = append(e.wrapped, context.DeadlineExceeded)
	}
	if o.Permanent {
		e.wrapped = append(e.wrapped, &events.PermanentError{Err: errors.New(o.Error)})
	}
	return e
}

// remoteError is an error that happened in a worker: its text is the
// worker's, and it unwraps to the classes it had there.
type remoteError struct {
	msg     string
	wrapped []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.wrapped }
