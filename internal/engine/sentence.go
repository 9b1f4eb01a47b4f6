package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// EndsSentence reports whether the mark at s[i] — a point, a question mark
// or an exclamation mark — ends a sentence. A full-width one of Chinese or
// Japanese ('。', '？', '！', which no space follows) or an Arabic question
// mark always does; any other does before white space, a
// closing quote or bracket, another mark, or the end of s: not the point of
// "3.5" or "v2.0", nor the question mark of a URL's query. A point also does
// not after an abbreviation ("e.g.", "i.e.", "vs.", "Dr.", "p.m.") or a list
// item's number alone at the start of a line ("1."); one after a number or a
// domain elsewhere does ("team size: 12.", "v2.0.", "bob@example.com.").
func EndsSentence(s string, i int) bool {
	if r, _ := utf8.DecodeRuneInString(s[i:]); strings.ContainsRune(wideMarks, r) {
		return true
	}
	switch s[i] {
	case '.', '?', '!':
	default:
		return false
	}
	if i+1 < len(s) {
		next, _ := utf8.DecodeRuneInString(s[i+1:])
		if !unicode.IsSpace(next) && !strings.ContainsRune(".!?"+closers, next) {
			return false
		}
	}
	if s[i] != '.' {
		return true
	}
	before := s[:i]
	at := strings.LastIndexFunc(before, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' }) + 1
	word := before[at:]
	if initials(word) || abbreviations[strings.ToLower(word)] {
		return false
	}
	// A list item's number: alone at the start of its line. (One in the
	// middle of a line — "Options: 1. Jobber, 2. Servi" — cannot be told
	// from "team size: 12." and ends a sentence.)
	line := before[strings.LastIndexByte(before, '\n')+1 : at]
	return word == "" || len(word) > 2 || strings.Trim(word, "0123456789") != "" || strings.TrimSpace(line) != ""
}

// initials reports whether word is single letters with points between
// them ("e.g", "i.e", "U.S", "p.m"), whose last point follows: not a
// domain's ("example.com", "Jobber.io"), which can end a sentence.
func initials(word string) bool {
	parts := strings.Split(word, ".")
	for _, p := range parts {
		if r, size := utf8.DecodeRuneInString(p); size != len(p) || !unicode.IsLetter(r) {
			return false
		}
	}
	return len(parts) > 1
}

// wideMarks are the sentence ends that need no space after them.
const wideMarks = "。？！؟"

// closers are the closing quotes and brackets that may follow a sentence's
// end.
const closers = "\"')]”’»」』）"

// IsQuestion reports whether sentence s asks: it ends in a question mark
// ('?', '？', '؟'), white space, closing quotes, brackets and Markdown
// emphasis aside ("**Is this right?**").
func IsQuestion(s string) bool {
	s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(closers+"*_", r) })
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") || strings.HasSuffix(s, "؟")
}

// abbreviations are the words whose point ends no sentence.
var abbreviations = map[string]bool{"vs": true, "mr": true, "mrs": true, "dr": true, "approx": true, "incl": true}

// FirstSentence splits s after its first sentence: at a mark that ends it
// (EndsSentence) with the marks, quotes and brackets that follow it
// ("Really?!", "(as he said.)", "「はい。」"), at a semicolon or at a line's
// end. sentence keeps its marks; rest is what follows.
func FirstSentence(s string) (sentence, rest string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n', ';':
			return s[:i+1], s[i+1:]
		case '.', '?', '!':
		default:
			if s[i] < utf8.RuneSelf {
				continue
			}
		}
		if EndsSentence(s, i) {
			j := SentenceTail(s, i)
			return s[:j], s[j:]
		}
	}
	return s, ""
}

// SentenceTail is where the sentence that ends at s[i] stops: after the
// marks, quotes and brackets that follow that end ("Really?!", "he said
// \"no.\"").
func SentenceTail(s string, i int) int {
	_, size := utf8.DecodeRuneInString(s[i:])
	j := i + size
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if !strings.ContainsRune(".!?"+wideMarks+closers, r) {
			break
		}
		j += size
	}
	return j
}

// Sentences splits text into its sentences (FirstSentence), trimmed, with
// no empty ones.
func Sentences(text string) []string {
	var out []string
	for text != "" {
		var s string
		s, text = FirstSentence(text)
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// WordSet is the set of the space-separated words of words: the word lists
// of the text heuristics (stop words, openers, units), written as prose.
func WordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}
