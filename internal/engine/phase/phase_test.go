package phase_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/engine/phase"
)

func memory(def *engine.Definition, phaseID string, turnsInPhase int, setup func(m *engine.WorkingMemory)) *engine.WorkingMemory {
	m := enginetest.Memory(def)
	m.Phase.Current = phaseID
	m.Phase.TurnsInPhase = turnsInPhase
	m.TurnNumber = 10
	m.Phase.EnteredAtTurn = 10 - turnsInPhase
	if setup != nil {
		setup(m)
	}
	m.Obligations = obligation.Evaluate(def, m, enginetest.Registry())
	return m
}

func TestEvaluateTransitionTriggerTypes(t *testing.T) {
	tests := []struct {
		name       string
		trigger    engine.Condition
		setup      func(m *engine.WorkingMemory)
		turns      int
		wantFire   bool
		wantTarget string
	}{
		{name: "obligation satisfaction below rate",
			trigger: engine.Condition{Type: engine.CondObligationSatisfaction, Category: "basics", MinSatisfactionRate: 0.6},
			setup:   func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.goal", "x", 0.9, 1) }},
		{name: "obligation satisfaction at rate", wantFire: true, wantTarget: "DETAILS",
			trigger: engine.Condition{Type: engine.CondObligationSatisfaction, Category: "basics", MinSatisfactionRate: 0.6},
			setup: func(m *engine.WorkingMemory) {
				enginetest.Set(m, "basics.goal", "x", 0.9, 1)
				enginetest.Set(m, "basics.users", "x", 0.9, 1)
			}},
		{name: "turn count counts turns in phase", turns: 2,
			trigger: engine.Condition{Type: engine.CondTurnCount, MinTurns: 3}},
		{name: "turn count reached", turns: 3, wantFire: true, wantTarget: "DETAILS",
			trigger: engine.Condition{Type: engine.CondTurnCount, MinTurns: 3}},
		{name: "completeness below",
			trigger: engine.Condition{Type: engine.CondCompletenessScore, MinCompleteness: 0.7},
			setup:   func(m *engine.WorkingMemory) { m.Completeness.Overall = 0.69 }},
		{name: "completeness reached", wantFire: true, wantTarget: "DETAILS",
			trigger: engine.Condition{Type: engine.CondCompletenessScore, MinCompleteness: 0.7},
			setup:   func(m *engine.WorkingMemory) { m.Completeness.Overall = 0.7 }},
		{name: "custom evaluator below threshold",
			trigger: engine.Condition{Type: engine.CondCustomEvaluator, EvaluatorName: "half", Threshold: 0.8}},
		{name: "custom evaluator at threshold", wantFire: true, wantTarget: "DETAILS",
			trigger: engine.Condition{Type: engine.CondCustomEvaluator, EvaluatorName: "half", Threshold: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := enginetest.Definition()
			def.Phases[0].TransitionTriggers = []engine.Trigger{{Condition: tt.trigger}}
			m := memory(def, "INTRO", tt.turns, tt.setup)
			ev := phase.New(def, enginetest.Registry()).EvaluateTransition(m)
			if ev.ShouldTransition != tt.wantFire || ev.Target != tt.wantTarget {
				t.Errorf("evaluation = %+v, want fire %t target %q", ev, tt.wantFire, tt.wantTarget)
			}
		})
	}
}

func TestTriggerTargetPhaseOverridesNext(t *testing.T) {
	def := enginetest.Definition()
	def.Phases[0].TransitionTriggers = []engine.Trigger{
		{Condition: engine.Condition{Type: engine.CondTurnCount, MinTurns: 9}},
		{Condition: engine.Condition{Type: engine.CondTurnCount, MinTurns: 1}, TargetPhase: "REVIEW"},
	}
	ev := phase.New(def, enginetest.Registry()).EvaluateTransition(memory(def, "INTRO", 1, nil))
	if !ev.ShouldTransition || ev.Target != "REVIEW" || ev.Trigger != 1 {
		t.Errorf("evaluation = %+v, want the second trigger to REVIEW", ev)
	}
}

// The seed's second key scenario: a mandatory checkpoint that is not met
// blocks the transition even when the trigger fires.
func TestCheckpointBlocksTransition(t *testing.T) {
	def := enginetest.Definition()
	machine := phase.New(def, enginetest.Registry())
	m := memory(def, "DETAILS", 3, nil) // trigger: 3 turns in phase; checkpoint budget_known pending
	ok, why := machine.CanTransition("DETAILS", "REVIEW", m)
	if ok || len(why) == 0 || !strings.Contains(why[0], "checkpoint budget_known") {
		t.Fatalf("CanTransition = %t, %v; want blocked by budget_known", ok, why)
	}
	out := machine.Step(m)
	if !out.ShouldTransition || out.Transitioned || m.Phase.Current != "DETAILS" {
		t.Errorf("step = %+v, phase %s; want fired but blocked", out, m.Phase.Current)
	}

	// Satisfy the checkpoint; the REVIEW entry condition (completeness ≥ 0.5) still blocks.
	m = memory(def, "DETAILS", 3, func(m *engine.WorkingMemory) { enginetest.Set(m, "details.budget", 100, 0.9, 9) })
	m.Completeness.Overall = 0.4
	if ok, why := machine.CanTransition("DETAILS", "REVIEW", m); ok || !strings.Contains(why[0], "entry condition of REVIEW") {
		t.Errorf("CanTransition = %t, %v; want blocked by the entry condition", ok, why)
	}
	m.Completeness.Overall = 0.5
	if ok, why := machine.CanTransition("DETAILS", "REVIEW", m); !ok {
		t.Errorf("CanTransition = false, %v; want allowed", why)
	}
}

func TestBlockingTaskHoldsPhase(t *testing.T) {
	def := enginetest.Definition()
	def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "market", Handler: "research.web", BlockPhaseTransition: true}}
	m := memory(def, "INTRO", 1, nil)
	m.BackgroundTasks.Pending = []engine.TaskRecord{{TaskID: "market"}}
	ok, why := phase.New(def, enginetest.Registry()).CanTransition("INTRO", "DETAILS", m)
	if ok || !strings.Contains(why[0], "market") {
		t.Errorf("CanTransition = %t, %v; want blocked by the running task", ok, why)
	}
}

