package projectdiscovery

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

func TestCoreProblemCarried(t *testing.T) {
	decided := []contracts.Decision{{Decision: "off-the-shelf tool", Confidence: 0.85}}
	tests := []struct {
		name    string
		handoff *contracts.EngineHandoff
		raw     string // the inbound handoff as recorded, when handoff is nil
		version int    // the memory version, when not engine.MemorySchemaVersion
		want    float64
	}{
		{name: "no handoff", want: 0},
		{name: "a decision and the pain behind it", want: 1, handoff: &contracts.EngineHandoff{
			ActionList:         contracts.ActionList{DecisionsReached: decided},
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{"Technicians lose track of jobs"}}}},
		{name: "a decision and the pain behind it, memory version 1", version: 1, want: 0, handoff: &contracts.EngineHandoff{
			ActionList:         contracts.ActionList{DecisionsReached: decided},
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{"Technicians lose track of jobs"}}}},
		{name: "pain points alone (a business profile)", want: 0, handoff: &contracts.EngineHandoff{
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{"Invoicing takes days"}}}},
		{name: "a decision alone", want: 0, handoff: &contracts.EngineHandoff{
			ActionList: contracts.ActionList{DecisionsReached: decided}}},
		{name: "blank pain points", want: 0, handoff: &contracts.EngineHandoff{
			ActionList:         contracts.ActionList{DecisionsReached: decided},
			SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{" "}}}},
		{name: "null", raw: "null", want: 0},
		{name: "not a handoff", raw: `"garbled"`, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &engine.WorkingMemory{SchemaVersion: cmp.Or(tt.version, engine.MemorySchemaVersion),
				Extraction: engine.NewExtraction(), InboundHandoff: json.RawMessage(tt.raw)}
			if tt.handoff != nil {
				b, err := json.Marshal(tt.handoff)
				if err != nil {
					t.Fatal(err)
				}
				m.InboundHandoff = b
			}
			if got := CoreProblemCarried(m); got != tt.want {
				t.Errorf("CoreProblemCarried = %v, want %v", got, tt.want)
			}
		})
	}
}

// The constraint evaluators read the handoff's labelled constraints as
// handoff.ConstraintTold does: a project-discovery → exploration →
// project-discovery chain carries the first session's budget, timeline,
// technical constraints and integrations, and the second counts them
// told.
func TestConstraintsCarried(t *testing.T) {
	chain := []string{"Budget: $50k", "Timeline: within three months",
		"Technical: it has to run on Android tablets and be hosted on Azure", "Integration: QuickBooks for invoicing"}
	tests := []struct {
		name        string
		constraints []string
		raw         string // the inbound handoff as recorded, when constraints is nil
		want        map[string]float64
	}{
		{name: "no handoff", want: map[string]float64{}},
		{name: "null", raw: "null", want: map[string]float64{}},
		{name: "not a handoff", raw: `"garbled"`, want: map[string]float64{}},
		{name: "a discovery chain", constraints: chain, want: map[string]float64{"budgetCarried": 1, "timelineCarried": 1,
			"techConstraintsCarried": 1, "integrationsCarried": 1}},
		{name: "a team", constraints: []string{"Team: two in-house developers"}, want: map[string]float64{"teamCarried": 1}},
		{name: "neither an amount nor a date", constraints: []string{"Budget: flexible", "Timeline: as soon as possible"},
			want: map[string]float64{}},
		{name: "not known", constraints: []string{"Budget: no idea", "Timeline: not sure yet", "Team: not decided",
			"Integration: none for now, maybe Xero later"}, want: map[string]float64{}},
		{name: "a none in other words or a hedge", constraints: []string{"Budget: no budget yet, maybe 10k",
			"Timeline: hasn't been decided, maybe June", "Team: to be hired"}, want: map[string]float64{}},
		{name: "free text", constraints: []string{"Our budget is limited to $5,000 and we must be live within two months"},
			want: map[string]float64{}},
		{name: "a business profile's funding", constraints: []string{"Funding: a £20k grant"}, want: map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &engine.WorkingMemory{SchemaVersion: engine.MemorySchemaVersion, Extraction: engine.NewExtraction(),
				InboundHandoff: json.RawMessage(tt.raw)}
			if tt.constraints != nil {
				var h contracts.EngineHandoff
				for _, c := range tt.constraints {
					h.ActionList.ConstraintsIdentified = append(h.ActionList.ConstraintsIdentified,
						contracts.IdentifiedConstraint{Constraint: c})
				}
				b, err := json.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				m.InboundHandoff = b
			}
			for name, fn := range Evaluators() {
				if name == "coreProblemCarried" {
					continue
				}
				if got := fn(m); got != tt.want[name] {
					t.Errorf("%s = %v, want %v", name, got, tt.want[name])
				}
			}
		})
	}
}

func TestEvaluatorNames(t *testing.T) {
	want := []string{"budgetCarried", "coreProblemCarried", "integrationsCarried", "teamCarried", "techConstraintsCarried",
		"timelineCarried"}
	if got := slices.Sorted(maps.Keys(Evaluators())); !slices.Equal(got, want) {
		t.Errorf("evaluators = %v, want %v", got, want)
	}
}
