package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// Normalize is the form in which content is compared for exact duplicates:
// its graph.SignedWords joined by single spaces. That is Unicode NFKC, lower
// case, and every run of characters that are not letters or digits turned
// into one space, except the signs that end a name: "Use  Postgres!" and
// "use postgres" are the same content; "Use Postgres 16" and "Use Postgres
// 15" are not, and neither are "Use C++" and "Use C", or "C#" and "C".
//
// Normalize changed once, when the signs began to count: content with '+'
// or '#' (graph.SignRunes) can hash differently from what an older version
// stored. Both stores recompute those hashes, with ContentHash, when they
// open.
func Normalize(s string) string { return strings.Join(graph.SignedWords(s), " ") }

// ContentHash is the hex SHA-256 of the normalized content of a node. The
// seed hashes normalize(title + rationale); the parts are joined with a
// newline (which Normalize never produces) so that moving words between
// title and rationale changes the hash. An entity fact's entity name is
// part of its content.
//
// ContentHash is the only definition of the hash: the write engine calls it
// for new nodes, and the stores call it for the nodes whose hash they
// recompute when they open (see Normalize).
func ContentHash(kind graph.Kind, entityName, title, rationale string) string {
	h := sha256.New()
	if kind == graph.EntityFact {
		h.Write([]byte(Normalize(entityName)))
		h.Write([]byte{'\n'})
	}
	h.Write([]byte(Normalize(title)))
	h.Write([]byte{'\n'})
	h.Write([]byte(Normalize(rationale)))
	return hex.EncodeToString(h.Sum(nil))
}

// TitleTokens is the set of words Jaccard similarity compares: the
// graph.SignedWords of the title, without stopwords, with a plural "s"
// folded ("caches" and "cache" are one token), deduplicated, in order of
// first appearance. Signs are kept for the reason Normalize keeps them:
// "Use C++ for the engine" and "Use C for the engine" share two tokens of
// four (0.5, manual review), where without the signs they would be the same
// title and the second would supersede the first.
func TitleTokens(title string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, w := range graph.SignedWords(title) {
		if graph.Stopword(w) {
			continue
		}
		w = fold(w)
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// fold removes a plural "s" from words of four letters or more, keeping
// "ss" endings ("access") and "us"/"is" endings ("status", "analysis"), which
// are rarely plurals.
func fold(w string) string {
	if len(w) < 4 || !strings.HasSuffix(w, "s") {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	}
	return w[:len(w)-1]
}

// Jaccard is |a ∩ b| / |a ∪ b| of two token sets (duplicates within a
// set count once). Two empty sets are not similar: 0.
func Jaccard(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	set := make(map[string]bool, len(a))
	for _, t := range a {
		set[t] = true
	}
	inter, union := 0, len(set)
	seenB := make(map[string]bool, len(b))
	for _, t := range b {
		if seenB[t] {
			continue
		}
		seenB[t] = true
		if set[t] {
			inter++
		} else {
			union++
		}
	}
	return float64(inter) / float64(union)
}

// ReplacedWord reports whether b replaces a word of a with another word:
// each side has a token the other lacks that is not a number. It returns the
// first such token of each side. Numbers do not count, so "every 15
// minutes" / "every 5 minutes" is an update, not a replacement; nor do
// numbers with a sign ("Java 8+" / "Java 11+"). A word with a sign is
// another word than the word without it: "C++" / "C" is a replacement.
func ReplacedWord(a, b []string) (fromA, fromB string, ok bool) {
	fromA, fromB = onlyIn(a, b), onlyIn(b, a)
	return fromA, fromB, fromA != "" && fromB != ""
}

// onlyIn returns the first token of a that b lacks and is not a number.
func onlyIn(a, b []string) string {
	for _, t := range a {
		if !slices.Contains(b, t) && !number(t) {
			return t
		}
	}
	return ""
}

// number reports whether the token t is digits, with or without the signs
// graph.SignedWords keeps after them.
func number(t string) bool {
	return strings.IndexFunc(strings.TrimRight(t, "+#"), func(r rune) bool { return !unicode.IsDigit(r) }) < 0
}
