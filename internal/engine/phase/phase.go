// Package phase is the phase state machine: after each turn it evaluates the
// current phase's transition triggers (obligation_satisfaction, turn_count,
// completeness_score, custom_evaluator; the first that holds wins), checks
// that the transition is allowed (the current phase's mandatory checkpoints
// are satisfied, the target's entry conditions hold, and no background task
// that blocks phase transitions is pending), and executes it, recording the
// phase left in the history. It is pure: it reads and changes only the
// working memory it is given.
package phase

import (
	"errors"
	"fmt"

	"github.com/praetorhq/praetor/internal/engine"
)

// Machine is the phase state machine of one engine.
type Machine struct {
	def *engine.Definition
	reg *engine.Registry
}

// New returns the machine of an engine. reg resolves custom evaluators.
func New(def *engine.Definition, reg *engine.Registry) *Machine {
	return &Machine{def: def, reg: reg}
}

// Evaluation is the outcome of evaluating the current phase's triggers.
type Evaluation struct {
	ShouldTransition bool   `json:"should_transition"`
	From             string `json:"from"`
	// Target is the phase the firing trigger leads to ("" when none fired).
	Target string `json:"target,omitempty"`
	// Trigger is the index of the trigger that fired, -1 when none.
	Trigger int `json:"trigger"`
}

// EvaluateTransition checks the current phase's triggers in order; the
// first that holds decides the target (its target_phase, else the phase's
// next_phase). turn_count counts turns in the current phase.
func (m *Machine) EvaluateTransition(mem *engine.WorkingMemory) Evaluation {
	ev := Evaluation{From: mem.Phase.Current, Trigger: -1}
	p, ok := m.def.Phase(mem.Phase.Current)
	if !ok {
		return ev
	}
	env := engine.CondEnv{Memory: mem, Registry: m.reg, PhaseTurns: true}
	for i, t := range p.TransitionTriggers {
		target := t.TargetPhase
		if target == "" {
			target = p.NextPhase
		}
		if target == "" {
			continue
		}
		if t.Condition.Holds(env) {
			return Evaluation{ShouldTransition: true, From: p.ID, Target: target, Trigger: i}
		}
	}
	return ev
}

// CanTransition reports whether leaving from for to is allowed, and if not,
// why: every required mandatory checkpoint of from must be satisfied, every
// entry condition of to must hold, and no pending background task may block
// phase transitions.
func (m *Machine) CanTransition(from, to string, mem *engine.WorkingMemory) (bool, []string) {
	src, ok := m.def.Phase(from)
	if !ok {
		return false, []string{fmt.Sprintf("phase %q does not exist", from)}
	}
	dst, ok := m.def.Phase(to)
	if !ok {
		return false, []string{fmt.Sprintf("phase %q does not exist", to)}
	}
	var why []string
	for _, c := range src.MandatoryCheckpoints {
		if !c.Required {
			continue
		}
		o, ok := mem.Obligation(c.ObligationID)
		if !ok || o.Status != engine.StatusSatisfied {
			why = append(why, fmt.Sprintf("checkpoint %s is not satisfied", c.ObligationID))
		}
	}
	env := engine.CondEnv{Memory: mem, Registry: m.reg}
	for _, c := range dst.EntryConditions {
		if !c.Holds(env) {
			why = append(why, fmt.Sprintf("entry condition of %s does not hold (%s)", to, c))
		}
	}
	for _, t := range mem.BackgroundTasks.Pending {
		for _, d := range m.def.BackgroundTasks {
			if d.TaskID == t.TaskID && d.BlockPhaseTransition {
				why = append(why, fmt.Sprintf("background task %s is still running", t.TaskID))
			}
		}
	}
	return len(why) == 0, why
}

// ErrNotCurrent is returned when a transition does not start at the current phase.
var ErrNotCurrent = errors.New("transition does not start at the current phase")

// ExecuteTransition moves the memory from the current phase to target: the
// phase left goes to the history with its turns and the completeness at
// exit, and the target starts with no turns at the current turn.
func (m *Machine) ExecuteTransition(from, target string, mem *engine.WorkingMemory) error {
	if mem.Phase.Current != from {
		return fmt.Errorf("execute %s -> %s (current %s): %w", from, target, mem.Phase.Current, ErrNotCurrent)
	}
	if _, ok := m.def.Phase(target); !ok {
		return fmt.Errorf("execute %s -> %s: target is not a phase", from, target)
	}
	mem.Phase.History = append(mem.Phase.History, engine.PhaseRecord{
		PhaseID:       from,
		EnteredAtTurn: mem.Phase.EnteredAtTurn,
		ExitedAtTurn:  mem.TurnNumber,
		TurnsInPhase:  mem.Phase.TurnsInPhase,
		Completeness:  mem.Completeness.Overall,
	})
	mem.Phase.Current = target
	mem.Phase.TurnsInPhase = 0
	mem.Phase.EnteredAtTurn = mem.TurnNumber
	return nil
}

// Outcome is what Step did.
type Outcome struct {
	Evaluation
	// Transitioned is true when the phase changed.
	Transitioned bool `json:"transitioned"`
	// BlockedBy says why a fired trigger did not move the phase.
	BlockedBy []string `json:"blocked_by,omitempty"`
}

// Step evaluates, checks and executes at most one transition.
func (m *Machine) Step(mem *engine.WorkingMemory) Outcome {
	ev := m.EvaluateTransition(mem)
	out := Outcome{Evaluation: ev}
	if !ev.ShouldTransition {
		return out
	}
	ok, why := m.CanTransition(ev.From, ev.Target, mem)
	if !ok {
		out.BlockedBy = why
		return out
	}
	if err := m.ExecuteTransition(ev.From, ev.Target, mem); err != nil {
		out.BlockedBy = []string{err.Error()}
		return out
	}
	out.Transitioned = true
	return out
}
