package offlineskill_test

import "testing"

// A guess after a doubt answers only when it is a guess of the field's
// own kind: an amount for a budget, a number for a count, a time for a
// date. "Not sure, maybe ask my partner." guesses no budget.
func TestExtractionSkillGuessOfTheFieldsKind(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "asking someone is no budget", focus: "budget_range_known",
			msg: "Not sure, maybe ask my partner.", absent: []string{"constraints.budget"}},
		{name: "a time is no budget", focus: "budget_range_known",
			msg: "Not sure, maybe next year.", absent: []string{"constraints.budget"}},
		{name: "a hope of a loan is no budget", focus: "budget_range_known",
			msg: "Not sure, maybe the bank will lend us some.", absent: []string{"constraints.budget"}},
		{name: "an amount guessed is the budget", focus: "budget_range_known",
			msg: "Not sure, maybe 10k.", want: map[string]any{"constraints.budget": "10k"}},
		{name: "a time guessed is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe next year.", want: map[string]any{"constraints.timeline": "next year"}},
		{name: "an amount is no timeline", focus: "timeline_known",
			msg: "Not sure, maybe 10k.", absent: []string{"constraints.timeline"}},
		{name: "a number guessed is the count", focus: "user_count_estimated",
			msg: "Not sure, maybe 50.", want: map[string]any{"users_and_personas.user_count": 50.0}},
		{name: "asking someone is no count", focus: "user_count_estimated",
			msg: "Not sure, maybe ask the manager.", absent: []string{"users_and_personas.user_count"}},
	})
}
