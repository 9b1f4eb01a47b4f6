package offlineskill_test

import (
	"cmp"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// extractionCase is a message, the state and the question it answers,
// and the fields it must and must not answer.
type extractionCase struct {
	name    string
	engine  string // "" for project-discovery
	current map[string]any
	focus   string
	msg     string
	want    map[string]any // path -> decoded value
	absent  []string
}

func runExtractionCases(t *testing.T, tests []extractionCase) {
	t.Helper()
	cat := enginetest.Shipped(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			def, _ := cat.Get(cmp.Or(tt.engine, "project-discovery"))
			cur := engine.NewExtraction()
			if tt.current != nil {
				cur = known(t, def, tt.current)
			}
			ans := extract(t, def, cur, tt.focus, tt.msg)
			for p, want := range tt.want {
				fa, ok := ans.Fields[p]
				if !ok {
					t.Errorf("%s not extracted; answer %s", p, answered(ans.Fields))
					continue
				}
				var got any
				_ = json.Unmarshal(fa.Value, &got)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", p, got, want)
				}
			}
			for _, p := range tt.absent {
				if fa, ok := ans.Fields[p]; ok {
					t.Errorf("%s extracted: %s", p, fa.Value)
				}
			}
		})
	}
}

// answered shows the values of an answer's fields.
func answered(fields map[string]extraction.FieldAnswer) map[string]string {
	out := map[string]string{}
	for p, fa := range fields {
		out[p] = string(fa.Value)
	}
	return out
}

// An answer of a kind fills the field of its kind, whatever was asked: a
// platform the product must run on is the kind of product, a feature that
// can wait is the first version's scope, and a feature the user also
// wants is a key feature; none of them is the answer to the question
// asked.
func TestExtractionSkillAnswerFillsItsKind(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "phones and the iPhone are a mobile app", focus: "desired_outcome_stated",
			msg:    "It has to work on phones, most clients are on iPhone.",
			want:   map[string]any{"purpose_and_problem.project_type": "mobile app"},
			absent: []string{"purpose_and_problem.desired_outcome"}},
		{name: "the iPhone alone is a mobile app", focus: "project_type_identified",
			msg:  "Most of our clients are on iPhone.",
			want: map[string]any{"purpose_and_problem.project_type": "mobile app"}},
		{name: "mobiles are a mobile app", focus: "project_type_identified",
			msg:  "It needs to work on mobiles, that's what the customers use.",
			want: map[string]any{"purpose_and_problem.project_type": "mobile app"}},
		{name: "what the product would need to do is no job", focus: "project_type_identified",
			msg:    "It'd need to work on mobiles really, nearly all my clients use their phones for everything.",
			want:   map[string]any{"purpose_and_problem.project_type": "mobile app"},
			absent: []string{"users_and_personas.jobs_to_be_done"}},
		{name: "what the walkers need to do is a job", focus: "jobs_to_be_done_captured",
			msg:  "The walkers need to see their schedule, it would need to be simple.",
			want: map[string]any{"users_and_personas.jobs_to_be_done": []any{"see their schedule"}}},
		{name: "a feature that would be nice can wait", focus: "project_type_identified",
			msg:    "Payments would be nice but not required at first.",
			want:   map[string]any{"success_criteria.mvp_scope": "Payments would be nice but not required at first"},
			absent: []string{"purpose_and_problem.project_type", "success_criteria.key_features"}},
		{name: "a nice to have can wait", focus: "project_type_identified",
			msg:    "Online payments are a nice to have.",
			want:   map[string]any{"success_criteria.mvp_scope": "Online payments are a nice to have"},
			absent: []string{"purpose_and_problem.project_type"}},
		{name: "a feature the user also wants is a key feature", focus: "user_count_estimated",
			msg:    "We also want reminders the evening before a walk.",
			want:   map[string]any{"success_criteria.key_features": []any{"reminders the evening before a walk"}},
			absent: []string{"users_and_personas.user_count"}},
		{name: "a feature the user would also like is a key feature", focus: "trigger_event_identified",
			msg:    "We'd also like a map of each walk and a photo at the end.",
			want:   map[string]any{"success_criteria.key_features": []any{"a map of each walk", "a photo at the end"}},
			absent: []string{"purpose_and_problem.trigger_event"}},
		{name: "what the user also needs to do is no feature", focus: "trigger_event_identified",
			msg: "We also need to hire another walker.", absent: []string{"success_criteria.key_features"}},
		{name: "who also wants it is no feature", focus: "secondary_users_identified",
			msg: "The dispatchers also want it.", absent: []string{"success_criteria.key_features"}},
	})
}

