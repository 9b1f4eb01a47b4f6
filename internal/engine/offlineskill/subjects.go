package offlineskill

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// subjectNamed puts into a pattern's value that opens with "it", the
// subject of its clause, the name the clause before it has for its subject:
// "Mindbody looks powerful but it's too expensive" says "Mindbody is too
// expensive", an item that says on its own what it is said of. before is
// the sentence up to the value. A value that does not open with "it", or
// one after a clause whose subject is no name ("The app looks nice but it's
// too slow"), stays as it is.
func subjectNamed(v any, before string) any {
	switch v := v.(type) {
	case string:
		return itNamed(v, before)
	case []string:
		if len(v) > 0 {
			v[0] = itNamed(v[0], before)
		}
	}
	return v
}

// itNamed is subjectNamed for one item.
func itNamed(item, before string) string {
	loc := itSubject.FindStringSubmatchIndex(item)
	if loc == nil {
		return item
	}
	name := subjectName(lastClause(before))
	if name == "" {
		return item
	}
	if loc[2] < 0 {
		return name + item[len("it"):] // "it looks good", "it doesn't do payments"
	}
	rest := item[loc[1]:]
	if strings.HasPrefix(rest, " got ") || strings.HasPrefix(rest, " been ") {
		return name + " has" + rest // "it's got great reviews"
	}
	return name + " is" + rest // "it's too expensive"
}

// itSubject is "it" opening an item as the subject of a verb; group 1 is
// the "'s" it is contracted with.
var itSubject = regexp.MustCompile(`^(?i:it)(?:(['’]s)|\s+(?:is|was|looks|seems|sounds|feels|has|does|handles|offers|includes|covers|supports|comes|gets|can|doesn['’]t|does\s+not|can['’]t|cannot|won['’]t))\b`)

// lastClause is the last clause of before that says something: the text
// after its last clause break, past the leads that open it ("I think").
func lastClause(before string) string {
	for before != "" {
		at, next := -1, 0
		lower := strings.ToLower(before)
		for _, br := range clauseBreaks {
			if i := strings.LastIndex(lower, br); i > at {
				at, next = i, i+len(br)
			}
		}
		if clause := strings.TrimSpace(trimLeads(strings.TrimSpace(before[next:]), leads)); clause != "" && !isLead(clause) {
			return clause
		}
		if at < 0 {
			return ""
		}
		before = before[:at]
	}
	return ""
}

// clauseBreaks part the clauses of a sentence.
var clauseBreaks = []string{",", ";", ":", " but ", " and ", " because ", " since ", " though ", " although ", " while ",
	" so ", " yet "}

// subjectName is the name a clause opens with as its subject: up to three
// capitalised words that a verb saying what the thing is, has or does
// follows ("Mindbody looks powerful", "Google Forms is free", "Mindbody's
// great"), none of them a pronoun, a determiner, a lead, a day or a month
// or a word that makes a clause ("It looks good", "The app is nice",
// "Honestly", "January is busy"); else "". A capitalised word another word
// follows opens the sentence and names nothing ("Most studios use
// Mindbody", "Yoga teachers love it"), and one a verb of what someone did
// follows is no option ("Sarah recommended Glofox").
func subjectName(clause string) string {
	words := strings.Fields(strings.ReplaceAll(clause, "’", "'"))
	for n := range min(len(words), 3) {
		if !upper(words[n]) {
			break
		}
		word, contracted := strings.CutSuffix(words[n], "'s")
		if w := strings.ToLower(word); clauseWord(w) || determiners[w] || functionWords[w] || isLead(w) || openers[w] ||
			notNames[w] || calendar[w] {
			return ""
		}
		if contracted {
			return strings.Join(append(words[:n:n], word), " ") // "Mindbody's great"
		}
		if n+1 < len(words) && saidOf[strings.ToLower(words[n+1])] {
			return strings.Join(words[:n+1], " ")
		}
	}
	return ""
}

// saidOf are the verbs after a name that say what it is, has or does.
var saidOf = engine.WordSet(`is was looks looked seems seemed sounds sounded feels felt has had does did handles
	offers includes covers supports comes gets can could doesn't isn't wasn't can't won't would will costs`)

// notNames are capitalised words that open a clause and name nothing,
// besides the openers of any sentence ("This", "Honestly").
var notNames = engine.WordSet(`everyone everybody nobody someone people members clients customers personally frankly
	overall`)

// upper reports whether a word opens with a capital letter.
func upper(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

// ofOptions takes off the lists said of the options ("Advantages of the
// options") the items a pattern found of a name that is none of them,
// when the options are known: "Leeds has a great yoga scene" says nothing
// of Mindbody or Glofox, though a name that has something great opens it
// as one of them would. With no option known, any name may be one. A name
// that reads as a product, said with what is said of one ("PushPress
// looks great too", "Wodify is too expensive"), is an option more: its
// item stays, and the name goes on the options (productSaid); one said
// with a place or a scene goes, whether or not options are known. taken
// reports an item taken off: the message is about no option, and answers
// no question asked.
func ofOptions(p extraction.Prompt, ans Answer) (taken bool) {
	var (
		options []optionName // the options, read once a call
		named   []string     // the names said as products that none of them is
		looked  bool
	)
	for _, f := range p.Fields {
		fa, ok := ans.Fields[f.Path]
		if !ok || !fa.byPattern || f.ValueType != engine.TypeArray || !saidOfOptions(f) {
			continue
		}
		if !looked {
			looked = true
			for _, o := range knownOptions(p, ans) {
				options = append(options, optionName{words: contentWords(o), name: o})
			}
		}
		var was []string
		_ = json.Unmarshal(f.Current, &was)
		items := texts(fa.Value)
		kept := slices.DeleteFunc(slices.Clone(items), func(it string) bool {
			if slices.Contains(was, it) {
				return false
			}
			name := subjectName(it)
			if name == "" {
				return false
			}
			n := contentWords(name)
			if slices.ContainsFunc(options, func(o optionName) bool {
				return len(n) > 0 && len(o.words) > 0 && (all(n, o.words) || all(o.words, n)) || sameLetters(name, o.name)
			}) {
				return false
			}
			switch productSaid(it, name, p.Message, options) {
			case namesPlace:
				return true
			case namesFavourite:
				if !optionsAsked(p) {
					return true // "Brighton is my favourite", asked for the goals
				}
				if !slices.Contains(named, name) {
					named = append(named, name)
				}
				return false
			case namesProduct:
				if !slices.Contains(named, name) {
					named = append(named, name)
				}
				return false
			}
			return len(options) > 0
		})
		if len(kept) == len(items) {
			continue
		}
		taken = true
		if v, changed := grow(f.Current, kept, false); len(kept) > 0 && changed {
			fa.Value = v
			ans.Fields[f.Path] = fa
		} else {
			delete(ans.Fields, f.Path)
		}
	}
	if len(named) > 0 {
		moreOptions(p, ans, named)
	}
	return taken
}

// optionName is an option as a name said is matched against it: its
// words, and the name itself, whose letters it may be said with spaced
// otherwise ("Mind Body" is Mindbody).
type optionName struct {
	words map[string]bool
	name  string
}

// sameLetters reports whether two names are the same letters and digits,
// whatever their case and the spaces, hyphens and marks between them
// ("Mind Body", "Mindbody"); names with none are not.
func sameLetters(a, b string) bool {
	next := func(s string) (rune, string) {
		for s != "" {
			r, n := utf8.DecodeRuneInString(s)
			if s = s[n:]; unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r), s
			}
		}
		return -1, ""
	}
	some := false
	for {
		var ra, rb rune
		ra, a = next(a)
		rb, b = next(b)
		if ra != rb {
			return false
		}
		if ra < 0 {
			return some
		}
		some = true
	}
}

