// Package runevents carries a workflow run's engine events on the event
// log: each engine.Event maps one to one onto a workflow.* event of
// pkg/contracts (RUN_STARTED to workflow.started, the task transitions to
// workflow.task.updated, ANNOTATED to workflow.annotated, RUN_FINALIZED to
// workflow.finished) and back, losing nothing, so folding the events read
// from the stream rebuilds the live state with the same hash.
//
// Event ids are derived from the tenant, the run and the sequence number:
// the same change always has the same id, so a republished one is dropped by
// the stream's duplicate window and a reader can tell copies apart.
package runevents

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// Source is the CloudEvents source of the events the orchestrator publishes.
const Source = "/praetor/orchestrator"

// ErrNotRunEvent is returned by FromCloudEvent for a workflow event that is
// no transition of a run (workflow.requested) or not a workflow event.
var ErrNotRunEvent = errors.New("runevents: not a run transition")

// EventID is the id of the event of change seq of a run.
func EventID(tenant, runID string, seq int64) string {
	return events.DeriveID("workflow/"+tenant+"/"+runID, strconv.FormatInt(seq, 10))
}

// Payload maps an engine event to its contract.
func Payload(tenant string, e engine.Event) (contracts.Payload, error) {
	switch e.Type {
	case engine.EventRunStarted:
		if e.Start == nil {
			return nil, fmt.Errorf("runevents: event %d: RUN_STARTED without its start", e.Seq)
		}
		def, err := json.Marshal(e.Start)
		if err != nil {
			return nil, fmt.Errorf("runevents: encode start of run %s: %w", e.RunID, err)
		}
		return contracts.WorkflowStarted{TenantID: tenant, RunID: e.RunID, Workflow: e.Start.Workflow,
			Definition: def, Seed: e.Start.Seed, StartedAt: e.At}, nil
	case engine.EventWorkRequested, engine.EventApprovalRequested, engine.EventAgentResponded:
		w := contracts.WorkflowTaskUpdated{TenantID: tenant, RunID: e.RunID, Seq: e.Seq, TaskID: e.TaskID,
			Transition: string(e.Type), Status: e.Status, Attempt: e.Attempt, DispatchID: e.DispatchID,
			Handover: e.Handover, At: e.At}
		for _, o := range e.Outputs {
			w.Outputs = append(w.Outputs, o.Name)
			w.Artifacts = append(w.Artifacts, contracts.WorkflowArtifact{Name: o.Name, Path: o.Path, SHA256: o.SHA256, Size: o.Size})
		}
		if e.Error != nil {
			w.Error, w.ErrorKind, w.Retryable = e.Error.Message, string(e.Error.Kind), e.Error.Retryable
		}
		return w, nil
	case engine.EventAnnotated:
		return contracts.WorkflowAnnotated{TenantID: tenant, RunID: e.RunID, Seq: e.Seq, TaskID: e.TaskID,
			Key: e.Key, Value: e.Value, At: e.At}, nil
	case engine.EventRunFinalized:
		return contracts.WorkflowFinished{TenantID: tenant, RunID: e.RunID, Seq: e.Seq, Status: e.Status,
			Error: e.Reason, At: e.At}, nil
	}
	return nil, fmt.Errorf("runevents: event %d has unknown type %q", e.Seq, e.Type)
}

// FromPayload maps a contract back to the engine event it was made from.
func FromPayload(p contracts.Payload) (engine.Event, error) {
	switch w := p.(type) {
	case *contracts.WorkflowStarted:
		return FromPayload(*w)
	case contracts.WorkflowStarted:
		if len(w.Definition) == 0 {
			return engine.Event{}, fmt.Errorf("runevents: workflow.started of run %s has no definition", w.RunID)
		}
		var info engine.StartInfo
		if err := json.Unmarshal(w.Definition, &info); err != nil {
			return engine.Event{}, fmt.Errorf("runevents: workflow.started of run %s: definition: %w", w.RunID, err)
		}
		return engine.Event{Seq: 1, At: w.StartedAt, Type: engine.EventRunStarted, RunID: w.RunID,
			Status: string(engine.RunRunning), Start: &info}, nil
	case *contracts.WorkflowTaskUpdated:
		return FromPayload(*w)
	case contracts.WorkflowTaskUpdated:
		e := engine.Event{Seq: w.Seq, At: w.At, Type: engine.EventType(w.Transition), RunID: w.RunID, TaskID: w.TaskID,
			Attempt: w.Attempt, DispatchID: w.DispatchID, Status: w.Status, Handover: w.Handover}
		for _, a := range w.Artifacts {
			e.Outputs = append(e.Outputs, engine.OutputRef{Name: a.Name, Path: a.Path, SHA256: a.SHA256, Size: a.Size})
		}
		if w.ErrorKind != "" {
			e.Error = &engine.TaskError{Kind: engine.ErrorKind(w.ErrorKind), Message: w.Error, Retryable: w.Retryable, Attempt: w.Attempt}
		}
		return e, nil
	case *contracts.WorkflowAnnotated:
		return FromPayload(*w)
	case contracts.WorkflowAnnotated:
		return engine.Event{Seq: w.Seq, At: w.At, Type: engine.EventAnnotated, RunID: w.RunID, TaskID: w.TaskID,
			Key: w.Key, Value: w.Value}, nil
	case *contracts.WorkflowFinished:
		return FromPayload(*w)
	case contracts.WorkflowFinished:
		return engine.Event{Seq: w.Seq, At: w.At, Type: engine.EventRunFinalized, RunID: w.RunID, Status: w.Status,
			Reason: w.Error}, nil
	}
	return engine.Event{}, fmt.Errorf("%w: %T", ErrNotRunEvent, p)
}

// CloudEvent builds the workflow.* event of an engine event, with its
// derived id and the transition's time.
func CloudEvent(tenant string, e engine.Event) (event.Event, error) {
	p, err := Payload(tenant, e)
	if err != nil {
		return event.Event{}, err
	}
	return contracts.NewEvent(contracts.Meta{ID: EventID(tenant, e.RunID, e.Seq), Source: Source, Time: e.At}, p)
}

// FromCloudEvent reads the engine event a workflow.* event carries. It
// returns an error wrapping ErrNotRunEvent for workflow.requested and for
// events of other domains.
func FromCloudEvent(ev event.Event) (engine.Event, error) {
	if ev.Type() == contracts.WorkflowRequestedSpec.Type {
		return engine.Event{}, fmt.Errorf("%w: %s", ErrNotRunEvent, ev.Type())
	}
	p, err := contracts.Decode(ev)
	if err != nil {
		return engine.Event{}, err
	}
	return FromPayload(p)
}
