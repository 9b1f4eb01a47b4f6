package analysis

import (
	"slices"
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		task    string
		want    Mode
		matched []string
	}{
		{"Draft a strategic plan for the EU launch", Sequential, []string{"strategic", "planning"}},
		{"Multi-factor analysis of hosting costs", Sequential, []string{"multi-factor"}},
		{"Capacity planning for Q3", Sequential, []string{"planning"}},
		{"What are the trade-offs of gRPC vs REST?", Debate, []string{"trade-off"}},
		{"Compare Kafka and NATS", Debate, []string{"compare"}},
		{"Let's debate monorepo versus polyrepo", Debate, []string{"debate"}},
		{"comparing two vendors, tradeoffs welcome", Debate, []string{"trade-off", "compare"}},
		{"The requirements are unclear", Socratic, []string{"unclear", "requirements"}},
		{"Discovery session with the customer", Socratic, []string{"discovery"}},
		{"Gather the requirement for SSO", Socratic, []string{"requirements"}},
		// Most matches wins; a tie goes to the earlier row.
		{"Compare options; the requirements are unclear", Socratic, []string{"unclear", "requirements"}},
		{"Strategic trade-off", Sequential, []string{"strategic"}},
		// Whole words only.
		{"Fix the planner's unclearness, incomparable debater", Sequential, nil},
		{"", Sequential, nil},
		{"Write a haiku", Sequential, nil},
	}
	for _, tt := range tests {
		got := Route(tt.task)
		if got.Mode != tt.want || !slices.Equal(got.Matched, tt.matched) {
			t.Errorf("Route(%q) = %s %v, want %s %v", tt.task, got.Mode, got.Matched, tt.want, tt.matched)
		}
		if got.Rationale == "" || len(got.SuggestedSteps) < 3 {
			t.Errorf("Route(%q) has rationale %q and %d steps, want both", tt.task, got.Rationale, len(got.SuggestedSteps))
		}
		for _, k := range got.Matched {
			if !strings.Contains(got.Rationale, `"`+k+`"`) {
				t.Errorf("Route(%q) rationale %q does not name keyword %q", tt.task, got.Rationale, k)
			}
		}
	}
	if r := Route("nothing relevant"); !strings.Contains(r.Rationale, "default") {
		t.Errorf("default rationale = %q, want it to say it is the default", r.Rationale)
	}
	// Results do not share the table's slices.
	r := Route("compare")
	r.SuggestedSteps[0] = "changed"
	if Route("compare").SuggestedSteps[0] == "changed" {
		t.Error("Route returned the routing table's own slice")
	}
}