// productSaid tells what an item says of the name it opens with: of a
// product, when what it says is what is said only of one (its app, its
// pricing, its plans, that it integrates), or the name is written as
// products are ("PushPress", "Go2"); of a place, when it speaks of a place
// or a scene ("Leeds has a great yoga scene", "York has cheap rents"),
// whatever else it says; else of neither. What is said of anything (too
// expensive, a favourite, how it looks) tells a product only when the
// message says it of the name alone ("Wodify is too expensive", "Zenplanner
// looks great too"), not when the clause goes on to say what the name is or
// is for ("Sarah is my favourite trainer", "Instagram looks great for
// marketing"), nor of a name of a channel or a class ("Facebook", "Pilates")
// when none of the options known is one: those are no product of the
// decision.
func productSaid(item, name, msg string, options []optionName) nameKind {
	words := strings.FieldsFunc(strings.ToLower(item), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '-' && r != '\''
	})
	words = words[min(len(strings.Fields(name)), len(words)):] // what is said of it
	switch {
	case slices.ContainsFunc(words, func(w string) bool { return placeWords[w] }):
		return namesPlace
	case productName(name) || slices.ContainsFunc(words, func(w string) bool { return productWords[w] }):
		return namesProduct
	}
	last, favourite := -1, true
	for i, w := range words {
		if saidOfAnything[w] {
			last, favourite = i, favourite && favourites[w]
		}
	}
	if last < 0 {
		return namesNeither
	}
	if kind := nonProducts[strings.ToLower(name)]; kind != "" && !slices.ContainsFunc(options, func(o optionName) bool {
		return nonProducts[strings.ToLower(o.name)] == kind
	}) {
		return namesNeither // "Facebook is my favourite", of booking software
	}
	tail := append(words[last+1:], strings.Fields(clauseAfter(msg, item))...)
	for i, w := range tail {
		if w = strings.Trim(w, ".,;:!?"); w == "for" && forWhom(tail[i+1:]) {
			if len(options) == 0 && slices.ContainsFunc(tail[i+1:], func(w string) bool {
				return !fillers[strings.Trim(w, ".,;:!?")]
			}) {
				// "London is too expensive for a small shop": with no
				// option known to weigh it against, a place or a person
				// is as much too dear for a business as a product is;
				// "for me", "for us" say it of the name alone.
				return namesPlace
			}
			break // "Wodify is too expensive for a small gym"
		}
		if !fillers[w] {
			return namesNeither // "Sarah is my favourite trainer", "Facebook is too expensive for ads"
		}
	}
	if favourite {
		return namesFavourite
	}
	return namesProduct
}

// forWhom reports whether the words after a "for" that ends what is said
// of a name say who it is too much or just right for, the user or a
// business like theirs ("for a small gym", "for people like us", "for a
// small gym like ours", "for a one-man band"), not what the name is for
// ("for ads", "for marketing").
func forWhom(words []string) bool {
	for i, w := range words {
		w = strings.Trim(w, ".,;:!?")
		if i == len(words)-1 {
			return whom[w]
		}
		if !whomLeads[w] && !whom[w] {
			return false
		}
	}
	return false
}

var (
	// whom are who a price or a fit is said of: the user, the business.
	whom = engine.WordSet(`us me them ours mine theirs gym gyms studio studios business businesses shop shops cafe cafes bakery
		bakeries salon salons team teams company companies charity charities club clubs startup startups outfit
		band place places operation size`)
	// whomLeads are the words before it: determiners, sizes, "people like".
	whomLeads = engine.WordSet(`a an the my our one just small little tiny local independent new single one-man
		one-person one-woman family-run people like ours`)
)

// clauseAfter is what msg says after item, lowered, to the end of the
// clause item ends in: "trainer" after "Sarah is my favourite" in "Sarah is
// my favourite trainer, she uses Glofox". An item msg does not hold as it
// is written has nothing after it.
func clauseAfter(msg, item string) string {
	lower := strings.ToLower(msg)
	i := strings.Index(lower, strings.ToLower(item))
	if i < 0 {
		return ""
	}
	rest := lower[i+len(strings.ToLower(item)):]
	if j := strings.IndexAny(rest, ",;:.!?"); j >= 0 {
		rest = rest[:j]
	}
	for _, br := range clauseBreaks {
		if j := strings.Index(rest+" ", br); j >= 0 {
			rest = rest[:min(j, len(rest))]
		}
	}
	return rest
}

// nameKind is what an item says a name is (productSaid).
type nameKind int

const (
	namesNeither nameKind = iota
	namesProduct
	namesPlace
	// namesFavourite: only that it is a favourite ("Brighton is my
	// favourite"), which tells a product only when the options or the
	// choice are asked about (optionsAsked).
	namesFavourite
)

// optionsAsked reports whether the question just asked is about the
// options or the choice among them ("How do you feel about each of them so
// far?", of the reactions to the options; "Which option would you
// choose?").
func optionsAsked(p extraction.Prompt) bool {
	if p.Focus == nil {
		return false
	}
	w := contentWords(p.Focus.Description + " " + p.Focus.Question)
	return w["option"] || w["options"] || w["decision"] || w["choose"] || w["choice"]
}

// favourites say of a name only that it is the one liked best.
var favourites = engine.WordSet(`favourite favorite front-runner frontrunner runner pick choice`)

// productName reports whether a name is written as products are and no
// place or person is: a capital after a small letter, or a digit after a
// letter, within a word ("PushPress", "TeamUp", "Go2"); not an acronym
// ("NHS").
func productName(name string) bool {
	prev := ' '
	for _, r := range name {
		if unicode.IsLower(prev) && unicode.IsUpper(r) || unicode.IsLetter(prev) && unicode.IsDigit(r) {
			return true
		}
		prev = r
	}
	return false
}

