// Package ideation holds the custom evaluators of the ideation engine
// (engines/ideation.yaml), registered by name. They read the engine's
// extraction fields by path; each returns a score in [0,1].
//
// Ideation diverges before it converges: the number of distinct ideas
// (fluency) matters more in the divergent phase than any single obligation,
// and divergence ends either when there are enough ideas or when they dry
// up. The YAML conditions cannot count list items or read the saturation
// state, so these evaluators do.
package ideation

import (
	"math"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
)

// Field paths of the ideation extraction schema the evaluators read.
const (
	FieldIdeas            = "idea_generation.ideas"
	FieldWildIdeas        = "idea_generation.wild_ideas"
	FieldPerspectiveIdeas = "idea_generation.perspective_ideas"
	FieldCombinedIdeas    = "idea_generation.combined_ideas"
	FieldSelectedIdea     = "selection.selected_idea"
	FieldConfirmed        = "selection.selection_confirmed"
)

// IdeaFields are the fields whose items are ideas.
func IdeaFields() []string {
	return []string{FieldIdeas, FieldWildIdeas, FieldPerspectiveIdeas, FieldCombinedIdeas}
}

// TargetIdeas is how many distinct ideas make divergence complete: enough to
// compare, few enough for one conversation.
const TargetIdeas = 6

// MinIdeasBeforeSaturation is how many ideas must be on the table before a
// turn without anything new may end divergence.
const MinIdeasBeforeSaturation = 3

// Evaluators returns the evaluators by name.
func Evaluators() map[string]engine.Evaluator {
	return map[string]engine.Evaluator{
		"ideaFluency":        IdeaFluency,
		"divergenceComplete": DivergenceComplete,
		"ideaSelected":       IdeaSelected,
	}
}

// Ideas returns the distinct ideas of all idea fields, in field order;
// ideas differing only in case, spacing or a leading article are one.
func Ideas(m *engine.WorkingMemory) []string {
	var out []string
	seen := map[string]bool{}
	for _, path := range IdeaFields() {
		var items []any
		if !m.Extraction.Decode(path, &items) {
			var s string
			if !m.Extraction.Decode(path, &s) {
				continue
			}
			items = []any{s}
		}
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				continue
			}
			key := normalize(s)
			if key == "" || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	for _, a := range []string{"a ", "an ", "the "} {
		s = strings.TrimPrefix(s, a)
	}
	return strings.TrimRight(s, ".!?;:, ")
}

// IdeaFluency is the number of distinct ideas over TargetIdeas, at most 1.
func IdeaFluency(m *engine.WorkingMemory) float64 {
	return math.Min(float64(len(Ideas(m)))/TargetIdeas, 1)
}

// DivergenceComplete is 1.0 when there are TargetIdeas ideas, or at least
// MinIdeasBeforeSaturation and the last turn brought nothing new (the user
// has run dry: saturation, read on one turn because a brainstorm stalls
// fast); otherwise the fluency.
func DivergenceComplete(m *engine.WorkingMemory) float64 {
	n := len(Ideas(m))
	if n >= TargetIdeas {
		return 1
	}
	if recent := m.Saturation.NewConcepts; n >= MinIdeasBeforeSaturation && len(recent) > 0 && recent[len(recent)-1] == 0 {
		return 1
	}
	return IdeaFluency(m)
}

// IdeaSelected is 1.0 when an idea is selected and the user confirmed the
// selection, 0.5 when it is selected but not confirmed, else 0.
func IdeaSelected(m *engine.WorkingMemory) float64 {
	if strings.TrimSpace(m.Extraction.String(FieldSelectedIdea)) == "" {
		return 0
	}
	var ok bool
	if m.Extraction.Decode(FieldConfirmed, &ok) && ok {
		return 1
	}
	return 0.5
}
