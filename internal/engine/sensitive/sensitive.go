// Package sensitive finds sensitive information in text — email addresses,
// phone numbers, US social security numbers, payment card numbers (checked
// with the Luhn algorithm), passwords and API keys — and redacts it, so that
// user turns can be flagged and kept out of logs.
package sensitive

import (
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Kind is a kind of sensitive information.
type Kind string

// Kinds, in the order overlapping findings are preferred.
const (
	APIKey   Kind = "api_key"
	Password Kind = "password"
	Card     Kind = "card_number"
	SSN      Kind = "ssn"
	Email    Kind = "email"
	Phone    Kind = "phone"
)

// Finding is one occurrence: text[Start:End] is the sensitive part.
type Finding struct {
	Kind  Kind `json:"kind"`
	Start int  `json:"start"`
	End   int  `json:"end"`
}

type detector struct {
	kind Kind
	re   *regexp.Regexp
	// group is the submatch holding the secret (0: the whole match).
	group int
	// check may reject a match or narrow it, looking at its surroundings.
	check func(text string, s, e int) (int, int, bool)
	// possible, when set, is false for a text the pattern cannot match:
	// most messages hold no key, card or address, and one pass over the
	// text is cheaper than running every pattern over it.
	possible func(shape) bool
}

// shape is what one pass over a text learns for the detectors' possible.
type shape struct {
	digits int  // ASCII digits: \d in a pattern
	at     bool // an '@'
	word   int  // the longest run of [A-Za-z0-9_.-] and bytes past ASCII
}

func shapeOf(text string) shape {
	var sh shape
	run := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '@' {
			sh.at = true
		}
		if '0' <= c && c <= '9' {
			sh.digits++
		}
		// Under (?i) the key's class also takes ſ and the Kelvin sign
		// (they fold to s and k): every byte past ASCII counts too.
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-' ||
			c >= utf8.RuneSelf {
			run++
			sh.word = max(sh.word, run)
		} else {
			run = 0
		}
	}
	return sh
}

// The least each kind needs: a key is a run of 15 or more of its characters
// (the shortest pattern is "xoxb-" and 10 more; a key after "token is" has
// 16); a card 13 digits, an SSN 9 and a phone number 9 (plausiblePhone).
func (sh shape) key() bool   { return sh.word >= 15 }
func (sh shape) card() bool  { return sh.digits >= 13 }
func (sh shape) ssn() bool   { return sh.digits >= 9 }
func (sh shape) email() bool { return sh.at }
func (sh shape) phone() bool { return sh.digits >= 9 }

var detectors = []detector{
	{kind: APIKey, re: regexp.MustCompile(`\b(?:sk-(?:proj-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,})`), possible: shape.key},
	{kind: APIKey, re: regexp.MustCompile(`(?i)\b(?:api[ _-]?key|secret[ _-]?key|access[ _-]?token|auth[ _-]?token|token)\s*(?:is|:|=)\s*["']?([A-Za-z0-9_\-.]{16,})`), group: 1, possible: shape.key},
	{kind: Password, re: regexp.MustCompile(`(?i)\b(?:password|passwd|pwd|passcode|passphrase)\s*(?:is|:|=)\s*["']?([^\s"']{3,})`), group: 1, check: trimPunct},
	{kind: Card, re: regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`), check: whole(luhnCard), possible: shape.card},
	{kind: SSN, re: regexp.MustCompile(`\b(\d{3})-(\d{2})-(\d{4})\b`), check: whole(validSSN), possible: shape.ssn},
	{kind: Email, re: regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`), possible: shape.email},
	{kind: Phone, re: regexp.MustCompile(`(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\b\d{2,4})[\s.-]\d{3,4}[\s.-]\d{3,4}\b|\+\d{8,14}\b`), check: plausiblePhone, possible: shape.phone},
}

var priority = map[Kind]int{APIKey: 0, Password: 1, Card: 2, SSN: 3, Email: 4, Phone: 5}

