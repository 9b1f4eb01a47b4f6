package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The catalog. Each entry's subject is praetor.<domain>.<event>.<tenant>.<key>.
var (
	SessionStartedSpec = defineIn[SessionStarted]("turn", "session.started", StreamTurns, "session_started", "session",
		"gateway, runner (handoffs)", "runner, replay")
	TurnReceivedSpec = define[TurnReceived]("turn.received", StreamTurns, "received", "session",
		"gateway", "extractor")
	TurnExtractedSpec = define[TurnExtracted]("turn.extracted", StreamTurns, "extracted", "session",
		"extractor", "runner")
	TurnRespondedSpec = define[TurnResponded]("turn.responded", StreamTurns, "responded", "session",
		"runner", "gateway")
	HandoffCreatedSpec = define[HandoffCreated]("handoff.created", StreamHandoffs, "created", "target session",
		"runner", "runner")
	TaskDispatchedSpec = define[TaskDispatched]("task.dispatched", StreamTasks, "dispatched", "task kind (unordered)",
		"runner, orchestrator", "background, agent workers")
	TaskCompletedSpec = define[TaskCompleted]("task.completed", StreamTasks, "completed", "owner (session or run)",
		"background, agent workers", "runner, orchestrator")
	TaskFailedSpec = define[TaskFailed]("task.failed", StreamTasks, "failed", "owner (session or run)",
		"background, agent workers", "runner, orchestrator")
	LLMCallRecordedSpec = define[LLMCallRecorded]("llm.call.recorded", StreamLLM, "call", "scope",
		"every LLM caller", "replay")
	// A background task's outcome travels back on the session's subject of
	// the turns stream, so the runner handles it in the session's order,
	// between turns, and a replay of the session meets it where the live
	// run did.
	TaskReturnedSpec = defineIn[TaskReturned]("turn", "task.returned", StreamTurns, "task_returned", "session",
		"runner (from task.completed and task.failed)", "runner, replay")
	TaskMergedSpec = defineIn[TaskMerged]("turn", "task.merged", StreamTurns, "task_merged", "session",
		"runner", "gateway, replay")
)

// SessionStarted opens a session: with the events of its turns and the
// recorded model answers, it is all a replay needs to rebuild the session.
type SessionStarted struct {
	TenantID      string `json:"tenant_id"`
	SessionID     string `json:"session_id"`
	ProjectID     string `json:"project_id"`
	EngineID      string `json:"engine_id"`
	EngineVersion string `json:"engine_version"`
	// MemoryVersion is the working memory version the session starts with
	// and keeps (engine.MemorySchemaVersion; 0 in events from before it was
	// recorded, which is version 1).
	MemoryVersion int `json:"memory_version,omitempty"`
	// InboundHandoffID is the handoff the session starts with, if any, and
	// InboundHandoff that handoff: with it the session's events alone
	// rebuild the first working memory.
	InboundHandoffID string         `json:"inbound_handoff_id,omitempty"`
	InboundHandoff   *EngineHandoff `json:"inbound_handoff,omitempty"`
	StartedAt        time.Time      `json:"started_at"`
}

func (SessionStarted) Spec() *Spec                   { return SessionStartedSpec }
func (s SessionStarted) Partition() (string, string) { return s.TenantID, s.SessionID }
func (s SessionStarted) Validate() error {
	if err := needTokens("tenant_id", s.TenantID, "session_id", s.SessionID); err != nil {
		return err
	}
	if err := need("engine_id", s.EngineID, "engine_version", s.EngineVersion); err != nil {
		return err
	}
	switch {
	case (s.InboundHandoffID == "") != (s.InboundHandoff == nil):
		return errors.New("inbound_handoff_id and inbound_handoff come together")
	case s.InboundHandoff == nil:
		return nil
	case s.InboundHandoff.Metadata.TargetEngineID != s.EngineID:
		return fmt.Errorf("inbound_handoff targets %s, the session runs %s", s.InboundHandoff.Metadata.TargetEngineID, s.EngineID)
	}
	if err := s.InboundHandoff.Validate(); err != nil {
		return fmt.Errorf("inbound_handoff: %w", err)
	}
	return nil
}

