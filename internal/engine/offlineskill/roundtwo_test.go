package offlineskill_test

import (
	"encoding/json"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
)

// Project discovery: a lack said with "not" and a gerund is a pain point,
// no take-back, and no job its "able to" would name ("Not being able to
// pay online"); a gerund alone is taken back; what the first version includes, said before what can
// wait, is its scope as much.
func TestExtractionSkillDiscoveryScopeAndLacks(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "not knowing is a pain point", focus: "user_pain_points_captured",
			msg: "Waiting for us to text back, and not knowing if the walk happened.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Waiting for us to text back",
				"not knowing if the walk happened"}}},
		{name: "not getting paid is a pain point", focus: "user_pain_points_captured",
			msg:  "Not getting paid on time.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Not getting paid on time"}}},
		{name: "not being able to is a pain point, no job", focus: "user_pain_points_captured",
			msg: "Not being able to pay online, and not getting a receipt.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Not being able to pay online",
				"not getting a receipt"}},
			absent: []string{"users_and_personas.jobs_to_be_done"}},
		{name: "a gerund alone is taken back", focus: "jobs_to_be_done_captured",
			current: map[string]any{"users_and_personas.jobs_to_be_done": []string{"invoicing", "quoting"}},
			msg:     "Not invoicing, actually.",
			want:    map[string]any{"users_and_personas.jobs_to_be_done": []any{"quoting"}}},
		{name: "the scope is what comes first and what can wait", focus: "mvp_scope_defined",
			msg:  "Booking and payments first; GPS tracking can wait.",
			want: map[string]any{"success_criteria.mvp_scope": "Booking and payments first; GPS tracking can wait"}},
	})
}

// Exploration: a question names no option, an acknowledgement is no
// reaction, nor one before a decision ("Sounds good to me, let's go with
// Glofox"); an option chosen firmly ("Glofox, definitely.") is the
// decision, whatever the cues find in the statements after it; the name
// asked about to the options asked ("Would Mindbody work for us?"), or
// that others use ("studios using Mindbody"), is an option, not what is
// said of it; and an option the user goes on to bring up after another
// ("… and we're considering Glofox") is one.
func TestExtractionSkillExplorationOptionsSaidAndAsked(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a question names no option", engine: "exploration", focus: "problem_explored",
			msg: "Which options are there for a booking app like ours?", absent: []string{"solution_landscape.options"}},
		{name: "an acknowledgement is no reaction", engine: "exploration", focus: "problem_explored",
			msg: "Sounds good.", absent: []string{"solution_landscape.reactions"}},
		{name: "an acknowledgement to the options known is no reaction", engine: "exploration", focus: "prior_knowledge_assessed",
			current: map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}},
			msg:     "Sounds good.", absent: []string{"solution_landscape.reactions"}},
		{name: "an acknowledgement before a decision is no reaction", engine: "exploration", focus: "decision_made",
			current: map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}},
			msg:     "Sounds good to me, let's go with Glofox.",
			want:    map[string]any{"decision.decision_made": "Glofox"}, absent: []string{"solution_landscape.reactions"}},
		{name: "an option chosen firmly, then why", engine: "exploration", focus: "decision_made",
			current: map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}},
			msg:     "Glofox, definitely. I think the others are too expensive.",
			want:    map[string]any{"decision.decision_made": "Glofox"}},
		{name: "an option chosen firmly", engine: "exploration", focus: "decision_made",
			current: map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}},
			msg:     "Glofox, definitely.", want: map[string]any{"decision.decision_made": "Glofox"}},
		{name: "an option chosen, then a hedge", engine: "exploration", focus: "decision_made",
			current: map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}},
			msg:     "Glofox. I think so.", absent: []string{"decision.decision_made"}},
		{name: "a name no option is, then why", engine: "exploration", focus: "decision_made",
			current: map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}},
			msg:     "Definitely. The others are too expensive.", absent: []string{"decision.decision_made"}},
		{name: "an option asked about, then what it is", engine: "exploration", focus: "options_identified",
			msg:  "Would Mindbody work for us? It's what the gym next door uses.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody"}}},
		{name: "an option others use", engine: "exploration", focus: "options_identified",
			msg:  "London has loads of studios using Mindbody.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody"}}},
		{name: "a question of a pronoun names no option", engine: "exploration", focus: "options_identified",
			msg: "Would it work for us?", absent: []string{"solution_landscape.options"}},
		{name: "an option brought up after another", engine: "exploration", focus: "options_identified",
			msg:  "I've heard of Mindbody and we're considering Glofox.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody", "Glofox"}}},
	})
}