// Detect returns the sensitive parts of text, ordered by position and not
// overlapping (where two overlap, the kind listed first wins).
func Detect(text string) []Finding { return detect(text, true) }

// detect is Detect, skipping the patterns the text's shape rules out when
// prefilter is set (tests compare it with every pattern run).
func detect(text string, prefilter bool) []Finding {
	sh := shapeOf(text)
	var all []Finding
	for _, d := range detectors {
		if prefilter && d.possible != nil && !d.possible(sh) {
			continue
		}
		for _, loc := range d.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := loc[2*d.group], loc[2*d.group+1]
			if s < 0 {
				continue
			}
			if d.check != nil {
				var ok bool
				if s, e, ok = d.check(text, s, e); !ok {
					continue
				}
			}
			all = append(all, Finding{Kind: d.kind, Start: s, End: e})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if priority[all[i].Kind] != priority[all[j].Kind] {
			return priority[all[i].Kind] < priority[all[j].Kind]
		}
		return all[i].Start < all[j].Start
	})
	var kept []Finding
	for _, f := range all {
		overlaps := false
		for _, k := range kept {
			if f.Start < k.End && k.Start < f.End {
				overlaps = true
				break
			}
		}
		if !overlaps {
			kept = append(kept, f)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Start < kept[j].Start })
	return kept
}

// Kinds returns the distinct kinds of the findings, sorted.
func Kinds(fs []Finding) []Kind {
	seen := map[Kind]bool{}
	var out []Kind
	for _, f := range fs {
		if !seen[f.Kind] {
			seen[f.Kind] = true
			out = append(out, f.Kind)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Contains reports whether text holds any sensitive information.
func Contains(text string) bool { return len(Detect(text)) > 0 }

// Redact replaces every sensitive part with [REDACTED:<kind>].
func Redact(text string) string {
	fs := Detect(text)
	if len(fs) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, f := range fs {
		b.WriteString(text[last:f.Start])
		b.WriteString("[REDACTED:" + string(f.Kind) + "]")
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

func digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// luhnCard accepts 13-19 digits passing the Luhn checksum.
func luhnCard(s string) bool {
	d := digits(s)
	if len(d) < 13 || len(d) > 19 {
		return false
	}
	sum, double := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		n := int(d[i] - '0')
		if double {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
		double = !double
	}
	return sum%10 == 0
}

// validSSN rejects numbers the SSA never issues: area 000, 666 or 9xx,
// group 00, serial 0000.
func validSSN(s string) bool {
	p := strings.Split(s, "-")
	if len(p) != 3 {
		return false
	}
	return p[0] != "000" && p[0] != "666" && p[0][0] != '9' && p[1] != "00" && p[2] != "0000"
}

func whole(f func(string) bool) func(string, int, int) (int, int, bool) {
	return func(text string, s, e int) (int, int, bool) { return s, e, f(text[s:e]) }
}

// trimPunct drops sentence punctuation that follows a password.
func trimPunct(text string, s, e int) (int, int, bool) {
	for e > s && strings.ContainsRune(".,;:", rune(text[e-1])) {
		e--
	}
	return s, e, e-s >= 3
}

// plausiblePhone wants 9-15 digits that are not part of a longer run of
// digit groups (a card number, an id).
func plausiblePhone(text string, s, e int) (int, int, bool) {
	n := len(digits(text[s:e]))
	if n < 9 || n > 15 {
		return s, e, false
	}
	isDigit := func(i int) bool { return i >= 0 && i < len(text) && text[i] >= '0' && text[i] <= '9' }
	if isDigit(e) || isDigit(e+1) && (text[e] == ' ' || text[e] == '-') {
		return s, e, false
	}
	if isDigit(s-1) || isDigit(s-2) && (text[s-1] == ' ' || text[s-1] == '-') {
		return s, e, false
	}
	return s, e, true
}
