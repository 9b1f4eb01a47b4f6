// Package tasks is the session side of the background task manager, as
// pure functions of working memory: after each turn it finds the engine's
// background tasks whose trigger holds and records them as dispatched
// (Due, Dispatch), and it merges what comes back — a result (Complete) or a
// failure, to which the failure strategy of package strategy applies
// (Fail) — and dispatches again the tasks a phase left as gaps (Refill).
// The tasks themselves run in the background service.
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
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/strategy"
	"github.com/praetorhq/praetor/pkg/contracts"
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

// Dispatch records the tasks as pending from the current turn (at the
// memory's UpdatedAt), attempt 1, and returns their records.
func Dispatch(m *engine.WorkingMemory, ts []engine.BackgroundTask) []engine.TaskRecord {
	var out []engine.TaskRecord
	for _, t := range ts {
		r := engine.TaskRecord{TaskID: t.TaskID, Handler: t.Handler, Attempt: 1, DispatchedAtTurn: m.TurnNumber,
			Status: engine.TaskPending, DispatchedAt: m.UpdatedAt}
		m.BackgroundTasks.Pending = append(m.BackgroundTasks.Pending, r)
		out = append(out, r)
	}
	return out
}

// Refill dispatches again, as their next attempt, the tasks left as gaps by
// proceed-with-gap: a later phase may fill what an earlier one could not.
// Call it when the phase changes; it returns the new records.
func Refill(def *engine.Definition, m *engine.WorkingMemory) []engine.TaskRecord {
	bt := &m.BackgroundTasks
	var out []engine.TaskRecord
	for _, id := range bt.Gaps {
		if _, ok := Lookup(def, id); !ok {
			continue
		}
		i := slices.IndexFunc(bt.Completed, func(t engine.TaskRecord) bool { return t.TaskID == id })
		if i < 0 {
			continue
		}
		r := bt.Completed[i]
		bt.Completed = slices.Delete(bt.Completed, i, i+1)
		r = engine.TaskRecord{TaskID: r.TaskID, Handler: r.Handler, Attempt: r.Attempt + 1, DispatchedAtTurn: m.TurnNumber,
			Status: engine.TaskPending, DispatchedAt: m.UpdatedAt}
		bt.Pending = append(bt.Pending, r)
		out = append(out, r)
	}
	if len(out) > 0 {
		bt.Gaps = slices.DeleteFunc(bt.Gaps, func(id string) bool {
			return slices.ContainsFunc(out, func(r engine.TaskRecord) bool { return r.TaskID == id })
		})
		if len(bt.Gaps) == 0 {
			bt.Gaps = nil
		}
	}
	return out
}

// awaited returns the index of the pending record of taskID's attempt, or -1
// when the session does not wait for that attempt (a duplicate, or an
// attempt a retry has replaced).
func awaited(m *engine.WorkingMemory, taskID string, attempt int) int {
	return slices.IndexFunc(m.BackgroundTasks.Pending, func(t engine.TaskRecord) bool {
		return t.TaskID == taskID && t.Attempt == attempt
	})
}

// Complete merges a task's result: the awaited attempt settles as
// completed, with its result, on the current turn count. It reports whether
// the attempt was awaited; a result nobody waits for changes nothing. The
// attempt of a gap (given up on as overdue, the session going on without
// it) is still taken when its result comes after all: the gap closes.
func Complete(m *engine.WorkingMemory, taskID string, attempt int, result json.RawMessage) bool {
	bt := &m.BackgroundTasks
	var r engine.TaskRecord
	if i := awaited(m, taskID, attempt); i >= 0 {
		r = bt.Pending[i]
		bt.Pending = slices.Delete(bt.Pending, i, i+1)
	} else if i := slices.IndexFunc(bt.Completed, func(t engine.TaskRecord) bool {
		return t.TaskID == taskID && t.Attempt == attempt && t.Status == engine.TaskGap
	}); i >= 0 {
		r = bt.Completed[i]
		bt.Completed = slices.Delete(bt.Completed, i, i+1)
		bt.Gaps = slices.DeleteFunc(bt.Gaps, func(id string) bool { return id == taskID })
		if len(bt.Gaps) == 0 {
			bt.Gaps = nil
		}
	} else {
		return false
	}
	r.Status, r.Result, r.Error, r.Note, r.NotBefore = engine.TaskCompleted, append(json.RawMessage(nil), result...), "", "", time.Time{}
	r.SettledAtTurn = m.TurnNumber
	bt.Completed = append(bt.Completed, r)
	return true
}

