package ideation

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
)

func mem(fields map[string]any, newConcepts ...int) *engine.WorkingMemory {
	m := &engine.WorkingMemory{Extraction: engine.NewExtraction()}
	for p, v := range fields {
		b, _ := json.Marshal(v)
		m.Extraction.Fields[p] = engine.ExtractedField{Value: b, Confidence: 0.85}
	}
	m.Saturation.NewConcepts = newConcepts
	return m
}

func TestEvaluators(t *testing.T) {
	six := map[string]any{
		FieldIdeas:            []string{"pause button", "origin of the month", "brewing guides"},
		FieldWildIdeas:        []string{"tasting club"},
		FieldPerspectiveIdeas: []string{"choose the next coffee", "six-month reward"},
	}
	tests := []struct {
		name string
		fn   engine.Evaluator
		mem  *engine.WorkingMemory
		want float64
	}{
		{"fluency none", IdeaFluency, mem(nil), 0},
		{"fluency three", IdeaFluency, mem(map[string]any{FieldIdeas: []string{"a", "b", "c"}}), 0.5},
		{"fluency counts every idea field", IdeaFluency, mem(six), 1},
		{"fluency ignores duplicates across fields", IdeaFluency, mem(map[string]any{
			FieldIdeas: []string{"A pause button", "loyalty points"}, FieldCombinedIdeas: []string{"pause button.", "The loyalty points"}}), 2.0 / 6},
		{"fluency caps at 1", IdeaFluency, mem(map[string]any{FieldIdeas: []string{"a", "b", "c", "d", "e", "f", "g", "h"}}), 1},
		{"fluency takes a lone string", IdeaFluency, mem(map[string]any{FieldWildIdeas: "a tasting club"}), 1.0 / 6},
		{"divergence with enough ideas", DivergenceComplete, mem(six, 3), 1},
		{"divergence still flowing", DivergenceComplete, mem(map[string]any{FieldIdeas: []string{"a", "b", "c"}}, 3, 2), 0.5},
		{"divergence dried up", DivergenceComplete, mem(map[string]any{FieldIdeas: []string{"a", "b", "c"}}, 3, 0), 1},
		{"too few ideas to stop", DivergenceComplete, mem(map[string]any{FieldIdeas: []string{"a", "b"}}, 2, 0), 2.0 / 6},
		{"nothing selected", IdeaSelected, mem(nil), 0},
		{"selected", IdeaSelected, mem(map[string]any{FieldSelectedIdea: "origin of the month"}), 0.5},
		{"selected, not confirmed", IdeaSelected, mem(map[string]any{FieldSelectedIdea: "origin of the month", FieldConfirmed: false}), 0.5},
		{"selected and confirmed", IdeaSelected, mem(map[string]any{FieldSelectedIdea: "origin of the month", FieldConfirmed: true}), 1},
		{"confirmed without a selection", IdeaSelected, mem(map[string]any{FieldConfirmed: true}), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(tt.mem); got < tt.want-1e-9 || got > tt.want+1e-9 {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvaluatorNames(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(Evaluators())), []string{"divergenceComplete", "ideaFluency", "ideaSelected"}; !slices.Equal(got, want) {
		t.Errorf("evaluators = %v, want %v", got, want)
	}
}
