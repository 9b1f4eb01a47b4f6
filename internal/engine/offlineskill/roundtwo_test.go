package offlineskill_test

import "testing"

// Project discovery: a lack said with "not" and a gerund is a pain point,
// no take-back; what the first version includes, said before what can
// wait, is its scope as much.
func TestExtractionSkillDiscoveryScopeAndLacks(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "not knowing is a pain point", focus: "user_pain_points_captured",
			msg: "Waiting for us to text back, and not knowing if the walk happened.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Waiting for us to text back",
				"not knowing if the walk happened"}}},
		{name: "the scope is what comes first and what can wait", focus: "mvp_scope_defined",
			msg:  "Booking and payments first; GPS tracking can wait.",
			want: map[string]any{"success_criteria.mvp_scope": "Booking and payments first; GPS tracking can wait"}},
	})
}
