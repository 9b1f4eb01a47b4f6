package offlineskill_test

import "testing"

// What is too much for whom a name is said to be ("Wodify is too
// expensive for a small gym", "for people like us") says who would pay
// for it, not what the name is for: the name reads as a product, an option
// more, and the item stays its con; "Facebook is too expensive for ads"
// still says what the name is for.
func TestExtractionSkillTooMuchForWhom(t *testing.T) {
	t.Parallel()
	const (
		opts = "solution_landscape.options"
		cons = "solution_landscape.option_cons"
	)
	options := map[string]any{opts: []string{"Mindbody", "Glofox"}}
	runExtractionCases(t, []extractionCase{
		{name: "for a small gym", engine: "exploration", focus: "cons_explored", current: options,
			msg:  "Wodify is too expensive for a small gym.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: []any{"Mindbody", "Glofox", "Wodify"}}},
		{name: "for a small gym, asked another thing", engine: "exploration", focus: "prior_knowledge_assessed",
			current: options, msg: "Wodify is too expensive for a small gym.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: []any{"Mindbody", "Glofox", "Wodify"}}},
		{name: "for people like us, no option known", engine: "exploration", focus: "options_identified",
			msg:  "Wodify is too expensive for people like us.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: []any{"Wodify"}}},
		{name: "a known option for a small gym", engine: "exploration", focus: "cons_explored",
			current: map[string]any{opts: []string{"Mindbody", "Glofox", "Wodify"}},
			msg:     "Wodify is too expensive for a small gym.",
			want:    map[string]any{cons: []any{"Wodify is too expensive"}}, absent: []string{opts}},
		{name: "a channel for ads", engine: "exploration", focus: "cons_explored", current: options,
			msg: "Facebook is too expensive for ads.", absent: []string{cons, opts}},
		{name: "a channel for a small gym", engine: "exploration", focus: "cons_explored", current: options,
			msg: "Facebook is too expensive for a small gym.", absent: []string{cons, opts}},
	})
}