// A value said with its reason ("10000, my partner agreed", "An agency,
// since we have no developers") is the value alone; a statement keeps
// its reason, which is part of what it says. A bare amount that corrects
// an amount in a currency is in that currency, and one said in none is in
// none.
func TestExtractionSkillValueWithoutItsReason(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a budget corrected with who agreed keeps its currency", focus: "user_pain_points_captured",
			current: map[string]any{"constraints.budget": "8000 dollars"},
			msg:     "Actually the budget is 10000, my partner agreed.",
			want:    map[string]any{"constraints.budget": "10000 dollars"}},
		{name: "a budget corrected keeps its currency sign", focus: "user_pain_points_captured",
			current: map[string]any{"constraints.budget": "$8k"},
			msg:     "Actually the budget is 10k, because my partner agreed.",
			want:    map[string]any{"constraints.budget": "$10k"}},
		{name: "a budget in no currency gets none", focus: "budget_range_known",
			msg: "10000, my partner agreed.", want: map[string]any{"constraints.budget": "10000"}},
		{name: "a budget with a reason is the budget", focus: "budget_range_known",
			msg: "Around £5,000, since that's what the grant covers.", want: map[string]any{"constraints.budget": "Around £5,000"}},
		{name: "a timeline with a reason is the timeline", focus: "timeline_known",
			msg: "Early March, because that's when the season starts.", want: map[string]any{"constraints.timeline": "Early March"}},
		{name: "a month with a reason is the month", focus: "timeline_known",
			msg: "By May, because of the busy season.", want: map[string]any{"constraints.timeline": "By May"}},
		{name: "a team with a reason is the team", focus: "team_resources_known",
			msg: "An agency, since we have no developers.", want: map[string]any{"constraints.team": "An agency"}},
		{name: "a team with who insisted is the team", focus: "team_resources_known",
			msg: "My nephew, my wife insisted.", want: map[string]any{"constraints.team": "My nephew"}},
		{name: "a reason asked for is kept, without the choice it is for", engine: "exploration",
			focus: "decision_reasoning_captured", msg: "Square, because my till already uses it.",
			want: map[string]any{"decision.reasoning": "my till already uses it"}},
		{name: "a reason said with the choice is the reason", engine: "exploration", focus: "decision_made",
			msg: "I'll go with the subscription app because it is cheap and fast to start.",
			want: map[string]any{"decision.decision_made": "subscription app",
				"decision.reasoning": "it is cheap and fast to start"}},
		{name: "a time since is no reason", engine: "exploration", focus: "decision_reasoning_captured",
			msg: "We've trusted Square since 2019.", want: map[string]any{"decision.reasoning": "We've trusted Square since 2019"}},
		{name: "a month since is no reason", engine: "exploration", focus: "decision_reasoning_captured",
			msg:  "Since March the studio has doubled.",
			want: map[string]any{"decision.reasoning": "Since March the studio has doubled"}},
		{name: "a reason said as such keeps it", engine: "exploration", focus: "decision_reasoning_captured",
			msg:  "The reason is the price, because we are small.",
			want: map[string]any{"decision.reasoning": "The reason is the price, because we are small"}},
		{name: "a statement keeps its reason", focus: "core_problem_defined",
			msg:  "We lose bookings because everything comes by text.",
			want: map[string]any{"purpose_and_problem.core_problem": "We lose bookings because everything comes by text"}},
		{name: "a time since is no reason", focus: "current_solution_understood",
			msg:  "On paper, since last year.",
			want: map[string]any{"purpose_and_problem.current_solution": "On paper, since last year"}},
	})
}

