package offlineskill

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine/enginetest"
)

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
		if got := (ReplyPrompt{Message: msg}).holdsBack(heldBack(msg)); got != want {
			t.Errorf("holdsBack(%q) = %t, want %t", msg, got, want)
		}
	}
}

// A long sentence's echo is cut where a clause ends, or not said: "so"
// before a quantity or an adjective opens no clause ("so many orders"),
// nor "or" between numbers ("two or three hundred loaves"), nor "and"
// inside a subject ("My business partner Tom and I") or after "between";
// and no cut leaves a verb without its object. They gave "every weekend
// you get", "… you sell two", "your business partner Tom" and "… choosing
// between Square".
func TestEchoIsCutWhereAClauseEnds(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		"On Saturdays we open at eight, and every weekend we get so many orders that my sister has to come in to help us pack.":           "on Saturdays you open at eight",
		"Every weekend we get so many orders from the market stall that my sister has to come in early to help us pack everything.":       "",
		"At the moment we sell two or three hundred loaves a day to the cafes around the city centre and to the farm shop near Otley.":    "",
		"My business partner Tom and I started the bakery in 2019 after we both lost our jobs at the big supermarket in the city centre.": "",
		"We are choosing between Square and Shopify for the online shop that we want to open before the Christmas rush starts this year.": "",
		"We bake from 4am, open the shop at 7, deliver to cafes twice a week and do the books on Sundays.":                                "you bake from 4am, open the shop at 7, deliver to cafes twice a week",
		"Every morning we bake and sell about three hundred loaves to the cafes in the city centre and the farm shop.":                    "every morning you bake and sell about three hundred loaves to the cafes in the city centre",
		"The problem is that clients cancel at the last minute and I still have to pay the trainer for the whole session.":                "the problem is that clients cancel at the last minute",
		"Clients have to pay online before they come so that the trainer still gets paid when a class is cancelled late.":                 "clients have to pay online before they come",
		"My wife and I run the shop together and we both bake every morning before the cafes open their doors at seven.":                  "your wife and you run the shop together",
	} {
		if got, _ := reflect(msg, nil, wordList{}, wordList{}, heldBack(msg)); got != want {
			t.Errorf("echo of %q = %q, want %q", msg, got, want)
		}
	}
}

// A name that opens an echo keeps its capital: a name before the one it
// is ("Dave our manager does the rota", not a verb before its object as
// "Ask our manager"), a name of two capitalised words ("Whole Foods",
// "Open Table"), a place or a holiday people write capitalised (London:
// "london" is a token of the vocabulary too, but " London" is the more
// common one). They were lowered: "dave your manager", "whole Foods",
// "london is where …".
func TestANameOpeningAnEchoKeepsItsCapital(t *testing.T) {
	t.Parallel()
	for echo, want := range map[string]bool{
		"Dave our manager does the rota":       true,
		"Sarah my partner does the books":      true,
		"Whole Foods stocks our bread":         true,
		"Open Table takes our bookings":        true,
		"London is where most customers live":  true,
		"Christmas is our busiest time":        true,
		"Ask our manager to do the rota":       false,
		"Scrap the indoor studio":              false,
		"Drop Shopify, it costs too much":      false,
		"Last Christmas we sold out":           false,
		"System crashes every week":            false,
		"Customers keep calling about the van": false,
	} {
		if got := keepsCapital(strings.Fields(echo), nil, wordList{}, wordList{}); got != want {
			t.Errorf("keepsCapital(%q) = %t, want %t", echo, got, want)
		}
	}
	// Said in a reply, the name is the subject of a clause, which "It
	// sounds like" takes: it said nothing.
	msg := "Dave our manager does the rota every week and keeps the shop running when I am away at the farmers market on Saturdays."
	if got, fragment := reflect(msg, nil, wordList{}, wordList{}, heldBack(msg)); got != "Dave your manager does the rota every week and keeps the shop running" || fragment {
		t.Errorf("echo of %q = %q (fragment %t), want %q, a clause", msg, got, fragment, "Dave your manager does the rota every week and keeps the shop running")
	}
}