// Fail merges a failed attempt: the task definition's failure strategy
// decides (s; default strategy.ConfigDriven), and the decision is recorded
// at time at. A permanent failure (a panic, a bad input) wraps
// strategy.ErrPermanent, so retries are skipped. A session that has handed
// off tries nothing again, whatever the strategy: it takes no more turns,
// and the conversation goes on elsewhere; the task settles as degraded. It
// returns the decision and whether the attempt was awaited.
func Fail(def *engine.Definition, m *engine.WorkingMemory, s strategy.TaskFailureStrategy, taskID string, attempt int,
	cause error, at time.Time) (strategy.Decision, bool) {
	if awaited(m, taskID, attempt) < 0 {
		return strategy.Decision{}, false
	}
	if m.Exit != nil {
		d := strategy.Decision{Action: engine.FailureDegrade,
			Note: "not tried again: the conversation went on with " + m.Exit.TargetEngine}
		strategy.RecordFailure(m, taskID, cause, d, at)
		return d, true
	}
	task, ok := Lookup(def, taskID)
	if !ok {
		// The engine no longer defines the task: nothing to retry it with.
		task = engine.BackgroundTask{TaskID: taskID, FailureStrategy: engine.FailureStrategy{Type: engine.FailureProceedWithGap}}
	}
	if s == nil {
		s = strategy.ConfigDriven{}
	}
	d := s.HandleFailure(task, cause, attempt)
	strategy.RecordFailure(m, taskID, cause, d, at)
	return d, true
}

// Adopt merges the result of a task another session dispatched, forwarded
// to this one because that session handed off to it before the result came
// back: it settles as a completed task of this session, on the current turn
// count. A session that has a record of the task already (its own run of
// it, or the result forwarded before) keeps it. It reports whether the
// result merged.
func Adopt(m *engine.WorkingMemory, taskID string, attempt int, result json.RawMessage) bool {
	bt := &m.BackgroundTasks
	if bt.WasDispatched(taskID) {
		return false
	}
	bt.Completed = append(bt.Completed, engine.TaskRecord{TaskID: taskID, Attempt: attempt, DispatchedAtTurn: m.TurnNumber,
		Status: engine.TaskCompleted, Result: append(json.RawMessage(nil), result...), SettledAtTurn: m.TurnNumber})
	return true
}

// Failure is the error of a failed attempt as a worker reported it.
type Failure struct {
	Message   string
	Permanent bool
}

func (f Failure) Error() string { return f.Message }

// Unwrap makes a permanent failure strategy.ErrPermanent.
func (f Failure) Unwrap() error {
	if f.Permanent {
		return strategy.ErrPermanent
	}
	return nil
}

var _ error = Failure{}

// Lookup returns the engine's definition of a background task.
func Lookup(def *engine.Definition, taskID string) (engine.BackgroundTask, bool) {
	for _, t := range def.BackgroundTasks {
		if t.TaskID == taskID {
			return t, true
		}
	}
	return engine.BackgroundTask{}, false
}

// PurposeResearch is the LLM request purpose of research handlers.
const PurposeResearch = "research"

// Input is what a dispatched background task carries to its handler: the
// task as the engine defines it and what the session knows so far.
type Input struct {
	TaskID      string `json:"task_id"`
	DisplayName string `json:"display_name"`
	Description string `json:"description,omitempty"`
	EngineID    string `json:"engine_id"`
	ProjectID   string `json:"project_id,omitempty"`
	Phase       string `json:"phase,omitempty"`
	// Facts are what the session's inbound handoff carried ("Pain point
	// (from an earlier session): value"), then its extracted fields
	// ("Display name: value").
	Facts []string `json:"facts,omitempty"`
}