// A timeline said beside a budget is the timeline, and the budget is the
// amount alone.
func TestExtractionSkillTimelineBesideABudget(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "before a season", focus: "trigger_event_identified",
			msg:    "Budget is around 8000 dollars and I'd like it before spring.",
			want:   map[string]any{"constraints.budget": "8000 dollars", "constraints.timeline": "before spring"},
			absent: []string{"purpose_and_problem.trigger_event"}},
		{name: "by a month", focus: "budget_range_known",
			msg:  "The budget is 20k and we need it by March.",
			want: map[string]any{"constraints.budget": "20k", "constraints.timeline": "by March"}},
		{name: "within months", focus: "user_count_estimated",
			msg:  "Our budget is about 15,000 pounds, and we'd want it within three months.",
			want: map[string]any{"constraints.budget": "15,000 pounds", "constraints.timeline": "within three months"}},
		{name: "a range of amounts", focus: "budget_range_known",
			msg:  "The budget is 10k to 15k, ideally before Christmas.",
			want: map[string]any{"constraints.budget": "10k to 15k", "constraints.timeline": "before Christmas"}},
		{name: "before the end of the year", focus: "budget_range_known",
			msg:  "Budget is tight and it has to be live before the end of the year.",
			want: map[string]any{"constraints.timeline": "before the end of the year"}},
	})
}

// "The main users are dog owners, and my three walkers who …" names the
// primary users, and the walkers as the secondary ones.
func TestExtractionSkillMainUsersAndTheOthers(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "the main users and the walkers", focus: "project_type_identified",
			msg: "The main users are dog owners, and my three walkers who need to see their schedule.",
			want: map[string]any{"users_and_personas.primary_user": "dog owners", "users_and_personas.secondary_users": "walkers",
				"users_and_personas.jobs_to_be_done": []any{"see their schedule"}},
			absent: []string{"purpose_and_problem.project_type"}},
		{name: "the main users alone", focus: "primary_user_identified",
			msg:    "The main users are pet owners.",
			want:   map[string]any{"users_and_personas.primary_user": "pet owners"},
			absent: []string{"users_and_personas.secondary_users"}},
		{name: "two groups of main users", focus: "primary_user_identified",
			msg:    "The main users are parents and coaches.",
			want:   map[string]any{"users_and_personas.primary_user": "parents and coaches"},
			absent: []string{"users_and_personas.secondary_users"}},
		{name: "the main users and the office staff", focus: "primary_user_identified",
			msg: "The primary users are tenants, and the office staff who handle repairs.",
			want: map[string]any{"users_and_personas.primary_user": "tenants",
				"users_and_personas.secondary_users": "office staff"}},
		{name: "a role the main users are keeps its pattern", focus: "primary_user_identified",
			msg:  "The main users are the technicians, and the dispatchers also use it.",
			want: map[string]any{"users_and_personas.primary_user": "technicians", "users_and_personas.secondary_users": "dispatchers"}},
	})
}

