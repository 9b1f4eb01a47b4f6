package offlineskill

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// leading reports whether a keyword says what a sentence is about: it is
// the sentence's first clause, past its leads and the words that qualify
// it ("Per unit mostly, …"), or its subject ("The biggest bottleneck is
// …"). A keyword that only opens a clause about something else ("Our
// technicians kept showing up at the wrong address"), or is said further
// in ("ask two cafes to pilot it"), may be part of an answer to another
// question.
func leading(t engine.Text, keyword string) bool {
	return keywordSubject(t, keyword) || keywordClause(t, keyword)
}

// keywordClause reports whether a keyword is the whole first clause of a
// sentence, past its leads and the words that qualify it after ("Per
// unit mostly, cakes are priced per order").
func keywordClause(t engine.Text, keyword string) bool {
	clause := t.Lowered()
	if i := strings.IndexAny(clause, ",;:"); i >= 0 {
		clause = clause[:i]
	}
	words := strings.Fields(cleanSentence(trimLeads(strings.TrimSpace(clause), leads)))
	for len(words) > 0 && qualifiers[words[len(words)-1]] {
		words = words[:len(words)-1]
	}
	return strings.Join(words, " ") == strings.ToLower(strings.TrimSpace(keyword))
}

// qualifiers qualify what they follow ("per unit mostly").
var qualifiers = engine.WordSet(`mostly mainly largely usually generally normally really too`)

// keywordSubject reports whether a keyword is the subject of a sentence,
// a copula after it: "The biggest bottleneck is early-morning baking
// capacity", "Our main problem is staff"; a determiner and the words
// that rank it may stand before it.
func keywordSubject(t engine.Text, keyword string) bool {
	words := strings.Fields(strings.ReplaceAll(trimLeads(t.Lowered(), leads), "’", "'"))
	for len(words) > 0 && (determiners[words[0]] || classFiller[words[0]] || words[0] == "one") {
		words = words[1:]
	}
	kw := strings.Fields(strings.ToLower(keyword))
	if len(kw) == 0 || len(words) <= len(kw) {
		return false
	}
	for i, w := range kw {
		if words[i] != w {
			return false
		}
	}
	return copulas[words[len(kw)]]
}

// takesSteps reports whether a list is of steps the user takes ("The
// core steps that keep the business running", "The first steps to take
// the idea forward"): its name or description says steps or processes.
func takesSteps(f extraction.PromptField) bool {
	w := contentWords(f.DisplayName + " " + f.Description)
	return w["steps"] || w["processes"]
}

// actions reports whether a message is a list of actions: two items or
// more, the first and most of them an action, a verb and its object
// ("Test the recipes, buy a freezer and ask two cafes to pilot it"), or
// what the user does ("We bake from 4am, …").
func actions(msg string) bool {
	items := SplitItems(msg)
	if len(items) < 2 || !action(items[0]) {
		return false
	}
	n := 0
	for _, it := range items {
		if action(it) {
			n++
		}
	}
	return 2*n > len(items)
}

// action reports whether an item is an action: the user and a verb ("we
// bake from 4am"), or a word that no noun phrase opens with before an
// object ("buy a freezer", "ask two cafes", "call them").
func action(item string) bool {
	w := strings.Fields(strings.ToLower(strings.ReplaceAll(trimLeads(item, leads), "’", "'")))
	if len(w) < 2 {
		return false
	}
	if w[0] == "i" || w[0] == "we" || userSubjects[w[0]] {
		return true
	}
	if determiners[w[0]] || quantities[w[0]] || pointers[w[0]] || headPrepositions[w[0]] || isNumber(w[0]) || clauseWord(w[0]) {
		return false
	}
	return determiners[w[1]] || quantities[w[1]] || isNumber(w[1]) || objectPronouns[w[1]] || userObjects[w[1]] ||
		w[1] == "it" || possessives[w[1]]
}

// possessives open an object someone has ("their bike").
var possessives = engine.WordSet(`my our your their his her its`)

// eachNamed are the sentences of a message that answers a list asked of
// each item of another known list ("How hard each shortlisted idea would
// be to do", when the shortlist is known), each naming one of its items:
// one item each ("Storage needs racks and insurance, about 2,000 pounds",
// "classes need only our time"). nil when the list is asked of no known
// list's items, or a sentence names none of them.
func eachNamed(p extraction.Prompt, f extraction.PromptField, msg string) []string {
	of := eachOf(p, f)
	if of == nil {
		return nil
	}
	var items []string
	for _, s := range statements(msg) {
		said := contentWords(s)
		if !slices.ContainsFunc(of, func(it string) bool { return sharesWord(contentWords(it), said) }) {
			return nil
		}
		if s = cleanSentence(trimLeads(s, leads)); s != "" {
			items = append(items, s)
		}
	}
	return items
}

