package graph

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxSearchTerms caps the terms of one full-text query. Lucene refuses
// queries of more than 1024 clauses, and the best candidates are found by the
// title and the start of the rationale anyway.
const MaxSearchTerms = 64

// Words splits s into lower-case words: maximal runs of letters and digits,
// after Unicode NFKC normalization. Everything else separates words, so no
// word holds a character that full-text query syntax gives a meaning to:
// Words, not SignedWords, makes the terms of full-text queries.
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

// SignedWords splits s into words as Words does, except that the signs
// ending a name stay part of it: a run of letters and digits directly
// followed by one or more '+' or by one '#' keeps them, when no letter comes
// next. "C++", "C#", "F#", "g++" and "Notepad++" are the words "c++", "c#",
// "f#", "g++" and "notepad++", not "c", "f", "g" and "notepad": C++ and C are
// different languages, and content that names one is not content that names
// the other.
//
// Only a sign at the end of a word counts. A sign followed by a letter
// joins two words ("Redis+Postgres" is "redis", "postgres"; "a+b" is "a",
// "b"); one followed by a digit ends its word and the digits start the next
// ("C++17" is "c++", "17", as "C++ 17" is); a sign after a space belongs to
// no word ("C ++" is "c"). NFKC comes first, so the full-width and
// superscript forms of the signs count as the signs ("Ｃ＃" is "c#").
//
// Stripped of their signs, the words of SignedWords are the words of Words,
// in the same order; text without any of SignRunes has the same words in
// both. SignedWords is the form in which content is compared (content
// hashes, title tokens, entity names). It is never a full-text query term:
// '+' and '#' are query syntax in Lucene, and SearchTerms uses Words.
func SignedWords(s string) []string {
	s = strings.ToLower(norm.NFKC.String(s))
	var out []string
	start := -1 // byte offset of the word being read, -1 between words
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if start < 0 {
			i += size
			continue
		}
		end := i
		if n := signsAt(s[i:]); n > 0 {
			if next, _ := utf8.DecodeRuneInString(s[i+n:]); !unicode.IsLetter(next) {
				end = i + n
			}
			i += n
		} else {
			i += size
		}
		out = append(out, s[start:end])
		start = -1
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// signsAt is the length of the signs at the start of s that may end a word:
// a run of '+', or one '#'.
func signsAt(s string) int {
	if strings.HasPrefix(s, "#") {
		return 1
	}
	return len(s) - len(strings.TrimLeft(s, "+"))
}

// SignRunes are the characters that are '+' or '#' after NFKC
// normalization: the signs themselves and their full-width, small,
// superscript and subscript forms. Text with none of them has the same
// SignedWords as Words, so only nodes with one of them in their title,
// rationale or entity name have a content hash or entity key that changed
// when signs began to count; the stores look for those when they open.
const SignRunes = "+#\u207a\u208a\ufb29\ufe5f\ufe62\uff03\uff0b"

// NormalizeEntity is the form in which entity names are compared: its
// SignedWords joined by single spaces ("Postgre-SQL  16" and "postgre sql
// 16" match; "C++" and "C" do not).
func NormalizeEntity(name string) string { return strings.Join(SignedWords(name), " ") }

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
