package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The workflow events. Every one is keyed by run, so a run's events are
// stored and handled in order: praetor.workflow.<event>.<tenant>.<run>.
//
// The orchestrator publishes one event per transition of a run's engine
// (workflow.started, workflow.task.updated, workflow.annotated,
// workflow.finished), each with the run's sequence number: folding them in
// seq order rebuilds the run's state byte for byte (praetor replay
// --workflow). workflow.requested asks an orchestrator to start a run.
var (
	WorkflowRequestedSpec = define[WorkflowRequested]("workflow.requested", StreamWorkflows, "requested", "run",
		"CLI, gateway, any service", "orchestrator")
	WorkflowStartedSpec = define[WorkflowStarted]("workflow.started", StreamWorkflows, "started", "run",
		"orchestrator", "auditors, replay")
	WorkflowTaskUpdatedSpec = define[WorkflowTaskUpdated]("workflow.task.updated", StreamWorkflows, "task_updated", "run",
		"orchestrator", "orchestrator, replay")
	WorkflowAnnotatedSpec = define[WorkflowAnnotated]("workflow.annotated", StreamWorkflows, "annotated", "run",
		"orchestrator", "auditors, replay")
	WorkflowFinishedSpec = define[WorkflowFinished]("workflow.finished", StreamWorkflows, "finished", "run",
		"orchestrator", "auditors, replay")
)

// The transitions a workflow.task.updated event records (the engine's event
// types).
const (
	WorkflowWorkRequested     = "WORK_REQUESTED"
	WorkflowApprovalRequested = "APPROVAL_REQUESTED"
	WorkflowAgentResponded    = "AGENT_RESPONDED"
)

