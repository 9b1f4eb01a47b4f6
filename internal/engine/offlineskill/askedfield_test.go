package offlineskill_test

import "testing"

// The question asked against another field's cue: a strong cue of the
// other field (its keyword as the sentence's subject, or opening it) says
// what the message is about, whatever was asked, even when that field is
// known; a keyword inside an answer shaped like the asked field's (a list
// of actions to the next steps asked) is part of that answer.
func TestExtractionSkillAskedFieldAgainstAnotherCue(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a keyword as the subject grows its known list", engine: "business-profile", focus: "customer_journey_mapped",
			current: map[string]any{"operations.bottlenecks": []string{"Queues on Saturday mornings"}},
			msg:     "The biggest bottleneck is early-morning baking capacity.",
			want: map[string]any{"operations.bottlenecks": []any{"Queues on Saturday mornings",
				"early-morning baking capacity"}},
			absent: []string{"customer_experience.customer_journey"}},
		{name: "a keyword as the subject restating its known list answers nothing else", engine: "business-profile",
			focus:   "customer_journey_mapped",
			current: map[string]any{"operations.bottlenecks": []string{"Early-morning baking capacity"}},
			msg:     "The biggest bottleneck is early-morning baking capacity.",
			absent:  []string{"customer_experience.customer_journey", "operations.bottlenecks"}},
		{name: "a keyword that is the first clause of a known field answers nothing else", engine: "business-profile",
			focus: "value_proposition_stated", current: map[string]any{"business_model.pricing_model": "per unit"},
			msg: "Per unit mostly, cakes are priced per order.", absent: []string{"business_model.value_proposition"}},
		{name: "reasons joined by and are no steps", engine: "business-profile", focus: "core_processes_mapped",
			current: map[string]any{"business_model.value_proposition": "Fresh bread every morning and friendly staff"},
			msg:     "They come back for fresh bread and because we know them by name.",
			absent:  []string{"operations.core_processes"}},
		{name: "steps the business takes, with a reason, are steps", engine: "business-profile", focus: "core_processes_mapped",
			msg:  "We bake from 4am because the cafes want bread by 7.",
			want: map[string]any{"operations.core_processes": []any{"We bake from 4am because the cafes want bread by 7"}}},
		{name: "a keyword inside a list of actions is one of the next steps", engine: "ideation", focus: "next_steps_defined",
			msg: "Test the recipes, buy a freezer and ask two cafes to pilot it.",
			want: map[string]any{"selection.next_steps": []any{"Test the recipes", "buy a freezer",
				"ask two cafes to pilot it"}},
			absent: []string{"refinement.validation_plan"}},
		{name: "a keyword opening the answer to the next steps is its field's", engine: "ideation", focus: "next_steps_defined",
			msg:    "A pilot with two cafes for a month.",
			want:   map[string]any{"refinement.validation_plan": "A pilot with two cafes for a month"},
			absent: []string{"selection.next_steps"}},
	})
}

// A keyword that is a verb of dropping ("drop the") drops ideas only when
// the user drops them: "Customers drop the bike in November, …", asked
// how the concept works, is the concept.
func TestExtractionSkillOthersDropNoIdeas(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "customers who drop their bike", engine: "ideation", focus: "concept_described",
			msg: "Customers drop the bike in November, pay upfront, and collect it serviced in March.",
			want: map[string]any{"refinement.refined_concept": "Customers drop the bike in November, pay upfront, " +
				"and collect it serviced in March"},
			absent: []string{"evaluation.eliminated_ideas"}},
		{name: "the user who drops an idea", engine: "ideation", focus: "concept_described",
			msg:  "Drop the indoor studio, it costs too much.",
			want: map[string]any{"evaluation.eliminated_ideas": []any{"indoor studio"}}},
	})
}
