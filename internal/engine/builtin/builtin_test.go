package builtin_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/engine/evaluators/businessprofile"
	"github.com/praetorhq/praetor/internal/engine/evaluators/exploration"
	"github.com/praetorhq/praetor/internal/engine/evaluators/ideation"
	"github.com/praetorhq/praetor/internal/engine/evaluators/projectdiscovery"
)

func TestShippedEnginesLoadClean(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	cat, rep, err := builtin.Load(reg)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, w := range rep.Warnings {
		t.Errorf("warning: %v", w)
	}
	for _, id := range []string{"project-discovery", "exploration"} {
		if _, ok := cat.Get(id); !ok {
			t.Errorf("engine %s not loaded (have %v)", id, cat.IDs())
		}
	}
}

func TestShippedEngineShapes(t *testing.T) {
	reg, _ := builtin.Registry()
	cat, _, err := builtin.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := cat.Get("project-discovery")
	if len(pd.Phases) != 5 || len(pd.Obligations) != 25 || pd.CompletenessModel.ReadyThreshold != 0.70 ||
		len(pd.CustomEvaluators) != 6 {
		t.Errorf("project-discovery: %d phases, %d obligations, threshold %v, %d evaluators", len(pd.Phases),
			len(pd.Obligations), pd.CompletenessModel.ReadyThreshold, len(pd.CustomEvaluators))
	}
	counts := map[string]int{}
	for _, o := range pd.Obligations {
		counts[o.Category]++
	}
	for _, c := range []string{"purpose", "users", "success", "constraints", "screening"} {
		if counts[c] != 5 {
			t.Errorf("project-discovery category %s has %d obligations, want 5", c, counts[c])
		}
	}
	ex, _ := cat.Get("exploration")
	if len(ex.Phases) != 3 || len(ex.Obligations) != 18 || ex.CompletenessModel.Type != "decision-readiness" ||
		len(ex.CompletenessModel.Heuristics) != 5 || len(ex.CustomEvaluators) != 14 {
		t.Errorf("exploration: %d phases, %d obligations, model %s with %d heuristics, %d evaluators",
			len(ex.Phases), len(ex.Obligations), ex.CompletenessModel.Type, len(ex.CompletenessModel.Heuristics), len(ex.CustomEvaluators))
	}
	if pd.ExitTransitions[0].TargetEngine != "exploration" || ex.ExitTransitions[0].TargetEngine != "project-discovery" {
		t.Error("exit transitions do not link the two engines")
	}
}

// Project discovery 1.2.0 counts the constraints an inbound handoff carries
// (budgetCarried, ...); 1.1.0, on which sessions were recorded, stays as it
// was released: its constraint obligations have their fields alone, so
// such a session replays asking what it asked.
func TestProjectDiscoveryConstraintEvaluatorsFrom1_2_0(t *testing.T) {
	reg, _ := builtin.Registry()
	cat, _, err := builtin.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"budget_range_known": "budgetCarried", "timeline_known": "timelineCarried",
		"tech_constraints_known": "techConstraintsCarried", "integrations_identified": "integrationsCarried",
		"team_resources_known": "teamCarried"}
	for version, named := range map[string]bool{"1.1.0": false, "1.2.0": true} {
		def, ok := cat.Version("project-discovery", version)
		if !ok {
			t.Fatalf("project-discovery %s is not in the catalog (versions %v)", version, cat.Versions("project-discovery"))
		}
		for id, evaluator := range want {
			o, ok := def.Obligation(id)
			if !ok {
				t.Fatalf("project-discovery %s has no obligation %s", version, id)
			}
			if !named {
				evaluator = ""
			}
			if o.Evaluator != evaluator {
				t.Errorf("project-discovery %s: %s's evaluator = %q, want %q", version, id, o.Evaluator, evaluator)
			}
		}
	}
}

// The registry has every shipped engine's custom evaluators.
func TestRegistryHasTheShippedEvaluators(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []map[string]engine.Evaluator{exploration.Evaluators(), businessprofile.Evaluators(),
		ideation.Evaluators(), projectdiscovery.Evaluators()} {
		for name := range set {
			if _, ok := reg.Evaluator(name); !ok {
				t.Errorf("evaluator %s is not registered", name)
			}
		}
	}
}
