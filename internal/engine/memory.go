package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// MemorySchemaVersion is the version of the WorkingMemory layout and of
// the rules that read it, which a new session starts with. A session keeps
// the version it started with (its session.started event records it), so
// its turns take the same path live and in a replay by a later build:
//
//   - 1: the first;
//   - 2: an obligation asked for in vain rests (ObligationState.Resting);
//     the reply that hands off drops the questions it ends with (the
//     runner's handover); project-discovery's core problem is met by a
//     handoff that carries a decision and a pain point (coreProblemCarried);
//     a handoff's decisions record their key, options and question, and
//     its eliminated options their question (the runner's exit);
//   - 3: ideation hands exploration the problem as such, its root causes
//     as pain points, not knowledge gaps, and the ideas shortlisted as the
//     gaps to explore, project discovery its core problem as such, and
//     exploration's decision answers the problem its inbound handoff
//     carried when the user did not state one (handoff.Builtin);
//     exploration's problem is met by a handoff that carries it
//     (problemCarried).
const MemorySchemaVersion = 3

// WorkingMemory is a session's whole state: the seed's EngineWorkingMemory.
// It is plain data, encoded as JSON into elicitation_sessions.state_json and
// checkpoints. Maps encode with sorted keys, so equal memories encode equal.
type WorkingMemory struct {
	SchemaVersion int        `json:"schema_version"`
	EngineID      string     `json:"engine_id"`
	EngineVersion string     `json:"engine_version"`
	EngineType    EngineType `json:"engine_type"`
	SessionID     string     `json:"session_id"`
	ProjectID     string     `json:"project_id,omitempty"`
	// TurnNumber is the number of user turns processed.
	TurnNumber int `json:"turn_number"`
	// LastMessageID is the id of the last processed user message.
	LastMessageID string `json:"last_message_id,omitempty"`
	// UpdatedAt is the injected clock's time at the last turn.
	UpdatedAt time.Time `json:"updated_at"`

	Extraction      Extraction          `json:"extraction"`
	Phase           PhaseState          `json:"phase"`
	Obligations     ObligationState     `json:"obligations"`
	Completeness    CompletenessState   `json:"completeness"`
	Techniques      TechniqueState      `json:"techniques"`
	Modes           ModeState           `json:"modes"`
	BackgroundTasks BackgroundTaskState `json:"background_tasks"`
	Context         ContextState        `json:"context"`
	// InboundHandoff is the EngineHandoff (pkg/contracts) this session
	// started with, as JSON; the context shows it first.
	InboundHandoff json.RawMessage `json:"inbound_handoff,omitempty"`
	// HandoffRejection is the last exit transition whose handoff failed
	// validation: it was not written, and the session goes on.
	HandoffRejection *HandoffRejection `json:"handoff_rejection,omitempty"`
	SocioEmotional   SocioEmotional    `json:"socio_emotional"`
	Saturation       SaturationState   `json:"saturation"`
	// History is the conversation, oldest first; compression replaces its
	// older part with Context.Summary.
	History []Message `json:"history"`
	// Exit is set once an exit transition has fired.
	Exit *ExitState `json:"exit,omitempty"`
}

// NewWorkingMemory returns the state of a new session of an engine: initial
// phase, every obligation pending, empty extraction.
func NewWorkingMemory(def *Definition, sessionID, projectID string) *WorkingMemory {
	m := &WorkingMemory{
		SchemaVersion: MemorySchemaVersion,
		EngineID:      def.EngineID,
		EngineVersion: def.Version,
		EngineType:    def.EngineType,
		SessionID:     sessionID,
		ProjectID:     projectID,
		Extraction:    NewExtraction(),
		Phase:         PhaseState{Current: def.InitialPhase, History: []PhaseRecord{}},
		Completeness:  CompletenessState{ByCategory: map[string]float64{}, Gaps: []string{}},
		Techniques:    TechniqueState{Active: []string{}, Cooldowns: map[string]int{}},
		Modes:         ModeState{Counts: map[Mode]int{}},
		BackgroundTasks: BackgroundTaskState{
			Pending: []TaskRecord{}, Completed: []TaskRecord{},
		},
		Context:        ContextState{CompressionEvents: []CompressionEvent{}},
		SocioEmotional: NewSocioEmotional(),
		History:        []Message{},
	}
	m.Obligations.Items = make([]ObligationItem, 0, len(def.Obligations))
	for _, o := range def.Obligations {
		m.Obligations.Items = append(m.Obligations.Items, ObligationItem{
			ID: o.ID, Category: o.Category, Description: o.Description,
			Required: o.Required, Priority: o.Priority, Status: StatusPending,
		})
	}
	m.Obligations.Summary = Summarize(m.Obligations.Items)
	return m
}

