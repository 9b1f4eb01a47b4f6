package contracts

import (
	"encoding/json"
	"time"
)

var (
	WorkflowStartedSpec = define[WorkflowStarted]("workflow.started", StreamWorkflows, "started", "run",
		"orchestrator", "auditors, replay")
	WorkflowTaskUpdatedSpec = define[WorkflowTaskUpdated]("workflow.task.updated", StreamWorkflows, "task_updated", "run",
		"orchestrator", "orchestrator, replay")
	WorkflowFinishedSpec = define[WorkflowFinished]("workflow.finished", StreamWorkflows, "finished", "run",
		"orchestrator", "auditors, replay")
)

// WorkflowStarted opens a workflow run.
type WorkflowStarted struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	// Definition is the resolved workflow, so a replay needs no files.
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

// WorkflowTaskUpdated is one state change of one task of a run.
type WorkflowTaskUpdated struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
	TaskID   string `json:"task_id"`
	// Status is PENDING, RUNNING, COMPLETED or FAILED.
	Status   string          `json:"status"`
	Attempt  int             `json:"attempt"`
	Outputs  []string        `json:"outputs,omitempty"`
	Handover json.RawMessage `json:"handover,omitempty"`
	Error    string          `json:"error,omitempty"`
	At       time.Time       `json:"at"`
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
	return oneOf("status", w.Status, "PENDING", "RUNNING", "COMPLETED", "FAILED")
}

// WorkflowFinished closes a workflow run.
type WorkflowFinished struct {
	TenantID string    `json:"tenant_id"`
	RunID    string    `json:"run_id"`
	Status   string    `json:"status"`
	Error    string    `json:"error,omitempty"`
	At       time.Time `json:"at"`
}

func (WorkflowFinished) Spec() *Spec                   { return WorkflowFinishedSpec }
func (w WorkflowFinished) Partition() (string, string) { return w.TenantID, w.RunID }
func (w WorkflowFinished) Validate() error {
	if err := needTokens("tenant_id", w.TenantID, "run_id", w.RunID); err != nil {
		return err
	}
	return oneOf("status", w.Status, "COMPLETED", "FAILED")
}
