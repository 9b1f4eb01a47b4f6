package contracts

import (
	"encoding/json"
	"errors"
)

var (
	MemoryWriteRequestedSpec = define[MemoryWriteRequested]("memory.write.requested", StreamMemory, "write", "project",
		"any service", "memory")
	MemoryWrittenSpec = define[MemoryWritten]("memory.written", StreamMemory, "written", "project",
		"memory", "any service")
)

// Memory node kinds a write may carry.
const (
	MemoryDecision   = "decision"
	MemoryPattern    = "pattern"
	MemoryEntityFact = "entity_fact"
)

// GlobalProject is the ordering key of writes to the global memory scope.
const GlobalProject = "global"

// MemoryWriteRequested asks the memory service to save a node.
type MemoryWriteRequested struct {
	TenantID  string `json:"tenant_id"`
	RequestID string `json:"request_id"`
	// ProjectID is the project scope, or GlobalProject.
	ProjectID string `json:"project_id"`
	Focus     string `json:"focus,omitempty"`
	Kind      string `json:"kind"`
	// Node is the decision, pattern or entity fact to write.
	Node json.RawMessage `json:"node"`
}

func (MemoryWriteRequested) Spec() *Spec                   { return MemoryWriteRequestedSpec }
func (m MemoryWriteRequested) Partition() (string, string) { return m.TenantID, m.ProjectID }
func (m MemoryWriteRequested) Validate() error {
	if err := needTokens("tenant_id", m.TenantID, "project_id", m.ProjectID); err != nil {
		return err
	}
	if err := need("request_id", m.RequestID); err != nil {
		return err
	}
	if len(m.Node) == 0 {
		return errors.New("node is required")
	}
	return oneOf("kind", m.Kind, MemoryDecision, MemoryPattern, MemoryEntityFact)
}

// MemoryWritten is the outcome of a memory write.
type MemoryWritten struct {
	TenantID  string `json:"tenant_id"`
	RequestID string `json:"request_id"`
	ProjectID string `json:"project_id"`
	// Status is saved, partial, pending_retry, failed or blocked_scope.
	Status string `json:"status"`
	// Outcome is the dedup outcome: new, duplicate_skip, supersede or manual_review.
	Outcome string `json:"outcome,omitempty"`
	NodeID  string `json:"node_id,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

func (MemoryWritten) Spec() *Spec                   { return MemoryWrittenSpec }
func (m MemoryWritten) Partition() (string, string) { return m.TenantID, m.ProjectID }
func (m MemoryWritten) Validate() error {
	if err := needTokens("tenant_id", m.TenantID, "project_id", m.ProjectID); err != nil {
		return err
	}
	if err := need("request_id", m.RequestID); err != nil {
		return err
	}
	return oneOf("status", m.Status, "saved", "partial", "pending_retry", "failed", "blocked_scope")
}
