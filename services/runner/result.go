package runner

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/sidebar"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Result is what a turn produced.
type Result struct {
	// Reply is the text for the user.
	Reply string `json:"reply"`
	// Degraded is true when response generation failed and Reply is the
	// fallback that asks for the next obligation.
	Degraded       bool   `json:"degraded,omitempty"`
	DegradedReason string `json:"degraded_reason,omitempty"`
	// SkippedTurns are the turns before this one it went on without
	// (Input.AcceptGap).
	SkippedTurns []int     `json:"skipped_turns,omitempty"`
	Provider     string    `json:"provider,omitempty"`
	Model        string    `json:"model,omitempty"`
	Usage        llm.Usage `json:"usage"`

	// EngineDigest is the definition's digest (engine.Definition.Digest):
	// a replay tells an engine edited without a new version by it.
	EngineDigest string `json:"engine_digest,omitempty"`

	// State is the new working memory, StateHash its SHA-256.
	State     *engine.WorkingMemory `json:"state"`
	StateHash string                `json:"state_hash"`

	Phase          string       `json:"phase"`
	PhaseChange    *PhaseChange `json:"phase_change,omitempty"`
	PhaseBlockedBy []string     `json:"phase_blocked_by,omitempty"`
	// Stalled are the background tasks progress waits for (stall): phase
	// and exit transitions wait, and the reply says so.
	Stalled []string `json:"stalled,omitempty"`
	// HandoffRejected is set when an exit transition's conditions held but
	// its handoff failed validation: nothing was handed off, and the
	// session goes on.
	HandoffRejected *engine.HandoffRejection `json:"handoff_rejected,omitempty"`
	Completeness    engine.CompletenessState `json:"completeness"`
	Sidebar         sidebar.State            `json:"sidebar"`
	Techniques      []string                 `json:"techniques"`
	Modes           []engine.Mode            `json:"modes"`
	Context         ContextInfo              `json:"context"`
	QA              QAReport                 `json:"qa"`
	Telemetry       Telemetry                `json:"telemetry"`

	// Effects are what the caller persists or publishes.
	Effects Effects `json:"effects"`

	// Steps lists the steps run, in order (Steps).
	Steps []string `json:"steps"`
	// ProcessedAt is the injected clock's time of the turn.
	ProcessedAt time.Time `json:"processed_at"`

	// stateJSON is State as json.Marshal encodes it, kept from the
	// encoding that also gave StateHash so the service stores it without
	// encoding the memory again.
	stateJSON json.RawMessage
}

// StateJSON returns State encoded as JSON (json.Marshal's encoding, as
// elicitation_sessions.state_json holds it).
func (r *Result) StateJSON() (json.RawMessage, error) {
	if r.stateJSON != nil {
		return r.stateJSON, nil
	}
	return json.Marshal(r.State)
}

// PhaseChange is a phase transition executed this turn.
type PhaseChange struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Trigger is the index of the trigger that fired.
	Trigger int `json:"trigger"`
}

// ContextInfo describes the assembled context.
type ContextInfo struct {
	TokensUsed int `json:"tokens_used"`
	MaxTokens  int `json:"max_tokens"`
	// Compression is set when history was compressed this turn.
	Compression *engine.CompressionEvent `json:"compression,omitempty"`
	// Assembled is the context itself (not persisted).
	Assembled contextasm.Assembled `json:"-"`
}

// Effects are the side effects of a turn, for the service to carry out in
// the same transaction as the state (outbox): nothing here has happened yet.
type Effects struct {
	// ExtractionLog are the eng_extractions_log rows of this turn; their ids
	// are derived, so inserting twice is harmless with ON CONFLICT DO NOTHING.
	ExtractionLog []extraction.LogEntry `json:"extraction_log"`
	// SupersededLinks set superseded_by on earlier rows.
	SupersededLinks []extraction.SupersededLink `json:"superseded_links,omitempty"`
	// Checkpoints are eng_state_checkpoints rows: one before a compression,
	// one every N turns.
	Checkpoints []Checkpoint `json:"checkpoints"`
	// Exit is an exit transition that fired, with its validated handoff:
	// the service writes it to eng_handoffs and publishes handoff.created.
	Exit *ExitTransition `json:"exit,omitempty"`
	// Tasks are background tasks to dispatch as task.dispatched.
	Tasks []TaskDispatch `json:"tasks"`
	// Verification is the I-PASS check of this reply, the first of a
	// session that started with a handoff.
	Verification *handoff.Verification `json:"verification,omitempty"`
}