// WorkflowRequested asks an orchestrator to start a run of a workflow file.
type WorkflowRequested struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	// Workflow is the workflow file, relative to the orchestrator's
	// workflow directory.
	Workflow string `json:"workflow"`
	// Registry, when set, replaces the workflow's agent registry (relative
	// to the same directory).
	Registry string `json:"registry,omitempty"`
	// Seed seeds the run's random draws; zero derives it from the run id.
	Seed        int64     `json:"seed,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
}

func (WorkflowRequested) Spec() *Spec                   { return WorkflowRequestedSpec }
func (w WorkflowRequested) Partition() (string, string) { return w.TenantID, w.RunID }
func (w WorkflowRequested) Validate() error {
	if err := needTokens("tenant_id", w.TenantID, "run_id", w.RunID); err != nil {
		return err
	}
	return need("workflow", w.Workflow)
}

// WorkflowStarted opens a workflow run (sequence number 1).
type WorkflowStarted struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	// Definition is the run's start input (the orchestrator engine's
	// StartInfo: project, seed, limits and the plan of tasks), so a replay
	// needs no files.
	Definition json.RawMessage `json:"definition,omitempty"`
	Seed       int64           `json:"seed"`
	StartedAt  time.Time       `json:"started_at"`
}

func (WorkflowStarted) Spec() *Spec                   { return WorkflowStartedSpec }
func (w WorkflowStarted) Partition() (string, string) { return w.TenantID, w.RunID }
func (w WorkflowStarted) Validate() error {
	if err := needTokens("tenant_id", w.TenantID, "run_id", w.RunID); err != nil {
		return err
	}
	return need("workflow", w.Workflow)
}

// WorkflowArtifact points at one stored output of a task.
type WorkflowArtifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// WorkflowTaskUpdated is one state change of one task of a run: an attempt
// dispatched (WORK_REQUESTED, APPROVAL_REQUESTED: RUNNING) or an agent's
// answer applied (AGENT_RESPONDED: COMPLETED, FAILED, or PENDING again when
// the attempt will be retried).
type WorkflowTaskUpdated struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	// Seq is the change's sequence number in the run.
	Seq    int64  `json:"seq"`
	TaskID string `json:"task_id"`
	// Transition is WORK_REQUESTED, APPROVAL_REQUESTED or AGENT_RESPONDED.
	Transition string `json:"transition"`
	// Status is PENDING, RUNNING, COMPLETED or FAILED.
	Status  string `json:"status"`
	Attempt int    `json:"attempt"`
	// DispatchID identifies the attempt (run/task/attempt).
	DispatchID string `json:"dispatch_id,omitempty"`
	// Outputs names the outputs of a completed task; Artifacts says where
	// each is stored.
	Outputs   []string           `json:"outputs,omitempty"`
	Artifacts []WorkflowArtifact `json:"artifacts,omitempty"`
	Handover  json.RawMessage    `json:"handover,omitempty"`
	// Error, ErrorKind and Retryable describe a failed attempt.
	Error     string    `json:"error,omitempty"`
	ErrorKind string    `json:"error_kind,omitempty"`
	Retryable bool      `json:"retryable,omitempty"`
	At        time.Time `json:"at"`
}

func (WorkflowTaskUpdated) Spec() *Spec                   { return WorkflowTaskUpdatedSpec }
func (w WorkflowTaskUpdated) Partition() (string, string) { return w.TenantID, w.RunID }
func (w WorkflowTaskUpdated) Validate() error {
	if err := needTokens("tenant_id", w.TenantID, "run_id", w.RunID); err != nil {
		return err
	}
	if err := need("task_id", w.TaskID); err != nil {
		return err
	}
	if w.Seq < 1 {
		return errors.New("seq must be at least 1")
	}
	if err := oneOf("transition", w.Transition, WorkflowWorkRequested, WorkflowApprovalRequested, WorkflowAgentResponded); err != nil {
		return err
	}
	if err := oneOf("status", w.Status, "PENDING", "RUNNING", "COMPLETED", "FAILED"); err != nil {
		return err
	}
	for i, a := range w.Artifacts {
		if err := need(fmt.Sprintf("artifacts[%d].name", i), a.Name, fmt.Sprintf("artifacts[%d].sha256", i), a.SHA256); err != nil {
			return err
		}
	}
	if w.Error != "" && w.ErrorKind == "" {
		return errors.New("error_kind is required with error")
	}
	return nil
}

// WorkflowAnnotated records a key and JSON value stored in a run's artifacts
// (by a hook, about a task or the run).
type WorkflowAnnotated struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	Seq      int64  `json:"seq"`
	// TaskID is the task the annotation is about; empty for the run.
	TaskID string          `json:"task_id,omitempty"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value"`
	At     time.Time       `json:"at"`
}

func (WorkflowAnnotated) Spec() *Spec                   { return WorkflowAnnotatedSpec }
func (w WorkflowAnnotated) Partition() (string, string) { return w.TenantID, w.RunID }
func (w WorkflowAnnotated) Validate() error {
	if err := needTokens("tenant_id", w.TenantID, "run_id", w.RunID); err != nil {
		return err
	}
	if w.Seq < 1 {
		return errors.New("seq must be at least 1")
	}
	if err := need("key", w.Key); err != nil {
		return err
	}
	if len(w.Value) == 0 {
		return errors.New("value is required")
	}
	return nil
}

// WorkflowFinished closes a workflow run.
type WorkflowFinished struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	Seq      int64  `json:"seq"`
	Status   string `json:"status"`
	// Error says why a FAILED run failed.
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
}

func (WorkflowFinished) Spec() *Spec                   { return WorkflowFinishedSpec }
func (w WorkflowFinished) Partition() (string, string) { return w.TenantID, w.RunID }
func (w WorkflowFinished) Validate() error {
	if err := needTokens("tenant_id", w.TenantID, "run_id", w.RunID); err != nil {
		return err
	}
	if w.Seq < 1 {
		return errors.New("seq must be at least 1")
	}
	return oneOf("status", w.Status, "COMPLETED", "FAILED")
}
