package offlineskill

import "testing"

// A user holds back when the message as a whole puts the question off or
// hedges, or pushes back on being asked: the words of a hold-back said as
// part of an answer ("fancy marketing talk is a waste of time", "we are
// not sure we can afford a van", "we'll open a second shop later") are the
// answer. "Thanks, I've noted the brand positioning. That's fair, and we
// can come back to anything later." answered the first.
func TestHoldsBackOnlyAsAWhole(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		"I'd rather not say.":                                                 true,
		"Not sure yet.":                                                       true,
		"Skip that one for now, please.":                                      true,
		"Can we come back to that later?":                                     true,
		"Honestly, I don't know.":                                             true,
		"I'm not sure what the budget is.":                                    true,
		"I'd rather not share our numbers.":                                   true,
		"This is a waste of time.":                                            true,
		"Honestly, these questions are annoying.":                             true,
		"I already told you that.":                                            true,
		"Why do you keep asking me this?":                                     true,
		"This isn't helpful, sorry.":                                          true,
		"Honest bread, made slowly; fancy marketing talk is a waste of time.": false,
		"Our biggest frustration is the card reader, it's annoying.":          false,
		"Paper rotas are frustrating and not helpful for the staff.":          false,
		"We're not sure we can afford a second van.":                          false,
		"We want to open a second shop later this year.":                      false,
		"We'd rather not borrow, we will use our savings.":                    false,
		"Not sure really. Probably Greggs and the supermarket bakeries.":      false,
		"Customers cancel at the last minute, which is annoying.":             false,
	} {
		if got := (ReplyPrompt{Message: msg}).holdsBack(); got != want {
			t.Errorf("holdsBack(%q) = %t, want %t", msg, got, want)
		}
	}
}
