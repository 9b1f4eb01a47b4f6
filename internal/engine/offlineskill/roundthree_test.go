package offlineskill_test

import "testing"

// A guess after a doubt answers only when it is a guess of the field's
// own kind: an amount for a budget, a number for a count, a time for a
// date. "Not sure, maybe ask my partner." guesses no budget.
func TestExtractionSkillGuessOfTheFieldsKind(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "asking someone is no budget", focus: "budget_range_known",
			msg: "Not sure, maybe ask my partner.", absent: []string{"constraints.budget"}},
		{name: "a time is no budget", focus: "budget_range_known",
			msg: "Not sure, maybe next year.", absent: []string{"constraints.budget"}},
		{name: "a hope of a loan is no budget", focus: "budget_range_known",
			msg: "Not sure, maybe the bank will lend us some.", absent: []string{"constraints.budget"}},
		{name: "an amount guessed is the budget", focus: "budget_range_known",
			msg: "Not sure, maybe 10k.", want: map[string]any{"constraints.budget": "10k"}},
		{name: "a time guessed is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe next year.", want: map[string]any{"constraints.timeline": "next year"}},
		{name: "a quarter guessed is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe Q3.", want: map[string]any{"constraints.timeline": "Q3"}},
		{name: "a year guessed is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe 2027.", want: map[string]any{"constraints.timeline": "2027"}},
		{name: "the middle of a year guessed is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe mid-2027.", want: map[string]any{"constraints.timeline": "mid-2027"}},
		{name: "a fortnight guessed is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe in a fortnight.", want: map[string]any{"constraints.timeline": "in a fortnight"}},
		{name: "a time said by what happens then is the timeline", focus: "timeline_known",
			msg: "Not sure, maybe when the lease is up.", want: map[string]any{"constraints.timeline": "when the lease is up"}},
		{name: "an amount is no timeline", focus: "timeline_known",
			msg: "Not sure, maybe 10k.", absent: []string{"constraints.timeline"}},
		{name: "a number guessed is the count", focus: "user_count_estimated",
			msg: "Not sure, maybe 50.", want: map[string]any{"users_and_personas.user_count": 50.0}},
		{name: "asking someone is no count", focus: "user_count_estimated",
			msg: "Not sure, maybe ask the manager.", absent: []string{"users_and_personas.user_count"}},
	})
}

// A "not being" or "not getting" that is a figure of speech ("Not being
// funny, but …", "Not getting me wrong, …") names no lack: the pain point
// is what the sentence goes on to say, if anything. "Not getting paid on
// time" and "Not being able to pay online" are lacks still.
func TestExtractionSkillIdiomIsNoLack(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "not being funny", focus: "user_pain_points_captured",
			msg:  "Not being funny, but the price is high.",
			want: map[string]any{"users_and_personas.pain_points": []any{"the price is high"}}},
		{name: "not being funny but, no comma", focus: "user_pain_points_captured",
			msg:  "Not being funny but the price is high.",
			want: map[string]any{"users_and_personas.pain_points": []any{"the price is high"}}},
		{name: "not being rude", focus: "user_pain_points_captured",
			msg:  "Not being rude, but they hate apps.",
			want: map[string]any{"users_and_personas.pain_points": []any{"they hate apps"}}},
		{name: "not getting me wrong", focus: "user_pain_points_captured",
			msg: "Not getting me wrong, they love the walks.", absent: []string{"users_and_personas.pain_points"}},
		{name: "not gonna lie", focus: "user_pain_points_captured",
			msg:  "Not gonna lie, the booking is a mess.",
			want: map[string]any{"users_and_personas.pain_points": []any{"the booking is a mess"}}},
		{name: "not getting paid is a lack", focus: "user_pain_points_captured",
			msg:  "Not getting paid on time.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Not getting paid on time"}}},
		{name: "not being able to is a lack", focus: "user_pain_points_captured",
			msg:  "Not being able to pay online.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Not being able to pay online"}}},
	})
}

