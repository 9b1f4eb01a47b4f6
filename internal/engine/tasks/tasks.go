// Package tasks is the trigger side of the background task manager: after
// each turn it finds the engine's background tasks whose trigger holds and
// records them as dispatched. Running them, collecting results and applying
// failure strategies is the background service's work (issue 4); the
// failure strategy itself is in package strategy.
//
// Triggers:
//   - low_confidence: some obligation (of obligation_ids, or any) that has
//     evidence (partial or satisfied) has confidence below threshold;
//   - obligation_status: every obligation of obligation_ids has status
//     (default pending);
//   - custom: the evaluator scores at least threshold (default 1.0).
//
// min_turn delays a trigger; a task is dispatched at most once per session.
package tasks

import (
	"cmp"
	"slices"

	"github.com/praetorhq/praetor/internal/engine"
)

// Due returns the tasks to dispatch now, in definition order.
func Due(def *engine.Definition, m *engine.WorkingMemory, reg *engine.Registry) []engine.BackgroundTask {
	var out []engine.BackgroundTask
	for _, t := range def.BackgroundTasks {
		if m.BackgroundTasks.WasDispatched(t.TaskID) || m.TurnNumber < t.Trigger.MinTurn {
			continue
		}
		if Fires(t.Trigger, m, reg) {
			out = append(out, t)
		}
	}
	return out
}

// Fires reports whether a trigger holds.
func Fires(tr engine.TaskTrigger, m *engine.WorkingMemory, reg *engine.Registry) bool {
	switch tr.Type {
	case engine.TaskTriggerLowConfidence:
		for _, o := range m.Obligations.Items {
			if len(tr.ObligationIDs) > 0 && !slices.Contains(tr.ObligationIDs, o.ID) {
				continue
			}
			if (o.Status == engine.StatusPartial || o.Status == engine.StatusSatisfied) && o.Confidence < tr.Threshold {
				return true
			}
		}
	case engine.TaskTriggerObligationStatus:
		want := cmp.Or(tr.Status, engine.StatusPending)
		for _, id := range tr.ObligationIDs {
			o, ok := m.Obligation(id)
			if !ok || o.Status != want {
				return false
			}
		}
		return len(tr.ObligationIDs) > 0
	case engine.TaskTriggerCustom:
		if reg == nil {
			return false
		}
		return reg.Evaluate(tr.Evaluator, m)+1e-9 >= cmp.Or(tr.Threshold, 1.0)
	}
	return false
}

// Dispatch records the tasks as pending from the current turn, attempt 1,
// and returns their records.
func Dispatch(m *engine.WorkingMemory, ts []engine.BackgroundTask) []engine.TaskRecord {
	var out []engine.TaskRecord
	for _, t := range ts {
		r := engine.TaskRecord{TaskID: t.TaskID, Handler: t.Handler, Attempt: 1, DispatchedAtTurn: m.TurnNumber, Status: "pending"}
		m.BackgroundTasks.Pending = append(m.BackgroundTasks.Pending, r)
		out = append(out, r)
	}
	return out
}
