package offlineskill_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
)

// A message that as a whole pushes back on being asked ("That's
// annoying.", "This is a waste of time.") answers no question: it files
// nothing for the question asked, and does not put it off. They were filed
// as the pricing model, a revenue stream, a knowledge gap. An answer that
// holds such words is still an answer.
func TestExtractionSkillPushbackFilesNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		engine, field, msg string
		files              bool
	}{
		{"business-profile", "business_model.pricing_model", "That's annoying.", false},
		{"business-profile", "business_model.revenue_streams", "It's frustrating.", false},
		{"exploration", "initial_state.knowledge_gaps", "It's useless.", false},
		{"business-profile", "target_market.customer_segments", "You keep asking me that.", false},
		{"project-discovery", "users_and_personas.pain_points", "This is a waste of time.", false},
		{"business-profile", "business_model.pricing_model", "Honestly, these questions are annoying.", false},
		{"business-profile", "operations.bottlenecks", "Honestly it's a pain.", false},
		{"business-profile", "operations.bottlenecks", "The stock count is a pain.", true},
		{"business-profile", "brand_and_marketing.brand_positioning", "Honest bread, made slowly; fancy marketing talk is a waste of time.", true},
		{"business-profile", "technology_stack.tech_pain_points", "Our app is useless without offline mode.", true},
		{"project-discovery", "users_and_personas.pain_points", "Customers find the booking frustrating.", true},
		{"business-profile", "technology_stack.tech_pain_points", "The till is annoying, it crashes every week.", true},
		{"business-profile", "brand_and_marketing.brand_positioning", "Fancy marketing talk is a waste of time.", true},
		// "You keep asking" pushes back when it is aimed at the user alone;
		// of anyone else it tells how things are, and it was dropped (the
		// corpus's plumber whose customers fill in paper forms).
		{"business-profile", "target_market.customer_segments", "You keep asking the same thing.", false},
		{"business-profile", "target_market.customer_segments", "You keep asking us.", false},
		{"business-profile", "business_model.pricing_model", "You keep asking that.", false},
		// A hedge that names what is not known is kept beside pushback: the
		// message is no pushback as a whole, and the gap was dropped.
		{"exploration", "initial_state.knowledge_gaps", "Not sure how the fees compare. This is a waste of time.", true},
	} {
		def, focus := asking(t, tt.engine, tt.field)
		ans := extract(t, def, engine.NewExtraction(), focus, tt.msg)
		if fa, filed := ans.Fields[tt.field]; filed != tt.files {
			t.Errorf("asked %s, %q filed %s = %t (%s), want %t", focus, tt.msg, tt.field, filed, fa.Value, tt.files)
		}
		if !tt.files && len(ans.Fields)+len(ans.DeferredObligations) > 0 {
			t.Errorf("asked %s, %q filed %v, deferred %v; want nothing", focus, tt.msg, ans.Fields, ans.DeferredObligations)
		}
	}
}

// Pushback is answered as holding back, since it filed nothing: "That's
// annoying." to the pricing model asked was filed as the pricing model,
// and rolling with resistance said nothing to it.
func TestPushbackIsAnsweredAsHoldingBack(t *testing.T) {
	t.Parallel()
	const reassurance = "That's fair, and we can come back to anything later."
	for _, tt := range []struct{ field, msg string }{
		{"business_model.pricing_model", "That's annoying."},
		{"business_model.revenue_streams", "It's frustrating."},
		{"business_model.pricing_model", "You keep asking me that."},
		{"operations.bottlenecks", "Honestly it's a pain."},
		// A hedge that names what is not known files nothing for a value,
		// and is held back as well (TestExtractionSkillHedgeFilesOnlyWhatIsUnknown).
		{"business_model.pricing_model", "Not sure how we price it."},
	} {
		def, focus := asking(t, "business-profile", tt.field)
		filed := map[string]any{}
		for path, fa := range extract(t, def, engine.NewExtraction(), focus, tt.msg).Fields {
			var v any
			if err := json.Unmarshal(fa.Value, &v); err != nil {
				t.Fatal(err)
			}
			filed[path] = v
		}
		got := replyOf(t, "business-profile", func(def *engine.Definition) *engine.WorkingMemory {
			m := engine.NewWorkingMemory(def, "s", "p")
			m.TurnNumber = 2
			m.Extraction = filedAt(t, def, m.Extraction, 2, filed)
			return m
		}, "FOUNDATIONS", []string{"roll_with_resistance"}, focus, tt.msg)
		if !strings.Contains(got, reassurance) {
			t.Errorf("asked %s, the reply to %q is %q, want the hold-back reply %q", focus, tt.msg, got, reassurance)
		}
	}
}

// A hedge that names what the user does not know ("Not sure what the
// budget is.") is no value of a field that holds one: it was filed as the
// budget and acknowledged "Noted, the budget: not sure what the budget
// is." It answers only a question that asks what the user is unsure of.
func TestExtractionSkillHedgeFilesOnlyWhatIsUnknown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		engine, field, msg string
		files              bool
	}{
		{"project-discovery", "constraints.budget", "Not sure what the budget is.", false},
		{"project-discovery", "constraints.timeline", "I don't know when we need it by.", false},
		{"business-profile", "business_model.pricing_model", "Not sure how we price it.", false},
		{"business-profile", "team_composition.headcount", "Not sure how many staff we have.", false},
		{"exploration", "initial_state.knowledge_gaps", "Not sure what the budget is.", true},
		{"exploration", "initial_state.knowledge_gaps", "Not sure about the costs.", true},
		{"project-discovery", "constraints.budget", "Not sure what the budget is, maybe $20k.", true},
	} {
		def, focus := asking(t, tt.engine, tt.field)
		ans := extract(t, def, engine.NewExtraction(), focus, tt.msg)
		if fa, filed := ans.Fields[tt.field]; filed != tt.files {
			t.Errorf("asked %s, %q filed %s = %t (%s), want %t", focus, tt.msg, tt.field, filed, fa.Value, tt.files)
		}
	}
}

// A sentence that pushes back beside one that answers is no part of the
// answer: "Double booking. It's so annoying." filed only "It's so
// annoying" and "That's annoying. Subscription." the whole text as the
// pricing model.
func TestExtractionSkillPushbackBesideAnAnswer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ engine, field, msg, want string }{
		{"project-discovery", "users_and_personas.pain_points", "Double booking. It's so annoying.", `["Double booking"]`},
		{"business-profile", "business_model.pricing_model", "That's annoying. Subscription.", `"Subscription"`},
	} {
		def, focus := asking(t, tt.engine, tt.field)
		ans := extract(t, def, engine.NewExtraction(), focus, tt.msg)
		if got := string(ans.Fields[tt.field].Value); got != tt.want {
			t.Errorf("asked %s, %q filed %s = %s, want %s", focus, tt.msg, tt.field, got, tt.want)
		}
	}
}