// What the product has to be or do, said to how success will be measured,
// is a constraint on it and measures nothing; a measure said with "has
// to", "should" or "must" (a number, a rate, a target bound in time) is
// still one, and a number that is part of a name is none. A time the
// product is to be live in bounds the work: a timeline, no measure. A
// number of things by a date is a measure, and the date a timeline.
func TestExtractionSkillRequirementMeasuresNothing(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "what it has to work with", focus: "success_metrics_defined",
			msg:    "It has to work with our Shopify store and take card payments.",
			absent: []string{"success_criteria.metrics"}},
		{name: "what it must do", focus: "success_metrics_defined",
			msg:    "It must take card payments.",
			absent: []string{"success_criteria.metrics"}},
		{name: "what the idea must do, to how it will be measured", engine: "ideation", focus: "success_metrics_defined",
			msg:    "It must be ready before Christmas.",
			absent: []string{"selection.success_metrics"}},
		{name: "a number of sign-ups it should get", focus: "success_metrics_defined",
			msg:  "It should get 200 sign-ups in the first month.",
			want: map[string]any{"success_criteria.metrics": []any{"It should get 200 sign-ups in the first month"}}},
		{name: "a time it must pay for itself in", focus: "success_metrics_defined",
			msg:  "It must pay for itself within a year.",
			want: map[string]any{"success_criteria.metrics": []any{"It must pay for itself within a year"}}},
		{name: "a rate it needs to bring down", engine: "ideation", focus: "success_metrics_defined",
			msg:  "It needs to bring churn down to 3 percent.",
			want: map[string]any{"selection.success_metrics": []any{"It needs to bring churn down to 3 percent"}}},
		{name: "a number spelled out", focus: "success_metrics_defined",
			msg:  "It should get forty sign-ups a week.",
			want: map[string]any{"success_criteria.metrics": []any{"It should get forty sign-ups a week"}}},
		{name: "a number in a name", focus: "success_metrics_defined",
			msg:    "It must run on Windows 10.",
			absent: []string{"success_criteria.metrics"}},
		{name: "a measure is one", focus: "success_metrics_defined",
			msg:  "Fewer missed jobs.",
			want: map[string]any{"success_criteria.metrics": []any{"Fewer missed jobs"}}},
		{name: "what the users have to do less is a measure", focus: "success_metrics_defined",
			msg:  "Nobody has to call the office any more.",
			want: map[string]any{"success_criteria.metrics": []any{"Nobody has to call the office"}}},
		{name: "a time to be live in is a timeline", focus: "success_metrics_defined",
			msg:    "It should be live within a month.",
			want:   map[string]any{"constraints.timeline": "It should be live within a month"},
			absent: []string{"success_criteria.metrics"}},
		{name: "a number of months to be live in is a timeline", focus: "success_metrics_defined",
			msg:    "It has to be up and running within 2 months.",
			absent: []string{"success_criteria.metrics"}},
		{name: "a number of years to pay for itself in", focus: "success_metrics_defined",
			msg: "It must pay for itself within 2 years.",
			want: map[string]any{"success_criteria.metrics": []any{"It must pay for itself within 2 years"},
				"constraints.timeline": "within 2 years"}},
		{name: "a number by a date is a measure and a timeline", focus: "success_metrics_defined",
			msg: "We want 500 bookings a month by summer.",
			want: map[string]any{"success_criteria.metrics": []any{"We want 500 bookings a month by summer"},
				"constraints.timeline": "by summer"}},
		{name: "a number by a date, to the timeline", focus: "timeline_known",
			msg: "We want 500 bookings a month by summer.", want: map[string]any{"constraints.timeline": "by summer"}},
	})
}

// A doubt said twice in one sentence is two knowledge gaps, each without
// the words that say the user is unsure.
func TestExtractionSkillGapsEachWithoutTheirDoubt(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "not sure, then don't understand", engine: "exploration", focus: "knowledge_gaps_identified",
			msg: "I'm not sure how the apps plug into our Shopify store and I don't understand what a custom build would cost.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"how the apps plug into our Shopify store",
				"what a custom build would cost"}}},
		{name: "don't know, then not sure, unasked", engine: "exploration", focus: "options_identified",
			msg:  "I don't know whether Glofox takes payments, and we're not sure how the fees work.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"whether Glofox takes payments", "how the fees work"}}},
		{name: "don't know how, then which", engine: "exploration", focus: "knowledge_gaps_identified",
			msg:  "I don't know how the apps work and I don't know which is cheapest.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"how the apps work", "which is cheapest"}}},
		{name: "not sure how, then who", engine: "exploration", focus: "knowledge_gaps_identified",
			msg:  "I'm not sure how the fees work and I'm not sure who handles the support.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"how the fees work", "who handles the support"}}},
		{name: "a remark after a gap, then a gap", engine: "exploration", focus: "knowledge_gaps_identified",
			msg:  "I don't know how the apps work, it's all new to me, and I don't know which is cheapest.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"how the apps work", "which is cheapest"}}},
	})
}

// Whose point of view an idea is seen from frames it, and is no idea
// itself.
func TestExtractionSkillFramingIsNoIdea(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "from someone's point of view", engine: "ideation", focus: "perspective_ideas_gathered",
			msg: "From a subscriber's point of view, they would want to choose their next coffee and skip a month when they are away.",
			want: map[string]any{"idea_generation.perspective_ideas": []any{"they would want to choose their next coffee",
				"skip a month when they are away"}}},
		{name: "from the point of view of someone", engine: "ideation", focus: "perspective_ideas_gathered",
			msg:  "From the point of view of a parent, a crèche would help.",
			want: map[string]any{"idea_generation.perspective_ideas": []any{"a crèche would help"}}},
	})
}

