// Package enginetest builds engine definitions and working memories for the
// tests of the engine components.
package enginetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/engine/technique"
)

// Shipped loads the engines Praetor ships, with their evaluators and task
// handlers registered, or fails the test.
func Shipped(tb testing.TB) *engine.Catalog {
	tb.Helper()
	_, cat := ShippedWithRegistry(tb)
	return cat
}

// ShippedWithRegistry is Shipped with the registry the engines were loaded
// against, for a runner to run them.
func ShippedWithRegistry(tb testing.TB) (*engine.Registry, *engine.Catalog) {
	tb.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		tb.Fatal(err)
	}
	cat, _, err := builtin.Load(reg)
	if err != nil {
		tb.Fatal(err)
	}
	return reg, cat
}

// Registry knows the technique library, the evaluators "always" (1.0),
// "half" (0.5) and "never" (0.0), and the task handler "research.web".
func Registry() *engine.Registry {
	r := engine.NewRegistry()
	technique.Register(r)
	for name, v := range map[string]float64{"always": 1, "half": 0.5, "never": 0} {
		if err := r.RegisterEvaluator(name, func(*engine.WorkingMemory) float64 { return v }); err != nil {
			panic(err)
		}
	}
	if err := r.RegisterTaskHandler("research.web", "web research"); err != nil {
		panic(err)
	}
	return r
}

// Definition returns a small valid engine, "testing": phases INTRO → DETAILS
// → REVIEW; categories basics, details and review; the obligation model at
// 0.70 weighing them 0.4, 0.4 and 0.2.
func Definition() *engine.Definition {
	blend := func(b engine.ModeBlend) engine.ModeBlend { return b }
	def := &engine.Definition{
		EngineID: "testing", Name: "Testing", Description: "An engine for tests.", Version: "1.0.0",
		EngineType: engine.ExtractDominant, InitialPhase: "INTRO",
		Phases: []engine.Phase{
			{ID: "INTRO", DisplayName: "Introduction", Order: 1, NextPhase: "DETAILS",
				TransitionTriggers: []engine.Trigger{{Condition: engine.Condition{
					Type: engine.CondObligationSatisfaction, Category: "basics", MinSatisfactionRate: 0.6}}},
				ModeBlend:         blend(engine.ModeBlend{Extract: 80, Validate: 20}),
				ActiveTechniques:  []string{"open_ended_questions", "active_listening"},
				AgentInstructions: "Learn the basics."},
			{ID: "DETAILS", DisplayName: "Details", Order: 2, NextPhase: "REVIEW",
				TransitionTriggers:   []engine.Trigger{{Condition: engine.Condition{Type: engine.CondTurnCount, MinTurns: 3}}},
				MandatoryCheckpoints: []engine.Checkpoint{{ObligationID: "budget_known", Required: true}},
				ModeBlend:            blend(engine.ModeBlend{Extract: 60, Explore: 20, Validate: 20}),
				ActiveTechniques:     []string{"context_reinstatement", "open_ended_questions"},
				AgentInstructions:    "Get the details."},
			{ID: "REVIEW", DisplayName: "Review", Order: 3,
				EntryConditions:      []engine.Condition{{Type: engine.CondCompletenessScore, MinCompleteness: 0.5}},
				MandatoryCheckpoints: []engine.Checkpoint{{ObligationID: "confirm_scope", Required: true}},
				ModeBlend:            blend(engine.ModeBlend{Validate: 70, Refine: 20, Extract: 10}),
				ActiveTechniques:     []string{"summary_reflection"},
				AgentInstructions:    "Confirm everything."},
		},
		Obligations: []engine.Obligation{
			{ID: "goal_known", Category: "basics", Description: "The goal is known", Required: true,
				Priority: engine.PriorityCritical, Fields: []string{"basics.goal"}, Question: "What do you want to achieve?"},
			{ID: "users_known", Category: "basics", Description: "The users are known", Required: true,
				Priority: engine.PriorityHigh, Fields: []string{"basics.users"}},
			{ID: "name_known", Category: "basics", Description: "The name is known", Priority: engine.PriorityLow,
				Fields: []string{"basics.name"}},
			{ID: "budget_known", Category: "details", Description: "The budget is known", Required: true,
				Priority: engine.PriorityHigh, Fields: []string{"details.budget"}},
			{ID: "timeline_known", Category: "details", Description: "The timeline is known", Required: true,
				Fields: []string{"details.timeline", "details.deadline"}, MinFields: 1},
			{ID: "features_known", Category: "details", Description: "The features are known",
				Fields: []string{"details.features"}},
			{ID: "confirm_scope", Category: "review", Description: "The user confirmed the scope", Required: true,
				Fields: []string{"review.confirmed"}},
		},
		CompletenessModel: engine.CompletenessModel{Type: engine.ModelObligation, ReadyThreshold: 0.7,
			Heuristics: []engine.Heuristic{
				{ID: "basics", Weight: 0.4, Category: "basics"},
				{ID: "details", Weight: 0.4, Category: "details"},
				{ID: "review", Weight: 0.2, Category: "review"},
			}},
		ContextConfig: engine.ContextConfig{MaxTokens: 2000, Allocation: engine.Allocation{
			Obligations: 0.4, ConversationHistory: 0.3, BackgroundIntelligence: 0.2, ExtractionSummary: 0.1},
			RecentTurnsKept: 4, CheckpointEveryTurns: 5},
		InformationRatio: engine.InformationRatio{User: 70, System: 30},
		SidebarConfig: engine.SidebarConfig{
			StaticSections: []engine.SidebarSection{{ID: "core", Title: "Core", ObligationCategories: []string{"basics", "details"}}},
			DynamicSections: []engine.DynamicSection{{
				Section:     engine.SidebarSection{ID: "review", Title: "Review", ObligationCategories: []string{"review"}},
				AppearsWhen: engine.Condition{Type: engine.CondTurnCount, MinTurns: 3}}},
			PhaseIndicator: engine.PhaseIndicator{Show: true, Labels: map[string]string{"INTRO": "Getting started"}},
			ProgressBar:    engine.ProgressBar{Show: true, ShowPercentage: true},
		},
		AvailableTechniques:  []string{"open_ended_questions", "active_listening", "context_reinstatement", "summary_reflection"},
		SystemPromptTemplate: "You are {{.EngineName}}. Phase: {{.PhaseName}}.",
		ExtractionSchema: engine.ExtractionSchema{Fields: []engine.FieldDefinition{
			{Path: "basics.goal", DisplayName: "Goal", Description: "What the user wants", ValueType: engine.TypeString, Required: true,
				Cues: engine.Cues{Keywords: []string{"goal", "want"}}},
			{Path: "basics.users", DisplayName: "Users", Description: "Who will use it", ValueType: engine.TypeString, Required: true,
				Cues: engine.Cues{Keywords: []string{"users", "used by"}}},
			{Path: "basics.name", DisplayName: "Name", Description: "Project name", ValueType: engine.TypeString,
				Cues: engine.Cues{Patterns: []string{`called (?P<value>\w+)`}}},
			{Path: "details.budget", DisplayName: "Budget", Description: "Budget in dollars", ValueType: engine.TypeNumber, Required: true,
				Cues: engine.Cues{Keywords: []string{"budget"}}, ConfidenceThreshold: 0.8},
			{Path: "details.timeline", DisplayName: "Timeline", Description: "How long", ValueType: engine.TypeString,
				Cues: engine.Cues{Keywords: []string{"months", "weeks"}}},
			{Path: "details.deadline", DisplayName: "Deadline", Description: "Hard date", ValueType: engine.TypeString,
				Cues: engine.Cues{Keywords: []string{"deadline", "by"}}},
			{Path: "details.features", DisplayName: "Features", Description: "Feature list", ValueType: engine.TypeArray,
				Cues: engine.Cues{Keywords: []string{"features"}}},
			{Path: "review.confirmed", DisplayName: "Scope confirmed", Description: "User confirmed", ValueType: engine.TypeBoolean,
				Cues: engine.Cues{Values: []engine.CueValue{{When: []string{"yes", "correct"}, Value: true}}}},
		}},
	}
	rep := engine.Validate(def, engine.ValidateEnv{Registry: Registry(), Engines: func(string) bool { return true }})
	if !rep.Valid() {
		panic(fmt.Sprintf("enginetest definition is invalid: %v", rep.Err()))
	}
	return def
}

