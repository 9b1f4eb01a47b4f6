package offlineskill

import (
	"regexp"
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
)

// checkPrefilter fails when the prefilter of pattern would skip a sentence
// the pattern matches.
func checkPrefilter(t *testing.T, pattern, sentence string) {
	t.Helper()
	re, err := regexp.Compile(pattern)
	if err != nil {
		return
	}
	pf := newPrefilter(pattern)
	if pf != nil && isASCII(sentence) && !pf.mayMatch(engine.LowerText(sentence).Lowered()) && re.MatchString(sentence) {
		t.Errorf("the prefilter %q of %q skips %q, which the pattern matches", pf.words, pattern, sentence)
	}
}

// enginePatterns are the cue patterns of the engines Praetor ships.
func enginePatterns(t testing.TB) []string {
	t.Helper()
	cat := enginetest.Shipped(t)
	var out []string
	for _, def := range cat.All() {
		for _, f := range def.ExtractionSchema.Fields {
			out = append(out, f.Cues.Patterns...)
		}
	}
	if len(out) == 0 {
		t.Fatal("the shipped engines have no cue patterns")
	}
	return out
}

var prefilterSentences = []string{
	"Our budget is about $50k for the first version.",
	"We have roughly 40 technicians and 5 dispatchers.",
	"The main users are field technicians.",
	"We need it within 6 months, by the end of March 2027.",
	"The problem is that jobs get lost.",
	"We want to reduce missed repairs by half.",
	"BUDGET IS $2K", "ProBlem Is paper", "about 12 USERS", "USED BY the Nurses",
	"We're a small coffee roaster called Bean & Leaf, based in Portland, Oregon.",
	"nothing to see here", "", "$ 10 to spend", "in two weeks",
}

func TestPrefiltersOfEngines(t *testing.T) {
	patterns := enginePatterns(t)
	with := 0
	for _, p := range patterns {
		if newPrefilter(p) != nil {
			with++
		}
		for _, s := range prefilterSentences {
			checkPrefilter(t, p, s)
		}
	}
	// Most patterns name words: a change that drops them all (the
	// offline provider back to running every pattern) fails here.
	if with*2 < len(patterns) {
		t.Errorf("%d of %d engine patterns have a prefilter, want most", with, len(patterns))
	}
}

func TestPrefilterWords(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		want    []string // nil: no prefilter
	}{
		{`(?i)\bbudget\s+(?:is|of)\s+(?P<value>[^.!?]+)`, []string{"budget"}},
		{`(?i)\b(?:problem|issue)\s+is\b`, []string{"problem", "issue"}},
		{`\b(?:[Cc]alled|[Nn]amed)\s+(?P<value>[A-Z]\w*)`, []string{"alled", "amed"}},
		{`(?i)(?:about|around)?\s*(?P<value>\d+)\s+(?:people|users)\b`, []string{"people", "users"}},
		{`(?i)(?:x|\d)+ y`, []string{" y"}},
		{`\d+`, nil},
		{`(?i)caf[eé]`, []string{"caf"}},
		{`(?i)café`, nil},
		{`a|b?`, nil},
		{`(?:ab){2,}`, []string{"ab"}},
		{`(?:ab){0,3}`, nil},
	} {
		pf := newPrefilter(tt.pattern)
		var got []string
		if pf != nil {
			got = pf.words
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("prefilter of %q = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

func FuzzPrefilter(f *testing.F) {
	for _, s := range prefilterSentences {
		f.Add(`(?i)\bbudget\s+(?:is|of)\s+(?P<value>[^.!?]+)`, s)
		f.Add(`\b(?:[Cc]alled|[Nn]amed)\s+(?P<value>[A-Z]\w*)`, s)
		f.Add(`(?i)(?:a|bc)+(?:d|e{2,})f`, s)
	}
	f.Fuzz(checkPrefilter)
}

// FuzzPrefilterOfEngines tries the engines' own patterns on any sentence.
func FuzzPrefilterOfEngines(f *testing.F) {
	for _, s := range prefilterSentences {
		f.Add(s)
	}
	var patterns []string
	f.Fuzz(func(t *testing.T, sentence string) {
		if patterns == nil {
			patterns = enginePatterns(t)
		}
		for _, p := range patterns {
			checkPrefilter(t, p, sentence)
		}
	})
}