// What the user likes "that" an option is or does is the clause, one item
// for each "that"; "that" before a noun points at a thing.
func TestExtractionSkillLikedThatIsOneClause(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "one clause", engine: "exploration", focus: "pros_explored",
			msg:  "I like that a subscription app is cheap and quick to start.",
			want: map[string]any{"solution_landscape.option_pros": []any{"a subscription app is cheap and quick to start"}}},
		{name: "a clause for each that", engine: "exploration", focus: "pros_explored",
			msg:  "I like that it's cheap and that Glofox has an app for members.",
			want: map[string]any{"solution_landscape.option_pros": []any{"it's cheap", "Glofox has an app for members"}}},
		{name: "it after a that", engine: "exploration", focus: "pros_explored",
			msg:  "I like that Glofox has an app and that it takes payments.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Glofox has an app", "it takes payments"}}},
		{name: "the keyword again after a clause", engine: "exploration", focus: "pros_explored",
			msg:  "I like that it's cheap and I like the reviews.",
			want: map[string]any{"solution_landscape.option_pros": []any{"it's cheap", "the reviews"}}},
		{name: "a thing after a clause", engine: "exploration", focus: "pros_explored",
			msg:  "I like that the app is simple, and the price.",
			want: map[string]any{"solution_landscape.option_pros": []any{"the app is simple", "the price"}}},
		{name: "a clause of two subjects", engine: "exploration", focus: "pros_explored",
			msg:  "I like that the app is simple and the price is low.",
			want: map[string]any{"solution_landscape.option_pros": []any{"the app is simple and the price is low"}}},
		{name: "that before a noun", engine: "exploration", focus: "pros_explored",
			msg:  "I like that app and the price.",
			want: map[string]any{"solution_landscape.option_pros": []any{"that app", "the price"}}},
	})
}

// What the user says of themselves after a "but" is none of the options
// they named before it.
func TestExtractionSkillOptionsEndAtTheUsersBut(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "but I have never", engine: "exploration", focus: "prior_knowledge_assessed",
			msg:  "I've heard of Recharge, but I have never built software myself.",
			want: map[string]any{"solution_landscape.options": []any{"Recharge"}}},
		{name: "but we've never", engine: "exploration", focus: "prior_knowledge_assessed",
			msg:  "I've heard of Recharge and Bold but we've never used them.",
			want: map[string]any{"solution_landscape.options": []any{"Recharge", "Bold"}}},
		{name: "but I've heard of more", engine: "exploration", focus: "prior_knowledge_assessed",
			msg:  "We're looking at Mindbody but I've heard of Glofox too.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody", "Glofox"}}},
		{name: "but we're considering more, then a clause of ours", engine: "exploration", focus: "options_identified",
			msg:  "I've heard of Mindbody, but we're considering Glofox, but I have never used either.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody", "Glofox"}}},
	})
}

