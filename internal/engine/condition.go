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
// Contains does) at least once where no negation in the words before it,
// in its clause, takes it back. "Let's explore the options" asks to
// explore the options; "I don't want to explore the options yet" does not.
func (t Text) Asks(phrase string) bool {
	for from := 0; from < len(t.lower); {
		i := Text{lower: t.lower[from:]}.Index(phrase)
		if i < 0 {
			return false
		}
		i += from
		if !negatedBefore(t.lower[:i]) {
			return true
		}
		from = i + 1
	}
	return false
}

// clauseWords is how many words before a phrase negatedBefore reads.
const clauseWords = 6

// negatedBefore reports whether the end of before — its last clauseWords
// words, back to the start of their clause — holds a negation.
func negatedBefore(before string) bool {
	if i := strings.LastIndexAny(before, ".!?;,:"); i >= 0 {
		before = before[i+1:]
	}
	words := strings.FieldsFunc(before, func(r rune) bool { return !isWordByte(r) && r != '\'' })
	for k := len(words) - 1; k >= 0; k-- {
		if words[k] == "but" { // "not now but let's explore the options"
			words = words[k+1:]
			break
		}
	}
	for _, w := range words[max(len(words)-clauseWords, 0):] {
		switch strings.ReplaceAll(w, "’", "'") {
		case "no", "not", "never", "don't", "dont", "doesn't", "won't", "can't", "cannot", "isn't", "aren't",
			"shouldn't", "wouldn't", "without", "nor":
			return true
		}
	}
	return false
}

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
