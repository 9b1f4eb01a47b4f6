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

func TestEvaluatorNames(t *testing.T) {
	if got := slices.Sorted(maps.Keys(Evaluators())); !slices.Equal(got, []string{"coreProblemCarried"}) {
		t.Errorf("evaluators = %v, want [coreProblemCarried]", got)
	}
}