// Groups of people counted in one sentence are as many users as they
// add up to, not the last group's count; a count of things beside them,
// or one before a colon that counts them all, is no such sum. A team's
// head count adds up its staff only, never the customers beside them, and
// the parts of a team counted after its whole ("8 of us, 2 partners and 6
// employees", "Four of us, two bakers and two in the shop") restate it.
// "N of us" counts people, wherever it is said ("5 of us in the shop"),
// and so does a people noun before a place ("6 staff at the bakery"); the
// users counted beside "us" are the users, whom the team tells ("5 of us
// in the team and about 200 clients" are 200 users, and a team of 5).
func TestExtractionSkillGroupsCountedAddUp(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "subscribers and staff", focus: "user_count_estimated", msg: "About 900 subscribers and two staff.",
			want: map[string]any{"users_and_personas.user_count": 902.0}},
		{name: "what we have", focus: "user_count_estimated", msg: "We have about 40 technicians and 5 office staff.",
			want: map[string]any{"users_and_personas.user_count": 45.0}},
		{name: "a head count and who it is", focus: "user_count_estimated",
			msg: "About 900 users: our subscribers and the two of us.", want: map[string]any{"users_and_personas.user_count": 900.0}},
		{name: "people and things", focus: "user_count_estimated", msg: "40 technicians and 3 vans.",
			want: map[string]any{"users_and_personas.user_count": 40.0}},
		{name: "the team asked", engine: "business-profile", focus: "team_size_known", msg: "Four bakers and two drivers.",
			want: map[string]any{"team_composition.headcount": 6.0}},
		{name: "the team beside the subscribers", engine: "business-profile", focus: "team_size_known",
			msg: "About 900 subscribers and two staff.", want: map[string]any{"team_composition.headcount": 2.0}},
		{name: "the team beside the customers", engine: "business-profile", focus: "team_size_known",
			msg: "We've got 5 engineers and 200 customers.", want: map[string]any{"team_composition.headcount": 5.0}},
		{name: "the team and its parts", engine: "business-profile", focus: "team_size_known",
			msg: "There are 8 of us, 2 partners and 6 employees.", want: map[string]any{"team_composition.headcount": 8.0}},
		{name: "the team beside the user", engine: "business-profile", focus: "team_size_known",
			msg: "Just the two of us and a part-time tour guide.", want: map[string]any{"team_composition.headcount": 3.0}},
		{name: "of us and the part-timers", engine: "business-profile", focus: "team_size_known",
			msg: "Three of us full time plus six part-time staff.", want: map[string]any{"team_composition.headcount": 9.0}},
		{name: "of us in the shop and the drivers", engine: "business-profile", focus: "team_size_known",
			msg: "There are 5 of us in the shop and 2 drivers.", want: map[string]any{"team_composition.headcount": 7.0}},
		{name: "staff at a place and the drivers", engine: "business-profile", focus: "team_size_known",
			msg: "We have 6 staff at the bakery and 2 drivers.", want: map[string]any{"team_composition.headcount": 8.0}},
		{name: "of us and parts without a noun", engine: "business-profile", focus: "team_size_known",
			msg: "Four of us, two bakers and two in the shop.", want: map[string]any{"team_composition.headcount": 4.0}},
		{name: "staff at a place and the vans", engine: "business-profile", focus: "team_size_known",
			msg: "We have 6 staff at the bakery and 2 vans.", want: map[string]any{"team_composition.headcount": 6.0}},
		{name: "the users beside the team", focus: "user_count_estimated",
			msg:  "There are 5 of us in the team and about 200 clients.",
			want: map[string]any{"users_and_personas.user_count": 200.0}},
		{name: "the team beside the clients", engine: "business-profile", focus: "team_size_known",
			msg: "There are 5 of us in the team and about 200 clients.", want: map[string]any{"team_composition.headcount": 5.0}},
	})
}

// A keyword said only within what another field's pattern found names
// that value: "decide by January" is a date to decide by, not the
// problem to explore, which "decide" is a keyword of.
func TestExtractionSkillKeywordWithinAPatternsValue(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a date to decide by", engine: "exploration", msg: "I'd like to decide by January.",
			want:   map[string]any{"decision.constraints": []any{"decide by January"}},
			absent: []string{"initial_state.problem_statement"}},
		{name: "the keyword said outside it too", engine: "exploration",
			msg: "I need to decide which booking tool to use, and decide by January.",
			want: map[string]any{"decision.constraints": []any{"decide by January"},
				"initial_state.problem_statement": "I need to decide which booking tool to use, and decide by January"}},
	})
}

