package engine

import (
	"fmt"
	"time"
)

// Decision is what the scheduler asks of the executor after looking at a
// state. At most one of Actions, Abort and Finalize is set.
type Decision struct {
	// Actions dispatch the ready tasks, in dependency order (plan order).
	// The executor applies a prefix of them when it has fewer free slots.
	Actions []Action
	// Abort, when set, means the run must stop now: cancel the running
	// attempts, record them as failed, and decide again (which finalizes).
	Abort string
	// Finalize, when set, closes the run: nothing runs and nothing more will.
	Finalize *Finalization
	// WakeAt is when to decide again if nothing else happens first: the
	// earliest retry backoff end, or the run deadline.
	WakeAt *time.Time
}

// Decide is the scheduler: a pure function of the state and the time.
//
// A failed task halts the run: nothing more is dispatched, running attempts
// finish, then the run is finalized FAILED. The run timeout aborts running
// attempts. MaxIterations stops new dispatches.
func Decide(s State, now time.Time) Decision { return DecideN(s, now, -1) }

// DecideN is Decide returning at most n actions (all when n < 0): the
// first n ready tasks in dependency order, for an executor with n free
// slots. With n = 0 it still reports Abort, Finalize and WakeAt.
func DecideN(s State, now time.Time, n int) Decision {
	if s.Status != RunRunning {
		return Decision{}
	}
	now = now.UTC().Truncate(time.Microsecond)
	var (
		running  int
		failed   bool
		ready    []Action
		more     bool // ready tasks beyond n
		earliest *time.Time
	)
	for _, pt := range s.Plan.Tasks {
		t := s.Tasks[pt.ID]
		switch t.Status {
		case TaskRunning:
			running++
		case TaskFailed:
			failed = true
		case TaskPending:
			if !depsDone(s, pt) {
				continue
			}
			if t.RetryAt != nil && now.Before(*t.RetryAt) {
				if earliest == nil || t.RetryAt.Before(*earliest) {
					earliest = t.RetryAt
				}
				continue
			}
			typ := RequestWork
			if pt.Kind == KindApproval {
				typ = RequestApproval
			}
			if n < 0 || len(ready) < n {
				ready = append(ready, Action{Type: typ, TaskID: pt.ID})
			} else {
				more = true
			}
		}
	}

	var d Decision
	if s.Limits.Timeout > 0 {
		deadline := s.StartedAt.Add(time.Duration(s.Limits.Timeout))
		if !now.Before(deadline) {
			reason := fmt.Sprintf("run timeout (%s) exceeded", time.Duration(s.Limits.Timeout))
			if running > 0 {
				return Decision{Abort: reason}
			}
			return Decision{Finalize: &Finalization{Reason: reason}}
		}
		d.WakeAt = &deadline
	}
	if failed {
		if running == 0 {
			return Decision{Finalize: &Finalization{}}
		}
		return d
	}
	if left := s.Limits.MaxIterations - s.Iterations; len(ready) > left {
		ready = ready[:max(left, 0)]
		if len(ready) == 0 && running == 0 {
			return Decision{Finalize: &Finalization{
				Reason: fmt.Sprintf("maximum iterations (%d) reached", s.Limits.MaxIterations)}}
		}
	}
	if len(ready) == 0 && !more && running == 0 && earliest == nil {
		return Decision{Finalize: &Finalization{}}
	}
	d.Actions = ready
	if earliest != nil && (d.WakeAt == nil || earliest.Before(*d.WakeAt)) {
		d.WakeAt = earliest
	}
	return d
}

// depsDone checks the dependencies last to first: in a fan-in, the last
// listed are usually the last dispatched, so an unfinished one is found
// early instead of after scanning the whole list.
func depsDone(s State, pt PlanTask) bool {
	for i := len(pt.DependsOn) - 1; i >= 0; i-- {
		if s.Tasks[pt.DependsOn[i]].Status != TaskCompleted {
			return false
		}
	}
	return true
}

// Running returns the tasks with an attempt out, in plan order: what a
// resumed executor must re-dispatch.
func Running(s State) []string {
	var out []string
	for _, pt := range s.Plan.Tasks {
		if s.Tasks[pt.ID].Status == TaskRunning {
			out = append(out, pt.ID)
		}
	}
	return out
}