// A possessive opens an item of a bare list only when the items are
// things of the kind asked: "Our biggest problem, honestly." is a
// bottleneck, not two partners, and "Our main supplier, Shipton Mill."
// names one supplier by what it is, an appositive, not two partners. A
// superlative names a thing ("Our biggest supplier and our bank.": two
// partners); what is ranked first before a comma says what the item after
// it is to the user, no item of its own ("Our biggest customer, Whole
// Foods.": one partner), and an aside is no item ("Our landlord,
// honestly."). "Our main problem, the bank and Stripe.", to the partners
// asked, names two partners: the bank and Stripe are whom the business
// works with, and "our main problem" names no bottleneck, only how the
// user feels about them.
func TestExtractionSkillPossessiveIsNoListItem(t *testing.T) {
	t.Parallel()
	tests := []extractionCase{
		{name: "a biggest problem is no partner", focus: "key_partners_identified",
			msg:    "Our biggest problem, honestly.",
			absent: []string{"partnerships_and_integrations.key_partners"}},
		{name: "a biggest headache is no partner", focus: "key_partners_identified",
			msg:    "My biggest headache, the VAT return.",
			absent: []string{"partnerships_and_integrations.key_partners"}},
		{name: "an appositive is one thing", focus: "key_partners_identified",
			msg:    "Our main supplier, Shipton Mill.",
			want:   map[string]any{"operations.supply_chain": "Our main supplier, Shipton Mill"},
			absent: []string{"partnerships_and_integrations.key_partners"}},
		{name: "a superlative names a thing", focus: "key_partners_identified",
			msg:    "Our biggest supplier and our bank.",
			want:   map[string]any{"partnerships_and_integrations.key_partners": []any{"Our biggest supplier", "our bank"}},
			absent: []string{"operations.supply_chain"}},
		{name: "what is ranked first is no item of its own", focus: "key_partners_identified",
			msg:  "Our biggest customer, Whole Foods.",
			want: map[string]any{"partnerships_and_integrations.key_partners": []any{"Whole Foods"}}},
		{name: "the partners the user calls a problem", focus: "key_partners_identified",
			msg:    "Our main problem, the bank and Stripe.",
			want:   map[string]any{"partnerships_and_integrations.key_partners": []any{"the bank", "Stripe"}},
			absent: []string{"operations.bottlenecks"}},
		{name: "what is ranked first before a bottleneck", focus: "key_partners_identified",
			msg:  "My biggest headache, the VAT return.",
			want: map[string]any{"operations.bottlenecks": []any{"the VAT return"}}},
		{name: "an aside is no item", focus: "key_partners_identified",
			msg:  "Our landlord, honestly.",
			want: map[string]any{"partnerships_and_integrations.key_partners": []any{"Our landlord"}}},
		{name: "a list of partners, one of ours", focus: "key_partners_identified",
			msg: "Our flour mill, the packaging supplier and Deliveroo.",
			want: map[string]any{"partnerships_and_integrations.key_partners": []any{"Our flour mill",
				"the packaging supplier", "Deliveroo"}}},
	}
	for i := range tests {
		tests[i].engine = "business-profile"
	}
	runExtractionCases(t, tests)
}

// Asked how many will use it, the clause that says who uses it gives the
// count, not the group beside it that does not: "5 of us will use it, the
// 200 clients never log in" are 5 users.
func TestExtractionSkillWhoUsesItIsCounted(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "the team that uses it", focus: "user_count_estimated",
			msg:  "5 of us will use it, the 200 clients never log in.",
			want: map[string]any{"users_and_personas.user_count": 5.0}},
		{name: "the clients who use it", focus: "user_count_estimated",
			msg:  "5 of us in the office, and the 200 clients will use it.",
			want: map[string]any{"users_and_personas.user_count": 200.0}},
		{name: "the team beside the clients", focus: "user_count_estimated",
			msg:  "There are 5 of us in the team and about 200 clients.",
			want: map[string]any{"users_and_personas.user_count": 200.0}},
	})
}

