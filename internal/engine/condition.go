package engine

import (
	"strings"
	"unicode"
)

// CondEnv is what a condition is evaluated against.
type CondEnv struct {
	Memory   *WorkingMemory
	Registry *Registry
	// PhaseTurns makes turn_count count turns in the current phase (as for
	// transition triggers) instead of conversation turns.
	PhaseTurns bool
	// Message is the current user message, for user_request.
	Message string
}

// Holds reports whether the condition is true. Obligation satisfaction reads
// the obligation statuses and completeness reads the last evaluation, so the
// runner updates both before evaluating conditions.
func (c Condition) Holds(env CondEnv) bool {
	m := env.Memory
	switch c.Type {
	case CondObligationSatisfaction:
		return m.CategoryRate(c.Category)+1e-9 >= c.MinSatisfactionRate
	case CondTurnCount:
		if env.PhaseTurns {
			return m.Phase.TurnsInPhase >= c.MinTurns
		}
		return m.TurnNumber >= c.MinTurns
	case CondCompletenessScore:
		return m.Completeness.Overall+1e-9 >= c.MinCompleteness
	case CondCustomEvaluator:
		if env.Registry == nil {
			return false
		}
		return env.Registry.Evaluate(c.EvaluatorName, m)+1e-9 >= c.Threshold
	case CondUserRequest:
		msg := LowerText(env.Message)
		for _, k := range c.Keywords {
			if msg.Asks(k) {
				return true
			}
		}
	}
	return false
}

// Asks reports whether the text asks for phrase: it contains it (as
// Contains does) at least once where no negation takes it back — in the
// words before it, in its clause ("I don't want to explore the options"), or
// right after it ("explore the options, but not now"). A negation that
// asks ("why not", "can't we"), or that is an idiom ("no problem", "I
// wouldn't mind"), takes nothing back.
func (t Text) Asks(phrase string) bool {
	for from := 0; from < len(t.lower); {
		i := Text{lower: t.lower[from:]}.Index(phrase)
		if i < 0 {
			return false
		}
		i += from
		if !negatedBefore(t.lower[:i]) && !putOffAfter(t.lower[i+len(strings.TrimSpace(phrase)):]) {
			return true
		}
		from = i + 1
	}
	return false
}

// clauseWords is how many words before a phrase negatedBefore reads, and
// after it putOffAfter.
const clauseWords = 6

// wordsOf splits lowered text into words, apostrophes and hyphens kept
// ("don't", "no-code").
func wordsOf(s string) []string {
	words := strings.FieldsFunc(s, func(r rune) bool { return !isWordByte(r) && r != '\'' && r != '-' })
	for i, w := range words {
		words[i] = strings.ReplaceAll(w, "’", "'")
	}
	return words
}

// negatedBefore reports whether the end of before — its last clauseWords
// words, back to the start of their clause — holds a negation.
func negatedBefore(before string) bool {
	if i := strings.LastIndexAny(before, ".!?;,:"); i >= 0 {
		before = before[i+1:]
	}
	words := wordsOf(before)
	for k := len(words) - 1; k >= 0; k-- {
		// A new clause: "not now but let's ...", "no budget yet so let's
		// ..." — not the "so" of "not so sure".
		if words[k] == "but" || words[k] == "so" && (k == 0 || words[k-1] != "not") {
			words = words[k+1:]
			break
		}
	}
	for k := max(len(words)-clauseWords, 0); k < len(words); k++ {
		if negation(words, k) || scopeNegations[words[k]] {
			return true
		}
	}
	return false
}

// negation reports whether words[k] says no, unless an idiom makes it
// ask or agree: "no problem", "why not", "can't we", "I wouldn't mind".
func negation(words []string, k int) bool {
	next, prev := "", ""
	if k+1 < len(words) {
		next = words[k+1]
	}
	if k > 0 {
		prev = words[k-1]
	}
	switch words[k] {
	case "no":
		switch next {
		case "problem", "problems", "worries", "worry", "rush", "doubt", "issue", "issues":
			return false
		}
		return true
	case "not":
		// "why not explore the options?", "not a problem"
		return prev != "why" && !(k+2 < len(words) && (next == "a" || next == "an") &&
			(words[k+2] == "problem" || words[k+2] == "issue"))
	case "can't", "cannot", "couldn't", "won't", "wouldn't", "don't", "doesn't", "shouldn't":
		switch next {
		case "we", "you", "i", "it", "they": // "can't we just explore the options?"
			return false
		case "mind": // "I wouldn't mind if we explore the options"
			return false
		}
		return true
	}
	return negations[words[k]]
}