var (
	// productWords say of a name what is said only of a product: what it
	// has, what its pricing is, how it works.
	productWords = engine.WordSet(`app apps pricing priced subscription subscriptions plan plans trial interface
		features feature booking bookings payments payment integrations integration integrates integrate syncs
		reviews software platform tool tools dashboard setup clunky buggy fiddly intuitive slick polished
		user-friendly`)
	// saidOfAnything say of a name what is said of a product as much as of
	// a person, a place or a class: what it costs, how it looks, how the
	// user rates it.
	saidOfAnything = engine.WordSet(`price prices cost costs fee fees expensive pricey costly cheap cheaper cheapest
		affordable free favourite favorite front-runner frontrunner runner pick choice looks looked complicated
		support`)
	// fillers say nothing more of what a name is after what is said of it:
	// "too", "for us", "so far", "of them all", and how good it looks.
	fillers = engine.WordSet(`too also as well though honestly really so far to me for us now i think by overall
		right at the moment of them all lot out personally tbh imo anyway either very quite pretty great good nice
		promising amazing brilliant excellent lovely fine ok okay decent solid`)
	// nonProducts are names said of anything that are a channel or a class,
	// never a product of a decision whose options are of another kind.
	nonProducts = map[string]string{"instagram": "channel", "facebook": "channel", "tiktok": "channel",
		"twitter": "channel", "youtube": "channel", "linkedin": "channel", "whatsapp": "channel", "pinterest": "channel",
		"snapchat": "channel", "pilates": "class", "yoga": "class", "zumba": "class", "barre": "class", "spin": "class",
		"hiit": "class", "crossfit": "class", "boxing": "class", "kickboxing": "class", "bootcamp": "class",
		"aerobics": "class"}
	// placeWords say of a name what is said of a place or a scene.
	placeWords = engine.WordSet(`scene scenes city town village area areas neighbourhood neighborhood community
		weather people crowd crowds centre center street streets parking rent rents vibe culture nightlife
		countryside park parks beach suburb suburbs`)
)

// moreOptions puts on the list named "Options", when the engine has one,
// the names said as products that none of the options is.
func moreOptions(p extraction.Prompt, ans Answer, names []string) {
	for _, f := range p.Fields {
		if f.ValueType != engine.TypeArray || !strings.EqualFold(strings.TrimSpace(f.DisplayName), "options") {
			continue
		}
		fa, answered := ans.Fields[f.Path]
		current := f.Current
		if answered {
			current, _ = json.Marshal(fa.Value) // the options this message named
		} else {
			fa = fieldAnswer{Confidence: max(confPattern, f.ConfidenceThreshold),
				Reasoning: "a name said with what is said of a product is an option"}
		}
		if v, changed := grow(current, names, false); changed {
			fa.Value = v
			ans.Fields[f.Path] = fa
		}
		return
	}
}

// knownOptions are the options known and those the answer names: the
// items of the list named "Options".
func knownOptions(p extraction.Prompt, ans Answer) []string {
	for _, f := range p.Fields {
		if f.ValueType != engine.TypeArray || !strings.EqualFold(strings.TrimSpace(f.DisplayName), "options") {
			continue
		}
		var known []string
		_ = json.Unmarshal(f.Current, &known)
		return append(known, texts(ans.Fields[f.Path].Value)...)
	}
	return nil
}

// saidOfOptions reports whether a list's items are said of the options
// ("Advantages of the options", "The user's reactions to the options").
func saidOfOptions(f extraction.PromptField) bool {
	d := strings.ToLower(f.Description)
	return strings.Contains(d, "of the options") || strings.Contains(d, "to the options")
}

// firmChoice reports whether a message answers the choice asked (a firm
// field, still open) with one of the options named alone, firmly, in its
// first statement ("Glofox, definitely. I think the others are too
// expensive."): what the cues find in the statements after it says why,
// and the choice is the answer all the same.
func firmChoice(p extraction.Prompt, ans Answer, msg string) bool {
	focus := focusFields(p)
	if len(focus) == 0 {
		return false
	}
	f := promptField(p, focus[0])
	if f == nil || !f.Cues.Firm || isKnown(*f) {
		return false
	}
	if _, answered := ans.Fields[f.Path]; answered {
		return false
	}
	said := statements(msg)
	if len(said) == 0 {
		return false
	}
	chosen, reasoned := choiceAlone(said[0])
	if len(said) < 2 && !reasoned {
		return false
	}
	return isOption(knownOptions(p, ans), chosen)
}

// isOption reports whether a name is one of the options, however it is
// spaced.
func isOption(options []string, name string) bool {
	return slices.ContainsFunc(options, func(o string) bool {
		return strings.EqualFold(o, name) || sameLetters(o, name)
	})
}

// choiceAlone is a choice without the reason said after it in its
// sentence and the words that say it is firm ("Glofox, definitely,
// because it's half the price" is Glofox); reasoned reports a reason cut.
func choiceAlone(s string) (chosen string, reasoned bool) {
	c, _, reasoned := choiceAndReason(s)
	return c, reasoned
}

// choiceAndReason is choiceAlone with the reason it cuts, "" when the
// words after the cut say none ("Glofox — because —"). A dash after the
// choice ("Glofox, definitely — the staff know it.") and an "as" or a
// "since" a clause follows, with no comma ("Glofox as it's cheaper."),
// cut as ", because" does.
func choiceAndReason(s string) (chosen, reason string, reasoned bool) {
	cut := -1
	if loc := reasonRe.FindStringIndex(s); loc != nil && loc[0] > 0 {
		cut = loc[0]
	}
	if loc := choiceReasonRe.FindStringIndex(s); loc != nil && loc[0] > 0 && (cut < 0 || loc[0] < cut) {
		cut = loc[0]
	}
	if loc := conditionRe.FindStringIndex(s); loc != nil && loc[0] > 0 && (cut < 0 || loc[0] <= cut) {
		// "Glofox, as long as it's cheap": a condition the choice holds
		// on, not why it was made.
		return withoutFirmness(strings.TrimRight(s[:loc[0]], " ,;:-–—")), "", true
	}
	if cut >= 0 {
		reason = strings.TrimLeft(s[cut:], " ,;:-–—")
		lead, _, _ := strings.Cut(reason, " ")
		as := strings.EqualFold(lead, "as")
		if w, rest, ok := strings.Cut(reason, " "); ok && reasonLeads[strings.ToLower(w)] {
			reason = rest
		} else if ok && reasonLeads[strings.ToLower(strings.TrimRight(w, ",;:-–—"))] {
			reason = rest
		} else if reasonLeads[strings.ToLower(strings.TrimRight(reason, " ,;:-–—.!"))] {
			reason = ""
		}
		reason = strings.Trim(cleanSentence(reason), " -–—")
		if !strings.ContainsFunc(reason, unicode.IsLetter) || whyNotRe.MatchString(reason) && len(strings.Fields(reason)) <= 2 ||
			noReasonRe.MatchString(reason) || as && !slices.ContainsFunc(strings.Fields(reason), statesClause) {
			// "because —", "because why not", "— for now", "as I said",
			// and "as our booking tool", a role
			reason = ""
		}
		s, reasoned = strings.TrimRight(s[:cut], " ,;:-–—"), true
	}
	return withoutFirmness(s), reason, reasoned
}