// To the choice asked, a later "actually" or "no, X" corrects a firm
// choice; a choice negated rules the option out, and decides nothing; a deferral decides
// nothing; and "Glofox it is" decides Glofox: none is filed whole.
func TestExtractionSkillDecisionSaidAndTakenBack(t *testing.T) {
	t.Parallel()
	options := map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	tests := []extractionCase{
		{name: "a correction after a firm choice", msg: "Glofox, definitely. Actually no, Mindbody.",
			want: map[string]any{"decision.decision_made": "Mindbody"}},
		{name: "definitely not is no decision", msg: "Definitely not Glofox.",
			want:   map[string]any{"solution_landscape.eliminated_options": []any{"Glofox"}},
			absent: []string{"decision.decision_made"}},
		{name: "a choice definitely not is no decision", msg: "Glofox, definitely not.",
			want:   map[string]any{"solution_landscape.eliminated_options": []any{"Glofox"}},
			absent: []string{"decision.decision_made"}},
		{name: "a deferral is no decision", msg: "Fine, I'll think about it.",
			absent: []string{"decision.decision_made"}},
		{name: "it is", msg: "Great, Glofox it is",
			want: map[string]any{"decision.decision_made": "Glofox"}},
		{name: "a firm choice", msg: "Glofox, definitely.",
			want: map[string]any{"decision.decision_made": "Glofox"}},
	}
	for i := range tests {
		tests[i].engine, tests[i].focus, tests[i].current = "exploration", "decision_made", options
	}
	runExtractionCases(t, tests)
}

// Asked how success will be measured, a need by a date ("We need 2 more
// vans by spring") is the timeline alone: what the business must get is
// no measure of success, as a number of things it achieves is ("500
// bookings a month by summer").
func TestExtractionSkillNeedByADateIsNoMetric(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a need by a date", focus: "success_metrics_defined",
			msg:    "We need 2 more vans by spring.",
			want:   map[string]any{"constraints.timeline": "by spring"},
			absent: []string{"success_criteria.metrics"}},
		{name: "staff to hire by a date", focus: "success_metrics_defined",
			msg:    "We have to hire 3 new drivers by summer.",
			want:   map[string]any{"constraints.timeline": "by summer"},
			absent: []string{"success_criteria.metrics"}},
		{name: "a number achieved by a date", focus: "success_metrics_defined",
			msg: "We want 500 bookings a month by summer.",
			want: map[string]any{"success_criteria.metrics": []any{"We want 500 bookings a month by summer"},
				"constraints.timeline": "by summer"}},
	})
}

// Asked how success will be measured, customers, members or the cafes
// that buy are what the business achieves, not what it works with: a
// number more of them needed by a date is a metric; and a need said beside
// one loses only its own clause.
func TestExtractionSkillCustomersNeededAreAMetric(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "new customers needed", focus: "success_metrics_defined",
			msg: "We need 50 new customers by spring.",
			want: map[string]any{"success_criteria.metrics": []any{"We need 50 new customers by spring"},
				"constraints.timeline": "by spring"}},
		{name: "cafes got, and it worked", focus: "success_metrics_defined",
			msg: "If we get 20 more regular cafes by spring, it worked.",
			want: map[string]any{"success_criteria.metrics": []any{"If we get 20 more regular cafes by spring"},
				"constraints.timeline": "by spring"}},
		{name: "vans needed beside customers", focus: "success_metrics_defined",
			msg:  "We need 2 more vans by spring, and 50 new customers a month.",
			want: map[string]any{"success_criteria.metrics": []any{"50 new customers a month"}}},
		{name: "members needed", focus: "success_metrics_defined",
			msg:  "We need 30 new members by June.",
			want: map[string]any{"success_criteria.metrics": []any{"We need 30 new members by June"}}},
		{name: "staff needed", focus: "success_metrics_defined",
			msg:    "We need 4 more staff by spring.",
			absent: []string{"success_criteria.metrics"}},
		{name: "a coach needed beside members", focus: "success_metrics_defined",
			msg:  "We need 30 more members and a second coach by June.",
			want: map[string]any{"success_criteria.metrics": []any{"We need 30 more members"}}},
		{name: "a manager and receptionists needed beside members", focus: "success_metrics_defined",
			msg:  "We need 30 more members, a manager and two receptionists by June.",
			want: map[string]any{"success_criteria.metrics": []any{"We need 30 more members"}}},
		{name: "staff happier beside members, no need", focus: "success_metrics_defined",
			msg:  "Happier staff and 30 more members.",
			want: map[string]any{"success_criteria.metrics": []any{"Happier staff", "30 more members"}}},
	})
}