// What the user would rather come back to is the subject of the
// obligation's description, which runs to its last "is" or "are": it
// stopped at the first, and nine descriptions of the shipped engines were
// said as "whether the business", "how the business", "how customer
// satisfaction", … Each description's subject, said with "is" or "are"
// and what follows it, is the description again.
func TestObligationSubjects(t *testing.T) {
	t.Parallel()
	for description, want := range map[string]string{
		"Whether the business is profitable is known":                                "whether the business is profitable",
		"How the business is funded is known":                                        "how the business is funded",
		"How customer satisfaction is measured is known":                             "how customer satisfaction is measured",
		"How the brand is positioned is defined":                                     "how the brand is positioned",
		"How personal data is handled is known":                                      "how personal data is handled",
		"How the problem is handled today is understood":                             "how the problem is handled today",
		"Who the concept is for is defined":                                          "who the concept is for",
		"How digital the business is (paper, mixed, fully digital) is assessed":      "how digital the business is (paper, mixed, fully digital)",
		"The business's age and stage (early-stage, growing, established) are known": "the business's age and stage (early-stage, growing, established)",
		"The users' pain points today are captured":                                  "the users' pain points today",
		"The user's goals are clear":                                                 "",
		"The numbers the owner watches are known":                                    "",
	} {
		if got := obligationSubject(description); got != want {
			t.Errorf("obligationSubject(%q) = %q, want %q", description, got, want)
		}
	}
	cat := enginetest.Shipped(t)
	for _, id := range cat.IDs() {
		def, _ := cat.Get(id)
		for _, o := range def.Obligations {
			subject := obligationSubject(o.Description)
			if subject == "" {
				continue
			}
			after, ok := strings.CutPrefix(strings.ToLower(o.Description), strings.ToLower(subject)+" ")
			verb, _, _ := strings.Cut(after, " ")
			if !ok || verb != "is" && verb != "are" || strings.Contains(" "+after[len(verb):]+" ", " is ") ||
				strings.Contains(" "+after[len(verb):]+" ", " are ") {
				t.Errorf("%s: %s: subject %q is not the description's up to its last is or are", id, o.ID, subject)
			}
		}
	}
}

