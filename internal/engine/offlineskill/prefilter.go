package offlineskill

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// A prefilter holds words of which every match of a cue pattern contains at
// least one, ignoring ASCII case: a sentence holding none of them cannot
// match, and its pattern is not run. The offline provider tries every
// field's patterns on every sentence of every message, and most patterns
// name a word the sentence lacks ("budget", "users", a month).
//
// It is read from the pattern's syntax, and only guards ASCII sentences:
// with (?i), a pattern's ASCII letters also match non-ASCII ones (k the
// Kelvin sign, s the long s), which a comparison of lowered ASCII would
// miss.
type prefilter struct {
	words []string // lowercase ASCII, none empty
}

// newPrefilter returns the prefilter of a pattern, or nil when it has none
// worth checking.
func newPrefilter(pattern string) *prefilter {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	words, ok := required(re.Simplify())
	if !ok {
		return nil
	}
	return &prefilter{words: words}
}

// mayMatch reports whether lowered, an ASCII sentence in lowercase, holds
// one of the words.
func (p *prefilter) mayMatch(lowered string) bool {
	for _, w := range p.words {
		if strings.Contains(lowered, w) {
			return true
		}
	}
	return false
}

// maxWords bounds a prefilter's words: past that, checking them costs about
// what the pattern does.
const maxWords = 24

// required returns words of which every match of re holds one, lowercased,
// and false when it knows of none.
func required(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		w := string(re.Rune)
		if w == "" || !isASCII(w) {
			return nil, false
		}
		return []string{strings.ToLower(w)}, true
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return required(re.Sub[0])
	case syntax.OpConcat:
		// Any one part's words will do: the best is the set whose shortest
		// word is the longest.
		var best []string
		for _, sub := range re.Sub {
			if words, ok := required(sub); ok && (best == nil || shortest(words) > shortest(best)) {
				best = words
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			words, ok := required(sub)
			if !ok {
				return nil, false
			}
			all = append(all, words...)
		}
		if len(all) > maxWords {
			return nil, false
		}
		return all, true
	}
	return nil, false
}

func shortest(words []string) int {
	n := len(words[0])
	for _, w := range words[1:] {
		n = min(n, len(w))
	}
	return n
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
