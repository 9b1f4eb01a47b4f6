package offlineskill_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
)

// An "or" that makes one phrase parts no items: an idiom ("rain or
// shine", "one way or another") or the subject of a verb that follows the
// second noun ("Tea or coffee is fine").
func TestSplitItemsOrOfOnePhrase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"Online booking, rain or shine alerts and reminders": {"Online booking", "rain or shine alerts", "reminders"},
		"Word of mouth, one way or another":                  {"Word of mouth", "one way or another"},
		"Mindbody is expensive, and it's all or nothing":     {"Mindbody is expensive", "it's all or nothing"},
		"A stall at the market, sooner or later":             {"A stall at the market", "sooner or later"},
		"Tea or coffee is fine":                              {"Tea or coffee is fine"},
		"Mindbody or Glofox would both work":                 {"Mindbody or Glofox would both work"},
		"Mindbody or Glofox is fine, I just need one":        {"Mindbody or Glofox is fine", "I just need one"},
		"Xero or QuickBooks":                                 {"Xero", "QuickBooks"},
		"Xero or QuickBooks if it's cheaper":                 {"Xero", "QuickBooks if it's cheaper"},
		"Fewer no-shows or late cancellations":               {"Fewer no-shows", "late cancellations"},
		"Mindbody, Glofox or maybe a spreadsheet":            {"Mindbody", "Glofox", "a spreadsheet"},
		"It needs to sync with Xero or QuickBooks":           {"It needs to sync with Xero", "QuickBooks"},
	} {
		if got := offlineskill.SplitItems(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitItems(%q) = %q, want %q", in, got, want)
		}
	}
}

// A sentence that drops or closes something takes off the list only the
// item it names: not every item the sentence says ("Paper flyers are no
// longer worth it, we put everything on Instagram" keeps Instagram), nor
// one beside a close that is no drop ("Closing time", "closed a deal",
// "Shut the door and the bread stays warm"); an "it" it closes is the item
// of the clause just before.
func TestExtractionSkillDropTakesOffOnlyWhatItNames(t *testing.T) {
	t.Parallel()
	cat := enginetest.Shipped(t)
	channels := []string{"Instagram", "paper flyers"}
	products := []string{"bread", "cakes", "coffee"}
	tests := []struct {
		engine, focus, path string
		current             []string
		msg                 string
		gone, kept          []string
	}{
		{"business-profile", "acquisition_channels_known", "brand_and_marketing.acquisition_channels", channels,
			"Paper flyers are no longer worth it, we put everything on Instagram.", []string{"paper flyers"}, []string{"Instagram"}},
		{"business-profile", "acquisition_channels_known", "brand_and_marketing.acquisition_channels", channels,
			"The market stall is no longer worth it, Instagram brings the orders.", nil, channels},
		{"business-profile", "acquisition_channels_known", "brand_and_marketing.acquisition_channels", channels,
			"Driving to Leeds is no longer worth it for Instagram orders.", nil, channels},
		{"project-discovery", "integrations_identified", "constraints.integrations", []string{"Xero", "Shopify"},
			"Xero is no longer worth the money, but Shopify is fine.", []string{"Xero"}, []string{"Shopify"}},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"We just closed a deal to sell our bread to Tesco.", nil, products},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"Closing time, the bread is half price.", nil, products},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"Shut the door and the bread stays warm.", nil, products},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"We closed the old shop and moved the bread ovens to the new one.", nil, products},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"We're closing the coffee bar, it never paid.", []string{"coffee"}, []string{"bread", "cakes"}},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"The coffee never paid, so we're closing it.", []string{"coffee"}, []string{"bread", "cakes"}},
		{"business-profile", "core_offering_described", "product_offering.core_products", products,
			"The bread sells well, the coffee never paid, so we're closing it.", []string{"coffee"}, []string{"bread", "cakes"}},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			t.Parallel()
			def, _ := cat.Get(tt.engine)
			ans := extract(t, def, known(t, def, map[string]any{tt.path: tt.current}), tt.focus, tt.msg)
			fa, ok := ans.Fields[tt.path]
			if !ok {
				if len(tt.gone) > 0 {
					t.Fatalf("%s not answered, want %q taken off; answer %s", tt.path, tt.gone, answered(ans.Fields))
				}
				return
			}
			var got []string
			_ = json.Unmarshal(fa.Value, &got)
			for _, it := range tt.gone {
				if slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, it) }) {
					t.Errorf("%s = %q, want %q taken off", tt.path, got, it)
				}
			}
			for _, it := range tt.kept {
				// An item restated with more words ("Instagram brings the
				// orders") is kept as well.
				if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, it) }) {
					t.Errorf("%s = %q, want %q kept", tt.path, got, it)
				}
			}
		})
	}
}