// TaskDispatch is one attempt of a background task to dispatch.
type TaskDispatch struct {
	TaskID  string `json:"task_id"`
	Handler string `json:"handler"`
	Attempt int    `json:"attempt"`
	// Timeout bounds the attempt: the task's estimated duration times the
	// runner's TaskTimeoutFactor.
	Timeout time.Duration `json:"timeout"`
	// NotBefore is when the attempt may start (a retry's backoff).
	NotBefore time.Time `json:"not_before,omitzero"`
	// Input is the tasks.Input of the task, as JSON.
	Input json.RawMessage `json:"input"`
}

// Checkpoint reasons.
const (
	CheckpointPeriodic          = "periodic"
	CheckpointBeforeCompression = "before_compression"
)

// Checkpoint is a state snapshot.
type Checkpoint struct {
	AtTurn int    `json:"at_turn"`
	Reason string `json:"reason"`
	// State is the canonical JSON of the working memory at that point.
	State         json.RawMessage `json:"state"`
	ContextTokens int             `json:"context_tokens"`
}

// ExitTransition is a fired exit transition.
type ExitTransition struct {
	TargetEngine string  `json:"target_engine"`
	Reason       string  `json:"reason"`
	AtTurn       int     `json:"at_turn"`
	Completeness float64 `json:"completeness"`
	// HandoffID and TargetSessionID are derived from the turn, so a re-run
	// of the turn names the same handoff and target session.
	HandoffID       string                  `json:"handoff_id"`
	TargetSessionID string                  `json:"target_session_id"`
	Handoff         contracts.EngineHandoff `json:"handoff"`
}

// Payload is the handoff as handoff.created carries it and eng_handoffs
// stores it: the target session starts with it, and a replay compares the
// one it rebuilds with it.
func (x *ExitTransition) Payload() (json.RawMessage, error) {
	b, err := json.Marshal(x.Handoff)
	if err != nil {
		return nil, fmt.Errorf("handoff %s: payload: %w", x.HandoffID, err)
	}
	return b, nil
}

// Telemetry is step 15's summary of a turn, for metrics.
type Telemetry struct {
	ExtractionDegraded  bool `json:"extraction_degraded"`
	ResponseDegraded    bool `json:"response_degraded"`
	FieldsUpdated       int  `json:"fields_updated"`
	Superseded          int  `json:"superseded"`
	NewConcepts         int  `json:"new_concepts"`
	SensitiveInfoShared bool `json:"sensitive_info_shared"`
	PhaseChanged        bool `json:"phase_changed"`
	Compressed          bool `json:"compressed"`
	ContextTokens       int  `json:"context_tokens"`
	QAIssues            int  `json:"qa_issues"`
	TasksDispatched     int  `json:"tasks_dispatched"`
}

// Responded is the turn.responded payload of the result.
func (r *Result) Responded(tenantID, turnID string) (contracts.TurnResponded, error) {
	sb, err := json.Marshal(r.Sidebar)
	if err != nil {
		return contracts.TurnResponded{}, err
	}
	p := r.responded(tenantID, turnID)
	p.Sidebar = sb
	return p, nil
}

// responded is Responded without the sidebar, which the runner appends to
// the event already encoded (contracts.NewEventRaw).
func (r *Result) responded(tenantID, turnID string) contracts.TurnResponded {
	return contracts.TurnResponded{
		TenantID: tenantID, SessionID: r.State.SessionID, TurnID: turnID, TurnNumber: r.State.TurnNumber,
		Text: r.Reply, Phase: r.Phase, Completeness: r.Completeness.Overall, Provider: r.Provider,
		Degraded: r.Degraded || r.Telemetry.ExtractionDegraded, DegradedReason: r.DegradedReason, StateHash: r.StateHash,
		EngineVersion: r.State.EngineVersion, EngineDigest: r.EngineDigest, SkippedTurns: r.SkippedTurns,
		HandoffID:      r.handoffID(),
		PhaseBlockedBy: r.PhaseBlockedBy,
	}
}

// handoffID is the handoff the turn made, "" when it made none.
func (r *Result) handoffID() string {
	if x := r.Effects.Exit; x != nil {
		return x.HandoffID
	}
	return ""
}
