package offlineskill_test

import (
	"reflect"
	"testing"

	"github.com/praetorhq/praetor/internal/engine/offlineskill"
)

// Participles and adjectives listed after a verb of a clause stay in its
// item: the clause is one item ("their bike picked up, serviced and
// returned", "when it is cold and dark"); nouns, names and clauses after
// it are items of their own.
func TestSplitItemsKeepsAClauseWhole(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"A commuter would want their bike picked up, serviced and returned": {
			"A commuter would want their bike picked up, serviced and returned"},
		"People stop cycling when it is cold and dark": {"People stop cycling when it is cold and dark"},
		"The app is slow, clunky and buggy":            {"The app is slow, clunky and buggy"},
		"We use Square and Instagram":                  {"We use Square", "Instagram"},
		"Our customers are locals, tourists and students": {
			"Our customers are locals", "tourists", "students"},
		"Orders get missed and customers complain": {"Orders get missed", "customers complain"},
		"Booking, payments and reminders":          {"Booking", "payments", "reminders"},
	} {
		if got := offlineskill.SplitItems(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitItems(%q) = %q, want %q", in, got, want)
		}
	}
}

// An answer about each of the shortlisted ideas, one sentence each, is
// how hard each would be: one item each, whatever a cue of another field
// (a constraint's "needs … insurance") finds in it.
func TestExtractionSkillOneClauseOneItem(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "what a customer would want done", engine: "ideation", focus: "perspective_ideas_gathered",
			msg: "A commuter would want their bike picked up, serviced and returned.",
			want: map[string]any{"idea_generation.perspective_ideas": []any{
				"A commuter would want their bike picked up, serviced and returned"}}},
		{name: "a cause said of the weather", engine: "ideation", focus: "root_causes_explored",
			msg:  "People stop cycling when it is cold and dark.",
			want: map[string]any{"problem_space.root_causes": []any{"People stop cycling when it is cold and dark"}}},
		{name: "how hard each shortlisted idea would be", engine: "ideation", focus: "feasibility_assessed",
			current: map[string]any{"evaluation.shortlist": []string{"Storage with a spring service", "maintenance classes"}},
			msg:     "Storage needs racks and insurance, about 2,000 pounds; classes need only our time.",
			want: map[string]any{"evaluation.feasibility_notes": []any{
				"Storage needs racks and insurance, about 2,000 pounds", "classes need only our time"}},
			absent: []string{"problem_space.constraints"}},
		{name: "what an idea needs, unasked, is a constraint", engine: "ideation", focus: "ideas_captured",
			msg:  "The classes need insurance, which I'm not sure about.",
			want: map[string]any{"problem_space.constraints": []any{"The classes need insurance"}}},
	})
}