// choiceReasonRe finds a reason after a choice that reasonRe does not: a
// dash, or an "as" or a "since" a pronoun follows with no comma.
var choiceReasonRe = regexp.MustCompile(`(?i)\s+[-–—]+(?:\s+|$)|\s+(?:as|since)\s+(?:it['’]s|it|they['’]re|they|we['’]re|we|i['’]m|i|` +
	`the|our|my|there['’]s|that['’]s)\b`)

// conditionRe finds a condition after a choice ("as long as it's cheap",
// "if the price is right"): what the choice holds on, no reason for it.
var conditionRe = regexp.MustCompile(`(?i)(?:,\s*|\s+[-–—]+\s*|\s+)(?:as\s+long\s+as|so\s+long\s+as|provided|providing|if|unless|` +
	`assuming|on\s+condition)\b`)

// noReasonRe is what, said after a choice as a reason is, gives none: how
// long it holds ("for now") or that it was said before ("as I said").
var noReasonRe = regexp.MustCompile(`(?i)^(?:(?:i|we)\s+(?:said|say|mentioned|told\s+you|thought|agreed)|(?:at\s+least\s+)?for\s+now|` +
	`for\s+the\s+(?:moment|time\s+being)|at\s+the\s+moment|for\s+a\s+(?:while|start)|to\s+start(?:\s+with)?|` +
	`(?:already\s+)?(?:said|mentioned|discussed|agreed|planned)|usual|always|expected)$`)

// reasonLeads are the words that open a reason after a choice.
var reasonLeads = engine.WordSet(`because 'cause ’cause cause since as`)

// choiceReasoned puts on the field that asks why the choice was made the
// reason said after an option chosen alone, when the answer makes that
// choice and the field is still open: "Glofox. It's half the price and the
// staff know it." chose Glofox because it's half the price and the staff
// know it. Statements that say nothing ("Thanks!"), how confident the
// user is ("Pretty confident.") or remark on the question ("Good
// question.") give no reason; one that corrects the choice ("Actually no,
// Mindbody."), offers another ("Or Mindbody.") or puts it off gives none at
// all. A reason said in the choice's sentence after "because" is the
// field's own cues', and one after a dash or an "as" this files; a
// "because" that says nothing ("Glofox — because —", "because why not")
// files none.
func choiceReasoned(p extraction.Prompt, ans Answer, msg string) {
	var chosen string
	for path, fa := range ans.Fields {
		if f := promptField(p, path); f != nil && f.Cues.Firm {
			chosen, _ = fa.Value.(string)
		}
	}
	if chosen == "" {
		return
	}
	said := statements(msg)
	if len(said) == 0 {
		return
	}
	first, reason, reasoned := choiceAndReason(said[0])
	if !strings.EqualFold(first, chosen) && !sameLetters(first, chosen) {
		return
	}
	var reasons []string
	if reason != "" {
		reasons = append(reasons, reason)
	}
	for _, s := range said[1:] {
		if correcting(s) != "" || defers(s) || alternative(s) {
			return
		}
		if rest, not := strings.CutPrefix(strings.ToLower(strings.TrimSpace(s)), "not "); not &&
			isOption(knownOptions(p, ans), withoutFirmness(rest)) {
			continue // "Glofox. Not Mindbody." rules an option out: no reason
		}
		if !saysNothing(engine.LowerText(s), false) && !notReason(s) {
			reasons = append(reasons, strings.TrimRight(strings.TrimSpace(s), ".!"))
		}
	}
	for _, f := range p.Fields {
		if f.ValueType != engine.TypeString || f.Cues.Firm || !asksWhy(f) || isKnown(f) {
			continue
		}
		switch _, answered := ans.Fields[f.Path]; {
		case answered && reasoned && len(reasons) == 0:
			delete(ans.Fields, f.Path) // "Glofox — because —", "Glofox, because why not."
		case !answered && len(reasons) > 0:
			ans.Fields[f.Path] = fieldAnswer{Value: strings.Join(reasons, ". "), Confidence: max(confFocus, f.ConfidenceThreshold),
				Reasoning: "what the user says after the option chosen is why they chose it"}
		}
		return
	}
}

// withoutFirmness is a choice without the words after it that say it is
// firm ("Glofox, definitely." is Glofox); a choice said otherwise stays
// as it is.
func withoutFirmness(choice string) string {
	c := strings.TrimRight(strings.TrimSpace(choice), ".!-–— ")
	for {
		i := strings.LastIndexAny(c, ", ")
		if i < 0 || !firmWords[strings.ToLower(c[i+1:])] {
			break
		}
		c = strings.TrimRight(c[:i], ", ")
	}
	if c == "" {
		return choice
	}
	return c
}

// firmWords say a choice is firm ("definitely", "for sure").
var firmWords = engine.WordSet(`definitely absolutely certainly surely sure for really honestly`)

// choiceSaid is the choice an answer to the choice asked makes: its first
// statement, or the last one after it that corrects it to a name
// ("Glofox, definitely. Actually no, Mindbody." chooses Mindbody), without
// the words that say it is firm or chosen and the acknowledgement before
// it ("Great, Glofox it is" chooses Glofox, "Glofox, why not." Glofox);
// "I mean" or "sorry" corrects as "actually" does. A choice another
// option follows ("Glofox. Or Mindbody.") is not firm, and decides
// nothing, as one put off after it does. A
// statement that opens as a correction does but names no option ("No
// regrets.", "Actually it's cheaper too.") leaves the choice as it is;
// one that names a known option only is choiceCorrected's. ok is false
// when the choice is negated ("Definitely not Glofox", "Glofox, definitely
// not"), which rules an option out, put off ("Fine, I'll think about
// it"), or "it is" said of no name ("That's just how it is."): none is a
// decision.
func choiceSaid(answer string) (chosen string, ok bool) {
	ss := engine.Sentences(answer)
	if len(ss) == 0 {
		return "", false
	}
	said := ss[0]
	for _, s := range ss[1:] {
		if c := correctedTo(s, choiceName); c != "" {
			said = c
		} else if alternative(s) || defers(s) || withdraws(s) {
			// "Glofox. Or Mindbody.", "Glofox. I'll need to check with
			// Sarah.", "Glofox. Actually, no."
			return "", false
		}
	}
	said = withoutAside(withoutWhyNot(said))
	if defers(said) || negatedChoice(said) {
		return "", false
	}
	c, _ := choiceAlone(said)
	c = resignedRe.ReplaceAllString(c, "") // "It is what it is, Resy."
	rest, itIs := strings.CutSuffix(strings.TrimRight(c, ".!"), " it is")
	if itIs {
		c = rest // "Glofox it is"
	}
	if i := strings.LastIndex(c, ","); i >= 0 && saysNothing(engine.LowerText(c[:i]), false) {
		c = strings.TrimSpace(c[i+1:]) // "Great, Glofox"
	}
	if itIs && !nameLike(c) {
		return "", false // "That's just how it is."
	}
	return c, c != ""
}