func TestExecuteTransitionRecordsHistory(t *testing.T) {
	def := enginetest.Definition()
	machine := phase.New(def, enginetest.Registry())
	m := memory(def, "INTRO", 4, nil)
	m.Completeness.Overall = 0.35
	if err := machine.ExecuteTransition("INTRO", "DETAILS", m); err != nil {
		t.Fatal(err)
	}
	want := engine.PhaseRecord{PhaseID: "INTRO", EnteredAtTurn: 6, ExitedAtTurn: 10, TurnsInPhase: 4, Completeness: 0.35}
	if len(m.Phase.History) != 1 || m.Phase.History[0] != want {
		t.Errorf("history = %+v, want [%+v]", m.Phase.History, want)
	}
	if m.Phase.Current != "DETAILS" || m.Phase.TurnsInPhase != 0 || m.Phase.EnteredAtTurn != 10 {
		t.Errorf("phase = %+v", m.Phase)
	}
	if err := machine.ExecuteTransition("INTRO", "DETAILS", m); !errors.Is(err, phase.ErrNotCurrent) {
		t.Errorf("second execute err = %v, want ErrNotCurrent", err)
	}
}

func TestStepMovesOncePerCall(t *testing.T) {
	def := enginetest.Definition()
	def.Phases[1].TransitionTriggers = []engine.Trigger{{Condition: engine.Condition{Type: engine.CondTurnCount, MinTurns: 1}}}
	def.Phases[1].MandatoryCheckpoints = nil
	m := memory(def, "INTRO", 2, func(m *engine.WorkingMemory) {
		enginetest.Set(m, "basics.goal", "x", 0.9, 1)
		enginetest.Set(m, "basics.users", "x", 0.9, 1)
	})
	m.Completeness.Overall = 0.9
	out := phase.New(def, enginetest.Registry()).Step(m)
	if !out.Transitioned || m.Phase.Current != "DETAILS" {
		t.Fatalf("step = %+v", out)
	}
	if len(m.Phase.History) != 1 {
		t.Errorf("history = %+v, want one record: a turn moves at most one phase", m.Phase.History)
	}
}