// Asked how success will be measured, an item that measures something
// about the staff (a rate, a turnover, on time, a percentage) is a
// metric, a need said anywhere in the message or not: only an item that
// is itself what is needed ("a second coach", "2 more drivers") leaves.
func TestExtractionSkillStaffMeasuresAreMetrics(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "staff rates needed down", focus: "success_metrics_defined",
			msg:  "Hire rate and staff turnover, we need both down.",
			want: map[string]any{"success_criteria.metrics": []any{"Hire rate", "staff turnover", "we need both down"}}},
		{name: "drivers on time needed", focus: "success_metrics_defined",
			msg:  "We need every driver on time, 98% of runs.",
			want: map[string]any{"success_criteria.metrics": []any{"We need every driver on time", "98% of runs"}}},
		{name: "ideation: drivers on time needed", engine: "ideation", focus: "success_metrics_defined",
			msg:  "We need every driver on time, 98% of runs.",
			want: map[string]any{"selection.success_metrics": []any{"We need every driver on time", "98% of runs"}}},
		{name: "business profile: drivers on time needed", engine: "business-profile", focus: "key_metrics_known",
			msg:  "We need every driver on time, 98% of runs.",
			want: map[string]any{"data_and_analytics.key_metrics": []any{"We need every driver on time", "98% of runs"}}},
		{name: "drivers needed beside on time", focus: "success_metrics_defined",
			msg:  "We need 2 more drivers and every run on time.",
			want: map[string]any{"success_criteria.metrics": []any{"every run on time"}}},
	})
}

// To the choice asked, a statement that opens as a correction does ("No
// regrets.", "Actually it's cheaper too.") corrects the choice only when it
// names an option; "why not" after a choice agrees to it; and "it is"
// decides only a name: "That's just how it is." decides nothing.
func TestExtractionSkillDecisionNotTakenBack(t *testing.T) {
	t.Parallel()
	options := map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	tests := []extractionCase{
		{name: "no regrets", msg: "Glofox, definitely. No regrets.",
			want: map[string]any{"decision.decision_made": "Glofox"}},
		{name: "no contest", msg: "Mindbody, definitely. No contest.",
			want: map[string]any{"decision.decision_made": "Mindbody"}},
		{name: "no question", msg: "Glofox. No question.",
			want: map[string]any{"decision.decision_made": "Glofox"}},
		{name: "actually and a reason", msg: "Glofox. Actually it's cheaper too.",
			want: map[string]any{"decision.decision_made": "Glofox"}},
		{name: "a correction to a name", msg: "Glofox, definitely. No, Mindbody.",
			want: map[string]any{"decision.decision_made": "Mindbody"}},
		{name: "why not", msg: "Glofox, why not.",
			want:   map[string]any{"decision.decision_made": "Glofox"},
			absent: []string{"solution_landscape.eliminated_options"}},
		{name: "I can't see why not", msg: "Glofox, I can't see why not.",
			want:   map[string]any{"decision.decision_made": "Glofox"},
			absent: []string{"solution_landscape.eliminated_options"}},
		{name: "it is of no name", msg: "That's just how it is.",
			absent: []string{"decision.decision_made"}},
		{name: "it is of an option described", msg: "OK, the cheaper one it is.",
			want: map[string]any{"decision.decision_made": "the cheaper one"}},
	}
	for i := range tests {
		tests[i].engine, tests[i].focus, tests[i].current = "exploration", "decision_made", options
	}
	runExtractionCases(t, tests)
}

