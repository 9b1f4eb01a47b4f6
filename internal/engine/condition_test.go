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

// A user request counts where the user asks for it, not where a negation in
// its clause takes it back.
func TestAsks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, phrase string
		want         bool
	}{
		{"Let's explore the options now.", "explore the options", true},
		{"I don't want to explore the options for software yet, let's just brainstorm.", "explore the options", false},
		{"I do not want a handoff.", "handoff", false},
		{"We're not ready to explore the options.", "explore the options", false},
		{"No. Explore the options, please.", "explore the options", true},
		{"Not now, but let's explore the options next week.", "explore the options", true},
		{"Not yet but explore the options after lunch.", "explore the options", true},
		{"I can’t explore the options today.", "explore the options", false},
		{"Never mind the budget; explore the options.", "explore the options", true},
		{"Don't explore the options yet. Actually, explore the options.", "explore the options", true},
		{"We have no plan, nothing more to add; explore the options", "explore the options", true},
		{"explore the options", "explore the options", true},
		{"the options", "explore the options", false},
		{"Why not explore the options?", "explore the options", true},
		{"No problem, let's explore the options", "explore the options", true},
		{"No problem let's explore the options", "explore the options", true},
		{"I have no budget yet so let's explore the options", "explore the options", true},
		{"Can't we just explore the options now?", "explore the options", true},
		{"I wouldn't mind if we explore the options", "explore the options", true},
		{"I want to explore the options, but not now.", "explore the options", false},
		{"Explore the options? Not yet.", "explore the options", false},
		{"There is nothing to explore the options for.", "explore the options", false},
		{"No need to explore the options.", "explore the options", false},
		{"I'm not so sure we should explore the options", "explore the options", false},
		{"Let's explore the options. I'm not yet sure about the budget.", "explore the options", true},
		{"Let's explore the options; we have not yet decided anything.", "explore the options", true},
		{"Let's explore the options - if not now, when?", "explore the options", true},
		{"Explore the options... not yet.", "explore the options", false},
		{"Explore the options?! Not yet.", "explore the options", false},
		{"Explore the options. Not now, thanks.", "explore the options", false},
		{"Explore the options? Not today please.", "explore the options", false},
		{"Explore the options (e.g. pricing), but not now.", "explore the options", false},
		{"Explore the options for v2.0 but not now.", "explore the options", false},
		{"Explore the options. Not yet sure about the budget, though.", "explore the options", true},
		{"Let's explore the options for v2.0. I'm not yet sure about the budget.", "explore the options", true},
		{"Let's explore the options for version 2.5. Not yet sure about the budget, though.", "explore the options", true},
		{"Let's explore the options.\r\nI'm not yet sure about the budget.", "explore the options", true},
		{"Let's explore the options.\tI'm not yet sure about the budget.", "explore the options", true},
		{"Let's \"explore the options.\" I'm not yet sure about the budget.", "explore the options", true},
		{"Let's explore the options. Not yet sure.", "explore the options", true},
		{"Let's explore the options. Not yet decided.", "explore the options", true},
		{"Explore the options. Not now, thank you.", "explore the options", false},
		{"Let's take a no-code way to explore the options", "explore the options", true},
		{"No-one here wants to explore the options", "explore the options", false},
		{"We didn't explore the options", "explore the options", false},
		{"Let's explore the options\nnot now", "explore the options", false},
		{"Explore the options; not yet", "explore the options", false},
	}
	for _, c := range cases {
		if got := LowerText(c.text).Asks(c.phrase); got != c.want {
			t.Errorf("Asks(%q, %q) = %v, want %v", c.text, c.phrase, got, c.want)
		}
	}
}
