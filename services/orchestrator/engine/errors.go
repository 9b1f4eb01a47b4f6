package engine

import "errors"

// Sentinel errors of the transitions. Each transition wraps one of them with
// what was wrong, so callers test with errors.Is.
var (
	// ErrBadContext is returned when a Ctx has no time or no random source.
	ErrBadContext = errors.New("engine: context needs Now and a seeded Rand")
	// ErrInvalidPlan is returned by Start for a plan that cannot run.
	ErrInvalidPlan = errors.New("engine: invalid plan")
	// ErrInvalidState is returned for a state that breaks its invariants.
	ErrInvalidState = errors.New("engine: invalid state")
	// ErrRunNotRunning is returned for an input to a finished run.
	ErrRunNotRunning = errors.New("engine: run is not running")
	// ErrUnknownTask is returned for an input naming a task not in the plan.
	ErrUnknownTask = errors.New("engine: unknown task")
	// ErrInvalidAction is returned for an action that does not apply to the
	// state (a task not ready, a bad annotation key).
	ErrInvalidAction = errors.New("engine: invalid action")
	// ErrMaxIterations is returned when a dispatch would exceed the run's
	// MaxIterations.
	ErrMaxIterations = errors.New("engine: maximum iterations reached")
	// ErrStaleResponse is returned for a response to an attempt that is not
	// the task's current one (a duplicate or late delivery); it is safe to
	// drop.
	ErrStaleResponse = errors.New("engine: stale response")
	// ErrInvalidResponse is returned for a response that breaks the task's
	// contract (undeclared or missing outputs, a handover that is not an
	// object, a failure without an error).
	ErrInvalidResponse = errors.New("engine: invalid response")
	// ErrTasksRunning is returned by Finalize while attempts are out.
	ErrTasksRunning = errors.New("engine: tasks still running")
	// ErrReplayDivergence is returned by Apply and Fold when re-applying an
	// event does not reproduce it.
	ErrReplayDivergence = errors.New("engine: replay diverged")
	// ErrBadEvent is returned for an event that cannot be applied.
	ErrBadEvent = errors.New("engine: bad event")
)
