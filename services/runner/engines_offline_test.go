package runner_test

import (
	"slices"
	"strings"
	"testing"
)

// Conversations with the shipped engines, offline, that a new user would
// hold: each pins what the user meets (the question asked next, where an
// answer is filed), not how the engine gets there.

// explorationToDeliberation are the turns that bring an exploration session
// from its start to deliberation, the last with a teach-back.
var explorationToDeliberation = []string{
	"We need a way to schedule our cleaning crews and I want to explore the options.",
	"I've used Google Sheets for it so far, that's about it.",
	"I don't understand what a scheduling app does that a spreadsheet can't.",
	"I hope to stop double-booking crews.",
	"We could use Jobber, Connecteam, or build something custom.",
	"I like that Jobber has a mobile app.",
	"The downside is the monthly fee per user.",
	"Seems good overall.",
	"So basically, in my own words: Jobber is ready to go, Connecteam is cheaper, and custom gives full control but costs most.",
}

// A teach-back that calls an option "limited" names no constraint, and the
// budget said next is one: it used to be dropped, the constraints being
// known already (the teach-back's three clauses).
func TestExplorationTeachBackIsNoConstraint(t *testing.T) {
	s := newSession(t, "exploration")
	script := slices.Clone(explorationToDeliberation)
	script[len(script)-1] = "So basically, in my own words: Jobber is ready to go, Connecteam is flexible but limited, and custom is fully ours but expensive."
	for _, msg := range script {
		s.say(msg)
	}
	if s.state.Phase.Current != "DELIBERATION" {
		t.Fatalf("phase = %s, want DELIBERATION", s.state.Phase.Current)
	}
	if s.state.Extraction.Has("decision.constraints") {
		t.Errorf("the teach-back was filed as constraints: %s", s.state.Extraction.Fields["decision.constraints"].Value)
	}
	s.say("Our budget is about 5000 dollars for the first year.")
	var got []string
	s.state.Extraction.Decode("decision.constraints", &got)
	if len(got) != 1 || !strings.Contains(got[0], "5000 dollars") {
		t.Errorf("decision.constraints = %q, want the budget", got)
	}
}