// resignedRe is a "that's how it is" said before or after a choice ("It
// is what it is, Resy.", "Resy, it is what it is."): an aside, which
// chooses nothing and says no reason.
var resignedRe = regexp.MustCompile(`(?i)^\s*(?:it\s+is|it['’]s)\s+what\s+it\s+is\s*[,;:–—-]\s*|` +
	`\s*[,;:–—-]\s*(?:it\s+is|it['’]s)\s+what\s+it\s+is\s*[.!]*\s*$`)

// takenBack takes off the decision a message takes back after it with a
// bare "No." ("Resy. No."), which the answer to the question reads as
// saying nothing: it says the choice before it is not the one, as
// "Actually, no." does (see withdraws). Only a "No." right after the
// choice takes it back: one after a question ("We'll go with Resy. Any
// questions? No.") answers that question.
func takenBack(p extraction.Prompt, ans Answer, msg string) {
	ss := engine.Sentences(msg)
	if len(ss) < 2 || !withdraws(ss[len(ss)-1]) || engine.IsQuestion(ss[len(ss)-2]) {
		return
	}
	for path, fa := range ans.Fields {
		if f := promptField(p, path); f != nil && f.Cues.Firm {
			if chosen, _ := fa.Value.(string); chosen != "" {
				delete(ans.Fields, path)
			}
		}
	}
}

// withdraws reports whether a statement after a choice takes it back
// without naming another ("Actually, no.", "Wait, no.", "No, sorry.",
// "Actually, never mind.", "Scratch that."): it says only that the choice
// before it is not the one, so nothing is chosen. One that says more ("No
// regrets.", "Actually it's cheaper too.") takes nothing back.
func withdraws(s string) bool {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	})
	return slices.ContainsFunc(words, func(w string) bool { return takeBackMarks[w] }) &&
		!slices.ContainsFunc(words, func(w string) bool { return !takeBackWords[w] })
}

// takeBackWords are the words a statement that takes a choice back is
// said in, and nothing else; it holds one of takeBackMarks ("Sorry.",
// "Actually." alone take nothing back).
var (
	takeBackWords = engine.WordSet(`actually no nope wait sorry never mind scratch that hang hold on hmm um oh`)
	takeBackMarks = engine.WordSet(`no nope wait mind scratch hang hold`)
)

// withoutAside is a choice without the negated aside before it ("Not
// bad, Glofox.", "Not really, Glofox is fine."), which negates no option,
// and without the "is fine" that accepts the name; a choice said
// otherwise, or an aside before no name ("Not really, I need more
// time."), stays as it is.
func withoutAside(s string) string {
	loc := asideRe.FindStringIndex(s)
	if loc == nil {
		return s
	}
	c := strings.TrimSpace(s[loc[1]:])
	if m := fineRe.FindStringIndex(c); m != nil {
		c = c[:m[0]] // "Glofox is fine"
	}
	if !nameLike(withoutFirmness(c)) {
		return s // "Not really, I need more time."
	}
	return c
}

var (
	// asideRe is a negated aside that opens an answer and negates
	// nothing said after it.
	asideRe = regexp.MustCompile(`(?i)^\s*not\s+(?:really|bad|too\s+bad|at\s+all|exactly|quite|so\s+much)\s*[,;:–—-]\s*`)
	// fineRe is what accepts a name said before it ("is fine").
	fineRe = regexp.MustCompile(`(?i)\s+(?:is|sounds|seems|looks)\s+(?:fine|good|great|ok|okay|alright|all\s+right)\s*[.!]*$`)
)

// nameLike reports whether a choice reads as the name of an option: a
// name (choiceName), or a few words a determiner opens that make no clause
// ("the cheaper one", "a custom app").
func nameLike(s string) bool {
	if choiceName(s) {
		return true
	}
	words := strings.Fields(s)
	if len(words) < 2 || len(words) > 4 || !determiners[strings.ToLower(words[0])] {
		return false
	}
	return !slices.ContainsFunc(words[1:], func(w string) bool {
		return statesClause(w) || pointers[strings.ToLower(strings.Trim(w, ",.!"))]
	})
}

// withoutWhyNot is a choice without the "why not" after it that agrees to
// it ("Glofox, why not.", "Glofox, I can't see why not."): it is no
// negation of the choice.
func withoutWhyNot(s string) string {
	if loc := whyNotRe.FindStringIndex(s); loc != nil && loc[0] > 0 {
		return strings.TrimSpace(s[:loc[0]])
	}
	return s
}

// whyNotRe is a "why not" that closes a choice, with what it is said after
// ("I can't see", "I don't see").
var whyNotRe = regexp.MustCompile(`(?i)[,;:]?\s*(?:(?:i|we)\s+(?:can['’]t|cannot|don['’]t|do\s+not)\s+see\s+)?why\s+not\s*[.!?]*\s*$`)

// correctedTo is the choice a statement that corrects the one before it
// makes instead (see correcting), without the words that say it is firm,
// when it names an option, as named tells ("Actually no, Mindbody."
// corrects to Mindbody); "" for one that names none ("No regrets.",
// "Actually it's cheaper too."), which corrects no choice.
func correctedTo(s string, named func(string) bool) string {
	c := correcting(s)
	if c == "" {
		return ""
	}
	if c, _ = choiceAlone(c); !named(c) {
		return ""
	}
	return c
}

// selects reports whether a field holds what the user selects ("Selected
// idea").
func selects(f extraction.PromptField) bool {
	for w := range strings.FieldsFuncSeq(f.DisplayName, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		if strings.EqualFold(w, "selected") || strings.EqualFold(w, "chosen") {
			return true
		}
	}
	return false
}

// choiceCorrected answers a message that is a choice and its correction
// alone ("Glofox, definitely. Actually no, Mindbody."), whatever was
// asked: it says which option is chosen, not which exist nor what was
// explained, so the decision is the option the correction names, and the
// options gain the names not known among them; what the cues or the
// question asked took of it goes. A choice or a correction that names no
// option ("Pricing, definitely. Actually no, the setup.") is left as the
// cues read it; asked for the choice, a few words a determiner opens name
// one ("The app idea, definitely. Actually the newsletter." selects the
// newsletter). A choice no cue holds firm (ideation's selected idea) is
// corrected only when it is asked.
func choiceCorrected(p extraction.Prompt, ans Answer, msg string) {
	if !correctsChoice(p, ans, msg) {
		correctedItem(p, ans, msg)
	}
	itIsOfNoOption(p, ans, msg)
	takenBack(p, ans, msg)
}