// A value the context clipped is said without its quotes and escapes,
// ending with "…": a string, whatever escape the cut left unfinished, and
// a list of strings. Other text is shown as it is.
func TestPlainValueOfAClippedValue(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`"We text \"when we can\" and wr…`: `We text "when we can" and wr…`,
		`"We text \…`:                      `We text …`,
		`"Caf\u00…`:                        `Caf…`,
		`"Café \u00e9t…`:                   `Café ét…`,
		`["Square", "Xero", "Google Cal…`:  `Square, Xero, Google Cal…`,
		`["Square", "Xe\…`:                 `Square, Xe…`,
		`["Square", "Xero"…`:               `Square, Xero…`,
		`"Whole"`:                          `Whole`,
		`{"name": "Square", "fee…`:         `{"name": "Square", "fee…`,
		`[1, 2, 3…`:                        `[1, 2, 3…`,
		`"Done" and then "more"…`:          `"Done" and then "more"…`,
	} {
		if got := plainValue(raw); got != want {
			t.Errorf("plainValue(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A reply reads the words of the whole history, to tell a name's capital,
// without copying them: it copied them, with the message's, at each
// reading (168 words in the turn-path prompt, three times a reply). A
// reply to a long conversation allocates what one to a short one does.
func TestReplyDoesNotCopyTheHistorysWords(t *testing.T) {
	prompt := func(words int) ReplyPrompt {
		p := ReplyPrompt{Phase: "CORE_CAPTURE", DominantMode: "extract", Techniques: []string{"active_listening"},
			NextID: "trigger_event_identified", NextQuestion: "What made this a priority now?",
			Message: "Every weekend we sell our bread to the cafes in town."}
		for i := range words {
			p.Names = append(p.Names, fmt.Sprintf("Name%d", i))
			p.Lowercase = append(p.Lowercase, fmt.Sprintf("word%d", i))
		}
		return p
	}
	// allocated is the fewest bytes a reply allocated in five rounds of 20:
	// the process's count, so a collection that empties a pool, or another
	// goroutine, adds to a round, never takes from it.
	allocated := func(p ReplyPrompt) uint64 {
		const runs = 20
		Compose(p) // the tokenizer and the caches are loaded
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				Compose(p)
			}
			runtime.ReadMemStats(&after)
			least = min(least, (after.TotalAlloc-before.TotalAlloc)/runs)
		}
		return least
	}
	short, long := allocated(prompt(10)), allocated(prompt(2000))
	if want := "It sounds like every weekend you sell your bread to the cafes in town."; !strings.HasPrefix(Compose(prompt(2000)), want) {
		t.Fatalf("reply %q, want it to open with %q", Compose(prompt(2000)), want)
	}
	// One copy of 2,000 words' string headers is 32 kB: a reply that made
	// one would pass half of it. Less than that is noise (under the race
	// detector a pool drops what it is given at random).
	if long > short+16<<10 {
		t.Errorf("a reply after 2,000 words allocates %d bytes, after 10 words %d", long, short)
	}
}

// A message that as a whole pushes back is not acknowledged as a value:
// "That's annoying." filed as the pricing model was answered "Good to
// know, the pricing model: that's annoying." The extraction files nothing
// of it now (TestExtractionSkillPushbackFilesNothing), and the reply
// neither names the field nor says the message back.
func TestPushbackIsNotAcknowledgedAsFiled(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ msg, name string }{
		{"That's annoying.", "Pricing model"},
		{"It's frustrating.", "Revenue streams"},
		{"It's useless.", "Knowledge gaps"},
	} {
		for _, technique := range []string{"", "roll_with_resistance"} {
			p := ReplyPrompt{Phase: "CORE_CAPTURE", DominantMode: "extract", Techniques: []string{technique},
				NextID: "business_model_known", NextQuestion: "How do you make money today?", Message: tt.msg}
			got := Compose(p)
			low := strings.ToLower(got)
			if strings.Contains(low, strings.ToLower(tt.name)) || strings.Contains(low, strings.ToLower(strings.TrimSuffix(tt.msg, "."))) {
				t.Errorf("reply to %q (technique %q) = %q, acknowledges it as the %s", tt.msg, technique, got, tt.name)
			}
			if !strings.HasSuffix(got, "How do you make money today?") {
				t.Errorf("reply to %q = %q, does not end with the question", tt.msg, got)
			}
		}
	}
}

// A name the message introduces by its role keeps its capital, though
// it is a common word too ("Bill is our accountant" was echoed "bill is
// your accountant"); a common word before no role is lowered.
func TestIntroducedNameKeepsItsCapital(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		"Bill is our accountant and he does the books.":  "Bill is your accountant and he does the books",
		"Square is our card reader at the market stall.": "Square is your card reader at the market stall",
		"Time is our biggest problem in the mornings.":   "time is your biggest problem in the mornings",
	} {
		if got, _ := reflect(msg, nil, wordList{}, wordList{}, heldBack(msg)); got != want {
			t.Errorf("echo of %q = %q, want %q", msg, got, want)
		}
	}
}

func TestSaidList(t *testing.T) {
	for _, tt := range []struct {
		items []string
		want  string
	}{
		{[]string{"baking capacity"}, "baking capacity"},
		{[]string{"no budget yet", "by Christmas"}, "no budget yet and by Christmas"},
		{[]string{"a budget of 15,000 pounds", "by June", "a team of two"}, "a budget of 15,000 pounds, by June and a team of two"},
		{[]string{"finding staff", "funding from savings, no loans"}, "finding staff; funding from savings, no loans"},
		{[]string{"a", "iPhone and Android", "b"}, "a; iPhone and Android; and b"},
		{[]string{"Stripe (for: payments)", "Xero", "2 more"}, "Stripe (for: payments); Xero; and 2 more"},
	} {
		if got := saidList(tt.items); got != tt.want {
			t.Errorf("saidList(%q) = %q, want %q", tt.items, got, tt.want)
		}
	}
}