// TurnReceived is a user's message to a session, published by the gateway.
type TurnReceived struct {
	TenantID  string `json:"tenant_id"`
	SessionID string `json:"session_id"`
	// TurnID identifies the turn end to end; the gateway's idempotency key.
	TurnID     string    `json:"turn_id"`
	Message    string    `json:"message"`
	ReceivedAt time.Time `json:"received_at"`
}

func (TurnReceived) Spec() *Spec                   { return TurnReceivedSpec }
func (t TurnReceived) Partition() (string, string) { return t.TenantID, t.SessionID }
func (t TurnReceived) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "session_id", t.SessionID); err != nil {
		return err
	}
	return need("turn_id", t.TurnID, "message", t.Message)
}

// Supersession records a field whose value a turn replaced.
type Supersession struct {
	FieldPath string          `json:"field_path"`
	OldValue  json.RawMessage `json:"old_value"`
	NewValue  json.RawMessage `json:"new_value"`
	Reason    string          `json:"reason"`
}

// TurnExtracted is a turn after extraction (runner steps 2-3), published by
// the extractor for the runner.
type TurnExtracted struct {
	TenantID   string `json:"tenant_id"`
	SessionID  string `json:"session_id"`
	TurnID     string `json:"turn_id"`
	TurnNumber int    `json:"turn_number"`
	Message    string `json:"message"`
	// Extraction is the session's whole extraction state after this turn:
	// its fields, deferrals, and the extraction prompt version the session
	// runs with (prompt_version; none before versions were recorded).
	Extraction          json.RawMessage `json:"extraction,omitempty"`
	FieldsUpdated       []string        `json:"fields_updated,omitempty"`
	Superseded          []Supersession  `json:"superseded,omitempty"`
	NewConceptCount     int             `json:"new_concept_count"`
	SensitiveInfoShared bool            `json:"sensitive_info_shared"`
	// Degraded is true when the extraction model's answer could not be used:
	// no field was updated, and the turn is still answered.
	Degraded       bool   `json:"degraded,omitempty"`
	DegradedReason string `json:"degraded_reason,omitempty"`
	// ReceivedAt is when the gateway received the turn (turn.received's
	// received_at): the runner bounds the reply's model call by what is left
	// of the turn's time. Zero in events from before it was carried.
	ReceivedAt time.Time `json:"received_at,omitzero"`
}

func (TurnExtracted) Spec() *Spec                   { return TurnExtractedSpec }
func (t TurnExtracted) Partition() (string, string) { return t.TenantID, t.SessionID }
func (t TurnExtracted) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "session_id", t.SessionID); err != nil {
		return err
	}
	if t.TurnNumber < 1 {
		return errors.New("turn_number must be at least 1")
	}
	return need("turn_id", t.TurnID)
}

// TurnResponded is the runner's reply to a turn.
type TurnResponded struct {
	TenantID     string  `json:"tenant_id"`
	SessionID    string  `json:"session_id"`
	TurnID       string  `json:"turn_id"`
	TurnNumber   int     `json:"turn_number"`
	Text         string  `json:"text"`
	Phase        string  `json:"phase"`
	Completeness float64 `json:"completeness"`
	// Sidebar is the sidebar state built at step 16.
	Sidebar json.RawMessage `json:"sidebar,omitempty"`
	// Provider names the LLM provider that wrote the reply ("offline" when no
	// model is configured).
	Provider string `json:"provider,omitempty"`
	// Degraded is true when the turn was answered without a usable model
	// answer (extraction or response); the reason says which.
	Degraded       bool   `json:"degraded,omitempty"`
	DegradedReason string `json:"degraded_reason,omitempty"`
	// StateHash is the hash of the session's working memory after the turn,
	// so a replay can prove it rebuilt the same state.
	StateHash string `json:"state_hash,omitempty"`
	// EngineVersion is the version of the session's engine that answered
	// the turn: a session goes on under a new version of its engine once
	// it is loaded, and a replay answers each turn with the version the
	// live run used.
	EngineVersion string `json:"engine_version,omitempty"`
	// EngineDigest is that engine's digest, the SHA-256 of its definition
	// as loaded: a replay tells by it an engine file edited without a new
	// version.
	EngineDigest string `json:"engine_digest,omitempty"`
	// SkippedTurns are the numbers of the session's turns this turn went
	// on without: they never reached the runner (dead-lettered), and a
	// replay leaves them out as the live run did.
	SkippedTurns []int `json:"skipped_turns,omitempty"`
	// HandoffID is the handoff the turn made (its exit transition fired),
	// or the one a turn answered without being processed came after (the
	// session had handed off): the gateway tells a stream where the
	// conversation went with the reply, without asking the store for every
	// turn.
	HandoffID string `json:"handoff_id,omitempty"`
	// PhaseBlockedBy says why the phase did not move on although one of its
	// transition triggers held: a mandatory checkpoint not satisfied, an
	// entry condition of the next phase, a background task still running or
	// stalled ("background task research is still running"). Empty when
	// nothing held the phase.
	PhaseBlockedBy []string `json:"phase_blocked_by,omitempty"`
}

