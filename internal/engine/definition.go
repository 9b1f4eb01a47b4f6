package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/invopop/jsonschema"
	"gopkg.in/yaml.v3"
)

// EngineType says which side of the conversation carries most information.
type EngineType string

// The engine types. Balanced is for engines such as ideation that alternate
// between exploring and validating.
const (
	ExtractDominant EngineType = "extract-dominant"
	InformDominant  EngineType = "inform-dominant"
	Balanced        EngineType = "balanced"
)

// Definition is one engine: the seed's EngineConfiguration with its 13
// surfaces, loaded from a YAML file. Keys are snake_case; engines/README.md
// documents each one.
type Definition struct {
	// Identity.
	EngineID    string     `yaml:"engine_id" json:"engine_id" jsonschema:"required,pattern=^[a-z][a-z0-9-]*$"`
	Name        string     `yaml:"name" json:"name" jsonschema:"required"`
	Description string     `yaml:"description" json:"description" jsonschema:"required"`
	Version     string     `yaml:"version" json:"version" jsonschema:"required"`
	EngineType  EngineType `yaml:"engine_type" json:"engine_type" jsonschema:"required,enum=extract-dominant,enum=inform-dominant,enum=balanced"`

	// Phases in order; InitialPhase is where a new session starts.
	Phases       []Phase `yaml:"phases" json:"phases" jsonschema:"required,minItems=1"`
	InitialPhase string  `yaml:"initial_phase" json:"initial_phase" jsonschema:"required"`

	// Obligations are what the conversation must establish.
	Obligations []Obligation `yaml:"obligations" json:"obligations" jsonschema:"required,minItems=1"`

	// CompletenessModel scores how far the conversation is.
	CompletenessModel CompletenessModel `yaml:"completeness_model" json:"completeness_model" jsonschema:"required"`

	// BackgroundTasks are dispatched when their trigger holds (issue 4 runs them).
	BackgroundTasks []BackgroundTask `yaml:"background_tasks,omitempty" json:"background_tasks,omitempty"`

	// ContextConfig budgets the context window of the response model.
	ContextConfig ContextConfig `yaml:"context_config" json:"context_config" jsonschema:"required"`

	// InformationRatio is the intended user:system balance, summing to 100.
	InformationRatio InformationRatio `yaml:"information_ratio" json:"information_ratio" jsonschema:"required"`

	// SidebarConfig maps working memory to the sidebar.
	SidebarConfig SidebarConfig `yaml:"sidebar_config" json:"sidebar_config"`

	// AvailableTechniques lists the technique ids phases may activate.
	AvailableTechniques []string `yaml:"available_techniques" json:"available_techniques"`

	// ExitTransitions hand the conversation to another engine.
	ExitTransitions []ExitTransition `yaml:"exit_transitions,omitempty" json:"exit_transitions,omitempty"`

	// SystemPromptTemplate is a Go text/template rendered with PromptData.
	SystemPromptTemplate string `yaml:"system_prompt_template" json:"system_prompt_template" jsonschema:"required"`

	// ExtractionSchema defines the fields extraction fills.
	ExtractionSchema ExtractionSchema `yaml:"extraction_schema" json:"extraction_schema" jsonschema:"required"`

	// CustomEvaluators names the Go evaluators the engine uses; each must be
	// registered in the Registry.
	CustomEvaluators []string `yaml:"custom_evaluators,omitempty" json:"custom_evaluators,omitempty"`

	// Set by the loader.
	file      string
	positions map[string]Pos
	tmpl      *template.Template
	digest    string
}

// Digest is the SHA-256 of the definition's canonical JSON, as loaded: two
// files that define the same engine (comments and layout aside) have the
// same digest, and an engine edited without a new version has another. ""
// for a definition not loaded from a file.
func (d *Definition) Digest() string { return d.digest }

// File is the file the definition was loaded from ("" when built in Go).
func (d *Definition) File() string { return d.file }

