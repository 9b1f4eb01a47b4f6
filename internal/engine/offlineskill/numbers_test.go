package offlineskill

import (
	"strings"
	"testing"
)

// checkSpellsNumber fails when spellsNumber would skip a text that spelled
// finds a number in: figures would then leave a number in words.
func checkSpellsNumber(t *testing.T, text string) {
	t.Helper()
	if isASCII(text) && !spellsNumber(text) && spelled.MatchString(text) {
		t.Errorf("spellsNumber skips %q, in which spelled finds %q", text, spelled.FindAllString(text, -1))
	}
}

var spelledSentences = []string{
	"About forty technicians.", "FORTY-FIVE of us", "two hundred and fifty customers", "a Hundred", "three thousand",
	"an eleven-person team", "Twenty_one", "the one we use", "one-off", "seventeen", "Seventeen.", "hundred and",
	"tenth", "someone", "often", "2 vans", "$5,000 a month", "We need it within 6 months.",
}

func TestSpellsNumber(t *testing.T) {
	// Every word of a number, alone and in a sentence, whatever its case.
	for w := range strings.SplitSeq(spelledWords, "|") {
		w, _, _ = strings.Cut(w, "(")
		for _, text := range []string{w, strings.ToUpper(w), "about " + w + " people", "a " + w + "-ish", w + "."} {
			if !spellsNumber(text) {
				t.Errorf("spellsNumber(%q) = false, want true", text)
			}
			checkSpellsNumber(t, text)
		}
	}
	for _, s := range append(spelledSentences, prefilterSentences...) {
		checkSpellsNumber(t, s)
	}
	// Most sentences spell no number: they must not run spelled.
	for _, s := range []string{"We need it within 6 months.", "tenth", "someone", "often",
		"Our field technicians keep losing track of their jobs."} {
		if spellsNumber(s) {
			t.Errorf("spellsNumber(%q) = true, want false", s)
		}
	}
}

func FuzzSpellsNumber(f *testing.F) {
	for _, s := range append(spelledSentences, prefilterSentences...) {
		f.Add(s)
	}
	f.Fuzz(checkSpellsNumber)
}
