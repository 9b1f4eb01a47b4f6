package tasks_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/engine/tasks"
)

func TestDueAndDispatch(t *testing.T) {
	tests := []struct {
		name    string
		trigger engine.TaskTrigger
		setup   func(m *engine.WorkingMemory)
		want    bool
	}{
		{"low confidence ignores pending", engine.TaskTrigger{Type: engine.TaskTriggerLowConfidence, Threshold: 0.6}, nil, false},
		{"low confidence fires on weak evidence", engine.TaskTrigger{Type: engine.TaskTriggerLowConfidence, Threshold: 0.6},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.users", "ops", 0.4, 1) }, true},
		{"low confidence limited to ids", engine.TaskTrigger{Type: engine.TaskTriggerLowConfidence, Threshold: 0.6, ObligationIDs: []string{"goal_known"}},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.users", "ops", 0.4, 1) }, false},
		{"status pending", engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}}, nil, true},
		{"status no longer pending", engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "details.budget", 10, 0.9, 1) }, false},
		{"min turn delays", engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}, MinTurn: 3}, nil, false},
		{"custom at threshold", engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "half", Threshold: 0.5}, nil, true},
		{"custom default threshold 1", engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "half"}, nil, false},
		{"already dispatched", engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "always"},
			func(m *engine.WorkingMemory) {
				m.BackgroundTasks.Completed = []engine.TaskRecord{{TaskID: "research"}}
			}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := enginetest.Definition()
			def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "research", Handler: "research.web", Trigger: tt.trigger}}
			m := enginetest.Memory(def)
			m.TurnNumber = 2
			if tt.setup != nil {
				tt.setup(m)
			}
			m.Obligations = obligation.Evaluate(def, m, enginetest.Registry())
			due := tasks.Due(def, m, enginetest.Registry())
			if got := len(due) == 1; got != tt.want {
				t.Fatalf("due = %+v, want fired %t", due, tt.want)
			}
			if !tt.want {
				return
			}
			recs := tasks.Dispatch(m, due)
			if len(recs) != 1 || recs[0].Attempt != 1 || recs[0].DispatchedAtTurn != 2 || !m.BackgroundTasks.IsPending("research") {
				t.Errorf("records = %+v, state = %+v", recs, m.BackgroundTasks)
			}
			if again := tasks.Due(def, m, enginetest.Registry()); len(again) != 0 {
				t.Errorf("dispatched twice: %+v", again)
			}
		})
	}
}
