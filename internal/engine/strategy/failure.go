package strategy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
)

// Action is what to do after a background task failed.
type Action = engine.FailureStrategyType

// Decision is the outcome of a failure strategy.
type Decision struct {
	Action Action `json:"action"`
	// RetryAfter is the backoff before the next attempt (retry only).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// NextAttempt is the attempt number of the retry.
	NextAttempt int `json:"next_attempt,omitempty"`
	// Note tells the agent how to proceed (degrade) or what is missing
	// (proceed-with-gap).
	Note string `json:"note,omitempty"`
}

// TaskFailureStrategy decides what a failed attempt leads to (the seed's
// TaskFailureStrategy). attempt is the number of the attempt that failed,
// from 1.
type TaskFailureStrategy interface {
	HandleFailure(task engine.BackgroundTask, err error, attempt int) Decision
}

// ErrPermanent marks a task error that retrying cannot fix; wrap it.
var ErrPermanent = errors.New("permanent task failure")

// DefaultRetryDelay is the first backoff when a retry strategy sets none.
const DefaultRetryDelay = 5 * time.Second

// MaxStallBackoff caps the wait between the attempts of a stalled task.
const MaxStallBackoff = 5 * time.Minute

// DefaultStallRetries is how often a stalled task is tried again when its
// strategy sets no max_retries: with the default 5s delay, doubling, the
// session waits about two and a half minutes for it besides the attempts
// themselves.
const DefaultStallRetries = 5

// ConfigDriven is the seed's v1 strategy: it reads failure_strategy from the
// task definition.
//
//   - retry waits retry_delay × 2^(attempt-1) (5s, 10s, 20s by default,
//     and for a retry_delay that is not positive)
//     while attempts remain (max_retries), then falls back to then (default
//     proceed-with-gap); a permanent error skips the retries;
//   - degrade proceeds without the result, with the degraded behaviour as
//     the agent's instruction;
//   - stall blocks progress until the task succeeds: it is tried again
//     with the same doubling backoff, capped at MaxStallBackoff, up to
//     max_retries times (default DefaultStallRetries, and 0 means not at
//     all; after a retry, that many more), then, or at once on a permanent
//     error, progress stops waiting and then applies (default
//     proceed-with-gap): a task that cannot succeed must not hold the
//     conversation for ever;
//   - proceed-with-gap proceeds and flags the gap.
type ConfigDriven struct{}

// HandleFailure implements TaskFailureStrategy.
func (ConfigDriven) HandleFailure(task engine.BackgroundTask, err error, attempt int) Decision {
	fs := task.FailureStrategy
	delay := fs.RetryDelay.D()
	if delay <= 0 {
		// Left out, or not positive (validation refuses it): a negative
		// delay would retry at once, for ever sooner.
		delay = DefaultRetryDelay
	}
	permanent := errors.Is(err, ErrPermanent)
	name := cmp.Or(task.DisplayName, task.TaskID)
	switch fs.Type {
	case engine.FailureRetry:
		if attempt <= retries(fs, 0) && !permanent {
			return Decision{Action: engine.FailureRetry, RetryAfter: backoff(delay, attempt), NextAttempt: attempt + 1}
		}
		// A stall after the retries waits as long again as one of its own.
		then := engine.FailureStrategy{Type: cmp.Or(fs.Then, engine.FailureProceedWithGap), RetryDelay: fs.RetryDelay,
			DegradedBehavior: fs.DegradedBehavior, MaxRetries: new(retries(fs, 0) + DefaultStallRetries)}
		return ConfigDriven{}.HandleFailure(engine.BackgroundTask{TaskID: task.TaskID, DisplayName: task.DisplayName,
			FailureStrategy: then}, err, attempt)
	case engine.FailureDegrade:
		return Decision{Action: engine.FailureDegrade, Note: cmp.Or(fs.DegradedBehavior, "proceed without "+name)}
	case engine.FailureStall:
		if attempt <= retries(fs, DefaultStallRetries) && !permanent {
			return Decision{Action: engine.FailureStall, Note: "Waiting for " + name + "...",
				RetryAfter: min(backoff(delay, attempt), MaxStallBackoff), NextAttempt: attempt + 1}
		}
		then := cmp.Or(fs.Then, engine.FailureProceedWithGap)
		if then == engine.FailureStall || then == engine.FailureRetry {
			then = engine.FailureProceedWithGap
		}
		return ConfigDriven{}.HandleFailure(engine.BackgroundTask{TaskID: task.TaskID, DisplayName: task.DisplayName,
			FailureStrategy: engine.FailureStrategy{Type: then, DegradedBehavior: fs.DegradedBehavior}}, err, attempt)
	default:
		return Decision{Action: engine.FailureProceedWithGap, Note: fmt.Sprintf("%s is unavailable", name)}
	}
}

// retries is fs's max_retries, or def where it sets none: an explicit 0
// means no retry.
func retries(fs engine.FailureStrategy, def int) int {
	if fs.MaxRetries == nil {
		return def
	}
	return *fs.MaxRetries
}

// backoff is delay × 2^(attempt-1), without overflowing.
func backoff(delay time.Duration, attempt int) time.Duration {
	d := delay
	for i := 1; i < attempt && d < MaxStallBackoff*1024; i++ {
		d *= 2
	}
	return d
}

// RecordFailure applies a decision, taken at time at on turn count turn, to
// working memory: retry keeps the task pending (retrying) with the next
// attempt, not before its backoff; stall keeps it pending (stalled), so it
// blocks progress, with its next attempt if there is one; degrade and
// proceed-with-gap settle it with that status and the note, and
// proceed-with-gap also records the gap for later phases to fill. It
// reports whether the task was awaited.
func RecordFailure(m *engine.WorkingMemory, taskID string, err error, d Decision, at time.Time) bool {
	bt := &m.BackgroundTasks
	idx := -1
	for i, t := range bt.Pending {
		if t.TaskID == taskID {
			idx = i
		}
	}
	if idx < 0 {
		return false
	}
	t := &bt.Pending[idx]
	t.Error = errString(err)
	switch d.Action {
	case engine.FailureRetry, engine.FailureStall:
		t.Status = engine.TaskRetrying
		if d.Action == engine.FailureStall {
			t.Status, t.Note = engine.TaskStalled, d.Note
		}
		if d.NextAttempt > 0 {
			t.Attempt, t.DispatchedAt, t.NotBefore = d.NextAttempt, at.UTC(), at.UTC().Add(d.RetryAfter)
		}
	default:
		done := *t
		done.Status, done.Note, done.SettledAtTurn = engine.TaskDegraded, d.Note, m.TurnNumber
		if d.Action == engine.FailureProceedWithGap {
			done.Status = engine.TaskGap
			if !slices.Contains(bt.Gaps, taskID) {
				bt.Gaps = append(bt.Gaps, taskID)
			}
		}
		bt.Pending = slices.Delete(bt.Pending, idx, idx+1)
		bt.Completed = append(bt.Completed, done)
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
