package handoff

import (
	"strings"
	"unicode"

	"github.com/praetorhq/praetor/internal/engine"
)

// How a handoff's constraints are read, by the first reply that says it
// has noted them (the offline provider's acknowledgement) and by the
// evaluators that count them as told (project discovery's budget,
// timeline, ...): one reading, so that what a reply says it noted is what
// the engine no longer asks for.

// constraintLabels are the labels the shipped mappers put before a
// constraint's value ("Budget: $60k"; Constraint of Fields).
var constraintLabels = engine.WordSet("Budget Timeline Technical Integration Team Regulation Funding")

// ConstraintLabel cuts a constraint into the label a shipped mapper put
// before its value and the value; label is "" for a constraint without one
// (free text, as exploration and ideation hand off), value the whole
// constraint then.
func ConstraintLabel(c string) (label, value string) {
	l, v, ok := strings.Cut(c, ": ")
	if !ok || !constraintLabels[l] {
		return "", c
	}
	return l, v
}

// NoneOf reads a constraint's value as saying there is none of it, or that
// the user does not know it (NoneSaid): the whole value, or its head before
// a comma followed by more ("none yet, maybe 5k later": head "none yet",
// rest "maybe 5k later"). head is the value, rest "", when neither says so.
func NoneOf(value string) (head, rest string, none bool, unknown string) {
	if h, r, ok := strings.Cut(value, ","); ok && strings.TrimSpace(r) != "" {
		if none, unknown := NoneSaid(h); none || unknown != "" {
			return h, strings.TrimSpace(r), none, unknown
		}
	}
	none, unknown = NoneSaid(value)
	return value, "", none, unknown
}

// NoneSaid reports whether a constraint's value says there is none
// ("none", "None at the moment", "none needed", "n/a") or that the user
// does not know it ("no idea", "Not sure", "unknown"; unknown is then
// "known", or "decided" for a value that says it is not decided yet):
// its words, but those that say for how long or why (noneTails), are one
// of noneHeads or unknownHeads.
func NoneSaid(value string) (none bool, unknown string) {
	v := strings.ToLower(strings.Join(strings.FieldsFunc(strings.ReplaceAll(value, "’", "'"), func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(".,;:!", r)
	}), " "))
	for cut := true; cut; {
		// "not decided" is not known, before "decided" is cut as a tail
		// and leaves "not", which is none.
		if unknownHeads[v] {
			if v == "not decided" || v == "undecided" {
				return false, "decided"
			}
			return false, "known"
		}
		cut = false
		for _, tail := range noneTails {
			if rest, ok := strings.CutSuffix(v, " "+tail); ok {
				v, cut = rest, true
				break // one tail at a time, each cut read again
			}
		}
	}
	return noneHeads[v], ""
}

var (
	// noneHeads say there is none of a constraint.
	noneHeads = engine.WordSet("none nothing no not n/a na tbd tbc")
	// unknownHeads say the user does not know a constraint.
	unknownHeads = map[string]bool{"no idea": true, "not sure": true, "unsure": true, "unknown": true, "not known": true,
		"don't know": true, "dont know": true, "i don't know": true, "no clue": true, "not decided": true, "undecided": true}
	// noneTails are the words after a value of none or unknown that say
	// for how long or why ("none at the moment", "not sure yet").
	noneTails = []string{"yet", "at the moment", "for now", "so far", "right now", "currently", "at present", "at this point",
		"really", "at all", "needed", "required", "planned", "set", "in place", "decided"}
)

// ConstraintTold is the label of a constraint that tells what its label
// names, clearly enough that a receiving engine need not ask for it again;
// "" for any other. Only a labelled constraint tells: the label says which
// field of the source session it was captured by (project discovery's
// budget, timeline, ...), which free text does not ("$300 a month" may be
// the running cost, not the budget to build). And, for the label:
//
//   - Budget: an amount of money ("$50k", "around 60 to 80 thousand");
//   - Timeline: a date or a span of time ("within three months", "by
//     June", "before the winter season", "Q3 2027");
//   - Technical, Integration, Regulation: anything, none too ("Integration:
//     none needed" tells there is none to build);
//   - Team, Funding: anything but none ("Team: none" leaves who builds it
//     open).
//
// A value that says the user does not know or has not decided, or hedges
// anywhere ("Budget: no idea", "Timeline: hasn't been decided, maybe June",
// "Budget: we'll see, 10k", "Team: not sure, maybe an agency"), tells
// nothing, nor does a none followed by more ("none for now, maybe Xero
// later", "no budget, 10k"). A none is NoneSaid's, or a value that opens
// with "no X", "nobody", "no one", "not yet ..." or "to be ..." ("Team: no
// team", "Team: to be hired"; "no later than June" is a date). Where in
// doubt it reads not told: the engine then asks a question it may not have
// needed, where a false told skips one it did.
//
// The offline provider's reply says constraints back by NoneOf's narrower
// reading ("to be hired" said as it is, not as "no team"), so that sessions
// recorded before this reading replay as they were.
func ConstraintTold(c string) string {
	label, value := ConstraintLabel(c)
	if label == "" || strings.TrimSpace(value) == "" {
		return ""
	}
	_, rest, none, unknown := NoneOf(value)
	if unknown != "" || none && rest != "" || undecided(value) {
		return ""
	}
	if head, more, _ := strings.Cut(value, ","); opensWithNone(head) {
		if strings.TrimSpace(more) != "" {
			return ""
		}
		none = true
	}
	switch label {
	case "Budget":
		if none || !amountOfMoney(value) {
			return ""
		}
	case "Timeline":
		if none || !dateOrSpan(value) {
			return ""
		}
	case "Team", "Funding":
		if none {
			return ""
		}
	}
	return label
}

