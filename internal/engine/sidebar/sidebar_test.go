package sidebar_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/completeness"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/engine/sidebar"
)

func TestBuild(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	m := enginetest.Memory(def)
	m.TurnNumber = 2
	enginetest.Set(m, "basics.goal", "ship", 0.9, 1)
	enginetest.Set(m, "basics.users", "ops", 0.5, 2)
	m.Obligations = obligation.Evaluate(def, m, reg)
	m.Completeness = completeness.Evaluate(def, m, reg)

	st := sidebar.Build(def, m, reg)
	if len(st.Sections) != 2 {
		t.Fatalf("sections = %+v", st.Sections)
	}
	core := st.Sections[0]
	if core.ID != "core" || !core.Visible || core.Dynamic || len(core.Items) != 6 {
		t.Errorf("core = %+v", core)
	}
	if it := core.Items[0]; it.ObligationID != "goal_known" || it.Status != engine.StatusSatisfied || it.Confidence != 0.9 || it.Label != "The goal is known" || !it.Required {
		t.Errorf("item 0 = %+v", it)
	}
	if it := core.Items[1]; it.Status != engine.StatusPartial || it.Confidence != 0.5 {
		t.Errorf("item 1 = %+v", it)
	}
	if review := st.Sections[1]; review.Visible || !review.Dynamic {
		t.Errorf("review section at turn 2 = %+v, want hidden (appears at turn 3)", review)
	}
	if st.PhaseIndicator == nil || st.PhaseIndicator.Label != "Getting started" || st.PhaseIndicator.Order != 1 || st.PhaseIndicator.Total != 3 {
		t.Errorf("phase indicator = %+v", st.PhaseIndicator)
	}
	if st.ProgressBar == nil || st.ProgressBar.Percentage != 13 || !st.ProgressBar.ShowPercentage {
		t.Errorf("progress bar = %+v (overall %v)", st.ProgressBar, m.Completeness.Overall)
	}
}

func TestVisibilityConditions(t *testing.T) {
	tests := []struct {
		name  string
		cond  engine.Condition
		setup func(m *engine.WorkingMemory)
		want  bool
	}{
		{"turn count below", engine.Condition{Type: engine.CondTurnCount, MinTurns: 3}, func(m *engine.WorkingMemory) { m.TurnNumber = 2 }, false},
		{"turn count counts the conversation", engine.Condition{Type: engine.CondTurnCount, MinTurns: 3},
			func(m *engine.WorkingMemory) { m.TurnNumber = 3; m.Phase.TurnsInPhase = 0 }, true},
		{"completeness below", engine.Condition{Type: engine.CondCompletenessScore, MinCompleteness: 0.7},
			func(m *engine.WorkingMemory) { m.Completeness.Overall = 0.69 }, false},
		{"completeness reached", engine.Condition{Type: engine.CondCompletenessScore, MinCompleteness: 0.7},
			func(m *engine.WorkingMemory) { m.Completeness.Overall = 0.7 }, true},
		{"obligation satisfaction below", engine.Condition{Type: engine.CondObligationSatisfaction, Category: "basics", MinSatisfactionRate: 0.8},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.goal", "x", 0.9, 1) }, false},
		{"obligation satisfaction reached", engine.Condition{Type: engine.CondObligationSatisfaction, Category: "basics", MinSatisfactionRate: 0.6},
			func(m *engine.WorkingMemory) {
				enginetest.Set(m, "basics.goal", "x", 0.9, 1)
				enginetest.Set(m, "basics.users", "x", 0.9, 1)
			}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := enginetest.Definition()
			def.SidebarConfig.DynamicSections[0].AppearsWhen = tt.cond
			m := enginetest.Memory(def)
			tt.setup(m)
			m.Obligations = obligation.Evaluate(def, m, enginetest.Registry())
			if got := sidebar.Build(def, m, enginetest.Registry()).Sections[1].Visible; got != tt.want {
				t.Errorf("visible = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestPhaseLimitAndHiddenWidgets(t *testing.T) {
	def := enginetest.Definition()
	def.SidebarConfig.DynamicSections[0].AppearsWhen = engine.Condition{Type: engine.CondTurnCount, MinTurns: 1}
	def.SidebarConfig.DynamicSections[0].Phases = []string{"REVIEW"}
	def.SidebarConfig.PhaseIndicator.Show = false
	def.SidebarConfig.ProgressBar.Show = false
	m := enginetest.Memory(def)
	m.TurnNumber = 5
	st := sidebar.Build(def, m, enginetest.Registry())
	if st.Sections[1].Visible {
		t.Error("section limited to REVIEW is visible in INTRO")
	}
	if st.PhaseIndicator != nil || st.ProgressBar != nil {
		t.Errorf("hidden widgets present: %+v %+v", st.PhaseIndicator, st.ProgressBar)
	}
	m.Phase.Current = "REVIEW"
	if st := sidebar.Build(def, m, enginetest.Registry()); !st.Sections[1].Visible {
		t.Error("section not visible in REVIEW")
	}
	for _, tt := range []struct {
		in   float64
		want int
	}{{0, 0}, {0.005, 1}, {0.344, 34}, {0.345, 35}, {1, 100}} {
		if got := sidebar.Percentage(tt.in); got != tt.want {
			t.Errorf("Percentage(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
