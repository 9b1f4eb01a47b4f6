package offlineskill

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// withoutReasons puts each string value of an answer without the reason
// said after it, and a bare amount that corrects an amount in a currency
// in that currency ("Actually the budget is 10000, my partner agreed",
// when the budget was 8000 dollars, is 10000 dollars).
func withoutReasons(p extraction.Prompt, ans Answer) {
	for path, fa := range ans.Fields {
		f := promptField(p, path)
		v, isString := fa.Value.(string)
		if f == nil || f.ValueType != engine.TypeString || !isString {
			continue
		}
		if asksWhy(*f) {
			if fa.Value = reasonAfter(v, fa.keyword, f.Cues.Keywords); fa.Value == "" {
				delete(ans.Fields, path) // a time a "since" opens, alone
				continue
			}
			ans.Fields[path] = fa
			continue
		}
		v = valueAlone(v)
		var was string
		if json.Unmarshal(f.Current, &was) == nil {
			v = inCurrencyOf(v, was)
		}
		fa.Value = v
		ans.Fields[path] = fa
	}
}

// asksWhy reports whether a field's value is a reason ("Why the user
// chose that option"), which a reason said in it is part of.
func asksWhy(f extraction.PromptField) bool {
	t := engine.LowerText(f.DisplayName + " " + f.Description)
	return slices.ContainsFunc([]string{"why", "reason", "reasons", "reasoning", "rationale"}, t.Contains)
}

// reasonAfter is the reason a sentence gives after the conjunction that
// found it, the keyword of a field that asks why: "I'll go with the
// subscription app because it is cheap and fast to start" chose the app
// for the reason "it is cheap and fast to start". A "since" that opens a
// time ("since 2019", "since last year", "Since March the studio has
// doubled") gives none, and is no reason at all when it is said alone
// ("Since 2019." is ""), nor is a conjunction nothing follows ("Resy,
// since."), a sentence that says its reason before the
// conjunction with another of the field's keywords ("The reason is the
// price, because we are small") keeps it, and one whose conjunction opens
// no clause of a few words stays as it is.
func reasonAfter(v, keyword string, keywords []string) string {
	if !reasonConjunctions[strings.ToLower(keyword)] {
		return v
	}
	at := engine.PhraseIndex(v, keyword)
	if at < 0 || slices.ContainsFunc(keywords, func(kw string) bool {
		return !reasonConjunctions[strings.ToLower(kw)] && engine.PhraseIndex(v[:at], kw) >= 0
	}) {
		return v
	}
	rest := strings.TrimSpace(v[at+len(keyword):])
	if !strings.ContainsFunc(rest, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return "" // "Resy, since." trails off before any reason
	}
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "of ")) // "because of the price"
	words := strings.Fields(rest)
	if len(words) > 0 && len(words) <= 3 && strings.EqualFold(keyword, "since") && !strings.ContainsFunc(v[:at], unicode.IsLetter) &&
		!slices.ContainsFunc(words, statesClause) {
		if first := strings.ToLower(strings.Trim(words[0], ",.!")); isNumber(first) || times[first] || calendar[first] ||
			seasons[first] {
			return "" // "Since 2019." says since when, and nothing of why
		}
	}
	if len(words) < 2 {
		return v
	}
	if first := strings.ToLower(strings.Trim(words[0], ",")); isNumber(first) || times[first] || calendar[first] ||
		seasons[first] {
		return v
	}
	return cleanSentence(rest)
}

// seasons are times a "since" may open ("since spring").
var seasons = engine.WordSet(`spring summer autumn fall winter christmas easter`)

// reasonConjunctions open the reason a clause before them has.
var reasonConjunctions = engine.WordSet(`because since`)

