package offlineskill

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// spelled finds a number written in words, from its first word to its
// last: "forty", "forty-five", "two hundred and fifty", "a hundred",
// "three thousand".
var spelled = regexp.MustCompile(`(?i)\b(?:an?\s+)?(?:` + spelledWords + `)(?:(?:\s+|-)(?:` + spelledWords + `))*\b`)

const spelledWords = `one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|` +
	`seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred(?:\s+and)?|thousand(?:\s+and)?`

var spelledValues = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
	"fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}

// pronounOnes stand before a "one" that is a pronoun, not a number ("the
// one", "no one", "which one").
var pronounOnes = map[string]bool{"the": true, "no": true, "any": true, "every": true, "each": true, "that": true,
	"this": true, "which": true, "some": true, "another": true, "other": true, "only": true}

// figures writes the numbers s spells out in figures ("about forty
// technicians" → "about 40 technicians", "two hundred customers" → "200
// customers"), so that a number the user writes in words is read as the
// one written in figures. A lone "one" that is a pronoun ("the one we
// use", "one of the managers") stays a word, as does an "a" before no
// hundred or thousand.
func figures(s string) string {
	if isASCII(s) && !spellsNumber(s) {
		return s
	}
	locs := spelled.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		start, end := loc[0], loc[1]
		words := strings.FieldsFunc(strings.ToLower(s[start:end]), func(r rune) bool { return r == ' ' || r == '-' })
		if words[len(words)-1] == "and" { // "two hundred and some"
			end = start + strings.LastIndex(strings.ToLower(s[start:end]), "and")
			for end > start && s[end-1] == ' ' {
				end--
			}
			words = words[:len(words)-1]
		}
		if words[0] == "a" || words[0] == "an" {
			if words[1] != "hundred" && words[1] != "thousand" {
				start += len(words[0]) + 1
				words = words[1:]
			}
		}
		if strings.HasPrefix(s[end:], "-") || strings.HasPrefix(s[end:], "'") || strings.HasPrefix(s[end:], "’") {
			continue // "one-off", "one's"
		}
		if len(words) == 1 && words[0] == "one" && (pronounOnes[lastWord(s[:start])] ||
			strings.HasPrefix(strings.ToLower(strings.TrimLeft(s[end:], " ")), "of ")) {
			continue
		}
		total, current := 0, 0
		for _, w := range words {
			switch w {
			case "a", "an":
				current = 1
			case "and":
			case "hundred":
				current = max(current, 1) * 100
			case "thousand":
				total, current = total+max(current, 1)*1000, 0
			default:
				current += spelledValues[w]
			}
		}
		b.WriteString(s[last:start])
		b.WriteString(strconv.Itoa(total + current))
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// spellsNumber reports whether an ASCII text may spell a number, as
// spelled finds one: whether one of its words is a number's word, ignoring
// case. A match of spelled holds one as a whole word, as \b parts words
// (runs of ASCII letters, digits and underscores): the sentences that spell
// no number, most of them, skip the pattern. Not for a text that is not
// ASCII, where (?i) matches more than ASCII case does (the long s of "ſix").
func spellsNumber(s string) bool {
	var lowered [len("seventeen")]byte // the longest word of a number
	for i := 0; i < len(s); {
		if !wordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && wordByte(s[j]) {
			j++
		}
		if n := j - i; n <= len(lowered) {
			for k := range n {
				c := s[i+k]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				lowered[k] = c
			}
			if w := string(lowered[:n]); spelledValues[w] > 0 || w == "hundred" || w == "thousand" {
				return true
			}
		}
		i = j
	}
	return false
}

// wordByte reports whether c is a word character of \b: an ASCII letter, a
// digit or an underscore.
func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// lastWord is the last word of s, lowered.
func lastWord(s string) string {
	w := strings.Fields(strings.ToLower(s))
	if len(w) == 0 {
		return ""
	}
	return w[len(w)-1]
}

// groupsCounted is how many people a sentence that counts groups of them
// says there are ("About 900 subscribers and two staff" 902, "40
// technicians and 5 office staff" 45): the sum of its items, each a
// number and what it counts, that count people; the things counted
// beside them ("40 technicians and 3 vans", "40 orders and 3 customers")
// are none. What an item counts is the people noun it names, wherever it
// stands before a place or a clause ("6 staff at the bakery", "six
// part-time staff"), or the team "of us" ("5 of us in the shop"); an item
// that names none before its place ("two in the shop") counts what the
// item before it counts. A team's head count (staff) sums only the groups
// that work in it: "About 900 subscribers and two staff" is a team of 2.
// The users counted beside "us" are the users, not the team that tells
// them: "5 of us and about 200 clients" are 200 users. Parts that add up
// to the "of us" before them restate it ("Four of us, two bakers and two
// in the shop" are 4). A sentence with an item that counts nothing, or a
// colon, whose head counts them all ("About 900 users: our subscribers
// and the two of us"), counts no groups, nor does one that counts no
// people (of the team, for staff).
func groupsCounted(figures string, staff bool) (float64, bool) {
	if strings.Contains(figures, ":") {
		return 0, false
	}
	items := SplitItems(cleanSentence(figures))
	if len(items) < 2 {
		return 0, false
	}
	if !staff {
		if n, ok := usersSaid(items); ok {
			return n, true // "5 of us will use it, the 200 clients never log in"
		}
	}
	sum, ofUs, people, before := 0.0, 0.0, false, false
	for _, it := range items {
		w, f, ok := countOf(it)
		if !ok {
			return 0, false
		}
		counted := false
		switch noun := countedNoun(w[1:]); {
		case len(w) >= 3 && w[1] == "of" && w[2] == "us":
			// "3 of us full time": the team, which uses no product of its
			// own beside the users it counts.
			if ofUs > 0 {
				return 0, false
			}
			counted, ofUs = staff, f
		case noun == "":
			counted = before // "two bakers and two in the shop"
		default:
			counted = countsPeople(noun) && !(staff && servedNouns[noun]) // "3 vans", "200 customers" in no team
		}
		if before = counted; counted {
			sum, people = sum+f, true
		}
	}
	if ofUs > 0 && sum == 2*ofUs {
		return ofUs, true // "8 of us, 2 partners and 6 employees"
	}
	return sum, people
}

// countOf reads an item that counts a group: its words from the number
// on, lowered ("and our 5 walkers" → "5 walkers"), and the number; ok is
// false when no number opens it.
func countOf(item string) (w []string, n float64, ok bool) {
	w = strings.Fields(strings.ToLower(trimLeads(item, countLeads)))
	for len(w) > 0 && (roughly[w[0]] || w[0] == "and" || determiners[w[0]]) {
		w = w[1:]
	}
	if len(w) < 2 || !isFigure(w[0]) {
		return nil, 0, false
	}
	v, parsed := ParseNumber(w[0])
	n, ok = v.(float64)
	return w, n, parsed && ok
}

// usersSaid is the count of the one group of a sentence said to use the
// product ("5 of us will use it"), when one is: the clause that says who
// uses it wins over the groups beside it, which may say they do not ("the
// 200 clients never log in").
func usersSaid(items []string) (float64, bool) {
	found, n := false, 0.0
	for _, it := range items {
		w, f, ok := countOf(it)
		if !ok || !slices.ContainsFunc(w, func(x string) bool { return useVerbs[x] }) ||
			slices.ContainsFunc(w, func(x string) bool { return negations[x] || strings.HasSuffix(x, "n't") }) {
			continue
		}
		if found {
			return 0, false // two groups that use it add up
		}
		found, n = true, f
	}
	return n, found
}

var (
	// useVerbs say a group uses the product ("will use it", "log in").
	useVerbs = engine.WordSet(`use uses using used log logs logging`)
	// negations say a group does not ("never log in").
	negations = engine.WordSet(`not never no`)
)

// countedNoun is the noun the words after a number count: the people noun
// among them before a place or a clause ("staff" of "staff at the
// bakery", "part-time staff"), else the last of them there ("vans"), or ""
// when a place follows the number at once ("in the shop").
func countedNoun(w []string) string {
	if i := slices.IndexFunc(w, func(w string) bool { return placeOrClause[w] }); i >= 0 {
		w = w[:i]
	}
	if i := slices.IndexFunc(w, countsPeople); i >= 0 {
		return w[i]
	}
	if len(w) == 0 {
		return ""
	}
	return w[len(w)-1]
}

// placeOrClause open what is said of the people an item counts after the
// noun that counts them: where, when or how they work.
var placeOrClause = engine.WordSet(`at in on for from with by who that which working doing during across behind
	between into under over`)

// peopleCounted is what a number field counts of people: those who will
// use the product ("Roughly how many people will use it"), every group
// of whom adds up; those who work in the business ("How many people work
// in the business"), its staff only; or none, whose number no group
// gives.
func peopleCounted(f extraction.PromptField) counting {
	if f.ValueType != engine.TypeNumber {
		return countsNone
	}
	w := contentWords(f.DisplayName + " " + f.Description)
	switch {
	case w["use"] || w["users"]:
		return countsUsers
	case w["work"] || w["team"] || w["staff"] || w["headcount"] || w["employees"]:
		return countsStaff
	}
	return countsNone
}

// counting is what a number field counts of people (peopleCounted).
type counting int

const (
	countsNone counting = iota
	countsUsers
	countsStaff
)

// groupsOf is the number of people the groups a sentence counts make,
// for a field that counts people (groupsCounted).
func groupsOf(f extraction.PromptField, figures string) (float64, bool) {
	kind := peopleCounted(f)
	if kind == countsNone {
		return 0, false
	}
	return groupsCounted(figures, kind == countsStaff)
}

// countsPeople reports whether a plural noun names people ("subscribers",
// "staff", "technicians"), not things ("vans", "orders"): one of the
// nouns people are counted by.
func countsPeople(w string) bool {
	return peopleNouns[w]
}

// countLeads say who has the people counted ("We have 40 technicians").
var countLeads = []string{"we have", "we've got", "we've", "i have", "i've got", "there are", "there's", "it's",
	"it is", "just", "only", "so", "well"}

// servedNouns are the people a business serves, who work in no team of
// it ("subscribers", "customers").
var servedNouns = engine.WordSet(`users members clients customers subscribers students pupils patients parents
	residents tenants guests kids children adults families locals visitors shoppers buyers consumers patrons diners
	followers readers viewers listeners learners attendees households`)

// peopleNouns are the nouns people are counted by: roles, trades and the
// kinds of customer.
var peopleNouns = engine.WordSet(`staff people users members employees clients customers students patients parents
	residents agents tenants volunteers nurses guests kids children adults families locals subscribers workers
	bakers drivers walkers cleaners teachers trainers managers owners partners mechanics technicians engineers
	designers developers contractors freelancers instructors tutors doctors visitors donors investors trainees
	interns apprentices assistants consultants therapists dentists florists stylists electricians plumbers builders
	gardeners caterers cooks chefs waiters baristas dispatchers admins supervisors coaches carers riders couriers
	cyclists players pupils shoppers buyers sellers readers viewers followers fans vendors suppliers wholesalers
	farmers growers makers artists photographers writers dancers musicians learners beginners attendees
	participants delegates officers operators receptionists cashiers accountants bookkeepers lawyers agents
	recruiters salespeople reps representatives inspectors surveyors installers fitters painters decorators
	carpenters joiners roofers landscapers labourers laborers porters guards nannies babysitters grooms
	groomers vets veterinarians pharmacists physios physiotherapists midwives paramedics carers colleagues
	friends volunteers members patrons diners travellers travelers tourists commuters passengers tenants
	landlords homeowners households couples mums dads teens seniors pensioners retirees`)
