package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EngineHandoff is what one conversational engine hands to the next when an
// exit transition fires (seed 000, "Handoff Protocol"): who hands what to
// whom and why (metadata), how each phase ended (phase results), what was
// decided, ruled out, constrained and assumed (action list), where the user
// stands (situation awareness), what the user learnt and knows (accumulated
// context), and the state of the relationship (relational state).
//
// It travels as the payload of handoff.created, is stored in
// eng_handoffs.handoff_payload, and starts the target session's working
// memory, whose context shows it first. The seed's rules for a usable
// handoff (reasoning of more than 20 characters, confidences in [0, 1], at
// least one decision, constraint or gap ...) are checked by the producer
// before it is written (package internal/engine/handoff); Validate here
// checks only the envelope a consumer relies on.
type EngineHandoff struct {
	Metadata           HandoffMetadata    `json:"metadata"`
	PhaseResults       []PhaseResult      `json:"phase_results"`
	ActionList         ActionList         `json:"action_list"`
	SituationAwareness SituationAwareness `json:"situation_awareness"`
	AccumulatedContext AccumulatedContext `json:"accumulated_context"`
	RelationalState    RelationalState    `json:"relational_state"`
}

// HandoffMetadata says who hands off to whom, when and why.
type HandoffMetadata struct {
	SourceEngineID string `json:"source_engine_id"`
	// SourceEngineName is the source engine's display name, for people.
	SourceEngineName string    `json:"source_engine_name,omitempty"`
	TargetEngineID   string    `json:"target_engine_id"`
	HandoffDate      time.Time `json:"handoff_date"`
	// SessionID is the source session.
	SessionID string `json:"session_id"`
	ProjectID string `json:"project_id"`
	// TurnCount is the number of user turns of the source session.
	TurnCount int `json:"turn_count"`
	// CompletenessScore is the source session's overall completeness, in [0, 1].
	CompletenessScore float64 `json:"completeness_score"`
	TransitionReason  string  `json:"transition_reason"`
}

// PhaseResult is how one phase of the source session ended.
type PhaseResult struct {
	PhaseName string `json:"phase_name"`
	// CompletionPercentage is the completeness when the phase ended, 0-100.
	CompletionPercentage int `json:"completion_percentage"`
	// KeyOutputs summarises what the phase produced.
	KeyOutputs    string   `json:"key_outputs"`
	RemainingGaps []string `json:"remaining_gaps"`
}

// ActionList is what the source session settled.
type ActionList struct {
	DecisionsReached          []Decision             `json:"decisions_reached"`
	OptionsEliminated         []EliminatedOption     `json:"options_eliminated"`
	ConstraintsIdentified     []IdentifiedConstraint `json:"constraints_identified"`
	AssumptionsCarriedForward []CarriedAssumption    `json:"assumptions_carried_forward"`
}

// Decision is a decision the user reached.
type Decision struct {
	Decision string `json:"decision"`
	// Confidence is in [0, 1].
	Confidence float64 `json:"confidence"`
	// Reasoning says why; a usable handoff has more than 20 characters of it.
	Reasoning string `json:"reasoning"`
	// Key names the kind of decision: the engine and the extraction field
	// it was read from ("exploration/decision.decision_made"). Handoffs
	// written before keys were recorded have none; their decisions are told
	// apart by their text alone.
	Key string `json:"key,omitempty"`
	// Options are those the decision was made among, weighed or ruled out
	// (Xero, QuickBooks, FreshBooks).
	Options []string `json:"options,omitempty"`
	// Question is the question the decision answers, in the user's words
	// as the source session captured them ("Which accounting tool should
	// we use for invoicing?"). Along a chain of engines a later decision
	// with the same key replaces this one when it answers the same
	// question: their questions ask about the same thing and share most of
	// their words (QuickBooks, then Wave, for invoicing), whatever their
	// options; one on another question (how customers pay; hosting, not a
	// database, for the same app) is carried beside it, though it weighed
	// the same kinds of option, and so is the same choice made for another
	// question (PostgreSQL for the app and for analytics). When either has no question (written
	// before questions were recorded), the options tell: one's choice among
	// the other's options (QuickBooks after Xero) is the same question, and
	// a decision without options is replaced by any later one with its key.
	Question string `json:"question,omitempty"`
}