// undecided reports whether a value says, anywhere, that the user does not
// know or has not decided it, or hedges it ("$50k, but not sure yet",
// "maybe an agency, I don't know", "unclear, 10k", "we'll see, 10k").
func undecided(value string) bool {
	t := engine.LowerText(strings.ReplaceAll(value, "’", "'"))
	for _, w := range hedges {
		if t.Contains(w) {
			return true
		}
	}
	return strings.Contains(value, "?")
}

// hedges are the phrases that, anywhere in a value, leave it untold.
var hedges = []string{"not sure", "unsure", "no idea", "don't know", "dont know", "do not know", "no clue",
	"not decided", "undecided", "not known", "unknown", "tbd", "tbc", "to be decided", "to be confirmed",
	"not yet decided", "not yet known", "yet to be decided", "yet to decide",
	"haven't decided", "hasn't decided", "haven't been decided", "hasn't been decided", "have not decided",
	"has not decided", "have not been decided", "has not been decided", "not been decided",
	"unclear", "not clear", "we'll see", "we will see", "maybe", "perhaps", "possibly"}

// opensWithNone reports whether a value opens with words that say there is
// none of it, in words NoneSaid does not read as a whole: "no team", "no
// funding", "nobody", "no one", "not yet hired", "to be hired". "No" before
// a comparison ("no later than June", "no more than $40k") is a bound, not
// a none.
func opensWithNone(value string) bool {
	words := wordsOf(value)
	switch {
	case len(words) == 0:
		return false
	case words[0] == "nobody" || words[0] == "noone" || words[0] == "none":
		return true
	case words[0] == "no":
		return len(words) < 3 || words[2] != "than"
	case len(words) >= 2 && (words[0] == "not" && words[1] == "yet" || words[0] == "to" && words[1] == "be"):
		return true
	}
	return false
}

// amountOfMoney reports whether a budget's value names an amount: a
// figure ("$50k", "60000", "£20,000") or a number's word before a
// multiplier or a currency ("fifty thousand", "ten grand", "five hundred
// pounds").
func amountOfMoney(value string) bool {
	if strings.ContainsFunc(value, unicode.IsDigit) {
		return true
	}
	words := wordsOf(value)
	for i := 1; i < len(words); i++ {
		if spelledNumbers[words[i-1]] && (multipliers[words[i]] || currencies[words[i]]) {
			return true
		}
	}
	return false
}

// dateOrSpan reports whether a timeline's value names a date or a span of
// time: a month, a season, a quarter, a year, a holiday, a weekday, a
// number or "a" before a unit of time ("3 months", "three weeks", "within
// a year"), "next" before a unit or a season, or a date in figures
// ("15/06", "2027-03-01"). "May" and "fall" are a date only after a word
// that leads one ("by May", "in the fall"): "may slip" is none.
func dateOrSpan(value string) bool {
	words := wordsOf(value)
	for i, w := range words {
		before := ""
		if i > 0 {
			before = words[i-1]
		}
		switch {
		case w == "may" || w == "fall":
			if dateLeads[before] {
				return true
			}
		case months[w] || seasonWords[w] || holidayWords[w] || weekdays[w] || quarterOrYear(w):
			return true
		case spanUnits[w] && (spelledNumbers[before] || before == "a" || before == "an" || before == "next" ||
			strings.IndexFunc(before, unicode.IsDigit) == 0):
			return true
		case strings.ContainsFunc(w, unicode.IsDigit) && strings.ContainsAny(w, "/-"):
			return true
		}
	}
	return false
}

// quarterOrYear reports whether a word is a quarter ("q3") or a year of
// this century or the last ("2027").
func quarterOrYear(w string) bool {
	if len(w) == 2 && w[0] == 'q' && w[1] >= '1' && w[1] <= '4' {
		return true
	}
	return len(w) == 4 && (strings.HasPrefix(w, "19") || strings.HasPrefix(w, "20")) &&
		strings.IndexFunc(w, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
}

// wordsOf are a value's words, lower-cased, split at anything but letters,
// digits, '/' and '-' ("15/06", "2027-03-01" stay whole).
func wordsOf(value string) []string {
	return strings.FieldsFunc(strings.ToLower(value), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/' && r != '-'
	})
}

var (
	spelledNumbers = engine.WordSet(`one two three four five six seven eight nine ten eleven twelve fifteen eighteen
		twenty thirty forty fifty sixty seventy eighty ninety hundred few couple`)
	multipliers = engine.WordSet("hundred thousand million grand k")
	currencies  = engine.WordSet("dollars dollar pounds pound euros euro bucks quid usd gbp eur")
	months      = engine.WordSet(`january february march april june july august september october november december
		jan feb mar apr jun jul aug sep sept oct nov dec`)
	seasonWords  = engine.WordSet("spring summer autumn winter")
	holidayWords = engine.WordSet("christmas easter xmas thanksgiving")
	weekdays     = engine.WordSet("monday tuesday wednesday thursday friday saturday sunday tomorrow")
	spanUnits    = engine.WordSet("day days week weeks month months year years quarter quarters")
	dateLeads    = engine.WordSet("by in before until till from after of early mid late end the this next")
)
