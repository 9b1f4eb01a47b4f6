package exploration

import (
	"cmp"
	"encoding/json"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

func mem(fields map[string]any) *engine.WorkingMemory {
	m := &engine.WorkingMemory{Extraction: engine.NewExtraction()}
	for p, v := range fields {
		b, _ := json.Marshal(v)
		m.Extraction.Fields[p] = engine.ExtractedField{Value: b, Confidence: 0.9}
	}
	return m
}

func TestEvaluators(t *testing.T) {
	tests := []struct {
		name   string
		fn     engine.Evaluator
		fields map[string]any
		want   float64
	}{
		{"gaps none", KnowledgeGapsIdentified, nil, 0},
		{"gaps one", KnowledgeGapsIdentified, map[string]any{FieldKnowledgeGaps: []string{"hosting"}}, 0.5},
		{"gaps two", KnowledgeGapsIdentified, map[string]any{FieldKnowledgeGaps: []string{"hosting", "auth"}}, 1},
		{"research none", BackgroundResearchAvailable, nil, 0},
		{"research notes", BackgroundResearchAvailable, map[string]any{FieldResearchNotes: []string{"a report"}}, 1},
		{"understanding concepts", UserDemonstratesUnderstanding, map[string]any{FieldConcepts: []string{"a", "b", "c"}}, 0.3},
		{"understanding attempt", UserDemonstratesUnderstanding, map[string]any{FieldTeachBack: "it is like..."}, 0.5},
		{"understanding passed", UserDemonstratesUnderstanding, map[string]any{FieldTeachBackPassed: true}, 1},
		{"landscape none", SolutionLandscapeCoverage, nil, 0},
		{"landscape two options, pros only", SolutionLandscapeCoverage,
			map[string]any{FieldOptions: []string{"saas", "custom"}, FieldPros: []string{"fast"}}, 2.0 / 3 / 3},
		{"landscape three options fully explored", SolutionLandscapeCoverage,
			map[string]any{FieldOptions: []string{"a", "b", "c"}, FieldPros: []string{"x"}, FieldCons: []string{"y"}, FieldReactions: []string{"z"}}, 1},
		{"decision none", DecisionMade, nil, 0},
		{"decision made", DecisionMade, map[string]any{FieldDecision: "Custom Web App"}, 1},
		{"decision null is none", DecisionMade, map[string]any{FieldDecision: nil}, 0},
		{"teach back false", AtLeastOneTeachBackPassed, map[string]any{FieldTeachBackPassed: false}, 0},
		{"teach back true", AtLeastOneTeachBackPassed, map[string]any{FieldTeachBackPassed: true}, 1},
		{"no misconceptions", NoUncorrectedMisconceptions, nil, 1},
		{"uncorrected", NoUncorrectedMisconceptions, map[string]any{FieldMisconceptions: []string{"no-code scales"}}, 0},
		{"corrected", NoUncorrectedMisconceptions, map[string]any{FieldMisconceptions: []string{"x"}, FieldMisconceptionsOK: true}, 1},
		{"decision bare", DecisionCapturedWithReasoning, map[string]any{FieldDecision: "SaaS"}, 0.5},
		{"decision reasoned", DecisionCapturedWithReasoning, map[string]any{FieldDecision: "SaaS", FieldReasoning: "cheapest to start and no team to run it"}, 1},
		{"space awareness", EvaluateSolutionSpaceAwareness, map[string]any{FieldOptions: []string{"a", "b", "c"}, FieldConcepts: []string{"x"}}, 0.85},
		{"tradeoffs", EvaluateTradeoffUnderstanding, map[string]any{FieldTradeoffs: []string{"cost vs control"}, FieldCons: []string{"lock-in"}}, 0.5},
		{"constraints", EvaluateConstraintAwareness, map[string]any{FieldConstraints: []string{"budget", "time"}}, 1},
		{"precedents", EvaluatePrecedentExposure, map[string]any{FieldPrecedents: []string{"Acme"}}, 0.5},
		{"risks", EvaluateRiskIdentification, map[string]any{FieldRisks: []string{"vendor", "security", "cost"}}, 1},
	}
	for _, tt := range tests {
		if got := tt.fn(mem(tt.fields)); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The seed's 13, and problemCarried.
func TestAllFourteen(t *testing.T) {
	if n := len(Evaluators()); n != 14 {
		t.Errorf("%d evaluators, want 14", n)
	}
}

// A session that starts from a handoff carrying the problem (the one
// ideation framed, the core problem project discovery captured, the
// question a decision carried along a chain answered) does not ask what
// the user wants to explore and why: its first reply asked for the
// problem ideation had just framed.
func TestProblemCarried(t *testing.T) {
	pains := contracts.SituationAwareness{KeyPainPoints: []string{"Problem: coffee subscribers cancel after about three months"}}
	tests := []struct {
		name    string
		handoff *contracts.EngineHandoff
		raw     string // the inbound handoff as recorded, when handoff is nil
		version int    // the memory version, when not engine.MemorySchemaVersion
		want    float64
	}{
		{name: "no handoff", want: 0},
		{name: "the problem ideation framed", handoff: &contracts.EngineHandoff{SituationAwareness: pains}, want: 1},
		{name: "the core problem project discovery captured", want: 1, handoff: &contracts.EngineHandoff{
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{"Problem: Jobs get lost on paper"}}}},
		{name: "pains that are no problem: a cost, a cause, a business's bottleneck", want: 0, handoff: &contracts.EngineHandoff{
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{"$4,000 a month in lost revenue",
				"Root cause: they get bored of the same coffee", "Early-morning baking capacity"}}}},
		{name: "a problem marked but blank", want: 0, handoff: &contracts.EngineHandoff{
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{"Problem:  "}}}},
		{name: "the question of a decision carried along", want: 1, handoff: &contracts.EngineHandoff{
			ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{{Decision: "off-the-shelf tool",
				Confidence: 0.85, Question: "How should we schedule our cleaning crews?"}}}}},
		{name: "a decision without its question", want: 0, handoff: &contracts.EngineHandoff{
			ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{{Decision: "off-the-shelf tool", Confidence: 0.85}}}}},
		{name: "constraints alone", want: 0, handoff: &contracts.EngineHandoff{ActionList: contracts.ActionList{
			ConstraintsIdentified: []contracts.IdentifiedConstraint{{Constraint: "budget of $5k"}}}}},
		{name: "blank pain points and question", want: 0, handoff: &contracts.EngineHandoff{
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{" "}},
			ActionList:         contracts.ActionList{DecisionsReached: []contracts.Decision{{Decision: "x", Question: " "}}}}},
		{name: "the problem, memory version 2", version: 2, want: 0, handoff: &contracts.EngineHandoff{SituationAwareness: pains}},
		{name: "null", raw: "null", want: 0},
		{name: "not a handoff", raw: `"garbled"`, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mem(nil)
			m.SchemaVersion, m.InboundHandoff = cmp.Or(tt.version, engine.MemorySchemaVersion), json.RawMessage(tt.raw)
			if tt.handoff != nil {
				b, err := json.Marshal(tt.handoff)
				if err != nil {
					t.Fatal(err)
				}
				m.InboundHandoff = b
			}
			if got := ProblemCarried(m); got != tt.want {
				t.Errorf("ProblemCarried = %v, want %v", got, tt.want)
			}
		})
	}
	if Evaluators()["problemCarried"] == nil {
		t.Error("problemCarried is not registered")
	}
}