// EliminatedOption is an option the user ruled out, with why.
type EliminatedOption struct {
	Option  string   `json:"option"`
	Reasons []string `json:"reasons"`
	// Question is the question the option was ruled out for
	// (Decision.Question): a later choice of it for another question does
	// not bring it back.
	Question string `json:"question,omitempty"`
}

// IdentifiedConstraint is a constraint and what it implies.
type IdentifiedConstraint struct {
	Constraint  string `json:"constraint"`
	Implication string `json:"implication"`
}

// CarriedAssumption is an assumption the target engine inherits.
type CarriedAssumption struct {
	Assumption     string `json:"assumption"`
	WarrantsReview bool   `json:"warrant_review"`
}

// Levels of the handoff's enumerations.
const (
	LevelLow    = "low"
	LevelMedium = "medium"
	LevelHigh   = "high"

	UnderstandingBasic  = "basic"
	UnderstandingSolid  = "solid"
	UnderstandingExpert = "expert"

	TechnicalBeginner     = "beginner"
	TechnicalIntermediate = "intermediate"
	TechnicalAdvanced     = "advanced"
	TechnicalExpert       = "expert"
)

// SituationAwareness is where the user stands.
type SituationAwareness struct {
	// UserConfidenceLevel is low, medium or high.
	UserConfidenceLevel   string   `json:"user_confidence_level"`
	KnowledgeGapsRevealed []string `json:"knowledge_gaps_revealed"`
	UserGoals             []string `json:"user_goals"`
	KeyPainPoints         []string `json:"key_pain_points"`
}

// AccumulatedContext is what the user learnt and brings.
type AccumulatedContext struct {
	ConceptsTaught  []TaughtConcept `json:"concepts_taught"`
	PriorExperience []string        `json:"prior_experience"`
	// TechnicalLevel is beginner, intermediate, advanced or expert.
	TechnicalLevel string `json:"technical_level"`
}

// TaughtConcept is a concept explained to the user.
type TaughtConcept struct {
	Concept string `json:"concept"`
	// UnderstandingLevel is basic, solid or expert.
	UnderstandingLevel string `json:"understanding_level"`
}

// RelationalState is the state of the relationship with the user.
type RelationalState struct {
	// TrustLevel is low, medium or high.
	TrustLevel    string   `json:"trust_level"`
	Rapport       string   `json:"rapport"`
	OpenQuestions []string `json:"open_questions"`
	Sensitivities []string `json:"sensitivities"`
}

// Validate checks the envelope of a handoff that consumers rely on: the
// engines, the source session and project, a date and a reason. The seed's
// content rules are the producer's (internal/engine/handoff.Validate).
func (h EngineHandoff) Validate() error {
	md := h.Metadata
	if err := need("metadata.source_engine_id", md.SourceEngineID, "metadata.target_engine_id", md.TargetEngineID,
		"metadata.session_id", md.SessionID, "metadata.project_id", md.ProjectID,
		"metadata.transition_reason", md.TransitionReason); err != nil {
		return err
	}
	if md.HandoffDate.IsZero() {
		return errors.New("metadata.handoff_date is required")
	}
	if md.SourceEngineID == md.TargetEngineID {
		return fmt.Errorf("metadata: engine %s hands off to itself", md.SourceEngineID)
	}
	if md.CompletenessScore < 0 || md.CompletenessScore > 1 {
		return errors.New("metadata.completeness_score must be within [0, 1]")
	}
	return nil
}

// DecodeHandoff decodes a handoff kept as JSON, as a session keeps the
// one it started with; false when there is none (empty, null) or it does
// not decode.
func DecodeHandoff(raw []byte) (EngineHandoff, bool) {
	var h EngineHandoff
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &h) != nil {
		return EngineHandoff{}, false
	}
	return h, true
}
