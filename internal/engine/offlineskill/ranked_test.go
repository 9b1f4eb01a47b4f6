package offlineskill_test

import "testing"

// What a possessive ranks first before a comma is said by what follows
// it, a "which is" before the thing or not, and a clause after the thing
// ("…, the council, pays late.") says something of it: it is no item.
func TestExtractionSkillWhatIsRankedFirstIsOneThing(t *testing.T) {
	t.Parallel()
	council := map[string]any{"partnerships_and_integrations.key_partners": []any{"the council"}}
	tests := []extractionCase{
		{name: "which is", focus: "key_partners_identified",
			msg: "Our biggest customer, which is the council.", want: council},
		{name: "a clause about the thing", focus: "key_partners_identified",
			msg: "Our biggest customer, the council, pays late.", want: council},
		{name: "which is, and a clause about the thing", focus: "key_partners_identified",
			msg: "Our biggest customer, which is the council, always pays late.", want: council},
		{name: "a list after the thing ranked", focus: "key_partners_identified",
			msg:  "Our main partners, the bank, Stripe and the mill.",
			want: map[string]any{"partnerships_and_integrations.key_partners": []any{"the bank", "Stripe", "the mill"}}},
	}
	for i := range tests {
		tests[i].engine = "business-profile"
	}
	runExtractionCases(t, tests)
}
