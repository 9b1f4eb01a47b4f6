package offlineskill

import (
	"strings"

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