// Clone returns a deep copy, so pure steps can work on their own memory.
func (m *WorkingMemory) Clone() *WorkingMemory {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("engine: working memory does not encode: %v", err))
	}
	var out WorkingMemory
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("engine: working memory does not decode: %v", err))
	}
	return &out
}

// Obligation returns the state of one obligation.
func (m *WorkingMemory) Obligation(id string) (*ObligationItem, bool) {
	for i := range m.Obligations.Items {
		if m.Obligations.Items[i].ID == id {
			return &m.Obligations.Items[i], true
		}
	}
	return nil, false
}

// CategoryRate is the share of a category's obligations that are satisfied
// (0 when the category has none).
func (m *WorkingMemory) CategoryRate(category string) float64 {
	total, sat := 0, 0
	for _, o := range m.Obligations.Items {
		if o.Category != category {
			continue
		}
		total++
		if o.Status == StatusSatisfied {
			sat++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(sat) / float64(total)
}

// Extraction is the extraction state: field path → ExtractedField, plus the
// obligations the user explicitly deferred.
type Extraction struct {
	Fields map[string]ExtractedField `json:"fields"`
	// Deferred maps an obligation id to the turn the user put it off.
	Deferred map[string]int `json:"deferred,omitempty"`
}

// NewExtraction returns an empty extraction.
func NewExtraction() Extraction {
	return Extraction{Fields: map[string]ExtractedField{}}
}

// Clone returns a deep copy.
func (e Extraction) Clone() Extraction {
	out := Extraction{Fields: make(map[string]ExtractedField, len(e.Fields))}
	for k, v := range e.Fields {
		out.Fields[k] = v.Clone()
	}
	if len(e.Deferred) > 0 {
		out.Deferred = make(map[string]int, len(e.Deferred))
		for k, v := range e.Deferred {
			out.Deferred[k] = v
		}
	}
	return out
}

// Paths returns the extracted field paths, sorted.
func (e Extraction) Paths() []string {
	out := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Get returns a field.
func (e Extraction) Get(path string) (ExtractedField, bool) {
	f, ok := e.Fields[path]
	return f, ok
}

// Has reports whether a field holds a non-null value.
func (e Extraction) Has(path string) bool {
	f, ok := e.Fields[path]
	return ok && !f.IsNull()
}

// Decode decodes a field's value into v; false when absent or null.
func (e Extraction) Decode(path string, v any) bool {
	f, ok := e.Fields[path]
	if !ok || f.IsNull() {
		return false
	}
	return json.Unmarshal(f.Value, v) == nil
}

// String returns a string field's value ("" when absent or not a string).
func (e Extraction) String(path string) string {
	var s string
	e.Decode(path, &s)
	return s
}

// ExtractedField is one extracted value with its provenance.
type ExtractedField struct {
	Value      json.RawMessage `json:"value"`
	Confidence float64         `json:"confidence"`
	// ExtractedFromTurns lists every turn that contributed, ascending.
	ExtractedFromTurns []int `json:"extracted_from_turns"`
	LastUpdatedAtTurn  int   `json:"last_updated_at_turn"`
	// LastMessageID is the message whose extraction last set the value; the
	// extraction log entry of that message is the one a supersession links.
	LastMessageID string `json:"last_message_id,omitempty"`
	// Reasoning is the extractor's reasoning for the last update.
	Reasoning string `json:"reasoning,omitempty"`
	// SupersededPrevious is the value this one replaced, if any.
	SupersededPrevious *SupersededValue `json:"superseded_previous,omitempty"`
}

// IsNull reports whether the value is absent or JSON null.
func (f ExtractedField) IsNull() bool {
	v := bytes.TrimSpace(f.Value)
	return len(v) == 0 || bytes.Equal(v, []byte("null"))
}

// Clone returns a deep copy.
func (f ExtractedField) Clone() ExtractedField {
	f.Value = append(json.RawMessage(nil), f.Value...)
	f.ExtractedFromTurns = append([]int(nil), f.ExtractedFromTurns...)
	if f.SupersededPrevious != nil {
		s := *f.SupersededPrevious
		s.Value = append(json.RawMessage(nil), s.Value...)
		f.SupersededPrevious = &s
	}
	return f
}

// SupersededValue is a value replaced by a later one.
type SupersededValue struct {
	Value json.RawMessage `json:"value"`
	// AtTurn is when the replaced value had last been set.
	AtTurn int `json:"at_turn"`
	// MessageID is the message that had set the replaced value.
	MessageID string `json:"message_id,omitempty"`
	// ReplacedAtTurn is the turn that replaced it.
	ReplacedAtTurn int `json:"replaced_at_turn"`
	// Reason says why the new value won.
	Reason string `json:"reason,omitempty"`
}

// PhaseState is where the conversation is.
type PhaseState struct {
	Current       string        `json:"current"`
	TurnsInPhase  int           `json:"turns_in_phase"`
	EnteredAtTurn int           `json:"entered_at_turn"`
	History       []PhaseRecord `json:"history"`
}

// PhaseRecord is a phase that was left.
type PhaseRecord struct {
	PhaseID       string  `json:"phase_id"`
	EnteredAtTurn int     `json:"entered_at_turn"`
	ExitedAtTurn  int     `json:"exited_at_turn"`
	TurnsInPhase  int     `json:"turns_in_phase"`
	Completeness  float64 `json:"completeness"`
}

// ObligationStatusValue is an obligation's status.
type ObligationStatusValue string

// Obligation statuses.
const (
	StatusPending   ObligationStatusValue = "pending"
	StatusPartial   ObligationStatusValue = "partial"
	StatusSatisfied ObligationStatusValue = "satisfied"
	StatusDeferred  ObligationStatusValue = "deferred"
)

// ObligationState is every obligation's status, a summary, and the
// obligation the last reply asked about.
type ObligationState struct {
	Items   []ObligationItem  `json:"items"`
	Summary ObligationSummary `json:"summary"`
	// Focus is the obligation the last reply asked for; extraction gives it
	// the user's next answer when no cue matches.
	Focus string `json:"focus,omitempty"`
	// Asked counts the replies in a row that asked for Focus while the
	// user's answers left it as it was.
	Asked int `json:"asked,omitempty"`
	// Resting maps an obligation asked for in vain too many times in a row
	// to the last turn it rests: until then the replies ask for the others
	// first (see obligation.Ask).
	Resting map[string]int `json:"resting,omitempty"`
}

// ObligationItem is one obligation's derived state.
type ObligationItem struct {
	ID          string                `json:"id"`
	Category    string                `json:"category"`
	Description string                `json:"description"`
	Required    bool                  `json:"required"`
	Priority    Priority              `json:"priority,omitempty"`
	Status      ObligationStatusValue `json:"status"`
	Confidence  float64               `json:"confidence"`
	// FieldsMet lists the obligation's fields extracted at or above their
	// threshold.
	FieldsMet []string `json:"fields_met,omitempty"`
}

// ObligationSummary counts obligations by status.
type ObligationSummary struct {
	Total             int `json:"total"`
	Satisfied         int `json:"satisfied"`
	Partial           int `json:"partial"`
	Pending           int `json:"pending"`
	Deferred          int `json:"deferred"`
	RequiredTotal     int `json:"required_total"`
	RequiredSatisfied int `json:"required_satisfied"`
}

// Summarize counts items by status.
func Summarize(items []ObligationItem) ObligationSummary {
	var s ObligationSummary
	for _, o := range items {
		s.Total++
		switch o.Status {
		case StatusSatisfied:
			s.Satisfied++
		case StatusPartial:
			s.Partial++
		case StatusDeferred:
			s.Deferred++
		default:
			s.Pending++
		}
		if o.Required {
			s.RequiredTotal++
			if o.Status == StatusSatisfied {
				s.RequiredSatisfied++
			}
		}
	}
	return s
}

// CompletenessState is the completeness engine's last evaluation.
type CompletenessState struct {
	Overall    float64            `json:"overall"`
	ByCategory map[string]float64 `json:"by_category"`
	IsReady    bool               `json:"is_ready"`
	Gaps       []string           `json:"gaps"`
	// Level is the maturity model's stage name.
	Level string `json:"level,omitempty"`
}

// TechniqueState is the techniques chosen for the last reply and when each
// technique may be used again.
type TechniqueState struct {
	Active []string `json:"active"`
	// Cooldowns maps a technique id to the first turn it may be used again.
	Cooldowns map[string]int `json:"cooldowns"`
	// Effectiveness maps a technique id to a moving score in [0,1] of how
	// often its effectiveness signal followed its use (0.5 before any use).
	Effectiveness map[string]float64 `json:"effectiveness,omitempty"`
}

// ModeState tallies the modes the replies were classified in.
type ModeState struct {
	Last   []Mode       `json:"last,omitempty"`
	Counts map[Mode]int `json:"counts"`
}

// BackgroundTaskState tracks the session's background tasks: those still
// awaited (pending, retrying or stalled) and those settled (completed,
// degraded or left as a gap), and the lines of background intelligence the
// memory service last gave the session.
type BackgroundTaskState struct {
	Pending   []TaskRecord `json:"pending"`
	Completed []TaskRecord `json:"completed"`
	// Gaps are tasks that failed under proceed-with-gap: later phases may
	// dispatch them again to fill the gap.
	Gaps []string `json:"gaps,omitempty"`
	// Intelligence is background intelligence from the memory service, one
	// line each, shown in the context's background section.
	Intelligence []string `json:"intelligence,omitempty"`
}

// Task statuses. Pending, retrying and stalled tasks are in
// BackgroundTaskState.Pending; the others in Completed.
const (
	TaskPending   = "pending"
	TaskRetrying  = "retrying"
	TaskStalled   = "stalled"
	TaskCompleted = "completed"
	TaskDegraded  = "degraded"
	TaskGap       = "proceed-with-gap"
)

// TaskRecord is one dispatched task.
type TaskRecord struct {
	TaskID           string          `json:"task_id"`
	Handler          string          `json:"handler"`
	Attempt          int             `json:"attempt"`
	DispatchedAtTurn int             `json:"dispatched_at_turn"`
	Status           string          `json:"status,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	Error            string          `json:"error,omitempty"`
	// Note is the failure strategy's word to the agent: the degraded
	// behaviour, the missing piece, or what progress waits for.
	Note string `json:"note,omitempty"`
	// DispatchedAt is when the current attempt was dispatched, NotBefore
	// when it may start (a retry's backoff).
	DispatchedAt time.Time `json:"dispatched_at,omitzero"`
	NotBefore    time.Time `json:"not_before,omitzero"`
	// SettledAtTurn is the turn count when the task completed or failed for good.
	SettledAtTurn int `json:"settled_at_turn,omitempty"`
}

// Task returns the record of a task, pending or settled.
func (s BackgroundTaskState) Task(taskID string) (TaskRecord, bool) {
	for _, list := range [][]TaskRecord{s.Pending, s.Completed} {
		for _, t := range list {
			if t.TaskID == taskID {
				return t, true
			}
		}
	}
	return TaskRecord{}, false
}

// Stalled returns the tasks whose failure stalls progress.
func (s BackgroundTaskState) Stalled() []TaskRecord {
	var out []TaskRecord
	for _, t := range s.Pending {
		if t.Status == TaskStalled {
			out = append(out, t)
		}
	}
	return out
}

// IsPending reports whether a task is pending.
func (s BackgroundTaskState) IsPending(taskID string) bool {
	for _, t := range s.Pending {
		if t.TaskID == taskID {
			return true
		}
	}
	return false
}

// WasDispatched reports whether a task is pending or has completed.
func (s BackgroundTaskState) WasDispatched(taskID string) bool {
	if s.IsPending(taskID) {
		return true
	}
	for _, t := range s.Completed {
		if t.TaskID == taskID {
			return true
		}
	}
	return false
}

// ContextState is what context assembly last used.
type ContextState struct {
	Tokens            int                `json:"tokens"`
	CompressionEvents []CompressionEvent `json:"compression_events"`
	// Summary stands for the history removed by compression.
	Summary string `json:"summary,omitempty"`
}

// CompressionEvent records one compression.
type CompressionEvent struct {
	AtTurn          int                 `json:"at_turn"`
	Strategy        CompressionStrategy `json:"strategy"`
	MessagesRemoved int                 `json:"messages_removed"`
	TokensBefore    int                 `json:"tokens_before"`
	TokensAfter     int                 `json:"tokens_after"`
}

// SocioEmotional tracks the relationship, each in [0,1].
type SocioEmotional struct {
	Rapport  float64 `json:"rapport"`
	Trust    float64 `json:"trust"`
	Friction float64 `json:"friction"`
}

// NewSocioEmotional is the neutral starting point.
func NewSocioEmotional() SocioEmotional {
	return SocioEmotional{Rapport: 0.5, Trust: 0.5, Friction: 0}
}

// SaturationState tracks new concepts per turn to detect saturation.
type SaturationState struct {
	// NewConcepts holds the new concept count of recent turns, oldest first.
	NewConcepts []int   `json:"new_concepts"`
	Score       float64 `json:"score"`
	Saturated   bool    `json:"saturated"`
}

// Message is one conversation message.
type Message struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Turn      int    `json:"turn"`
	MessageID string `json:"message_id,omitempty"`
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// HandoffRejection is an exit transition whose handoff did not pass
// validation.
type HandoffRejection struct {
	TargetEngine string   `json:"target_engine"`
	AtTurn       int      `json:"at_turn"`
	Errors       []string `json:"errors"`
}

// ExitState records a fired exit transition.
type ExitState struct {
	TargetEngine string `json:"target_engine"`
	Reason       string `json:"reason"`
	AtTurn       int    `json:"at_turn"`
	// HandoffID is the handoff written for it.
	HandoffID string `json:"handoff_id,omitempty"`
}