func (TurnResponded) Spec() *Spec                   { return TurnRespondedSpec }
func (t TurnResponded) Partition() (string, string) { return t.TenantID, t.SessionID }
func (t TurnResponded) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "session_id", t.SessionID); err != nil {
		return err
	}
	if t.Completeness < 0 || t.Completeness > 1 {
		return errors.New("completeness must be within [0, 1]")
	}
	return need("turn_id", t.TurnID, "text", t.Text)
}

// HandoffCreated announces an engine handoff; the target session starts with it.
type HandoffCreated struct {
	TenantID        string `json:"tenant_id"`
	HandoffID       string `json:"handoff_id"`
	ProjectID       string `json:"project_id"`
	SourceEngineID  string `json:"source_engine_id"`
	SourceSessionID string `json:"source_session_id"`
	TargetEngineID  string `json:"target_engine_id"`
	TargetSessionID string `json:"target_session_id"`
	// Payload is the handoff itself, an EngineHandoff (see Handoff).
	Payload json.RawMessage `json:"payload"`
}

// Handoff decodes the payload.
func (h HandoffCreated) Handoff() (EngineHandoff, error) {
	var eh EngineHandoff
	if len(h.Payload) == 0 {
		return eh, errors.New("payload is required")
	}
	if err := json.Unmarshal(h.Payload, &eh); err != nil {
		return eh, fmt.Errorf("payload is not an engine handoff: %w", err)
	}
	return eh, nil
}

func (HandoffCreated) Spec() *Spec                   { return HandoffCreatedSpec }
func (h HandoffCreated) Partition() (string, string) { return h.TenantID, h.TargetSessionID }
func (h HandoffCreated) Validate() error {
	if err := needTokens("tenant_id", h.TenantID, "target_session_id", h.TargetSessionID); err != nil {
		return err
	}
	if err := need("handoff_id", h.HandoffID, "source_engine_id", h.SourceEngineID,
		"target_engine_id", h.TargetEngineID, "source_session_id", h.SourceSessionID); err != nil {
		return err
	}
	eh, err := h.Handoff()
	if err != nil {
		return err
	}
	if err := eh.Validate(); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	md := eh.Metadata
	switch {
	case md.SourceEngineID != h.SourceEngineID || md.TargetEngineID != h.TargetEngineID:
		return fmt.Errorf("payload hands %s to %s, the event %s to %s", md.SourceEngineID, md.TargetEngineID,
			h.SourceEngineID, h.TargetEngineID)
	case md.SessionID != h.SourceSessionID:
		return fmt.Errorf("payload comes from session %s, the event from %s", md.SessionID, h.SourceSessionID)
	case md.ProjectID != h.ProjectID:
		return fmt.Errorf("payload is of project %s, the event of %s", md.ProjectID, h.ProjectID)
	}
	return nil
}

// TaskKindBackground is the kind (worker pool) of the conversational
// engines' background tasks, run by the background service; their owner is
// the session that dispatched them.
const TaskKindBackground = "background"

