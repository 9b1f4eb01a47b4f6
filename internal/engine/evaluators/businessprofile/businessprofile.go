// Package businessprofile holds the custom evaluators of the business-profile
// engine (engines/business-profile.yaml), registered by name.
//
// The engine walks the profile's 14 dimensions (its obligation categories) in
// five groups, one phase each, before a review phase. Two things the YAML
// conditions cannot say alone are evaluated here:
//
//   - when a group is done: every required obligation of all its dimensions is
//     satisfied or put off by the user. A transition trigger holds a single
//     condition, and obligation_satisfaction counts one category and does not
//     count deferrals, so a phase spanning three dimensions needs this;
//   - when a group's sidebar section unfolds: as soon as the user has said
//     something about it (answers arrive in any order, as on a form filled
//     from a conversation) or the walk has reached its phase.
//
// Unlike the framework, these functions know one engine's categories and
// phase ids: that is what custom evaluators are for.
package businessprofile

import (
	"slices"

	"github.com/praetorhq/praetor/internal/engine"
)

// Group is a set of profile dimensions walked in one phase.
type Group struct {
	// Name is the stem of the group's evaluator names: <Name>Settled and
	// <Name>Started.
	Name string
	// Phase is the id of the phase that asks about the group.
	Phase string
	// Categories are the group's dimensions (obligation categories).
	Categories []string
}

// Groups returns the five groups in the order the engine walks them.
func Groups() []Group {
	return []Group{
		{Name: "foundations", Phase: "FOUNDATIONS",
			Categories: []string{"industry", "business_model", "target_market", "product_offering"}},
		{Name: "operations", Phase: "OPERATIONS",
			Categories: []string{"team_composition", "operations", "customer_experience"}},
		{Name: "technology", Phase: "TECHNOLOGY",
			Categories: []string{"technology_stack", "data_and_analytics", "partnerships_and_integrations"}},
		{Name: "commercials", Phase: "COMMERCIALS",
			Categories: []string{"financial_model", "brand_and_marketing"}},
		{Name: "riskAndGrowth", Phase: "RISK_AND_GROWTH",
			Categories: []string{"regulatory_and_compliance", "growth_and_scaling"}},
	}
}

// Dimensions returns the 14 profile dimensions, in the engine's order.
func Dimensions() []string {
	var out []string
	for _, g := range Groups() {
		out = append(out, g.Categories...)
	}
	return out
}

// Evaluators returns the evaluators by name: <group>Settled for every group
// and <group>Started for every group but the first, whose sidebar section is
// static.
func Evaluators() map[string]engine.Evaluator {
	out := map[string]engine.Evaluator{}
	for i, g := range Groups() {
		out[g.Name+"Settled"] = Settled(g.Categories)
		if i > 0 {
			out[g.Name+"Started"] = Started(g)
		}
	}
	return out
}

// Settled scores a set of dimensions by the share of their required
// obligations that are satisfied or deferred: 1.0 when nothing required is
// left to ask. A deferred obligation counts because the user chose to put it
// off; the review phase shows it as a gap rather than holding the walk. With
// no required obligation the dimensions are settled.
func Settled(categories []string) engine.Evaluator {
	return func(m *engine.WorkingMemory) float64 {
		total, done := 0, 0
		for _, o := range m.Obligations.Items {
			if !o.Required || !slices.Contains(categories, o.Category) {
				continue
			}
			total++
			if o.Status == engine.StatusSatisfied || o.Status == engine.StatusDeferred {
				done++
			}
		}
		if total == 0 {
			return 1
		}
		return float64(done) / float64(total)
	}
}

// Started scores 1.0 once a group has something to show — an obligation of
// its dimensions is satisfied or partly answered — or the conversation has
// reached the group's phase (it is current or in the history); else 0.
func Started(g Group) engine.Evaluator {
	return func(m *engine.WorkingMemory) float64 {
		if m.Phase.Current == g.Phase {
			return 1
		}
		for _, h := range m.Phase.History {
			if h.PhaseID == g.Phase {
				return 1
			}
		}
		for _, o := range m.Obligations.Items {
			if slices.Contains(g.Categories, o.Category) &&
				(o.Status == engine.StatusSatisfied || o.Status == engine.StatusPartial) {
				return 1
			}
		}
		return 0
	}
}