// valueAlone is a value without the reason said after it: what stands
// before ", because …", ", since we …", ", as we …" or ", my partner
// agreed" when it names a value, a few words that make no clause ("10000",
// "Early March", "An agency"). A statement keeps its reason ("We lose
// bookings because everything comes by text"), and "since" a time is none
// ("On paper, since last year").
func valueAlone(v string) string {
	loc := reasonRe.FindStringIndex(v)
	if loc == nil {
		return v
	}
	head := strings.TrimRight(strings.TrimSpace(v[:loc[0]]), ",;:")
	words := strings.Fields(head)
	if len(words) == 0 || len(words) > maxValueWords || slices.ContainsFunc(words, statesClause) {
		return v
	}
	return head
}

// maxValueWords is the most words a value said with a reason is made of.
const maxValueWords = 5

// reasonRe finds where the reason after a value begins: a bare "cause"
// only after a comma, which as a verb or a noun is part of the value
// ("Late payments cause cash flow gaps", "Root cause is the paper forms");
// a "since" or an "as" a pronoun follows, or a few words a determiner
// opens and a verb ends ("Mindbody, since the staff know it"), not a time
// ("since last year", "since the start of the year").
var reasonRe = regexp.MustCompile(`(?i)(?:,\s*|\s+)(?:because|['’]cause)\b|,\s*cause\b|,\s*(?:since|as)\s+(?:i|we|they|he|she|it|you|` +
	`that's|there's|it's|we're|i'm|they're|we've|i've|my|our)\b|,\s*(?:since|as)\s+(?:the|all|most|both|their|your)\s+` +
	`(?:[a-z]+\s+){0,2}?[a-z]+\s+(?:already\s+|all\s+)?(?:know|knows|like|likes|use|uses|used|is|are|was|were|has|have|had|` +
	`can|can't|will|would|need|needs|want|wants|love|loves|prefer|prefers|do|does|don't|doesn't|hate|hates|trust|trusts)\b|,\s*(?:(?:my|our|the)\s+(?:[a-z]+\s+){0,2}?[a-z]+|i|we|` +
	`they|he|she)\s+(?:has\s+|have\s+|just\s+|already\s+|finally\s+)?(?:agreed|agrees|said|says|approved|approves|` +
	`insisted|insists|confirmed|decided|okayed|signed\s+off)\b`)

// statesClause reports whether a word makes a clause of the words it
// stands in: a subject pronoun, a verb of being, having or doing, a modal
// or a negation.
func statesClause(w string) bool {
	if strings.Trim(w, ",:;") == "May" {
		return false // the month: "By May, because …"
	}
	w = strings.ToLower(strings.Trim(strings.ReplaceAll(w, "’", "'"), ",:;"))
	return subjectPronouns[w] || verbWords[w] && !objectPronouns[w] || strings.HasSuffix(w, "n't")
}

var (
	// subjectPronouns make what follows them a clause ("Or I could
	// teach", "10000, we agreed").
	subjectPronouns = engine.WordSet(`i we they he she it you there i'm we're they're you're it's there's i've
		we've you've i'll we'll they'll i'd we'd they'd`)
	objectPronouns = engine.WordSet(`them him her`)
)

// inCurrencyOf is a bare amount v ("10000", "10k") in the currency of the
// amount was it corrects ("8000 dollars", "$8k"): its sign or its word;
// any other v, or a was in no currency, is v.
func inCurrencyOf(v, was string) string {
	if !bareAmountRe.MatchString(v) {
		return v
	}
	if m := currencySignRe.FindStringSubmatch(was); m != nil {
		return m[1] + strings.TrimSpace(v)
	}
	if m := currencyWordRe.FindStringSubmatch(was); m != nil {
		return strings.TrimSpace(v) + " " + m[1]
	}
	return v
}

var (
	bareAmountRe   = regexp.MustCompile(`(?i)^\s*\d[\d,.]*\s*(?:k|m|thousand|million)?\s*$`)
	currencySignRe = regexp.MustCompile(`([$£€¥])\s?\d`)
	currencyWordRe = regexp.MustCompile(`(?i)\d[\d,.]*\s*(?:k|m|thousand|million|grand)?\s+(dollars|pounds|euros|bucks|quid|` +
		`usd|gbp|eur|aud|cad)\b`)
)
