package handoff_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/engine/handoff"
)

func TestConstraintTold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		constraint, want string
	}{
		{"Budget: $50k", "Budget"},
		{"Budget: around $60k to $80k", "Budget"},
		{"Budget: up to $90k", "Budget"},
		{"Budget: 20,000 pounds", "Budget"},
		{"Budget: fifty thousand", "Budget"},
		{"Budget: ten grand", "Budget"},
		{"Budget: flexible", ""},
		{"Budget: as cheap as possible", ""},
		{"Budget: none yet", ""},
		{"Budget: no idea", ""},
		{"Budget: none yet, maybe 5k later", ""},
		{"Budget: $50k, but not sure yet", ""},
		{"Budget: maybe $5k?", ""},
		{"Timeline: within three months", "Timeline"},
		{"Timeline: within 6 months, before the busy winter season", "Timeline"},
		{"Timeline: by June", "Timeline"},
		{"Timeline: by May", "Timeline"},
		{"Timeline: before the end of Q3", "Timeline"},
		{"Timeline: 2027-03-01", "Timeline"},
		{"Timeline: next year", "Timeline"},
		{"Timeline: within a year", "Timeline"},
		{"Timeline: before Christmas", "Timeline"},
		{"Timeline: in the fall", "Timeline"},
		{"Timeline: as soon as possible", ""},
		{"Timeline: may slip", ""},
		{"Timeline: no rush", ""},
		{"Timeline: not sure yet", ""},
		{"Timeline: no idea, maybe spring", ""},
		{"Timeline: TBD", ""},
		{"Technical: it has to run on Android tablets and be hosted on Azure", "Technical"},
		{"Technical: none", "Technical"},
		{"Technical: not sure", ""},
		{"Integration: QuickBooks for invoicing", "Integration"},
		{"Integration: none needed", "Integration"},
		{"Integration: none for now, maybe Xero later", ""},
		{"Team: two in-house developers", "Team"},
		{"Team: none", ""},
		{"Team: not decided", ""},
		{"Team: not sure, maybe an agency", ""},
		{"Funding: a £20k grant", "Funding"},
		// A none in other words, or a hedge anywhere, tells nothing: the
		// engine then asks, which costs a question; a false told skips one
		// it needed.
		{"Team: two developers", "Team"},
		{"Team: no team", ""},
		{"Team: nobody", ""},
		{"Team: no one yet", ""},
		{"Team: not yet hired", ""},
		{"Team: haven't decided", ""},
		{"Team: to be hired", ""},
		{"Funding: no funding", ""},
		{"Budget: no budget yet, maybe 10k", ""},
		{"Budget: haven't decided, maybe 20k", ""},
		{"Budget: unclear, 10k", ""},
		{"Budget: we'll see, 10k", ""},
		{"Budget: we’ll see, 10k", ""},
		{"Budget: no budget, 10k", ""},
		{"Budget: perhaps $30k", ""},
		{"Budget: no more than $40k", "Budget"},
		{"Timeline: hasn't been decided, maybe June", ""},
		{"Timeline: no deadline, maybe next year", ""},
		{"Timeline: tbd, by June", ""},
		{"Timeline: by June, not sure", ""},
		{"Timeline: no later than June", "Timeline"},
		{"Integration: no integrations for now, Xero later", ""},
		{"Integration: no integrations", "Integration"},
		// Free text names no obligation: "$300 a month" may be the running
		// cost, not the budget; a label no shipped mapper puts, neither.
		{"Our budget is limited to $5,000 and we must be live within two months", ""},
		{"each tablet under $300", ""},
		{"Cost: $50k", ""},
		{"Budget: ", ""},
	}
	for _, tt := range tests {
		if got := handoff.ConstraintTold(tt.constraint); got != tt.want {
			t.Errorf("ConstraintTold(%q) = %q, want %q", tt.constraint, got, tt.want)
		}
	}
}

func TestNoneOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, head, rest string
		none              bool
		unknown           string
	}{
		{"$50k", "$50k", "", false, ""},
		{"none yet", "none yet", "", true, ""},
		{"none yet, maybe 5k later", "none yet", "maybe 5k later", true, ""},
		{"no idea", "no idea", "", false, "known"},
		{"not decided", "not decided", "", false, "decided"},
		{"about $5k, maybe more", "about $5k, maybe more", "", false, ""},
	}
	for _, tt := range tests {
		head, rest, none, unknown := handoff.NoneOf(tt.value)
		if head != tt.head || rest != tt.rest || none != tt.none || unknown != tt.unknown {
			t.Errorf("NoneOf(%q) = %q, %q, %v, %q; want %q, %q, %v, %q", tt.value, head, rest, none, unknown,
				tt.head, tt.rest, tt.none, tt.unknown)
		}
	}
}