// "cause" is a reason only after a comma ("An agency, cause we have no
// developers"): as a verb or a noun it is part of the value ("Late
// payments cause cash flow gaps", "Root cause is the paper forms").
func TestExtractionSkillCauseIsNoReason(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "cause as a verb", focus: "core_problem_defined", msg: "Late payments cause cash flow gaps.",
			want: map[string]any{"purpose_and_problem.core_problem": "Late payments cause cash flow gaps"}},
		{name: "cause as a noun", focus: "core_problem_defined", msg: "Root cause is the paper forms.",
			want: map[string]any{"purpose_and_problem.core_problem": "Root cause is the paper forms"}},
		{name: "cause in a name", engine: "business-profile", focus: "pricing_model_known",
			msg:  "Good cause pricing for charities.",
			want: map[string]any{"business_model.pricing_model": "Good cause pricing for charities"}},
		{name: "cause after a comma is a reason", focus: "team_resources_known",
			msg: "An agency, cause we have no developers.", want: map[string]any{"constraints.team": "An agency"}},
	})
}

// The "it" an item opens with is the option the clause before names as
// its subject, said of with a verb ("Mindbody looks powerful"): not a
// capitalised word that opens a sentence and names nothing ("Most
// studios", "Yoga teachers", "Last year"), a person who does something
// to the option ("Sarah recommended Glofox"), nor a day or a month.
func TestExtractionSkillItIsTheOptionNamed(t *testing.T) {
	t.Parallel()
	const cons = "solution_landscape.option_cons"
	cases := []extractionCase{
		{msg: "Most studios use Mindbody but it's too expensive.", want: map[string]any{cons: []any{"it's too expensive"}}},
		{msg: "Lots of studios in Leeds use Mindbody but it's too expensive.",
			want: map[string]any{cons: []any{"it's too expensive"}}},
		{msg: "Yoga teachers love Glofox but it's too basic.", want: map[string]any{cons: []any{"it's too basic"}}},
		{msg: "Sarah recommended Glofox but it's too basic.", want: map[string]any{cons: []any{"it's too basic"}}},
		{msg: "Last year Mindbody was cheap but it's too expensive now.",
			want: map[string]any{cons: []any{"it's too expensive"}}},
		{msg: "January is busy but it's too hard to switch then.", want: map[string]any{cons: []any{"it's too hard"}}},
		{msg: "Mindbody's great but it's too expensive.", want: map[string]any{cons: []any{"Mindbody is too expensive"}}},
		{msg: "Google Forms is free but it's too basic.", want: map[string]any{cons: []any{"Google Forms is too basic"}}},
		{msg: "Glofox has a nice app, but it is too basic for us.", want: map[string]any{cons: []any{"Glofox is too basic"}}},
	}
	for i := range cases {
		cases[i].name, cases[i].engine, cases[i].focus = cases[i].msg, "exploration", "cons_explored"
	}
	runExtractionCases(t, cases)
}

// A number said in the unit the question asks for counts one thing ("Twelve
// years" are the years trading, not the year opened), and a short time
// said beside the years trading, or "not long after" a time, says no early
// stage.
func TestExtractionSkillYearsTradingAreOneAnswer(t *testing.T) {
	t.Parallel()
	const stage, years, opened = "industry.business_stage", "industry.years_operating", "industry.year_opened"
	runExtractionCases(t, []extractionCase{
		{name: "years and a recent opening of a part", engine: "business-profile", focus: "business_stage_known",
			msg:  "Twelve years, though the second shop only opened last spring.",
			want: map[string]any{years: 12.0}, absent: []string{stage, opened}},
		{name: "years and a refit a few months ago", engine: "business-profile", focus: "business_stage_known",
			msg:  "About ten years, we did a refit a few months ago.",
			want: map[string]any{years: 10.0}, absent: []string{stage, opened}},
		{name: "not long after a time", engine: "business-profile", focus: "business_stage_known",
			msg: "Not long after the war, my grandad opened it.", absent: []string{stage}},
		{name: "not long alone", engine: "business-profile", focus: "business_stage_known",
			msg: "Not long at all, we only opened in 2023.", want: map[string]any{stage: "early-stage", opened: 2023.0}},
	})
}

