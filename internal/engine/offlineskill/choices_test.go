package offlineskill_test

import "testing"

// What is too much for whom a name is said to be ("Wodify is too
// expensive for a small gym", "for people like us") says who would pay
// for it, not what the name is for: the name reads as a product, an option
// more, and the item stays its con; "Facebook is too expensive for ads"
// still says what the name is for. With no option known, a name said so
// and not as a product ("London is too expensive for a small shop") may
// be a place or a person: nothing is filed.
func TestExtractionSkillTooMuchForWhom(t *testing.T) {
	t.Parallel()
	const (
		opts = "solution_landscape.options"
		cons = "solution_landscape.option_cons"
	)
	options := map[string]any{opts: []string{"Mindbody", "Glofox"}}
	runExtractionCases(t, []extractionCase{
		{name: "for a small gym", engine: "exploration", focus: "cons_explored", current: options,
			msg:  "Wodify is too expensive for a small gym.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: []any{"Mindbody", "Glofox", "Wodify"}}},
		{name: "for a small gym, asked another thing", engine: "exploration", focus: "prior_knowledge_assessed",
			current: options, msg: "Wodify is too expensive for a small gym.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: []any{"Mindbody", "Glofox", "Wodify"}}},
		{name: "for a small gym like ours", engine: "exploration", focus: "cons_explored", current: options,
			msg:  "Wodify is too expensive for a small gym like ours.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: []any{"Mindbody", "Glofox", "Wodify"}}},
		{name: "for people like us, no option known", engine: "exploration", focus: "options_identified",
			msg: "Wodify is too expensive for people like us.", absent: []string{cons, opts}},
		{name: "a place for a small shop, no option known", engine: "exploration", focus: "cons_explored",
			msg: "London is too expensive for a small shop.", absent: []string{cons, opts}},
		{name: "a known option for a small gym", engine: "exploration", focus: "cons_explored",
			current: map[string]any{opts: []string{"Mindbody", "Glofox", "Wodify"}},
			msg:     "Wodify is too expensive for a small gym.",
			want:    map[string]any{cons: []any{"Wodify is too expensive"}}, absent: []string{opts}},
		{name: "a channel for ads", engine: "exploration", focus: "cons_explored", current: options,
			msg: "Facebook is too expensive for ads.", absent: []string{cons, opts}},
		{name: "a channel for a small gym", engine: "exploration", focus: "cons_explored", current: options,
			msg: "Facebook is too expensive for a small gym.", absent: []string{cons, opts}},
	})
}

// To the choice asked, an option chosen firmly and the reason said after
// it, in the same sentence ("Glofox, definitely, because it's half the
// price.") or in the next ones ("Glofox. It's half the price and the staff
// know it."), decide the option and file the reason as the decision's
// reasoning; a firm choice said alone, a choice corrected and a choice
// hedged file no reasoning, nor does a condition ("as long as it's
// cheap": what the choice holds on), how long it holds ("for now"), that
// it was said before ("as I said") or a role ("as our booking tool").
func TestExtractionSkillReasonAfterAFirmChoice(t *testing.T) {
	t.Parallel()
	const (
		decision  = "decision.decision_made"
		reasoning = "decision.reasoning"
	)
	tests := []extractionCase{
		{name: "because, in the sentence", msg: "Glofox, definitely, because it's half the price.",
			want: map[string]any{decision: "Glofox", reasoning: "it's half the price"}},
		{name: "since, in the sentence", msg: "Mindbody, since our staff know it.",
			want: map[string]any{decision: "Mindbody", reasoning: "our staff know it"}},
		{name: "in the next sentence", msg: "Glofox. It's half the price and the staff know it.",
			want: map[string]any{decision: "Glofox", reasoning: "It's half the price and the staff know it"}},
		{name: "firmly, in the next sentence", msg: "Glofox, definitely. I think the others are too expensive.",
			want: map[string]any{decision: "Glofox", reasoning: "I think the others are too expensive"}},
		{name: "a firm choice alone", msg: "Glofox, definitely.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "a firm choice and thanks", msg: "Glofox, definitely. Thanks!",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "a choice corrected", msg: "Glofox, definitely. Actually no, Mindbody.",
			want: map[string]any{decision: "Mindbody"}, absent: []string{reasoning}},
		{name: "a choice hedged", msg: "Glofox. I think so.", absent: []string{decision, reasoning}},
		{name: "a confidence", msg: "Glofox. Pretty confident.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "a confidence out of 10", msg: "Glofox. 8 out of 10 confident.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "a remark", msg: "Glofox. Good question.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "an alternative", msg: "Glofox. Or Mindbody.", absent: []string{decision, reasoning}},
		{name: "a deferral", msg: "Glofox. I'll need to check with Sarah.", absent: []string{decision, reasoning}},
		{name: "I mean another", msg: "Glofox. Sorry, I mean Mindbody.",
			want: map[string]any{decision: "Mindbody"}, absent: []string{reasoning}},
		{name: "because why not", msg: "Glofox, because why not.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "because and dashes", msg: "Glofox — because —",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "a reason after a dash", msg: "Glofox, definitely — the staff know it.",
			want: map[string]any{decision: "Glofox", reasoning: "the staff know it"}},
		{name: "as, with no comma", msg: "Glofox as it's cheaper.",
			want: map[string]any{decision: "Glofox", reasoning: "it's cheaper"}},
		{name: "a condition", msg: "Glofox, as long as it's cheap.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "an if", msg: "Glofox, if the price is right.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "for now", msg: "Glofox — for now.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "as I said", msg: "Glofox, as I said.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "as a role", msg: "Glofox as our booking tool.",
			want: map[string]any{decision: "Glofox"}, absent: []string{reasoning}},
		{name: "as, a determiner and a verb", msg: "Glofox as the staff know it.",
			want: map[string]any{decision: "Glofox", reasoning: "the staff know it"}},
	}
	for i := range tests {
		tests[i].engine, tests[i].focus = "exploration", "decision_made"
		tests[i].current = map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	}
	runExtractionCases(t, tests)
}

// A choice and its correction ("Glofox, definitely. Actually no,
// Mindbody.") say which option is chosen, whatever was asked, not which
// exist: the decision is the option the correction names, and the options
// gain only the names not known; neither the names nor the whole text
// answer the concepts or the options asked.
func TestExtractionSkillChoiceCorrectedToAnotherQuestion(t *testing.T) {
	t.Parallel()
	const (
		opts     = "solution_landscape.options"
		concepts = "understanding.concepts_taught"
		decision = "decision.decision_made"
	)
	msg := "Glofox, definitely. Actually no, Mindbody."
	options := map[string]any{opts: []string{"Mindbody", "Glofox", "Wodify"}}
	runExtractionCases(t, []extractionCase{
		{name: "to the concepts asked", engine: "exploration", focus: "key_concepts_taught", current: options, msg: msg,
			want: map[string]any{decision: "Mindbody"}, absent: []string{concepts, opts}},
		{name: "to the options asked", engine: "exploration", focus: "options_identified", current: options, msg: msg,
			want: map[string]any{decision: "Mindbody"}, absent: []string{concepts, opts}},
		{name: "to the options asked, none known", engine: "exploration", focus: "options_identified", msg: msg,
			want: map[string]any{decision: "Mindbody", opts: []any{"Glofox", "Mindbody"}}, absent: []string{concepts}},
		{name: "to the choice asked", engine: "exploration", focus: "decision_made", current: options, msg: msg,
			want: map[string]any{decision: "Mindbody"}, absent: []string{concepts, opts}},
		{name: "no name corrected", engine: "exploration", focus: "key_concepts_taught", current: options,
			msg: "Pricing, definitely. Actually no, the setup.", absent: []string{decision, opts}},
	})
}

// A correction decides only a choice: when an option is known and the
// names are options or said as products, or when the choice or the
// options are asked. Any other capitalised answer corrected ("High.
// Actually no, Medium." to the confidence, "Glofox. Actually no, Sarah."
// to the precedents) is the answer to the question asked, read as it is
// read uncorrected, and a short list answer keeps the item corrected to.
// A reason said after the option corrected to is kept.
func TestExtractionSkillCorrectionOfNoChoice(t *testing.T) {
	t.Parallel()
	const (
		opts      = "solution_landscape.options"
		decision  = "decision.decision_made"
		reasoning = "decision.reasoning"
		gaps      = "initial_state.knowledge_gaps"
		prior     = "initial_state.prior_knowledge"
	)
	options := map[string]any{opts: []string{"Mindbody", "Glofox"}}
	runExtractionCases(t, []extractionCase{
		{name: "the problem asked", engine: "exploration", focus: "problem_explored",
			msg:    "Booking. Actually no, Payments.",
			want:   map[string]any{"initial_state.problem_statement": "Booking. Actually no, Payments"},
			absent: []string{decision, opts}},
		{name: "the knowledge gaps asked", engine: "exploration", focus: "knowledge_gaps_identified",
			msg:  "Pricing. Actually no, Setup Costs.",
			want: map[string]any{gaps: []any{"Setup Costs"}}, absent: []string{decision, opts}},
		{name: "the confidence asked", engine: "exploration", focus: "confidence_assessed", current: options,
			msg: "High. Actually no, Medium.", absent: []string{decision, opts}},
		{name: "the prior knowledge asked", engine: "exploration", focus: "prior_knowledge_assessed",
			msg:  "SaaS. Actually no, APIs.",
			want: map[string]any{prior: "SaaS. Actually no, APIs"}, absent: []string{decision, opts}},
		{name: "a person after an option", engine: "exploration", focus: "precedents_reviewed", current: options,
			msg: "Glofox. Actually no, Sarah.", absent: []string{decision, opts}},
		{name: "a day", engine: "exploration", focus: "constraints_identified", current: options,
			msg: "Friday. Actually no, Monday.", absent: []string{decision, opts}},
		{name: "a list item corrected", engine: "exploration", focus: "options_identified",
			msg:  "PureGym. Actually no, The Gym Group.",
			want: map[string]any{opts: []any{"The Gym Group"}}, absent: []string{decision}},
		{name: "a product corrected to, another asked", engine: "exploration", focus: "key_concepts_taught",
			current: options, msg: "Glofox, definitely. Actually no, PushPress.",
			want: map[string]any{decision: "PushPress", opts: []any{"Mindbody", "Glofox", "PushPress"}}},
		{name: "the reason after the correction", engine: "exploration", focus: "decision_made", current: options,
			msg:  "Glofox, definitely. Actually no, Mindbody, because it's cheaper.",
			want: map[string]any{decision: "Mindbody", reasoning: "it's cheaper"}},
	})
}

// To the choice asked, a statement after the option chosen that takes it
// back and names no other ("Actually, no.", "No, wait.") leaves nothing
// chosen; one that says something of the choice ("No regrets.") keeps it.
func TestExtractionSkillChoiceTakenBack(t *testing.T) {
	t.Parallel()
	const decision = "decision.decision_made"
	var tests []extractionCase
	for _, msg := range []string{"Glofox. Actually, no.", "Glofox. Wait, no.", "Glofox. No, sorry.",
		"Glofox. Actually, never mind.", "Glofox. No, wait.", "Glofox. Scratch that."} {
		tests = append(tests, extractionCase{name: msg, msg: msg, absent: []string{decision, "decision.reasoning"}})
	}
	tests = append(tests,
		extractionCase{name: "no regrets", msg: "Glofox. No regrets.", want: map[string]any{decision: "Glofox"}},
		extractionCase{name: "sorry alone", msg: "Glofox. Sorry.", want: map[string]any{decision: "Glofox"}},
		extractionCase{name: "taken back to another", msg: "Glofox. No, wait, Mindbody.", want: map[string]any{decision: "Mindbody"}})
	for i := range tests {
		tests[i].engine, tests[i].focus = "exploration", "decision_made"
		tests[i].current = map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	}
	runExtractionCases(t, tests)
}

// An answer said only in options, some ruled out ("not X") or kept beside
// another ("not just X", "Y as well"), never takes a known option off the
// list: "Not just X, Y as well" keeps both, "Not X, not Y" rules both out
// and decides nothing, and "X. Not Y." rules Y out and, to the choice
// asked, decides X. Asked only for the options, "Not X, Y" decides
// nothing, and a name not known joins the options.
func TestExtractionSkillOptionsKeptBesideOnesRuledOut(t *testing.T) {
	t.Parallel()
	const (
		opts       = "solution_landscape.options"
		eliminated = "solution_landscape.eliminated_options"
		decision   = "decision.decision_made"
		reasoning  = "decision.reasoning"
	)
	options := map[string]any{opts: []string{"Mindbody", "Glofox"}}
	var tests []extractionCase
	for _, focus := range []string{"decision_made", "options_identified"} {
		tests = append(tests,
			extractionCase{name: focus + ": not just X, Y as well", focus: focus, msg: "Not just Glofox, Mindbody as well.",
				absent: []string{opts, eliminated, decision}},
			extractionCase{name: focus + ": not just X, a new Y too", focus: focus, msg: "Not just Glofox, PushPress too.",
				want: map[string]any{opts: []any{"Mindbody", "Glofox", "PushPress"}}, absent: []string{eliminated, decision}},
			extractionCase{name: focus + ": not X, not Y", focus: focus, msg: "Not Glofox, not Mindbody.",
				want: map[string]any{eliminated: []any{"Glofox", "Mindbody"}}, absent: []string{opts, decision}})
	}
	tests = append(tests,
		extractionCase{name: "X. Not Y.", focus: "decision_made", msg: "Glofox. Not Mindbody.",
			want:   map[string]any{decision: "Glofox", eliminated: []any{"Mindbody"}},
			absent: []string{opts, reasoning}},
		extractionCase{name: "X, not Y", focus: "decision_made", msg: "Glofox, not Mindbody.",
			want:   map[string]any{decision: "Glofox", eliminated: []any{"Mindbody"}},
			absent: []string{opts, reasoning}},
		extractionCase{name: "options asked: X. Not Y.", focus: "options_identified", msg: "Glofox. Not Mindbody.",
			want: map[string]any{eliminated: []any{"Mindbody"}}, absent: []string{opts, decision}},
		extractionCase{name: "options asked: not X, Y", focus: "options_identified", msg: "Not Glofox, Mindbody.",
			want: map[string]any{eliminated: []any{"Glofox"}}, absent: []string{opts, decision}},
		extractionCase{name: "options asked: not X, a new Y", focus: "options_identified", msg: "Not Glofox, Wodify.",
			want:   map[string]any{eliminated: []any{"Glofox"}, opts: []any{"Mindbody", "Glofox", "Wodify"}},
			absent: []string{decision}},
		extractionCase{name: "choice asked: not X, a new Y", focus: "decision_made", msg: "Not Glofox, Wodify.",
			want: map[string]any{decision: "Wodify", eliminated: []any{"Glofox"}, opts: []any{"Mindbody", "Glofox", "Wodify"}}})
	for i := range tests {
		tests[i].engine, tests[i].current = "exploration", options
	}
	runExtractionCases(t, tests)
}

// To the choice asked, a negated aside before an option ("Not bad,
// Glofox.", "Not really, Glofox is fine.") chooses it and rules nothing
// out; "Not Glofox." alone rules it out and keeps it on the options; a
// time a "since" opens alone ("Since 2019.") is no reason; and "X it is"
// of a word no option is ("Cost it is.") decides nothing.
func TestExtractionSkillChoiceAsidesAndNoOptions(t *testing.T) {
	t.Parallel()
	const (
		opts       = "solution_landscape.options"
		eliminated = "solution_landscape.eliminated_options"
		decision   = "decision.decision_made"
		reasoning  = "decision.reasoning"
	)
	tests := []extractionCase{
		{name: "not really, X is fine", msg: "Not really, Glofox is fine.",
			want: map[string]any{decision: "Glofox"}, absent: []string{eliminated, opts}},
		{name: "not bad, X", msg: "Not bad, Glofox.",
			want: map[string]any{decision: "Glofox"}, absent: []string{eliminated, opts}},
		{name: "not really, no name", msg: "Not really, I need more time.", absent: []string{decision, eliminated}},
		{name: "not X alone", msg: "Not Glofox.",
			want: map[string]any{eliminated: []any{"Glofox"}}, absent: []string{decision, opts}},
		{name: "since a year alone", msg: "Since 2019.", absent: []string{decision, reasoning}},
		{name: "a word no option it is", msg: "Cost it is.", absent: []string{decision, opts}},
		{name: "an option it is", msg: "Glofox it is.", want: map[string]any{decision: "Glofox"}},
		{name: "a product it is", msg: "PushPress it is.", want: map[string]any{decision: "PushPress"}},
	}
	for i := range tests {
		tests[i].engine, tests[i].focus = "exploration", "decision_made"
		tests[i].current = map[string]any{opts: []string{"Mindbody", "Glofox"}}
	}
	runExtractionCases(t, append(tests, extractionCase{name: "since a year alone, the reasoning asked", engine: "exploration",
		focus: "decision_reasoning_captured", current: map[string]any{opts: []string{"Mindbody", "Glofox"}, decision: "Glofox"},
		msg: "Since 2019.", absent: []string{reasoning}}))
}

// To the choice asked, a bare "No." after the option chosen takes it back
// as "Actually, no." does; "it is what it is" before the option is an
// aside, which chooses only the option; and a "since" said alone is no
// reasoning.
func TestExtractionSkillChoiceMisfires(t *testing.T) {
	t.Parallel()
	const decision, reasoning = "decision.decision_made", "decision.reasoning"
	tests := []extractionCase{
		{name: "a bare no takes it back", msg: "Resy. No.", absent: []string{decision, reasoning}},
		{name: "it is what it is", msg: "It is what it is, Resy.", want: map[string]any{decision: "Resy"}},
		{name: "a bare since", msg: "Resy, since.", absent: []string{reasoning}},
		{name: "it is what it is after", msg: "Resy, it is what it is.", want: map[string]any{decision: "Resy"}},
		{name: "since alone", msg: "Since.", absent: []string{reasoning}},
		{name: "no regrets still chooses", msg: "Resy. No regrets.", want: map[string]any{decision: "Resy"}},
	}
	for i := range tests {
		tests[i].engine, tests[i].focus = "exploration", "decision_made"
		tests[i].current = map[string]any{"solution_landscape.options": []string{"Resy", "OpenTable"}}
	}
	runExtractionCases(t, tests)
}

// What a review of the choices found: "not X" said with an aside of time
// ("not yet anyway") or after a "No," rules X out and keeps the options;
// "not X" with its reason rules X out and adds no option; and only a "No."
// right after the choice takes it back, not one that answers a question of
// its own.
func TestExtractionSkillChoiceReviewMisfires(t *testing.T) {
	t.Parallel()
	const (
		opts       = "solution_landscape.options"
		eliminated = "solution_landscape.eliminated_options"
		decision   = "decision.decision_made"
	)
	website := "a booking page on your website"
	current := map[string]any{opts: []string{"Resy", "OpenTable", website}}
	var tests []extractionCase
	for _, focus := range []string{"decision_made", "options_identified", "cons_explored"} {
		tests = append(tests,
			extractionCase{name: focus + ": not X, not yet anyway", focus: focus, msg: "Not Resy, not yet anyway.",
				want: map[string]any{eliminated: []any{"Resy"}}, absent: []string{opts, decision}},
			extractionCase{name: focus + ": no, not X", focus: focus, msg: "No, not Resy.",
				want: map[string]any{eliminated: []any{"Resy"}}, absent: []string{opts, decision}},
			extractionCase{name: focus + ": not X, its reason", focus: focus, msg: "Not OpenTable, it's too expensive.",
				want: map[string]any{eliminated: []any{"OpenTable"}}, absent: []string{opts, decision}})
	}
	tests = append(tests,
		extractionCase{name: "a no to a question of its own", focus: "decision_made",
			msg:  "We'll go with Resy. Any questions? No.",
			want: map[string]any{decision: "Resy"}, absent: []string{opts, eliminated}},
		extractionCase{name: "a no right after the choice", focus: "decision_made",
			msg: "We'll go with Resy. No.", absent: []string{decision}})
	for i := range tests {
		tests[i].engine, tests[i].current = "exploration", current
	}
	runExtractionCases(t, tests)
}