// Business profile: a bare list of the tools asked for is the systems,
// besides the digital maturity a value cue reads in it.
func TestExtractionSkillBareToolsAsked(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "tools named bare to the systems asked", engine: "business-profile", focus: "current_systems_listed",
			msg: "Square for the till and spreadsheets for orders.",
			want: map[string]any{"technology_stack.current_systems": []any{"Square for the till", "spreadsheets for orders"},
				"technology_stack.digital_maturity": "low"}},
		{name: "tools the user uses, to the systems asked", engine: "business-profile", focus: "current_systems_listed",
			msg: "We use Square for the till and spreadsheets for orders.",
			want: map[string]any{"technology_stack.current_systems": []any{"Square", "spreadsheets"},
				"technology_stack.digital_maturity": "low"}},
		{name: "how the business runs, said to the competitors asked, is none", engine: "business-profile",
			focus: "competitors_named", msg: "On paper mostly.",
			want:   map[string]any{"technology_stack.digital_maturity": "low"},
			absent: []string{"target_market.competitors"}},
	})
}

// Ideation: asked which idea would do most "and why", the reason said
// after the idea is part of the answer.
func TestExtractionSkillReasonAskedForStays(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "the idea and why", engine: "ideation", focus: "impact_assessed",
			current: map[string]any{"evaluation.shortlist": []string{"Storage with a spring service", "maintenance classes"}},
			msg:     "Storage with a spring service, because it pays upfront in autumn.",
			want: map[string]any{"evaluation.impact_notes": []any{
				"Storage with a spring service, because it pays upfront in autumn"}}},
		{name: "a reason not asked for goes", engine: "ideation", focus: "shortlist_made",
			msg:  "Storage with a spring service, because it pays upfront in autumn.",
			want: map[string]any{"evaluation.shortlist": []any{"Storage with a spring service"}}},
	})
}

// Only nouns that name people count people: "40 orders and 3 customers"
// are 3 people, not 43.
func TestExtractionSkillGroupsCountOnlyPeople(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "orders are no people", focus: "user_count_estimated", msg: "40 orders and 3 customers.",
			want: map[string]any{"users_and_personas.user_count": 3.0}},
		{name: "walkers and customers are", focus: "user_count_estimated", msg: "About 150 clients and our five walkers.",
			want: map[string]any{"users_and_personas.user_count": 155.0}},
	})
}

// A guess after a doubt alone ("Not sure, maybe 10k.") answers the
// question asked, with less confidence than a plain answer ("About 10k."):
// it is no "don't know", which would ask it again.
func TestExtractionSkillGuessAfterADoubt(t *testing.T) {
	t.Parallel()
	def, focus := asking(t, "project-discovery", "constraints.budget")
	plain := extract(t, def, engine.NewExtraction(), focus, "About 10k.").Fields["constraints.budget"]
	for msg, want := range map[string]any{
		"Not sure, maybe 10k.":                        "10k",
		"I honestly don't know, probably around 10k.": "around 10k",
		"Not sure.": nil,
	} {
		fa, ok := extract(t, def, engine.NewExtraction(), focus, msg).Fields["constraints.budget"]
		var got any
		if ok {
			_ = json.Unmarshal(fa.Value, &got)
		}
		if got != want {
			t.Errorf("%q: budget = %v, want %v", msg, got, want)
			continue
		}
		if ok && fa.Confidence >= plain.Confidence {
			t.Errorf("%q: confidence %v, want less than a plain answer's %v", msg, fa.Confidence, plain.Confidence)
		}
	}
}