// Constraints carried by the inbound handoff (a budget captured in project
// discovery or ideation) are known: asking for them again repeats what the
// reply has just acknowledged. The same constraint said again counts once.
func TestConstraintAwarenessCountsHandoffConstraints(t *testing.T) {
	handoff := func(constraints ...string) json.RawMessage {
		var h contracts.EngineHandoff
		for _, c := range constraints {
			h.ActionList.ConstraintsIdentified = append(h.ActionList.ConstraintsIdentified,
				contracts.IdentifiedConstraint{Constraint: c, Implication: "Options must respect it"})
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		fields  map[string]any
		handoff json.RawMessage
		want    float64
	}{
		{"handoff alone", nil, handoff("£500 a month to spend", "just two instructors"), 1},
		{"one from each", map[string]any{FieldConstraints: []string{"live by January"}}, handoff("Budget: $5,000"), 1},
		{"said again", map[string]any{FieldConstraints: []string{"Budget: $5,000"}}, handoff("budget:  $5,000"), 0.5},
		{"a handoff without constraints", nil, handoff(), 0},
		{"a scalar value", map[string]any{FieldConstraints: "a small budget"}, nil, 0.5},
	}
	for _, tt := range tests {
		m := mem(tt.fields)
		m.InboundHandoff = tt.handoff
		if got := EvaluateConstraintAwareness(m); got != tt.want {
			t.Errorf("%s: EvaluateConstraintAwareness = %v, want %v", tt.name, got, tt.want)
		}
	}
}
