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
// as one of them would. With no option known, any name may be one.
// taken reports an item taken off: the message is about no option, and
// answers no question asked.
func ofOptions(p extraction.Prompt, ans Answer) (taken bool) {
	var options []map[string]bool // the words of each option, read once a call
	looked := false
	for _, f := range p.Fields {
		fa, ok := ans.Fields[f.Path]
		if !ok || !fa.byPattern || f.ValueType != engine.TypeArray || !saidOfOptions(f) {
			continue
		}
		if !looked {
			looked = true
			for _, o := range knownOptions(p, ans) {
				options = append(options, contentWords(o))
			}
		}
		if len(options) == 0 {
			return false
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
			return !slices.ContainsFunc(options, func(w map[string]bool) bool {
				return len(n) > 0 && len(w) > 0 && (all(n, w) || all(w, n))
			})
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
	return taken
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