// Phase returns the phase with the given id.
func (d *Definition) Phase(id string) (*Phase, bool) {
	for i := range d.Phases {
		if d.Phases[i].ID == id {
			return &d.Phases[i], true
		}
	}
	return nil, false
}

// Obligation returns the obligation with the given id.
func (d *Definition) Obligation(id string) (*Obligation, bool) {
	for i := range d.Obligations {
		if d.Obligations[i].ID == id {
			return &d.Obligations[i], true
		}
	}
	return nil, false
}

// Field returns the extraction field with the given path.
func (d *Definition) Field(path string) (*FieldDefinition, bool) {
	for i := range d.ExtractionSchema.Fields {
		if d.ExtractionSchema.Fields[i].Path == path {
			return &d.ExtractionSchema.Fields[i], true
		}
	}
	return nil, false
}

// Categories returns the obligation categories in order of first appearance.
func (d *Definition) Categories() []string {
	var out []string
	for _, o := range d.Obligations {
		if !slices.Contains(out, o.Category) {
			out = append(out, o.Category)
		}
	}
	return out
}

// PhaseFocus returns the obligation categories a phase works on: its
// focus_categories, else the categories its obligation_satisfaction triggers
// and its checkpoints name, else every category.
func (d *Definition) PhaseFocus(p *Phase) []string {
	if len(p.FocusCategories) > 0 {
		return p.FocusCategories
	}
	var out []string
	add := func(c string) {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, t := range p.TransitionTriggers {
		if t.Type == CondObligationSatisfaction {
			add(t.Category)
		}
	}
	for _, c := range p.MandatoryCheckpoints {
		if o, ok := d.Obligation(c.ObligationID); ok {
			add(o.Category)
		}
	}
	if len(out) == 0 {
		return d.Categories()
	}
	return out
}

// Phase is one stage of the conversation.
type Phase struct {
	ID          string `yaml:"id" json:"id" jsonschema:"required,pattern=^[A-Za-z][A-Za-z0-9_]*$"`
	DisplayName string `yaml:"display_name" json:"display_name" jsonschema:"required"`
	// Order is the phase's position, 1-based and sequential.
	Order int `yaml:"order" json:"order" jsonschema:"required,minimum=1"`
	// NextPhase is where a trigger without target_phase leads; empty on the
	// last phase.
	NextPhase string `yaml:"next_phase,omitempty" json:"next_phase,omitempty"`
	// EntryConditions must all hold for a transition into this phase.
	EntryConditions []Condition `yaml:"entry_conditions,omitempty" json:"entry_conditions,omitempty"`
	// TransitionTriggers: the first that holds moves the conversation on.
	TransitionTriggers []Trigger `yaml:"transition_triggers,omitempty" json:"transition_triggers,omitempty"`
	// MandatoryCheckpoints must be satisfied before leaving this phase.
	MandatoryCheckpoints []Checkpoint `yaml:"mandatory_checkpoints,omitempty" json:"mandatory_checkpoints,omitempty"`
	// FocusCategories are the obligation categories this phase asks about;
	// when empty they are derived from the triggers and checkpoints.
	FocusCategories []string `yaml:"focus_categories,omitempty" json:"focus_categories,omitempty"`
	// ModeBlend is the conversation style, in percent summing to 100.
	ModeBlend ModeBlend `yaml:"mode_blend" json:"mode_blend" jsonschema:"required"`
	// ActiveTechniques are the techniques the scheduler may pick in this phase.
	ActiveTechniques []string `yaml:"active_techniques,omitempty" json:"active_techniques,omitempty"`
	// AgentInstructions are added to the response prompt in this phase.
	AgentInstructions string `yaml:"agent_instructions,omitempty" json:"agent_instructions,omitempty"`
}

// Checkpoint is an obligation that must be satisfied before a phase is left.
type Checkpoint struct {
	ObligationID string `yaml:"obligation_id" json:"obligation_id" jsonschema:"required"`
	// Required false makes the checkpoint advisory: it is reported, never blocks.
	Required bool `yaml:"required" json:"required"`
}

// Trigger is a transition trigger: a condition and where it leads.
type Trigger struct {
	Condition `yaml:",inline"`
	// TargetPhase overrides the phase's next_phase.
	TargetPhase string `yaml:"target_phase,omitempty" json:"target_phase,omitempty"`
}

// ConditionType names what a condition tests.
type ConditionType string

// Condition types. The first four are the seed's transition trigger types;
// user_request is for exit transitions.
const (
	// CondObligationSatisfaction: the share of a category's obligations that
	// are satisfied is at least min_satisfaction_rate.
	CondObligationSatisfaction ConditionType = "obligation_satisfaction"
	// CondTurnCount: at least min_turns turns (in the current phase for
	// transition triggers, in the conversation elsewhere).
	CondTurnCount ConditionType = "turn_count"
	// CondCompletenessScore: overall completeness is at least min_completeness.
	CondCompletenessScore ConditionType = "completeness_score"
	// CondCustomEvaluator: the named evaluator returns at least threshold.
	CondCustomEvaluator ConditionType = "custom_evaluator"
	// CondUserRequest: the current user message contains one of keywords.
	CondUserRequest ConditionType = "user_request"
)

// Condition is a test on working memory, used by transition triggers, entry
// conditions, sidebar visibility and exit transitions. Only the parameters of
// its type may be set.
type Condition struct {
	Type                ConditionType `yaml:"type" json:"type" jsonschema:"required,enum=obligation_satisfaction,enum=turn_count,enum=completeness_score,enum=custom_evaluator,enum=user_request"`
	Category            string        `yaml:"category,omitempty" json:"category,omitempty"`
	MinSatisfactionRate float64       `yaml:"min_satisfaction_rate,omitempty" json:"min_satisfaction_rate,omitempty" jsonschema:"minimum=0,maximum=1"`
	MinTurns            int           `yaml:"min_turns,omitempty" json:"min_turns,omitempty" jsonschema:"minimum=0"`
	MinCompleteness     float64       `yaml:"min_completeness,omitempty" json:"min_completeness,omitempty" jsonschema:"minimum=0,maximum=1"`
	EvaluatorName       string        `yaml:"evaluator_name,omitempty" json:"evaluator_name,omitempty"`
	Threshold           float64       `yaml:"threshold,omitempty" json:"threshold,omitempty" jsonschema:"minimum=0,maximum=1"`
	Keywords            []string      `yaml:"keywords,omitempty" json:"keywords,omitempty"`
}

// String describes the condition for logs and prompts.
func (c Condition) String() string {
	switch c.Type {
	case CondObligationSatisfaction:
		return fmt.Sprintf("%s: %.0f%% of %s obligations satisfied", c.Type, c.MinSatisfactionRate*100, c.Category)
	case CondTurnCount:
		return fmt.Sprintf("%s: at least %d turns", c.Type, c.MinTurns)
	case CondCompletenessScore:
		return fmt.Sprintf("%s: completeness at least %.2f", c.Type, c.MinCompleteness)
	case CondCustomEvaluator:
		return fmt.Sprintf("%s: %s at least %.2f", c.Type, c.EvaluatorName, c.Threshold)
	case CondUserRequest:
		return fmt.Sprintf("%s: user asks for one of %s", c.Type, strings.Join(c.Keywords, ", "))
	}
	return string(c.Type)
}

// Priority orders obligations of equal requiredness.
type Priority string

// Priorities, most important first.
const (
	PriorityCritical Priority = "critical"
	PriorityHigh     Priority = "high"
	PriorityMedium   Priority = "medium"
	PriorityLow      Priority = "low"
)

// Rank is 0 for critical up to 3 for low; unset counts as medium.
func (p Priority) Rank() int {
	switch p {
	case PriorityCritical:
		return 0
	case PriorityHigh:
		return 1
	case PriorityLow:
		return 3
	}
	return 2
}

// Obligation is something the conversation must establish. Its status derives
// from the extraction fields it lists (or from an evaluator); see package
// obligation.
type Obligation struct {
	ID          string   `yaml:"id" json:"id" jsonschema:"required,pattern=^[a-z][a-z0-9_]*$"`
	Category    string   `yaml:"category" json:"category" jsonschema:"required"`
	Description string   `yaml:"description" json:"description" jsonschema:"required"`
	Required    bool     `yaml:"required" json:"required"`
	Priority    Priority `yaml:"priority,omitempty" json:"priority,omitempty" jsonschema:"enum=critical,enum=high,enum=medium,enum=low"`
	// Fields are the extraction field paths that satisfy the obligation.
	Fields []string `yaml:"fields,omitempty" json:"fields,omitempty"`
	// MinFields is how many of Fields must be met; 0 means all of them.
	MinFields int `yaml:"min_fields,omitempty" json:"min_fields,omitempty" jsonschema:"minimum=0"`
	// Evaluator scores the obligation in [0,1]; it is satisfied at Threshold
	// (default 1.0) and partial above 0. With fields, either satisfies it.
	Evaluator string  `yaml:"evaluator,omitempty" json:"evaluator,omitempty"`
	Threshold float64 `yaml:"threshold,omitempty" json:"threshold,omitempty" jsonschema:"minimum=0,maximum=1"`
	// Question is how to ask for it; the reply prompt offers it to the model.
	Question string `yaml:"question,omitempty" json:"question,omitempty"`
}

// Needed is how many of the obligation's fields must be met.
func (o *Obligation) Needed() int {
	if o.MinFields > 0 && o.MinFields < len(o.Fields) {
		return o.MinFields
	}
	return len(o.Fields)
}

// CompletenessModelType names one of the seven completeness models.
type CompletenessModelType string

// The seven completeness models.
const (
	ModelObligation        CompletenessModelType = "obligation"
	ModelDecisionReadiness CompletenessModelType = "decision-readiness"
	ModelMaturity          CompletenessModelType = "maturity"
	ModelEstimability      CompletenessModelType = "estimability"
	ModelCoverage          CompletenessModelType = "coverage"
	ModelProfile           CompletenessModelType = "profile"
	ModelSaturation        CompletenessModelType = "saturation"
)

// CompletenessModelTypes lists the models in the seed's order.
func CompletenessModelTypes() []CompletenessModelType {
	return []CompletenessModelType{ModelObligation, ModelDecisionReadiness, ModelMaturity,
		ModelEstimability, ModelCoverage, ModelProfile, ModelSaturation}
}

// CompletenessModel configures the completeness engine.
type CompletenessModel struct {
	Type CompletenessModelType `yaml:"type" json:"type" jsonschema:"required,enum=obligation,enum=decision-readiness,enum=maturity,enum=estimability,enum=coverage,enum=profile,enum=saturation"`
	// ReadyThreshold: the conversation is ready when overall ≥ this.
	ReadyThreshold float64 `yaml:"ready_threshold" json:"ready_threshold" jsonschema:"required,exclusiveMinimum=0,maximum=1"`
	// Heuristics are weighted scores; weights sum to 1.0. Empty means every
	// obligation category with equal weight (the saturation signal for the
	// saturation model).
	Heuristics []Heuristic `yaml:"heuristics,omitempty" json:"heuristics,omitempty"`
	// Levels name maturity stages by minimum overall score (maturity model).
	Levels []MaturityLevel `yaml:"levels,omitempty" json:"levels,omitempty"`
	// SaturationWindow is how many recent turns the saturation signal looks
	// at (default 3).
	SaturationWindow int `yaml:"saturation_window,omitempty" json:"saturation_window,omitempty" jsonschema:"minimum=0"`
}

// Heuristic is one weighted part of the completeness score. Exactly one
// source is set: an obligation category, a custom evaluator, an extraction
// field prefix, or a built-in signal.
type Heuristic struct {
	ID          string  `yaml:"id" json:"id" jsonschema:"required"`
	Weight      float64 `yaml:"weight" json:"weight" jsonschema:"required,minimum=0,maximum=1"`
	Category    string  `yaml:"category,omitempty" json:"category,omitempty"`
	Evaluator   string  `yaml:"evaluator,omitempty" json:"evaluator,omitempty"`
	FieldPrefix string  `yaml:"field_prefix,omitempty" json:"field_prefix,omitempty"`
	Signal      string  `yaml:"signal,omitempty" json:"signal,omitempty" jsonschema:"enum=saturation"`
}

// SignalSaturation is the built-in saturation signal (recent turns without
// new concepts).
const SignalSaturation = "saturation"

// MaturityLevel names a stage of the maturity model.
type MaturityLevel struct {
	Name     string  `yaml:"name" json:"name" jsonschema:"required"`
	MinScore float64 `yaml:"min_score" json:"min_score" jsonschema:"minimum=0,maximum=1"`
}

// TaskTriggerType names when a background task is dispatched.
type TaskTriggerType string

// Background task trigger types.
const (
	TaskTriggerLowConfidence    TaskTriggerType = "low_confidence"
	TaskTriggerObligationStatus TaskTriggerType = "obligation_status"
	TaskTriggerCustom           TaskTriggerType = "custom"
)

// FailureStrategyType names what happens when a background task fails.
type FailureStrategyType string

// The four failure strategies.
const (
	FailureRetry          FailureStrategyType = "retry"
	FailureDegrade        FailureStrategyType = "degrade"
	FailureStall          FailureStrategyType = "stall"
	FailureProceedWithGap FailureStrategyType = "proceed-with-gap"
)

// BackgroundTask is an asynchronous job (research, analysis) the runner
// dispatches when its trigger holds.
type BackgroundTask struct {
	TaskID      string      `yaml:"task_id" json:"task_id" jsonschema:"required,pattern=^[a-z][a-z0-9_]*$"`
	DisplayName string      `yaml:"display_name" json:"display_name" jsonschema:"required"`
	Description string      `yaml:"description,omitempty" json:"description,omitempty"`
	Trigger     TaskTrigger `yaml:"trigger" json:"trigger" jsonschema:"required"`
	// Handler names the registered function that runs the task.
	Handler           string          `yaml:"handler" json:"handler" jsonschema:"required"`
	EstimatedDuration Duration        `yaml:"estimated_duration" json:"estimated_duration" jsonschema:"required"`
	FailureStrategy   FailureStrategy `yaml:"failure_strategy" json:"failure_strategy" jsonschema:"required"`
	// BlockPhaseTransition keeps the phase from advancing while the task runs.
	BlockPhaseTransition bool `yaml:"block_phase_transition,omitempty" json:"block_phase_transition,omitempty"`
}

// TaskTrigger says when a task is dispatched.
type TaskTrigger struct {
	Type TaskTriggerType `yaml:"type" json:"type" jsonschema:"required,enum=low_confidence,enum=obligation_status,enum=custom"`
	// Threshold: low_confidence fires when an obligation with some evidence
	// has confidence below it; custom fires when the evaluator reaches it.
	Threshold float64 `yaml:"threshold,omitempty" json:"threshold,omitempty" jsonschema:"minimum=0,maximum=1"`
	// ObligationIDs limit low_confidence and name obligation_status's obligations.
	ObligationIDs []string `yaml:"obligation_ids,omitempty" json:"obligation_ids,omitempty"`
	// Status is the obligation status obligation_status waits for (default pending).
	Status ObligationStatusValue `yaml:"status,omitempty" json:"status,omitempty" jsonschema:"enum=pending,enum=partial,enum=satisfied,enum=deferred"`
	// Evaluator is the custom trigger's registered evaluator.
	Evaluator string `yaml:"evaluator,omitempty" json:"evaluator,omitempty"`
	// MinTurn delays the trigger until the conversation reaches this turn.
	MinTurn int `yaml:"min_turn,omitempty" json:"min_turn,omitempty" jsonschema:"minimum=0"`
}

// FailureStrategy configures the task failure strategy.
type FailureStrategy struct {
	Type FailureStrategyType `yaml:"type" json:"type" jsonschema:"required,enum=retry,enum=degrade,enum=stall,enum=proceed-with-gap"`
	// MaxRetries bounds the attempts after the first: required for retry
	// (at least 1); for stall, default 5, and 0 falls back to then at the
	// first failure.
	MaxRetries *int `yaml:"max_retries,omitempty" json:"max_retries,omitempty" jsonschema:"minimum=0"`
	// RetryDelay is the first backoff; it doubles per attempt (default 5s).
	RetryDelay Duration `yaml:"retry_delay,omitempty" json:"retry_delay,omitempty"`
	// DegradedBehavior tells the agent how to proceed without the result.
	DegradedBehavior string `yaml:"degraded_behavior,omitempty" json:"degraded_behavior,omitempty"`
	// Then is what retry or stall falls back to once its retries are spent
	// (default proceed-with-gap; a stall falls back to degrade or
	// proceed-with-gap only).
	Then FailureStrategyType `yaml:"then,omitempty" json:"then,omitempty" jsonschema:"enum=degrade,enum=stall,enum=proceed-with-gap"`
}

// CompressionStrategy names how conversation history is shrunk.
type CompressionStrategy string

// The three compression strategies.
const (
	CompressSummarizeOld  CompressionStrategy = "summarize_old"
	CompressSlidingWindow CompressionStrategy = "sliding_window"
	CompressExtractive    CompressionStrategy = "extractive"
)

// ContextConfig budgets the context assembled for the response model.
type ContextConfig struct {
	// MaxTokens is the context window budget.
	MaxTokens  int        `yaml:"max_tokens" json:"max_tokens" jsonschema:"required,minimum=256"`
	Allocation Allocation `yaml:"allocation" json:"allocation" jsonschema:"required"`
	// CompressionStrategy defaults to summarize_old.
	CompressionStrategy CompressionStrategy `yaml:"compression_strategy,omitempty" json:"compression_strategy,omitempty" jsonschema:"enum=summarize_old,enum=sliding_window,enum=extractive"`
	// RecentTurnsKept is how many recent turns compression keeps intact
	// (default 4).
	RecentTurnsKept int `yaml:"recent_turns_kept,omitempty" json:"recent_turns_kept,omitempty" jsonschema:"minimum=0"`
	// CheckpointEveryTurns snapshots state every N turns (default 5; state is
	// also snapshotted before each compression).
	CheckpointEveryTurns int `yaml:"checkpoint_every_turns,omitempty" json:"checkpoint_every_turns,omitempty" jsonschema:"minimum=0"`
	// Encoding is the tiktoken encoding used to count tokens (default cl100k_base).
	Encoding string `yaml:"encoding,omitempty" json:"encoding,omitempty" jsonschema:"enum=cl100k_base,enum=o200k_base,enum=p50k_base,enum=r50k_base"`
}

// Allocation splits the budget between the four budgeted sections, as
// fractions summing to 1.0 (≈100%).
type Allocation struct {
	Obligations            float64 `yaml:"obligations" json:"obligations" jsonschema:"minimum=0,maximum=1"`
	ConversationHistory    float64 `yaml:"conversation_history" json:"conversation_history" jsonschema:"minimum=0,maximum=1"`
	BackgroundIntelligence float64 `yaml:"background_intelligence" json:"background_intelligence" jsonschema:"minimum=0,maximum=1"`
	ExtractionSummary      float64 `yaml:"extraction_summary" json:"extraction_summary" jsonschema:"minimum=0,maximum=1"`
}

// Sum is the total share.
func (a Allocation) Sum() float64 {
	return a.Obligations + a.ConversationHistory + a.BackgroundIntelligence + a.ExtractionSummary
}

// InformationRatio is the intended share of information from each side.
type InformationRatio struct {
	User   int `yaml:"user" json:"user" jsonschema:"minimum=0,maximum=100"`
	System int `yaml:"system" json:"system" jsonschema:"minimum=0,maximum=100"`
}

// SidebarConfig describes the sidebar.
type SidebarConfig struct {
	StaticSections  []SidebarSection `yaml:"static_sections,omitempty" json:"static_sections,omitempty"`
	DynamicSections []DynamicSection `yaml:"dynamic_sections,omitempty" json:"dynamic_sections,omitempty"`
	PhaseIndicator  PhaseIndicator   `yaml:"phase_indicator,omitempty" json:"phase_indicator,omitempty"`
	ProgressBar     ProgressBar      `yaml:"progress_bar,omitempty" json:"progress_bar,omitempty"`
}

// SidebarSection lists the obligations of some categories.
type SidebarSection struct {
	ID                   string   `yaml:"id" json:"id" jsonschema:"required"`
	Title                string   `yaml:"title" json:"title" jsonschema:"required"`
	ObligationCategories []string `yaml:"obligation_categories" json:"obligation_categories" jsonschema:"required,minItems=1"`
	DefaultCollapsed     bool     `yaml:"default_collapsed,omitempty" json:"default_collapsed,omitempty"`
}

// DynamicSection is a section shown only while its condition holds.
type DynamicSection struct {
	Section     SidebarSection `yaml:"section" json:"section" jsonschema:"required"`
	AppearsWhen Condition      `yaml:"appears_when" json:"appears_when" jsonschema:"required"`
	// Phases, when set, limit the section to these phases as well.
	Phases []string `yaml:"phases,omitempty" json:"phases,omitempty"`
}

// PhaseIndicator shows the current phase under a friendly label.
type PhaseIndicator struct {
	Show   bool              `yaml:"show" json:"show"`
	Labels map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// ProgressBar shows round(overall completeness × 100).
type ProgressBar struct {
	Show           bool `yaml:"show" json:"show"`
	ShowPercentage bool `yaml:"show_percentage,omitempty" json:"show_percentage,omitempty"`
}

// ExitTransition hands the conversation to another engine when all its
// conditions hold.
type ExitTransition struct {
	TargetEngine string      `yaml:"target_engine" json:"target_engine" jsonschema:"required"`
	Conditions   []Condition `yaml:"conditions" json:"conditions" jsonschema:"required,minItems=1"`
	Reason       string      `yaml:"reason" json:"reason" jsonschema:"required"`
}

// ValueType is the JSON type of an extracted value.
type ValueType string

// Value types.
const (
	TypeString  ValueType = "string"
	TypeNumber  ValueType = "number"
	TypeBoolean ValueType = "boolean"
	TypeArray   ValueType = "array"
	TypeObject  ValueType = "object"
)

// DefaultConfidenceThreshold is the seed's default field threshold.
const DefaultConfidenceThreshold = 0.70

// ExtractionSchema defines the engine's extraction fields.
type ExtractionSchema struct {
	Fields []FieldDefinition `yaml:"fields" json:"fields" jsonschema:"required,minItems=1"`
}

// FieldDefinition is one extraction field.
type FieldDefinition struct {
	// Path is dot-separated snake_case, e.g. purpose_and_problem.core_problem.
	Path        string    `yaml:"path" json:"path" jsonschema:"required,pattern=^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$"`
	DisplayName string    `yaml:"display_name" json:"display_name" jsonschema:"required"`
	Description string    `yaml:"description" json:"description" jsonschema:"required"`
	ValueType   ValueType `yaml:"value_type" json:"value_type" jsonschema:"required,enum=string,enum=number,enum=boolean,enum=array,enum=object"`
	Required    bool      `yaml:"required,omitempty" json:"required,omitempty"`
	// ConfidenceThreshold: values extracted below it are not applied
	// (default 0.70).
	ConfidenceThreshold float64 `yaml:"confidence_threshold,omitempty" json:"confidence_threshold,omitempty" jsonschema:"minimum=0,maximum=1"`
	// MinItems, for an array field, is how many items it needs to count as
	// met ("at least three options"); fewer leave its obligation partial.
	MinItems int `yaml:"min_items,omitempty" json:"min_items,omitempty" jsonschema:"minimum=0"`
	// Cues map a user's words to the field for the offline provider, and hint
	// real models too.
	Cues Cues `yaml:"cues,omitempty" json:"cues,omitempty"`
}

// Threshold is the field's confidence threshold with the default applied.
func (f *FieldDefinition) Threshold() float64 {
	if f.ConfidenceThreshold > 0 {
		return f.ConfidenceThreshold
	}
	return DefaultConfidenceThreshold
}

// Met reports whether an extracted value counts for obligations and
// completeness: extracted at or above the threshold and, for a boolean
// field, true — a boolean field is a confirmation, and false means not
// (yet) confirmed — and for an array field with MinItems, holding that
// many. A null value ("there is none") counts as an answer.
func (f *FieldDefinition) Met(x ExtractedField) bool {
	if x.Confidence+1e-9 < f.Threshold() {
		return false
	}
	switch {
	case x.IsNull():
	case f.ValueType == TypeBoolean:
		return string(bytes.TrimSpace(x.Value)) == "true"
	case f.ValueType == TypeArray && f.MinItems > 0:
		var items []json.RawMessage
		return json.Unmarshal(x.Value, &items) == nil && len(items) >= f.MinItems
	}
	return true
}

// Cues say which words in a user message carry the field.
type Cues struct {
	// Keywords select the sentence that contains one (case-insensitive,
	// whole words).
	Keywords []string `yaml:"keywords,omitempty" json:"keywords,omitempty"`
	// Patterns are regular expressions (RE2); the named group "value", else
	// the first group, else the whole match is the value. Other named groups
	// become keys of an object value.
	Patterns []string `yaml:"patterns,omitempty" json:"patterns,omitempty"`
	// Values map words to a literal value (enumerations, booleans).
	Values []CueValue `yaml:"values,omitempty" json:"values,omitempty"`
	// Confidence overrides the confidence the offline provider gives a match.
	Confidence float64 `yaml:"confidence,omitempty" json:"confidence,omitempty" jsonschema:"minimum=0,maximum=1"`
	// FocusOnly applies the cues only when the field's obligation is the one
	// the last reply asked for, for generic words such as "yes".
	FocusOnly bool `yaml:"focus_only,omitempty" json:"focus_only,omitempty"`
	// Firm keeps a hedged answer to the field's question ("maybe",
	// "probably", "I guess") from filling it when no cue matched, and a
	// question, a condition or an indefinite choice ("Should we go with
	// …?", "If we go with …", "Whatever I pick, …") from filling it at all:
	// for a field such as a decision, which none of them makes.
	Firm bool `yaml:"firm,omitempty" json:"firm,omitempty"`
}

// Empty reports whether no cue is set.
func (c Cues) Empty() bool {
	return len(c.Keywords) == 0 && len(c.Patterns) == 0 && len(c.Values) == 0
}

// CueValue maps words to a literal value.
type CueValue struct {
	When  []string `yaml:"when" json:"when" jsonschema:"required,minItems=1"`
	Value any      `yaml:"value" json:"value" jsonschema:"required"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads a duration string such as "30s" or "1m30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 30s or 1m30s", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration string (JSON).
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration string (JSON).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// JSONSchema describes the duration string.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		Description: "a Go duration such as 30s or 1m30s",
	}
}
