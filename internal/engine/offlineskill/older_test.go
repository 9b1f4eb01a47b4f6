package offlineskill_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
)

// A doubt that names what is not known, then a guess of the field's kind
// ("Not sure what the budget is, maybe 5k."), files the guess, at the
// confidence of a guess after a doubt, as "Not sure, maybe 5k." does: it
// was filed whole as the budget.
func TestExtractionSkillGuessAfterANamedDoubt(t *testing.T) {
	t.Parallel()
	def, focus := asking(t, "project-discovery", "constraints.budget")
	named := extract(t, def, engine.NewExtraction(), focus, "Not sure what the budget is, maybe 5k.").Fields["constraints.budget"]
	bare := extract(t, def, engine.NewExtraction(), focus, "Not sure, maybe 5k.").Fields["constraints.budget"]
	if got := string(named.Value); got != `"5k"` {
		t.Errorf("filed the budget %s, want \"5k\"", got)
	}
	if named.Confidence != bare.Confidence {
		t.Errorf("filed the budget at %v, want %v, the confidence of a guess after a doubt", named.Confidence, bare.Confidence)
	}
}

// A feeling about the sentence before ("Double booking. I hate it.") is
// no pain point of its own: the sentence it is about is.
func TestExtractionSkillFeelingAboutThePainBefore(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{"Double booking. I hate it.", "Double booking. We hate it.", "Double booking. I really hate that."} {
		def, focus := asking(t, "project-discovery", "users_and_personas.pain_points")
		ans := extract(t, def, engine.NewExtraction(), focus, msg)
		if got := string(ans.Fields["users_and_personas.pain_points"].Value); got != `["Double booking"]` {
			t.Errorf("%q filed the pain points %s, want [\"Double booking\"]", msg, got)
		}
	}
}

// "It's a pain to X" says X is a pain, its "it" the infinitive's: it is
// no pushback, and at the opening it files what the pain is.
func TestExtractionSkillPainToDoIsAnAnswer(t *testing.T) {
	t.Parallel()
	def, _ := asking(t, "project-discovery", "purpose_and_problem.core_problem")
	const msg = "It's a pain to reconcile the payments."
	ans := extract(t, def, engine.NewExtraction(), "", msg)
	if got := string(ans.Fields["users_and_personas.pain_points"].Value); got != `["reconcile the payments"]` {
		t.Errorf("%q filed the pain points %s, want [\"reconcile the payments\"]; filed %v", msg, got, ans.Fields)
	}
}