// negations are the words that say no whatever their neighbours.
var negations = map[string]bool{"never": true, "nope": true, "dont": true, "isn't": true, "aren't": true, "wasn't": true,
	"weren't": true, "didn't": true, "haven't": true, "hasn't": true}

// scopeNegations take back what follows them in their clause ("without
// exploring the options") but say no to nothing by themselves: "Yes,
// nothing to add" agrees. "no-one" is one word (wordsOf keeps hyphens).
var scopeNegations = map[string]bool{"without": true, "nor": true, "nothing": true, "nobody": true, "no-one": true,
	"neither": true}

// Negative reports whether the text says no: a negation anywhere in it
// that no idiom turns ("Yes, no problem" and "Sure, why not" do not; "No,
// not really" and "I don't think so" do). A hyphenated word is no
// negation: "a no-code tool".
func (t Text) Negative() bool {
	words := wordsOf(t.lower)
	for k := range words {
		if negation(words, k) {
			return true
		}
	}
	return false
}

// putOffAfter reports whether after — the text right after a phrase —
// puts it off, in the phrase's own sentence ("explore the options, but not
// now") or as the next sentence ("Explore the options? Not yet, sorry."); not
// "if not now, when?", nor a "not yet" about something else ("I'm not yet
// sure about the budget").
func putOffAfter(after string) bool {
	clause, next := FirstSentence(after)
	words := wordsOf(clause)
	words = words[:min(len(words), clauseWords)]
	for k := 0; k+1 < len(words); k++ {
		if words[k] == "not" && putOff(words[k+1]) && (k == 0 || words[k-1] != "if") {
			return true
		}
	}
	first, _ := FirstSentence(next)
	w := wordsOf(first)
	if len(w) < 2 || w[0] != "not" || !putOff(w[1]) {
		return false
	}
	for _, x := range w[2:] { // "Not yet.", "Not now, thanks."
		if !putOffFiller[x] {
			return false
		}
	}
	return true
}

// putOffFiller are the words that may follow a put-off of its own ("Not
// now, thanks."); any other makes it about something else ("Not yet sure").
var putOffFiller = map[string]bool{"thanks": true, "thank": true, "you": true, "please": true, "sorry": true,
	"though": true, "maybe": true, "later": true, "tomorrow": true}

func putOff(w string) bool { return w == "now" || w == "yet" || w == "today" }

// AllHold reports whether every condition holds (true for none).
func AllHold(conds []Condition, env CondEnv) bool {
	for _, c := range conds {
		if !c.Holds(env) {
			return false
		}
	}
	return true
}

// PhraseIndex is the byte offset, in strings.ToLower(text), of the first
// whole-word, case-insensitive occurrence of phrase, or -1.
func PhraseIndex(text, phrase string) int {
	return LowerText(text).Index(phrase)
}

// Text is a text lowered once for many phrase look-ups: cue lists look up
// dozens of phrases in the same sentence.
type Text struct{ lower string }

// LowerText prepares text for phrase look-ups.
func LowerText(text string) Text { return Text{lower: strings.ToLower(text)} }

// Lowered returns the text lowered (strings.ToLower).
func (t Text) Lowered() string { return t.lower }

// Contains reports whether the text contains phrase as whole words,
// ignoring case: "app" is in "a mobile app." but not in "happy".
func (t Text) Contains(phrase string) bool { return t.Index(phrase) >= 0 }

// Index is PhraseIndex(text, phrase).
func (t Text) Index(phrase string) int {
	phrase = strings.TrimSpace(phrase)
	if phrase == "" {
		return -1
	}
	lt, lp := t.lower, strings.ToLower(phrase)
	for from := 0; from <= len(lt)-len(lp); {
		i := strings.Index(lt[from:], lp)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(lp)
		if boundaryBefore(lt, i) && boundaryAfter(lt, end) {
			return i
		}
		from = i + 1
	}
	return -1
}

func boundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r := rune(s[i-1])
	return !isWordByte(r)
}

func boundaryAfter(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	return !isWordByte(rune(s[i]))
}

func isWordByte(r rune) bool {
	return r == '_' || r >= 0x80 || unicode.IsLetter(r) || unicode.IsDigit(r)
}