// ResearchRequest is the user message (as JSON) of a research handler's
// model request: the handler's name and the task's input.
type ResearchRequest struct {
	Handler string `json:"handler"`
	Task    Input  `json:"task"`
}

// Findings is the result of a research handler.
type Findings struct {
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings"`
	// Source says where the findings come from ("offline" when the offline
	// provider stood in for a model).
	Source string `json:"source,omitempty"`
}

// Finding is one item of research.
type Finding struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// NewInput builds the input of a task from the session's memory: the task
// definition, what the session's inbound handoff carried (its pain points,
// decisions, goals and constraints: a session started by a handoff may
// know the problem before the user says it here) and the fields extracted
// so far, in schema order; values clipped, at most 40 facts, of which 20
// carried. The handler researches what this user said.
func NewInput(def *engine.Definition, m *engine.WorkingMemory, t engine.BackgroundTask) Input {
	in := Input{TaskID: t.TaskID, DisplayName: cmp.Or(t.DisplayName, t.TaskID), Description: t.Description,
		EngineID: def.EngineID, ProjectID: m.ProjectID, Phase: m.Phase.Current}
	in.Facts = carried(m)
	for _, f := range def.ExtractionSchema.Fields {
		x, ok := m.Extraction.Fields[f.Path]
		if !ok || x.IsNull() {
			continue
		}
		v := string(x.Value)
		var s string
		if json.Unmarshal(x.Value, &s) == nil {
			v = s
		}
		in.Facts = append(in.Facts, cmp.Or(f.DisplayName, f.Path)+": "+clip(v))
		if len(in.Facts) == 40 {
			break
		}
	}
	return in
}

// carried lists what the session's inbound handoff brought that a task
// works on, at most 20 items, each labelled as from an earlier session; a
// choice made for several questions says the question of each, when the
// handoff recorded it.
func carried(m *engine.WorkingMemory) []string {
	h, ok := contracts.DecodeHandoff(m.InboundHandoff)
	if !ok {
		return nil
	}
	var out []string
	add := func(kind, v string) {
		if v = strings.TrimSpace(v); v != "" && len(out) < 20 {
			out = append(out, kind+" (from an earlier session): "+clip(v))
		}
	}
	for _, p := range h.SituationAwareness.KeyPainPoints {
		add("Pain point", p)
	}
	var choices []string
	for _, d := range h.ActionList.DecisionsReached {
		choices = append(choices, d.Decision)
	}
	twice := handoff.ChosenTwice(choices)
	for _, d := range h.ActionList.DecisionsReached {
		if q := strings.TrimSpace(d.Question); q != "" && twice(d.Decision) {
			add("Decision", d.Decision+", for: "+q)
			continue
		}
		add("Decision", d.Decision)
	}
	for _, g := range h.SituationAwareness.UserGoals {
		add("Goal", g)
	}
	for _, c := range h.ActionList.ConstraintsIdentified {
		add("Constraint", c.Constraint)
	}
	return out
}

// clip is v cut at 200 characters.
func clip(v string) string {
	if r := []rune(v); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return v
}

// Overdue returns the awaited tasks whose attempt has had no answer for
// twice its timeout (the task's estimated duration times factor) after it
// could start, at time now: the worker pool is down or lost it. Without a
// timeout (no estimated duration) a task is never overdue.
func Overdue(def *engine.Definition, m *engine.WorkingMemory, factor float64, now time.Time) []engine.TaskRecord {
	var out []engine.TaskRecord
	for _, r := range m.BackgroundTasks.Pending {
		t, ok := Lookup(def, r.TaskID)
		timeout := time.Duration(float64(t.EstimatedDuration.D()) * factor)
		if !ok || timeout <= 0 || r.DispatchedAt.IsZero() {
			continue
		}
		from := r.DispatchedAt
		if r.NotBefore.After(from) {
			from = r.NotBefore
		}
		if now.Sub(from) > 2*timeout {
			out = append(out, r)
		}
	}
	return out
}
