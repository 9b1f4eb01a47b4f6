package offlineskill_test

import "testing"

// A business owner's answer that plainly fits a field (a year of opening,
// a head count, a revenue figure, a problem, the tools used) is filed
// there, and not under the question just asked, whose type it does not
// fit: an enumeration asked takes only a value its cues map. A bare list
// said to the list asked is its items, whatever keyword of another field
// one of them holds ("the packaging supplier").
func TestExtractionSkillFilesWhatFitsAnotherField(t *testing.T) {
	t.Parallel()
	tests := []extractionCase{
		// The trade, by a noun alone; a company names none.
		{name: "a trade named by a noun alone is the industry", msg: "We're a bakery in York, trading since 2016.",
			want: map[string]any{"industry.sector": "bakery", "industry.location": "York", "industry.year_opened": 2016.0}},
		{name: "a company alone is no industry", msg: "We're a company that sells furniture.",
			absent: []string{"industry.sector"}},
		// A head count, a problem.
		{name: "a head count said to the stage asked is the head count", focus: "business_stage_known",
			msg:    "There are six of us: me, my sister, and four bakers.",
			want:   map[string]any{"team_composition.headcount": 6.0, "team_composition.key_roles": []any{"my sister", "four bakers"}},
			absent: []string{"industry.business_stage", "industry.years_operating"}},
		{name: "a head count before a colon answers the head count asked", focus: "team_size_known",
			msg:  "There are six of us: me, my sister, and four bakers.",
			want: map[string]any{"team_composition.headcount": 6.0}},
		{name: "a part of the group beside the user is no head count",
			msg: "There are two of us and a part-timer.", absent: []string{"team_composition.headcount"}},
		{name: "a problem said to the value proposition asked is a bottleneck", focus: "value_proposition_stated",
			msg:    "Our biggest problem is staff leaving after a few months.",
			want:   map[string]any{"operations.bottlenecks": []any{"staff leaving after a few months"}},
			absent: []string{"business_model.value_proposition"}},
		// The enumeration asked takes its values only; a number the
		// question also asks for takes a number.
		{name: "an enumeration asked takes no answer that names none of its values", focus: "business_stage_known",
			msg: "Hard to say, we've had ups and downs.", absent: []string{"industry.business_stage", "industry.years_operating"}},
		{name: "a number to a question of an enumeration and a number is the number", focus: "business_stage_known",
			msg: "About five.", want: map[string]any{"industry.years_operating": 5.0}, absent: []string{"industry.business_stage"}},
		{name: "a value of the enumeration asked is its value", focus: "business_model_type_known",
			msg: "Mostly businesses, bars and hotels.", want: map[string]any{"business_model.model_type": "B2B"}},
		// The year the business opened, as said: the prompt carries no
		// date to count years from.
		{name: "the year the business has been open since",
			msg: "We run a small bakery in Leeds, open since 2019.",
			want: map[string]any{"industry.year_opened": 2019.0, "industry.sector": "small bakery",
				"industry.location": "Leeds"},
			absent: []string{"industry.years_operating"}},
		{name: "the year the business started answers how long it has traded", focus: "business_stage_known",
			msg: "We started in 2019.", want: map[string]any{"industry.year_opened": 2019.0},
			absent: []string{"industry.business_stage", "industry.years_operating"}},
		{name: "a year alone answers how long the business has traded with the year", focus: "business_stage_known",
			msg: "Since 2019.", want: map[string]any{"industry.year_opened": 2019.0},
			absent: []string{"industry.business_stage", "industry.years_operating"}},
		{name: "a year something else started is no year opened",
			msg: "We started using Square in 2021.", absent: []string{"industry.year_opened"}},
		{name: "the years trading are the years", msg: "We've been trading for 5 years.",
			want: map[string]any{"industry.years_operating": 5.0}, absent: []string{"industry.year_opened"}},
		// What is sold, and to whom; who pays is said in its own words.
		{name: "what the business sells, then whom to", focus: "business_model_type_known",
			msg: "We sell bread, pastries and custom cakes, mostly to locals and a couple of cafes.",
			want: map[string]any{"product_offering.core_products": []any{"bread", "pastries", "custom cakes"},
				"target_market.customer_segments": []any{"locals", "a couple of cafes"}},
			absent: []string{"business_model.model_type"}},
		{name: "what the business sells, alone", msg: "We sell sourdough, bagels and coffee.",
			want:   map[string]any{"product_offering.core_products": []any{"sourdough", "bagels", "coffee"}},
			absent: []string{"target_market.customer_segments"}},
		{name: "how much the business sells names no products", msg: "We sell up to 300 loaves a day.",
			absent: []string{"product_offering.core_products", "target_market.customer_segments"}},
		{name: "selling more than it makes names neither products nor customers",
			msg:    "We sell more than we can bake, so we want to grow.",
			absent: []string{"product_offering.core_products", "target_market.customer_segments"}},
		{name: "where the business sells names no products", msg: "We sell online and at two markets.",
			absent: []string{"product_offering.core_products"}},
		// Revenue: the amount a year, and a share of it from a source.
		{name: "revenue without a currency sign, and a share of it", focus: "revenue_streams_identified",
			msg: "Revenue is about 300k a year, roughly 60 percent from the shop.",
			want: map[string]any{"financial_model.annual_revenue": "about 300k a year",
				"business_model.revenue_streams": []any{"60 percent from the shop"}}},
		{name: "what the business turns over a year", msg: "We turn over about 450k a year.",
			want: map[string]any{"financial_model.annual_revenue": "about 450k a year"}},
		{name: "a count a day is no revenue", msg: "We make about 300 loaves a day.",
			absent: []string{"financial_model.annual_revenue"}},
		// The tools used, without what each is for.
		{name: "the tools used for things are the systems", focus: "customer_segments_identified",
			msg: "We use Square for the till and spreadsheets for orders.",
			want: map[string]any{"technology_stack.current_systems": []any{"Square", "spreadsheets"},
				"technology_stack.digital_maturity": "low"},
			absent: []string{"target_market.customer_segments"}},
		{name: "the names used are the systems", msg: "We use Xero and Shopify.",
			want: map[string]any{"technology_stack.current_systems": []any{"Xero", "Shopify"}}},
		{name: "an ingredient used is no system", msg: "We use local flour for the bread.",
			absent: []string{"technology_stack.current_systems"}},
		// A bare list answers the list asked, an item of ours as well.
		{name: "a bare list of partners, one of ours", focus: "key_partners_identified",
			msg: "Our flour mill, the packaging supplier and Deliveroo.",
			want: map[string]any{"partnerships_and_integrations.key_partners": []any{"Our flour mill",
				"the packaging supplier", "Deliveroo"}},
			absent: []string{"operations.supply_chain"}},
	}
	for i := range tests {
		tests[i].engine = "business-profile"
	}
	runExtractionCases(t, tests)
}