// To the choice asked, "not X, Y" rules X out and chooses Y: the known
// options stay on their list, and a name chosen that is none of them joins
// it.
func TestExtractionSkillDecisionOneForAnother(t *testing.T) {
	t.Parallel()
	options := map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	tests := []extractionCase{
		{name: "not X, Y", msg: "Not Glofox, Mindbody.",
			want: map[string]any{"decision.decision_made": "Mindbody",
				"solution_landscape.eliminated_options": []any{"Glofox"}},
			absent: []string{"solution_landscape.options"}},
		{name: "not X. Y.", msg: "Not Glofox. Mindbody.",
			want: map[string]any{"decision.decision_made": "Mindbody",
				"solution_landscape.eliminated_options": []any{"Glofox"}},
			absent: []string{"solution_landscape.options"}},
		{name: "a name not known", msg: "Definitely not Glofox, PushPress.",
			want: map[string]any{"decision.decision_made": "PushPress",
				"solution_landscape.eliminated_options": []any{"Glofox"},
				"solution_landscape.options":            []any{"Mindbody", "Glofox", "PushPress"}}},
	}
	for i := range tests {
		tests[i].engine, tests[i].focus, tests[i].current = "exploration", "decision_made", options
	}
	runExtractionCases(t, tests)
}

// Asked which idea to take forward, a correction after a firm choice
// selects the idea it names, as it decides exploration's option.
func TestExtractionSkillIdeaSelectedCorrected(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a correction", engine: "ideation", focus: "idea_selected",
			msg:  "The app idea, definitely. Actually the newsletter.",
			want: map[string]any{"selection.selected_idea": "the newsletter"}},
		{name: "a correction to a name", engine: "ideation", focus: "idea_selected",
			msg:  "The app idea. No, wait, the newsletter.",
			want: map[string]any{"selection.selected_idea": "the newsletter"}},
	})
}

// A name said only to be a favourite ("Brighton is my favourite") is an
// option more when the options or the choice are asked about, and nothing
// when the problem or the goals are: a town is a favourite as well as a
// product. A name written as a product is one whatever was asked.
func TestExtractionSkillFavouriteAloneIsAnOptionWhenAsked(t *testing.T) {
	t.Parallel()
	options := map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	tests := []extractionCase{
		{name: "asked the problem", focus: "problem_explored", msg: "Brighton is my favourite.",
			absent: []string{"solution_landscape.reactions", "solution_landscape.options"}},
		{name: "asked the goals", focus: "goals_clarified", msg: "Brighton is my favourite.",
			absent: []string{"solution_landscape.reactions", "solution_landscape.options"}},
		{name: "asked the reactions", focus: "user_reactions_captured", msg: "Zenplanner is my favourite.",
			want: map[string]any{"solution_landscape.reactions": []any{"Zenplanner is my favourite"},
				"solution_landscape.options": []any{"Mindbody", "Glofox", "Zenplanner"}}},
		{name: "a product's name, asked the goals", focus: "goals_clarified", msg: "PushPress is my favourite.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody", "Glofox", "PushPress"}}},
	}
	for i := range tests {
		tests[i].engine, tests[i].current = "exploration", options
	}
	runExtractionCases(t, tests)
}

// To the choice asked, "since" a clause a determiner opens gives the
// reason after the choice, as "since" a pronoun does: the option is the
// decision and the clause its reasoning.
func TestExtractionSkillChoiceSinceAClause(t *testing.T) {
	t.Parallel()
	options := map[string]any{"solution_landscape.options": []string{"Mindbody", "Glofox"}}
	runExtractionCases(t, []extractionCase{
		{name: "since the staff", engine: "exploration", focus: "decision_made", current: options,
			msg: "Mindbody, since the staff know it.",
			want: map[string]any{"decision.decision_made": "Mindbody",
				"decision.reasoning": "the staff know it"}},
		{name: "as the staff", engine: "exploration", focus: "decision_made", current: options,
			msg:  "Glofox, as the members already use it.",
			want: map[string]any{"decision.decision_made": "Glofox"}},
	})
}
