package graph

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// MaxSearchTerms caps the terms of one full-text query. Lucene refuses
// queries of more than 1024 clauses, and the best candidates are found by the
// title and the start of the rationale anyway.
const MaxSearchTerms = 64

// Words splits s into lower-case words: maximal runs of letters and digits,
// after Unicode NFKC normalization. Everything else separates words, so no
// word holds a character that full-text query syntax gives a meaning to.
func Words(s string) []string {
	s = strings.ToLower(norm.NFKC.String(s))
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// SearchTerms turns free text into the terms of a full-text query: its
// distinct Words in order of first appearance, at most max of them (max <= 0
// means MaxSearchTerms). Adapters still escape or quote each term in their
// query language; SearchTerms only guarantees the query stays small.
func SearchTerms(text string, max int) []string {
	if max <= 0 {
		max = MaxSearchTerms
	}
	seen := make(map[string]bool)
	var out []string
	for _, w := range Words(text) {
		if seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == max {
			break
		}
	}
	return out
}

// NormalizeEntity is the form in which entity names are compared: its Words
// joined by single spaces ("Postgre-SQL  16" and "postgre sql 16" match).
func NormalizeEntity(name string) string { return strings.Join(Words(name), " ") }

// stopwords are words so frequent in decision titles that sharing them says
// nothing about two decisions being the same: articles, prepositions,
// auxiliaries. Without them, "Use Redis for the session cache" and "Use
// Redis for the rate limiter" would look 50% alike.
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true,
	"to": true, "in": true, "on": true, "for": true, "with": true, "by": true,
	"at": true, "as": true, "from": true, "into": true, "via": true, "per": true,
	"is": true, "are": true, "be": true, "been": true, "being": true, "was": true, "were": true,
	"will": true, "shall": true, "should": true, "must": true, "can": true, "may": true,
	"we": true, "our": true, "it": true, "its": true, "this": true, "that": true,
	"these": true, "those": true, "all": true, "any": true, "instead": true,
}

// Stopword reports whether w (a lower-case word) is one of stopwords.
func Stopword(w string) bool { return stopwords[w] }