// What a name has that is good is a pro of an option only when the name
// is one of the options known, however it is spaced ("Mind Body"), or
// reads as a product, said with what is said of one (an app, a price, too
// expensive, a favourite, looks great): that name is an option more. A
// name said with a place or a scene ("Leeds has a great yoga scene"), or
// with nothing that tells a product ("Leeds is great"), is none. What is
// said of anything (a favourite, too expensive, looks great) tells no
// product where the clause goes on to say what the name is or is for
// ("Sarah is my favourite trainer", "Instagram looks great for
// marketing"), nor of a channel or a class when no option is one
// ("Facebook is my favourite" of gym software).
func TestExtractionSkillProOfANameThatIsNoOption(t *testing.T) {
	t.Parallel()
	const (
		opts                  = "solution_landscape.options"
		pros, cons, reactions = "solution_landscape.option_pros", "solution_landscape.option_cons", "solution_landscape.reactions"
	)
	known := []string{"Mindbody", "Glofox", "a custom app"}
	options := map[string]any{opts: known}
	grown := func(name string) []any { return []any{"Mindbody", "Glofox", "a custom app", name} }
	runExtractionCases(t, []extractionCase{
		{name: "a place", engine: "exploration", focus: "pros_explored", current: options,
			msg: "Leeds has a great yoga scene.", absent: []string{pros, opts}},
		{name: "a place said great", engine: "exploration", focus: "pros_explored", current: options,
			msg: "Leeds is great.", absent: []string{pros, opts}},
		{name: "a place, no option known", engine: "exploration", focus: "pros_explored",
			msg: "Leeds has a great yoga scene.", absent: []string{pros, opts}},
		{name: "a product, no option known", engine: "exploration", focus: "pros_explored",
			msg: "PushPress looks great.", want: map[string]any{pros: []any{"PushPress looks great"}, opts: []any{"PushPress"}}},
		{name: "a place beside an option", engine: "exploration", focus: "pros_explored", current: options,
			msg:  "Leeds has a great yoga scene, and Glofox is cheap.",
			want: map[string]any{pros: []any{"Glofox is cheap"}}, absent: []string{opts}},
		{name: "an option", engine: "exploration", focus: "pros_explored", current: options,
			msg:  "Glofox has a nice app for members.",
			want: map[string]any{pros: []any{"Glofox has a nice app for members"}}, absent: []string{opts}},
		{name: "an option spaced otherwise", engine: "exploration", focus: "pros_explored", current: options,
			msg:  "Mind Body is great.",
			want: map[string]any{pros: []any{"Mind Body is great"}}, absent: []string{opts}},
		{name: "a new product that looks great", engine: "exploration", focus: "pros_explored", current: options,
			msg:  "PushPress looks great too.",
			want: map[string]any{pros: []any{"PushPress looks great"}, opts: grown("PushPress")}},
		{name: "a new product too expensive", engine: "exploration", focus: "cons_explored", current: options,
			msg:  "Wodify is too expensive.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: grown("Wodify")}},
		{name: "a new product that is a favourite", engine: "exploration", focus: "user_reactions_captured",
			current: options, msg: "PushPress is my favourite.",
			want: map[string]any{reactions: []any{"PushPress is my favourite"}, opts: grown("PushPress")}},
		{name: "a new product with a nice app", engine: "exploration", focus: "pros_explored", current: options,
			msg:  "Wodify has a nice app.",
			want: map[string]any{pros: []any{"Wodify has a nice app"}, opts: grown("Wodify")}},
		{name: "a new product with plans", engine: "exploration", focus: "pros_explored", current: options,
			msg:  "Zenplanner has great plans for small gyms.",
			want: map[string]any{pros: []any{"Zenplanner has great plans for small gyms"}, opts: grown("Zenplanner")}},
		{name: "a new product written plainly that looks great", engine: "exploration", focus: "pros_explored",
			current: options, msg: "Zenplanner looks great too.",
			want: map[string]any{pros: []any{"Zenplanner looks great"}, opts: grown("Zenplanner")}},
		{name: "a new product too expensive for us", engine: "exploration", focus: "cons_explored", current: options,
			msg:  "Wodify is too expensive for us.",
			want: map[string]any{cons: []any{"Wodify is too expensive"}, opts: grown("Wodify")}},
		{name: "a person who is a favourite", engine: "exploration", focus: "user_reactions_captured",
			current: options, msg: "Sarah is my favourite trainer, she's been here for years.",
			absent: []string{reactions, opts}},
		{name: "a place that looks great", engine: "exploration", focus: "pros_explored", current: options,
			msg: "Brighton looks great for a second studio.", absent: []string{pros, opts}},
		{name: "a class that is a favourite", engine: "exploration", focus: "user_reactions_captured",
			current: options, msg: "Pilates is my favourite class.", absent: []string{reactions, opts}},
		{name: "a channel that looks great", engine: "exploration", focus: "pros_explored", current: options,
			msg: "Instagram looks great for marketing.", absent: []string{pros, opts}},
		{name: "a channel too expensive", engine: "exploration", focus: "cons_explored", current: options,
			msg: "Facebook is too expensive for ads.", absent: []string{cons, opts}},
		{name: "a channel that is a favourite", engine: "exploration", focus: "user_reactions_captured",
			current: options, msg: "Facebook is my favourite.", absent: []string{reactions, opts}},
		{name: "a channel among channels", engine: "exploration", focus: "user_reactions_captured",
			current: map[string]any{opts: []string{"Instagram", "Facebook"}}, msg: "TikTok is my favourite.",
			want: map[string]any{reactions: []any{"TikTok is my favourite"}, opts: []any{"Instagram", "Facebook", "TikTok"}}},
	})
}
