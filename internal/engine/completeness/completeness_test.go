package completeness_test

import (
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/completeness"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
)

// state: basics goal satisfied (0.9), users partial (0.5); details budget
// satisfied (0.8 at threshold 0.8), timeline partial (0.3); nothing else.
func state(def *engine.Definition) *engine.WorkingMemory {
	m := enginetest.Memory(def)
	enginetest.Set(m, "basics.goal", "ship", 0.9, 1)
	enginetest.Set(m, "basics.users", "ops", 0.5, 1)
	enginetest.Set(m, "details.budget", 1000, 0.8, 2)
	enginetest.Set(m, "details.timeline", "soon", 0.3, 2)
	m.Obligations = obligation.Evaluate(def, m, enginetest.Registry())
	return m
}

func TestModels(t *testing.T) {
	tests := []struct {
		model      engine.CompletenessModelType
		heuristics []engine.Heuristic
		wantCats   map[string]float64
		wantAll    float64
		wantGaps   []string
	}{
		{
			// The seed's obligation model: satisfied / total per category.
			model:    engine.ModelObligation,
			wantCats: map[string]float64{"basics": 0.3333, "details": 0.3333, "review": 0},
			wantAll:  0.2667, // 0.4·⅓ + 0.4·⅓
			wantGaps: []string{"users_known", "name_known", "timeline_known", "features_known", "confirm_scope"},
		},
		{
			model:    engine.ModelMaturity, // partial counts half
			wantCats: map[string]float64{"basics": 0.5, "details": 0.5, "review": 0},
			wantAll:  0.4,
		},
		{
			model: engine.ModelEstimability, // confidence weighted
			// basics: (0.9 + 0.25)/3; details: (0.8 + 0.15)/3
			wantCats: map[string]float64{"basics": 0.3833, "details": 0.3167, "review": 0},
			wantAll:  0.28,
		},
		{
			model:    engine.ModelCoverage, // touched counts
			wantCats: map[string]float64{"basics": 0.6667, "details": 0.6667, "review": 0},
			wantAll:  0.5333,
		},
		{
			model: engine.ModelProfile,
			heuristics: []engine.Heuristic{
				{ID: "basics", Weight: 0.5, FieldPrefix: "basics"},   // goal (req, 2) met, users (req, 2), name (1): 2/5
				{ID: "details", Weight: 0.5, FieldPrefix: "details"}, // budget (req) met: 2/5
			},
			wantCats: map[string]float64{"basics": 0.4, "details": 0.4},
			wantAll:  0.4,
			wantGaps: []string{"basics.users", "basics.name", "details.timeline", "details.deadline", "details.features"},
		},
		{
			model: engine.ModelDecisionReadiness,
			heuristics: []engine.Heuristic{
				{ID: "decision_made", Weight: 0.3, Evaluator: "always"},
				{ID: "understanding", Weight: 0.7, Evaluator: "half"},
			},
			wantCats: map[string]float64{"decision_made": 1, "understanding": 0.5},
			wantAll:  0.65,
			wantGaps: []string{"understanding"},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.model), func(t *testing.T) {
			def := enginetest.Definition()
			def.CompletenessModel.Type = tt.model
			if tt.heuristics != nil {
				def.CompletenessModel.Heuristics = tt.heuristics
			}
			got := completeness.Evaluate(def, state(def), enginetest.Registry())
			if got.Overall != tt.wantAll {
				t.Errorf("overall = %v, want %v", got.Overall, tt.wantAll)
			}
			for k, v := range tt.wantCats {
				if got.ByCategory[k] != v {
					t.Errorf("by_category[%s] = %v, want %v", k, got.ByCategory[k], v)
				}
			}
			if len(got.ByCategory) != len(tt.wantCats) {
				t.Errorf("by_category = %v, want keys of %v", got.ByCategory, tt.wantCats)
			}
			if tt.wantGaps != nil && !slices.Equal(got.Gaps, tt.wantGaps) {
				t.Errorf("gaps = %v, want %v", got.Gaps, tt.wantGaps)
			}
		})
	}
}

func TestIsReadyAtThreshold(t *testing.T) {
	def := enginetest.Definition()
	def.CompletenessModel.Heuristics = []engine.Heuristic{{ID: "x", Weight: 1, Evaluator: "half"}}
	for _, tt := range []struct {
		threshold float64
		want      bool
	}{{0.5, true}, {0.51, false}, {0.2, true}} {
		def.CompletenessModel.ReadyThreshold = tt.threshold
		if got := completeness.Evaluate(def, state(def), enginetest.Registry()); got.IsReady != tt.want {
			t.Errorf("threshold %v: is_ready = %t, want %t (overall %v)", tt.threshold, got.IsReady, tt.want, got.Overall)
		}
	}
}

func TestSaturationModel(t *testing.T) {
	def := enginetest.Definition()
	def.CompletenessModel = engine.CompletenessModel{Type: engine.ModelSaturation, ReadyThreshold: 0.66}
	m := state(def)
	m.Saturation = engine.SaturationState{NewConcepts: []int{2, 0, 0}, Score: 0.6667}
	got := completeness.Evaluate(def, m, enginetest.Registry())
	if got.Overall != 0.6667 || !got.IsReady || got.ByCategory["saturation"] != 0.6667 {
		t.Errorf("saturation = %+v", got)
	}
}

func TestMaturityLevel(t *testing.T) {
	def := enginetest.Definition()
	def.CompletenessModel.Type = engine.ModelMaturity
	def.CompletenessModel.Levels = []engine.MaturityLevel{{Name: "concept", MinScore: 0}, {Name: "prototype", MinScore: 0.4}, {Name: "production-ready", MinScore: 0.85}}
	if got := completeness.Evaluate(def, state(def), enginetest.Registry()); got.Level != "prototype" {
		t.Errorf("level = %q (overall %v), want prototype", got.Level, got.Overall)
	}
}

func TestDefaultHeuristicsWeighCategoriesEqually(t *testing.T) {
	def := enginetest.Definition()
	def.CompletenessModel.Heuristics = nil
	hs := completeness.Heuristics(def)
	if len(hs) != 3 || hs[0].Category != "basics" || hs[2].Category != "review" {
		t.Fatalf("heuristics = %+v", hs)
	}
	got := completeness.Evaluate(def, state(def), enginetest.Registry())
	if got.Overall != 0.2222 {
		t.Errorf("overall = %v, want 0.2222 (⅓·⅓ + ⅓·⅓)", got.Overall)
	}
}