// What the options are for is guessed from the list of options alone, not
// from another list a pattern found ("I'm leaning towards the back wall
// for the mats" is a reaction, and says no problem to explore).
func TestExtractionSkillOnlyTheOptionsSayWhatTheyAreFor(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "a reaction with a purpose", engine: "exploration", msg: "I'm leaning towards the back wall for the mats.",
			absent: []string{"initial_state.problem_statement"}},
		{name: "a pro with a purpose", engine: "exploration", msg: "Glofox has a nice app for members.",
			absent: []string{"initial_state.problem_statement"}},
		{name: "the options with a purpose", engine: "exploration",
			msg:  "We're thinking about Square, Shopify or a custom website for online orders.",
			want: map[string]any{"initial_state.problem_statement": "We're thinking about Square, Shopify or a custom website for online orders"}},
	})
}

// An infinitive that opens a remark on the answer ("To start, …", "To
// answer your question, …") states no purpose.
func TestExtractionSkillOpeningInfinitiveIsNoGoal(t *testing.T) {
	t.Parallel()
	var cases []extractionCase
	for _, msg := range []string{"To answer your question, the price.", "To start, the price.",
		"To put it simply, the price.", "To be blunt, the price.", "To summarise, price matters most."} {
		cases = append(cases, extractionCase{name: msg, engine: "exploration", focus: "tradeoffs_weighed", msg: msg,
			absent: []string{"initial_state.goals"}})
	}
	runExtractionCases(t, append(cases, extractionCase{name: "a purpose", engine: "exploration",
		focus: "tradeoffs_weighed", msg: "To start taking bookings online.",
		want: map[string]any{"initial_state.goals": []any{"start taking bookings online"}}}))
}

// A head count that opens the answer before a colon ("Six of us: me, my
// sister and four bakers") answers how many work in the business, beside
// the roles the colon leads into, as "There are six of us: …" does.
func TestExtractionSkillHeadCountBeforeAColon(t *testing.T) {
	t.Parallel()
	const headcount = "team_composition.headcount"
	runExtractionCases(t, []extractionCase{
		{name: "six of us", engine: "business-profile", focus: "team_size_known",
			msg: "Six of us: me, my sister and four bakers.", want: map[string]any{headcount: 6.0}},
		{name: "two of us", engine: "business-profile", focus: "team_size_known",
			msg: "Two of us: me and my sister.", want: map[string]any{headcount: 2.0}},
		{name: "two of us doing something", engine: "business-profile", focus: "team_size_known",
			msg: "Two of us run the shop and my sister bakes.", absent: []string{headcount}},
	})
}

// "Covers it" and "done" end what the user has to say only as a closing
// remark ("That covers it", "I think we're done"): "The grant covers it"
// is a budget, "I'm done texting everyone" what the user does now.
func TestExtractionSkillCoversItOrDoneIsNotAlwaysAClose(t *testing.T) {
	t.Parallel()
	runExtractionCases(t, []extractionCase{
		{name: "what covers the cost", focus: "budget_range_known", msg: "The grant covers it.",
			want: map[string]any{"constraints.budget": "The grant covers it"}},
		{name: "what covers a risk", engine: "ideation", focus: "constraints_known", msg: "Insurance covers it, mostly.",
			want: map[string]any{"problem_space.constraints": []any{"Insurance covers it"}}},
		{name: "done doing something", focus: "current_solution_understood", msg: "I'm done texting everyone.",
			want: map[string]any{"purpose_and_problem.current_solution": "I'm done texting everyone"}},
		{name: "done with something", engine: "business-profile", focus: "tech_pain_points_identified",
			msg: "We're done with paper.", want: map[string]any{"technology_stack.tech_pain_points": []any{"We're done with paper"}}},
		{name: "a closing remark", focus: "current_solution_understood", msg: "I think we're done for now.",
			absent: []string{"purpose_and_problem.current_solution"}},
	})
}

// A greeting alone answers no question: asked who is affected, "Hi" was
// filed as the affected users and said back.
func TestExtractionSkillGreetingFilesNothing(t *testing.T) {
	t.Parallel()
	var cases []extractionCase
	for _, msg := range []string{"Hi", "Hi!", "Hello there", "Hey", "Hello!"} {
		cases = append(cases, extractionCase{name: msg, engine: "ideation", focus: "affected_users_known", msg: msg,
			absent: []string{"problem_space.affected_users"}})
	}
	runExtractionCases(t, append(cases, extractionCase{name: "a greeting then an answer", engine: "ideation",
		focus: "affected_users_known", msg: "Hi! Mostly the weekend staff.",
		want: map[string]any{"problem_space.affected_users": "Mostly the weekend staff"}}))
}