// eachOf are the items of the known list whose one-word name a word of
// f's description that says "each" opens ("each shortlisted idea", of the
// Shortlist); nil for none.
func eachOf(p extraction.Prompt, f extraction.PromptField) []string {
	described := contentWords(f.Description)
	if !described["each"] {
		return nil
	}
	for _, g := range p.Fields {
		name := strings.ToLower(strings.TrimSpace(g.DisplayName))
		if g.Path == f.Path || g.ValueType != engine.TypeArray || !isKnown(g) || name == "" || strings.Contains(name, " ") {
			continue
		}
		var items []string
		for w := range described {
			if strings.HasPrefix(w, name) && json.Unmarshal(g.Current, &items) == nil {
				return items
			}
		}
	}
	return nil
}

// sharesWord reports whether two sets of words share one, or two words
// of six letters or more the same stem ("par-baked", "par-baking").
func sharesWord(a, b map[string]bool) bool {
	for w := range a {
		for v := range b {
			if w == v || strings.TrimSuffix(w, "s") == strings.TrimSuffix(v, "s") || commonPrefix(w, v) >= 6 {
				return true
			}
		}
	}
	return false
}

// commonPrefix is the length of the prefix two words share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// semicolonWhole is the answer to the text field asked that its keyword
// found in a clause of a sentence that semicolons part ("Booking and
// payments first; GPS tracking can wait", to what the first version
// includes and what can wait): the whole sentence, when nothing else
// answered; its clauses answer the question together.
func semicolonWhole(p extraction.Prompt, ans Answer, msg string) (path string, _ fieldAnswer, ok bool) {
	if len(ans.Fields) != 1 || !strings.Contains(msg, ";") {
		return "", fieldAnswer{}, false
	}
	for _, path := range focusFields(p) {
		fa, answered := ans.Fields[path]
		v, isString := fa.Value.(string)
		if !answered || !isString || fa.keyword == "" {
			continue
		}
		var whole string
		for _, s := range engine.Sentences(msg) {
			whole = strings.TrimSpace(whole + " " + s)
			if strings.HasSuffix(s, ";") {
				continue
			}
			if whole != s && engine.PhraseIndex(whole, v) >= 0 {
				fa.Value = cleanSentence(whole)
				return path, fa, true
			}
			whole = ""
		}
	}
	return "", fieldAnswer{}, false
}

// asksWhich reports whether a question asks which things a keyword says
// there are: an interrogative stands right before it ("Which options are
// there for a booking app like ours?", "What alternatives are there?").
// "What about mugs on Etsy?" offers one.
func asksWhich(s sentence, keyword string) bool {
	if !engine.IsQuestion(s.text) {
		return false
	}
	at := s.lower.Index(keyword)
	if at <= 0 {
		return false
	}
	return interrogatives[lastWord(s.lower.Lowered()[:at])]
}

// interrogatives ask which things there are.
var interrogatives = engine.WordSet(`which what any many other`)

// readBeside reports whether the values of an answer are only those cue
// values read in a bare list given to the list asked ("Square for the
// till and spreadsheets for orders" says the digital maturity is low):
// the list answers the question as well.
func readBeside(p extraction.Prompt, ans Answer, msg string) bool {
	f := focusList(p)
	if f == nil || isKnown(*f) || !bareList(msg) {
		return false
	}
	if _, answered := ans.Fields[f.Path]; answered {
		return false
	}
	for _, fa := range ans.Fields {
		if !fa.byValue {
			return false
		}
	}
	return true
}

// withReasons joins to each item the reason after it, an item a reason
// conjunction opens ("Storage with a spring service, because it pays
// upfront in autumn"): asked why, the reason is part of the answer.
func withReasons(items []string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		first, _, _ := strings.Cut(strings.ToLower(it), " ")
		if len(out) > 0 && reasonConjunctions[first] {
			out[len(out)-1] += ", " + it
			continue
		}
		out = append(out, it)
	}
	return out
}

// othersDrop reports whether a keyword that opens with a verb of dropping
// ("drop the") has someone other than the user for its subject
// ("Customers drop the bike in November"): it drops nothing of the
// user's. "Drop the indoor studio" and "we'd drop the classes" do.
func othersDrop(t engine.Text, keyword string) bool {
	verb, _, _ := strings.Cut(strings.ToLower(keyword), " ")
	if !dropVerbs[verb] {
		return false
	}
	at := t.Index(keyword)
	return at >= 0 && !userDrops(strings.FieldsFunc(strings.ReplaceAll(t.Lowered()[:at], "’", "'"), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	}))
}