// itIsOfNoOption takes off the decision an "X it is" makes of a word that
// is none of the options known nor written as a product is ("Cost it
// is.", with Mindbody and Glofox known): it agrees to a point, and
// chooses nothing. "Glofox it is", "PushPress it is" and "the cheaper one
// it is" still choose.
func itIsOfNoOption(p extraction.Prompt, ans Answer, msg string) {
	options := knownOptions(p, Answer{})
	if len(options) == 0 {
		return
	}
	for path, fa := range ans.Fields {
		f := promptField(p, path)
		chosen, _ := fa.Value.(string)
		if f == nil || !f.Cues.Firm || !choiceName(chosen) || isOption(options, chosen) || productName(chosen) {
			continue
		}
		if itIsRe.MatchString(msg) && strings.Contains(strings.ToLower(msg), strings.ToLower(chosen)+" it is") {
			delete(ans.Fields, path)
		}
	}
}

// itIsRe is a message that says "X it is" and nothing after it.
var itIsRe = regexp.MustCompile(`(?i)\bit\s+is\s*[.!]*\s*$`)

// choiceFields are the fields a choice files: the decision (the string a
// cue holds firm), the options and the options ruled out; nil for those
// the engine has not.
func choiceFields(p extraction.Prompt) (decision, options, ruledOut *extraction.PromptField) {
	for i := range p.Fields {
		switch f := &p.Fields[i]; {
		case f.Cues.Firm && f.ValueType == engine.TypeString:
			decision = f
		case f.ValueType == engine.TypeArray && strings.EqualFold(strings.TrimSpace(f.DisplayName), "options"):
			options = f
		case f.ValueType == engine.TypeArray && slices.Contains(f.Cues.Keywords, "rule out"):
			ruledOut = f
		}
	}
	return decision, options, ruledOut
}

