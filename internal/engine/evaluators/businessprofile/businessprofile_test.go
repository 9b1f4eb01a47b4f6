package businessprofile

import (
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
)

// item is an obligation state: id, category, required, status.
func item(id, cat string, req bool, st engine.ObligationStatusValue) engine.ObligationItem {
	return engine.ObligationItem{ID: id, Category: cat, Required: req, Status: st}
}

func mem(phase string, history []string, items ...engine.ObligationItem) *engine.WorkingMemory {
	m := &engine.WorkingMemory{Extraction: engine.NewExtraction()}
	m.Phase.Current = phase
	for _, h := range history {
		m.Phase.History = append(m.Phase.History, engine.PhaseRecord{PhaseID: h})
	}
	m.Obligations.Items = items
	return m
}

func TestSettled(t *testing.T) {
	cats := []string{"team_composition", "operations"}
	tests := []struct {
		name  string
		items []engine.ObligationItem
		want  float64
	}{
		{"nothing required counts as settled", []engine.ObligationItem{item("a", "operations", false, engine.StatusPending)}, 1},
		{"all pending", []engine.ObligationItem{
			item("a", "team_composition", true, engine.StatusPending), item("b", "operations", true, engine.StatusPending)}, 0},
		{"partial is not settled", []engine.ObligationItem{
			item("a", "team_composition", true, engine.StatusSatisfied), item("b", "operations", true, engine.StatusPartial)}, 0.5},
		{"deferred counts as settled", []engine.ObligationItem{
			item("a", "team_composition", true, engine.StatusSatisfied), item("b", "operations", true, engine.StatusDeferred)}, 1},
		{"optional and other categories are ignored", []engine.ObligationItem{
			item("a", "team_composition", true, engine.StatusSatisfied), item("b", "operations", false, engine.StatusPending),
			item("c", "industry", true, engine.StatusPending)}, 1},
		{"three of four", []engine.ObligationItem{
			item("a", "team_composition", true, engine.StatusSatisfied), item("b", "team_composition", true, engine.StatusSatisfied),
			item("c", "operations", true, engine.StatusSatisfied), item("d", "operations", true, engine.StatusPending)}, 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Settled(cats)(mem("OPERATIONS", nil, tt.items...)); got != tt.want {
				t.Errorf("Settled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStarted(t *testing.T) {
	g := Groups()[2] // technology
	tests := []struct {
		name    string
		phase   string
		history []string
		items   []engine.ObligationItem
		want    float64
	}{
		{"earlier phase, nothing said", "FOUNDATIONS", nil, []engine.ObligationItem{item("a", "technology_stack", true, engine.StatusPending)}, 0},
		{"volunteered early", "FOUNDATIONS", nil, []engine.ObligationItem{item("a", "technology_stack", true, engine.StatusPartial)}, 1},
		{"satisfied in another category of the group", "OPERATIONS", []string{"FOUNDATIONS"},
			[]engine.ObligationItem{item("a", "partnerships_and_integrations", false, engine.StatusSatisfied)}, 1},
		{"deferred is nothing to show", "OPERATIONS", []string{"FOUNDATIONS"},
			[]engine.ObligationItem{item("a", "data_and_analytics", true, engine.StatusDeferred)}, 0},
		{"its phase is current", "TECHNOLOGY", []string{"FOUNDATIONS", "OPERATIONS"}, nil, 1},
		{"its phase is past", "COMMERCIALS", []string{"FOUNDATIONS", "OPERATIONS", "TECHNOLOGY"}, nil, 1},
		{"another group's evidence", "FOUNDATIONS", nil, []engine.ObligationItem{item("a", "financial_model", true, engine.StatusSatisfied)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Started(g)(mem(tt.phase, tt.history, tt.items...)); got != tt.want {
				t.Errorf("Started(%s) = %v, want %v", g.Name, got, tt.want)
			}
		})
	}
}

func TestGroupsCoverTheFourteenDimensions(t *testing.T) {
	want := []string{"industry", "businessModel", "targetMarket", "productOffering", "teamComposition", "operations",
		"customerExperience", "technologyStack", "dataAndAnalytics", "financialModel", "brandAndMarketing",
		"partnershipsAndIntegrations", "regulatoryAndCompliance", "growthAndScaling"} // the seed's names
	// The walk groups partnerships with technology, so compare as sets.
	var got []string
	for _, d := range Dimensions() {
		got = append(got, camel(d))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("dimensions = %v, want the seed's %v", got, want)
	}
	names := []string{}
	for n := range Evaluators() {
		names = append(names, n)
	}
	slices.Sort(names)
	wantNames := []string{"commercialsSettled", "commercialsStarted", "foundationsSettled", "operationsSettled", "operationsStarted",
		"riskAndGrowthSettled", "riskAndGrowthStarted", "technologySettled", "technologyStarted"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("evaluators = %v, want %v", names, wantNames)
	}
}

func camel(snake string) string {
	out := []byte{}
	up := false
	for i := 0; i < len(snake); i++ {
		c := snake[i]
		switch {
		case c == '_':
			up = true
		case up:
			out = append(out, c-'a'+'A')
			up = false
		default:
			out = append(out, c)
		}
	}
	return string(out)
}