// TaskDispatched hands a unit of work to a worker pool.
type TaskDispatched struct {
	TenantID string `json:"tenant_id"`
	TaskID   string `json:"task_id"`
	// Kind routes the task to a worker pool (the subject's last token).
	Kind string `json:"kind"`
	// Handler names the registered function that runs the task.
	Handler string `json:"handler"`
	// OwnerID is the session or workflow run that waits for the result.
	OwnerID string `json:"owner_id"`
	Attempt int    `json:"attempt"`
	// Timeout bounds one attempt; zero means the worker's default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// NotBefore delays the attempt (a retry's backoff): a worker that
	// receives it earlier puts it back until then.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Deadline, when set, is when the dispatcher stops waiting for the
	// attempt's answer (workflow attempts carry it): a worker does not
	// start the attempt after it, and stops it by then. An attempt that
	// waited in a backlog past it would otherwise run beside the retry that
	// replaced it.
	Deadline time.Time       `json:"deadline,omitzero"`
	Input    json.RawMessage `json:"input,omitempty"`
}

func (TaskDispatched) Spec() *Spec                   { return TaskDispatchedSpec }
func (t TaskDispatched) Partition() (string, string) { return t.TenantID, t.Kind }
func (t TaskDispatched) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "kind", t.Kind, "owner_id", t.OwnerID); err != nil {
		return err
	}
	if t.Attempt < 1 {
		return errors.New("attempt must be at least 1")
	}
	return need("task_id", t.TaskID, "handler", t.Handler)
}

// TaskCompleted is a task's successful result.
type TaskCompleted struct {
	TenantID string          `json:"tenant_id"`
	TaskID   string          `json:"task_id"`
	Kind     string          `json:"kind"`
	OwnerID  string          `json:"owner_id"`
	Attempt  int             `json:"attempt"`
	Output   json.RawMessage `json:"output,omitempty"`
}

func (TaskCompleted) Spec() *Spec                   { return TaskCompletedSpec }
func (t TaskCompleted) Partition() (string, string) { return t.TenantID, t.OwnerID }
func (t TaskCompleted) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "owner_id", t.OwnerID); err != nil {
		return err
	}
	return need("task_id", t.TaskID, "kind", t.Kind)
}

// TaskFailed is a task attempt that did not succeed.
type TaskFailed struct {
	TenantID string `json:"tenant_id"`
	TaskID   string `json:"task_id"`
	Kind     string `json:"kind"`
	OwnerID  string `json:"owner_id"`
	Attempt  int    `json:"attempt"`
	Error    string `json:"error"`
	// Permanent is true when retrying cannot help (a panic, a bad input).
	Permanent bool `json:"permanent,omitempty"`
}

func (TaskFailed) Spec() *Spec                   { return TaskFailedSpec }
func (t TaskFailed) Partition() (string, string) { return t.TenantID, t.OwnerID }
func (t TaskFailed) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "owner_id", t.OwnerID); err != nil {
		return err
	}
	return need("task_id", t.TaskID, "kind", t.Kind, "error", t.Error)
}