// correctsChoice is choiceCorrected's reading; it reports whether the
// message was read as a choice.
func correctsChoice(p extraction.Prompt, ans Answer, msg string) bool {
	if choiceInstead(p, ans, msg) {
		return true
	}
	ss := engine.Sentences(msg)
	if len(ss) < 2 {
		return false
	}
	decision, list, _ := choiceFields(p)
	asked := func(f *extraction.PromptField) bool { return f != nil && slices.Contains(focusFields(p), f.Path) }
	if decision == nil {
		for i := range p.Fields {
			if f := &p.Fields[i]; f.ValueType == engine.TypeString && selects(*f) && asked(f) {
				decision = f
			}
		}
	}
	if decision == nil {
		return false
	}
	options := knownOptions(p, Answer{})
	named := func(n string) bool { return isOption(options, n) || choiceName(n) || asked(decision) && nameLike(n) }
	first, _ := choiceAlone(ss[0])
	names := []string{first}
	for _, s := range ss[1:] {
		c := correctedTo(s, named)
		if c == "" {
			return false
		}
		names = append(names, c)
	}
	chosen := names[len(names)-1]
	if negatedChoice(ss[0]) || defers(msg) || !named(first) || !named(chosen) {
		return false
	}
	if !asked(decision) && !asked(list) && (len(options) == 0 || slices.ContainsFunc(names, func(n string) bool {
		return !isOption(options, n) && !productName(n)
	})) {
		// "Booking. Actually no, Payments." to the problem asked, "High.
		// Actually no, Medium." to the confidence, "Glofox. Actually no,
		// Sarah." to the precedents: any capitalised word reads as a
		// name, and a correction makes no choice of what is no option.
		return false
	}
	reason := correctionReason(ss[len(ss)-1])
	clear(ans.Fields)
	ans.Fields[decision.Path] = fieldAnswer{Value: chosen, Confidence: max(confCorrection, decision.ConfidenceThreshold),
		Reasoning: "the user corrects the choice they made to " + chosen}
	if reason != "" {
		for _, f := range p.Fields {
			if f.ValueType == engine.TypeString && !f.Cues.Firm && asksWhy(f) && !isKnown(f) {
				ans.Fields[f.Path] = fieldAnswer{Value: reason, Confidence: max(confFocus, f.ConfidenceThreshold),
					Reasoning: "the reason said after the option corrected to is why the user chose it"}
				break
			}
		}
	}
	if list == nil {
		return false
	}
	var unknown []string
	for _, n := range names {
		if !isOption(options, n) && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if v, changed := grow(list.Current, unknown, false); len(unknown) > 0 && changed {
		ans.Fields[list.Path] = fieldAnswer{Value: v, Confidence: max(confFocus, list.ConfidenceThreshold),
			Reasoning: "a name chosen is an option"}
	}
	return true
}

// correctedItem answers the list asked with the item a short answer
// corrects to, when it makes no choice: "Pricing. Actually no, Setup
// Costs." to the knowledge gaps asked is the gap "Setup Costs", and
// "PureGym. Actually no, The Gym Group." to the precedents "The Gym
// Group", not both sentences split into items. Only a small change is
// read so: a few words each side.
func correctedItem(p extraction.Prompt, ans Answer, msg string) {
	ss := engine.Sentences(msg)
	focus := focusFields(p)
	if len(ss) != 2 || len(focus) != 1 {
		return
	}
	f := promptField(p, focus[0])
	if f == nil || f.ValueType != engine.TypeArray {
		return
	}
	first, item := cleanSentence(ss[0]), cleanSentence(correcting(ss[1]))
	if item == "" || len(strings.Fields(first)) > maxCorrectedWords || len(strings.Fields(item)) > maxCorrectedWords ||
		negatedChoice(first) || negatedChoice(item) {
		return
	}
	if v, changed := grow(f.Current, []string{item}, false); changed {
		ans.Fields[f.Path] = fieldAnswer{Value: v, Confidence: max(confCorrection, f.ConfidenceThreshold),
			Reasoning: "the user corrects the item they said to " + item}
	}
}

// maxCorrectedWords is the most words an item and its correction are
// each said in for correctedItem to read the change.
const maxCorrectedWords = 4

// correctionReason is the reason a correction says after the option it
// corrects to ("Actually no, Mindbody, because it's cheaper." gives "it's
// cheaper"); "" for none.
func correctionReason(s string) string {
	c := correcting(s)
	loc := reasonRe.FindStringIndex(c)
	if loc == nil || loc[0] == 0 {
		return ""
	}
	rest := strings.TrimLeft(c[loc[0]:], ", ")
	if _, after, ok := strings.Cut(rest, " "); ok {
		rest = after // past "because", "since", "as"
	}
	if rest = cleanSentence(rest); len(strings.Fields(rest)) < 2 {
		return ""
	}
	return rest
}

// choiceInstead answers a message said only in options, each named alone,
// ruled out ("not X") or kept beside another ("not just X", "Y as well"),
// one at least ruled out or kept so ("Not Glofox, Mindbody.", "Not Glofox.
// Mindbody.", "Glofox. Not Mindbody.", "Not Glofox, not Mindbody.", "Not
// just Glofox, Mindbody as well."), whatever was asked: the names ruled
// out go on the options ruled out, the names not known join the options,
// and the known options stay on their list (read as a list, the message
// took them off). The one name chosen, with none kept beside it, is the
// decision only when the choice is asked: asked for the options, "Not
// Glofox, Mindbody." says which are weighed, and "Not Glofox, Wodify."
// names an option more. What the cues took of the message goes; ok
// reports the message answered.
func choiceInstead(p extraction.Prompt, ans Answer, msg string) (ok bool) {
	decision, list, eliminated := choiceFields(p)
	if decision == nil {
		return false
	}
	options := knownOptions(p, Answer{})
	named := func(n string) bool { return isOption(options, n) || choiceName(n) }
	said, ok := optionClauses(msg, named)
	if !ok {
		return false
	}
	var out, chosen, kept []string
	for _, c := range said {
		switch c.kind {
		case optionOut:
			out = appendName(out, c.name)
		case optionChosen:
			chosen = appendName(chosen, c.name)
		default:
			kept = appendName(kept, c.name)
		}
	}
	if len(out) == 0 && len(kept) == 0 || slices.ContainsFunc(out, func(n string) bool { return isOption(chosen, n) || isOption(kept, n) }) {
		return false // a plain list, or a name both ruled out and chosen
	}
	asked := func(f *extraction.PromptField) bool { return f != nil && slices.Contains(focusFields(p), f.Path) }
	clear(ans.Fields)
	if len(chosen) == 1 && len(kept) == 0 && asked(decision) {
		ans.Fields[decision.Path] = fieldAnswer{Value: chosen[0], Confidence: max(confCorrection, decision.ConfidenceThreshold),
			Reasoning: "the user rules " + strings.Join(out, ", ") + " out and chooses " + chosen[0]}
	}
	if eliminated != nil && len(out) > 0 {
		if v, changed := grow(eliminated.Current, out, false); changed {
			ans.Fields[eliminated.Path] = fieldAnswer{Value: v, Confidence: max(confFocus, eliminated.ConfidenceThreshold),
				Reasoning: "a choice negated rules " + strings.Join(out, ", ") + " out"}
		}
	}
	var unknown []string
	for _, n := range append(chosen, kept...) {
		if !isOption(options, n) {
			unknown = append(unknown, n)
		}
	}
	if list != nil && len(unknown) > 0 {
		if v, changed := grow(list.Current, unknown, false); changed {
			ans.Fields[list.Path] = fieldAnswer{Value: v, Confidence: max(confFocus, list.ConfidenceThreshold),
				Reasoning: "a name chosen or kept is an option"}
		}
	}
	return true
}

// appendName is names with name, unless it is already among them.
func appendName(names []string, name string) []string {
	if isOption(names, name) {
		return names
	}
	return append(names, name)
}

// optionClause is a name a message says alone in a clause, and how.
type optionClause struct {
	name string
	kind int // optionChosen, optionOut or optionKept
}

const (
	optionChosen = iota // "Mindbody", "but Mindbody instead"
	optionOut           // "not Glofox"
	optionKept          // "not just Glofox", "Mindbody as well"
)

// optionClauses reads a message whose every clause is a name alone, as
// named tells, negated, kept beside another or chosen, with the words that
// say it is firm; ok is false for any other message. A bare "No" before
// the names ("No, not Resy."), an aside of time ("not yet anyway") and a
// reason said of an option ruled out ("Not OpenTable, it's too
// expensive.") name no option: they are passed over.
func optionClauses(msg string, named func(string) bool) (said []optionClause, ok bool) {
	for _, c := range strings.FieldsFunc(msg, func(r rune) bool { return strings.ContainsRune(",.;!", r) }) {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		lower := strings.ToLower(c)
		if len(said) == 0 && (lower == "no" || lower == "nope") || timeAsideRe.MatchString(lower) ||
			len(said) > 0 && said[len(said)-1].kind == optionOut && outReasonRe.MatchString(lower) {
			continue
		}
		kind := optionChosen
		for _, lead := range []string{"definitely ", "certainly ", "absolutely ", "but ", "and ", "rather ", "instead "} {
			if strings.HasPrefix(lower, lead) {
				c, lower = c[len(lead):], lower[len(lead):]
			}
		}
		switch {
		case strings.HasPrefix(lower, "not just ") || strings.HasPrefix(lower, "not only "):
			c, kind = c[len("not just "):], optionKept
		case strings.HasPrefix(lower, "not "):
			c, kind = c[len("not "):], optionOut
		}
		for _, tail := range []string{" instead", " rather", " then", " as well", " too", " also"} {
			if len(c) > len(tail) && strings.EqualFold(c[len(c)-len(tail):], tail) {
				c = c[:len(c)-len(tail)]
				if kind == optionChosen && (tail == " as well" || tail == " too" || tail == " also") {
					kind = optionKept
				}
			}
		}
		if c = withoutFirmness(strings.TrimSpace(c)); !named(c) {
			return nil, false
		}
		said = append(said, optionClause{name: c, kind: kind})
	}
	return said, len(said) > 1 || len(said) == 1 && said[0].kind == optionOut
}

var (
	// timeAsideRe is a clause that says only when, of a choice or an
	// option ruled out ("not yet anyway", "not for now").
	timeAsideRe = regexp.MustCompile(`^(?:(?:but|or|at\s+least)\s+)?(?:not\s+)?(?:yet|now|for\s+now|right\s+now|at\s+the\s+moment|` +
		`at\s+this\s+stage|this\s+year|anyway|anyhow)(?:\s+(?:anyway|anyhow|at\s+least))?$`)
	// outReasonRe is a clause that says why the option before it is ruled
	// out, of "it" or "they" ("it's too expensive", "they charge per
	// cover").
	outReasonRe = regexp.MustCompile(`^(?:because\s+|since\s+|as\s+)?(?:it|they)(?:['’]s|['’]re|\s+is|\s+are|\s+was|\s+were|` +
		`\s+costs?|\s+charges?|\s+takes?|\s+has|\s+have|\s+does|\s+do|\s+doesn['’]t|\s+don['’]t|\s+can['’]t|\s+won['’]t)\b`)
)

// choiceName reports whether a choice is a name: up to three words, each
// capitalised, none a word that opens any sentence ("The", "This").
func choiceName(s string) bool {
	words := strings.Fields(s)
	if len(words) == 0 || len(words) > 3 {
		return false
	}
	for _, w := range words {
		if lw := strings.ToLower(w); !upper(w) || determiners[lw] || functionWords[lw] || openers[lw] || notNames[lw] ||
			isLead(lw) || calendar[lw] {
			return false
		}
	}
	return true
}

// ruledOut is the answer that rules out the one known option a negated
// choice names ("Definitely not Glofox", to the choice asked): it goes on
// the options ruled out, a list whose cues rule out, when the engine has
// one; ok is false for any other answer.
func ruledOut(p extraction.Prompt, ans Answer, answer string) (path string, _ fieldAnswer, ok bool) {
	ss := engine.Sentences(answer)
	if len(ss) != 1 || !negatedChoice(ss[0]) || defers(ss[0]) {
		return "", fieldAnswer{}, false
	}
	var named []string
	t := engine.LowerText(ss[0])
	for _, o := range knownOptions(p, ans) {
		if t.Contains(strings.ToLower(o)) {
			named = append(named, o)
		}
	}
	if len(named) != 1 {
		return "", fieldAnswer{}, false
	}
	for _, f := range p.Fields {
		if f.ValueType == engine.TypeArray && slices.Contains(f.Cues.Keywords, "rule out") {
			if slices.Contains(currentValues(f.Current), named[0]) {
				return "", fieldAnswer{}, false
			}
			return f.Path, fieldAnswer{Value: append(currentValues(f.Current), named[0]), Confidence: max(confFocus, f.ConfidenceThreshold),
				Reasoning: "a choice negated rules " + named[0] + " out"}, true
		}
	}
	return "", fieldAnswer{}, false
}

// correcting is what a statement that corrects the one before it says
// instead, past its marker ("Actually no, Mindbody." says "Mindbody"); ""
// for a statement that corrects nothing.
func correcting(s string) string {
	lower := strings.ToLower(strings.TrimSpace(s))
	w, _, _ := strings.Cut(lower, " ")
	if w = strings.Trim(w, ",.!"); w != "actually" && w != "no" && w != "wait" && w != "sorry" &&
		!strings.HasPrefix(lower, "i mean ") {
		return "" // "Sorry, I mean Mindbody." corrects as "Actually no, Mindbody." does
	}
	return trimLeads(strings.TrimSpace(s), choiceCorrections)
}

// choiceCorrections lead into the choice a correction makes instead.
var choiceCorrections = []string{"actually", "no", "wait", "sorry", "scratch that", "i mean", "make that", "let's say"}

// negatedChoice reports whether a choice is negated, a negation opening
// or closing it past the words that say it is firm ("Definitely not
// Glofox", "Glofox, definitely not", "Not Mindbody"): it rules the option
// out. A negation between two options ("Jobber, not a custom build")
// chooses the first.
func negatedChoice(s string) bool {
	w := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	})
	w = slices.DeleteFunc(w, func(x string) bool { return firmWords[x] })
	negation := func(x string) bool { return x == "not" || x == "never" || strings.HasSuffix(x, "n't") }
	return len(w) > 0 && (negation(w[0]) || negation(w[len(w)-1]))
}

