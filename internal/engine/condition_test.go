package engine

import "testing"

func TestPhraseIndex(t *testing.T) {
	for _, c := range []struct {
		text, phrase string
		want         int
	}{
		{"We want a Mobile App.", "app", 17},
		{"We want a Mobile App.", "mobile app", 10},
		{"a happy user", "app", -1},
		{"APP", "app", 0},
		{"app", "APP", 0},
		{"the app_store and the app", "app", 22},
		{"budget: 60k", " budget ", 0},
		{"budget", "", -1},
		{"", "app", -1},
		{"ap", "app", -1},
		{"Ünicode app", "app", 9},
		{"ÉTÉ app", "été", 0},
		{"the \u212Aelvin scale", "kelvin", 4},
		{"x2app app", "app", 6},
		{"app1 app", "app", 5},
	} {
		got := PhraseIndex(c.text, c.phrase)
		if got != c.want {
			t.Errorf("PhraseIndex(%q, %q) = %d, want %d", c.text, c.phrase, got, c.want)
		}
		if got := LowerText(c.text).Index(c.phrase); got != c.want {
			t.Errorf("LowerText(%q).Index(%q) = %d, want %d", c.text, c.phrase, got, c.want)
		}
	}
}