// TaskReturned is a background task's outcome (a task.completed or
// task.failed of a session's task), routed by the runner onto the session's
// subject so it is merged into working memory in the session's order.
type TaskReturned struct {
	TenantID  string `json:"tenant_id"`
	SessionID string `json:"session_id"`
	// TaskID is the engine's background task id.
	TaskID  string `json:"task_id"`
	Attempt int    `json:"attempt"`
	// Completed is true for a result (Output), false for a failure (Error).
	Completed bool            `json:"completed"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	// Permanent is a failure that retrying cannot fix (a panic, a bad input,
	// an unknown handler).
	Permanent bool `json:"permanent,omitempty"`
	// ReturnedAt is when the worker answered (the answer event's time).
	ReturnedAt time.Time `json:"returned_at"`
	// FromSessionID, when set, is the session that dispatched the task and
	// handed off to this one before the result came back: the result is
	// forwarded here, the session the conversation went on in.
	FromSessionID string `json:"from_session_id,omitempty"`
}

func (TaskReturned) Spec() *Spec                   { return TaskReturnedSpec }
func (t TaskReturned) Partition() (string, string) { return t.TenantID, t.SessionID }
func (t TaskReturned) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "session_id", t.SessionID); err != nil {
		return err
	}
	if t.Attempt < 1 {
		return errors.New("attempt must be at least 1")
	}
	if !t.Completed {
		if err := need("error", t.Error); err != nil {
			return fmt.Errorf("a failure needs its error: %w", err)
		}
		if t.FromSessionID != "" {
			return errors.New("only a result is forwarded from another session, not a failure")
		}
	}
	if t.FromSessionID != "" {
		if err := needTokens("from_session_id", t.FromSessionID); err != nil {
			return err
		}
	}
	return need("task_id", t.TaskID)
}

// Task statuses a merge leaves in working memory (TaskMerged.Status).
const (
	TaskStatusPending   = "pending"
	TaskStatusRetrying  = "retrying"
	TaskStatusStalled   = "stalled"
	TaskStatusCompleted = "completed"
	TaskStatusDegraded  = "degraded"
	TaskStatusGap       = "proceed-with-gap"
	// TaskStatusIgnored is an outcome of an attempt the session no longer
	// waits for (a duplicate, or an attempt a retry replaced).
	TaskStatusIgnored = "ignored"
)

// TaskMerged reports a task outcome merged into a session's working memory:
// the task's new status, and the session's sidebar and state hash after it.
type TaskMerged struct {
	TenantID  string `json:"tenant_id"`
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
	Attempt   int    `json:"attempt"`
	Status    string `json:"status"`
	// Note is the failure strategy's word to the agent: the degraded
	// behaviour, the gap, or what the session waits for.
	Note    string          `json:"note,omitempty"`
	Sidebar json.RawMessage `json:"sidebar,omitempty"`
	// StateHash is the hash of the working memory after the merge.
	StateHash string `json:"state_hash,omitempty"`
	// EngineVersion is the version of the session's engine that merged
	// the outcome (see TurnResponded.EngineVersion).
	EngineVersion string `json:"engine_version,omitempty"`
	// EngineDigest is that engine's digest (see TurnResponded.EngineDigest).
	EngineDigest string `json:"engine_digest,omitempty"`
}

func (TaskMerged) Spec() *Spec                   { return TaskMergedSpec }
func (t TaskMerged) Partition() (string, string) { return t.TenantID, t.SessionID }
func (t TaskMerged) Validate() error {
	if err := needTokens("tenant_id", t.TenantID, "session_id", t.SessionID); err != nil {
		return err
	}
	if err := need("task_id", t.TaskID); err != nil {
		return err
	}
	return oneOf("status", t.Status, TaskStatusPending, TaskStatusRetrying, TaskStatusStalled, TaskStatusCompleted,
		TaskStatusDegraded, TaskStatusGap, TaskStatusIgnored)
}

// LLMUsage counts the tokens of one model call.
type LLMUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// LLMCallRecorded is one model call, kept so a replay can serve the same
// answer without calling the model again.
type LLMCallRecorded struct {
	TenantID string `json:"tenant_id"`
	// Scope is what the call belongs to: a session, a run, an episode.
	Scope string `json:"scope"`
	// RequestHash identifies the request (SHA-256 of its canonical form).
	RequestHash string          `json:"request_hash"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
	Purpose     string          `json:"purpose,omitempty"`
	Request     json.RawMessage `json:"request,omitempty"`
	Content     string          `json:"content"`
	// FinishReason is the model's reason to stop ("stop", "length" ...).
	FinishReason string `json:"finish_reason,omitempty"`
	// CallID is the caller's stable id for the call, when it gave one.
	CallID  string        `json:"call_id,omitempty"`
	Usage   LLMUsage      `json:"usage"`
	Latency time.Duration `json:"latency"`
	Error   string        `json:"error,omitempty"`
}

func (LLMCallRecorded) Spec() *Spec                   { return LLMCallRecordedSpec }
func (l LLMCallRecorded) Partition() (string, string) { return l.TenantID, l.Scope }
func (l LLMCallRecorded) Validate() error {
	if err := needTokens("tenant_id", l.TenantID, "scope", l.Scope); err != nil {
		return err
	}
	return need("request_hash", l.RequestHash, "provider", l.Provider)
}