// defers reports whether an answer puts the choice off ("Fine, I'll think
// about it", "Let me sleep on it").
func defers(s string) bool {
	t := engine.LowerText(s)
	return slices.ContainsFunc(deferrals, func(d string) bool { return t.Contains(d) })
}

var deferrals = []string{"think about it", "think it over", "sleep on it", "get back to you", "decide later",
	"let me think", "need to think", "not decided", "haven't decided", "undecided", "mull it over", "check with",
	"need to check", "run it by", "run it past", "ask my"}

// alternative reports whether a statement after a choice names another
// option as well ("Or Mindbody."): the choice is not firm.
func alternative(s string) bool {
	w, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(s)), " ")
	return w == "or" || w == "or,"
}

// notReason reports whether a statement after a choice gives no reason
// for it: how confident the user is ("Pretty confident.", "8 out of 10
// confident.") or a remark on the question ("Good question.").
func notReason(s string) bool {
	t := engine.LowerText(s)
	if t.Contains("confident") || t.Contains("out of 10") || t.Contains("out of ten") {
		return true
	}
	return slices.ContainsFunc(remarksOnAsking, t.Contains)
}

var remarksOnAsking = []string{"good question", "great question", "fair question", "tough question", "tough one",
	"hard question", "hard to say", "tricky one", "that's a tough"}

// askedOption is the answer to the options asked ("Which options have you
// considered?") that a message gives by asking whether one would do
// ("Would Mindbody work for us? It's what the gym next door uses.") or by
// saying who uses one ("London has loads of studios using Mindbody"): the
// name asked about, or used, is an option more, and what the user says of
// it names none.
func askedOption(p extraction.Prompt, msg string) (path string, _ fieldAnswer, ok bool) {
	f := focusList(p)
	if f == nil || !strings.EqualFold(strings.TrimSpace(f.DisplayName), "options") {
		return "", fieldAnswer{}, false
	}
	var names []string
	for _, s := range engine.Sentences(msg) {
		re := usedName
		if engine.IsQuestion(s) {
			re = askedName
		}
		m := re.FindStringSubmatch(strings.TrimSpace(trimLeads(strings.TrimSpace(s), leads)))
		if m == nil {
			continue
		}
		name := ""
		for i, n := range re.SubexpNames() {
			if n == "name" && m[i] != "" {
				name = m[i] // the group of the alternative that matched
			}
		}
		if w := strings.ToLower(name); determiners[w] || functionWords[w] || notNames[w] || calendar[w] {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return "", fieldAnswer{}, false
	}
	v, changed := grow(f.Current, names, false)
	return f.Path, fieldAnswer{Value: v, Confidence: max(confFocus, f.ConfidenceThreshold),
		Reasoning: "the user asks whether an option would do, or says who uses it (" + p.Focus.ID + ")"}, changed
}

// askedName is a question whether a name would do ("Would Mindbody work
// for us?", "Could we use Glofox?", "Is Wodify any good?"); group name is
// the name, up to three capitalised words.
var askedName = regexp.MustCompile(`(?i)^(?:(?:would|could|might|will)\s+` + nameGroup +
	`\s+(?:work|do|suit|fit|be\s+(?:any\s+good|an\s+option|enough|better|worth))\b|(?:should|could|can|would)\s+we\s+` +
	`(?:use|try|go\s+with|consider)\s+` + nameGroup + `\s*[?]|is\s+` + nameGroup + `\s+(?:any\s+good|an\s+option|worth))`)

// usedName is a name said after a verb of using, past the clause's first
// word ("London has loads of studios using Mindbody", "Most gyms here use
// Glofox"); group name is the name.
var usedName = regexp.MustCompile(`^\S+\s.*?\b(?:use|uses|using|used|run\s+on|runs\s+on)\s+` + nameGroup)

const nameGroup = `(?P<name>(?-i:[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,2}))`