// Memory returns a new session's memory of def.
func Memory(def *engine.Definition) *engine.WorkingMemory {
	return engine.NewWorkingMemory(def, "session-1", "project-1")
}

// Set puts a field into the memory's extraction as extracted at turn.
func Set(m *engine.WorkingMemory, path string, value any, confidence float64, turn int) {
	b, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	f := m.Extraction.Fields[path]
	f.Value = b
	f.Confidence = confidence
	if !slices.Contains(f.ExtractedFromTurns, turn) {
		f.ExtractedFromTurns = append(f.ExtractedFromTurns, turn)
	}
	f.LastUpdatedAtTurn = turn
	f.LastMessageID = fmt.Sprintf("msg-%d", turn)
	m.Extraction.Fields[path] = f
}

// ExplorationScript is an exploration conversation the offline provider
// carries to its decision and handoff: a yoga studio owner learns the
// options for a booking system and chooses one.
var ExplorationScript = []string{
	"I want to figure out the best way to build a booking system for my yoga studio.",
	"I've heard of tools like Mindbody, but I have never built software myself.",
	"I'm not sure how hosting works and I don't understand what a custom build would cost.",
	"We are considering an off-the-shelf tool like Mindbody, a no-code platform, or a custom build.",
	"I like that an off-the-shelf tool is cheap and quick to start.",
	"I'm worried about monthly fees and being locked in.",
	"In my own words: an off-the-shelf tool is fastest, no-code is flexible, and a custom build gives full control but costs the most.",
	"Our budget is limited to $5,000 and we must be live within two months.",
	"For us, speed matters more than control, so cost versus flexibility is the main tradeoff.",
	"I'll go with the off-the-shelf tool because it is cheap and fast to start.",
}
