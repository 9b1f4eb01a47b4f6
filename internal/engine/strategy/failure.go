package strategy

import (
	"cmp"
	"errors"
	"fmt"
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

// ConfigDriven is the seed's v1 strategy: it reads failure_strategy from the
// task definition. retry waits retry_delay × 2^(attempt-1) (5s, 10s, 20s)
// while attempts remain, then falls back to then (default
// proceed-with-gap); a permanent error skips the retries.
type ConfigDriven struct{}

// HandleFailure implements TaskFailureStrategy.
func (ConfigDriven) HandleFailure(task engine.BackgroundTask, err error, attempt int) Decision {
	fs := task.FailureStrategy
	switch fs.Type {
	case engine.FailureRetry:
		if attempt <= fs.MaxRetries && !errors.Is(err, ErrPermanent) {
			delay := cmp.Or(fs.RetryDelay.D(), DefaultRetryDelay)
			return Decision{Action: engine.FailureRetry, RetryAfter: delay << (attempt - 1), NextAttempt: attempt + 1}
		}
		then := cmp.Or(fs.Then, engine.FailureProceedWithGap)
		return ConfigDriven{}.HandleFailure(engine.BackgroundTask{TaskID: task.TaskID, DisplayName: task.DisplayName,
			FailureStrategy: engine.FailureStrategy{Type: then, DegradedBehavior: fs.DegradedBehavior}}, err, attempt)
	case engine.FailureDegrade:
		return Decision{Action: engine.FailureDegrade, Note: cmp.Or(fs.DegradedBehavior, "proceed without "+task.DisplayName)}
	case engine.FailureStall:
		return Decision{Action: engine.FailureStall, Note: "Waiting for " + task.DisplayName + "..."}
	default:
		return Decision{Action: engine.FailureProceedWithGap, Note: fmt.Sprintf("%s is unavailable", cmp.Or(task.DisplayName, task.TaskID))}
	}
}

// RecordFailure applies a decision to working memory: retry keeps the task
// pending with the next attempt; stall keeps it pending (so it keeps
// blocking a phase transition if it does); degrade and proceed-with-gap move
// it to completed with that status, and proceed-with-gap also records the
// gap for later phases to fill.
func RecordFailure(m *engine.WorkingMemory, taskID string, err error, d Decision) {
	bt := &m.BackgroundTasks
	idx := -1
	for i, t := range bt.Pending {
		if t.TaskID == taskID {
			idx = i
		}
	}
	if idx < 0 {
		return
	}
	switch d.Action {
	case engine.FailureRetry:
		bt.Pending[idx].Attempt = d.NextAttempt
		bt.Pending[idx].Error = errString(err)
	case engine.FailureStall:
		bt.Pending[idx].Status = "stalled"
		bt.Pending[idx].Error = errString(err)
	default:
		t := bt.Pending[idx]
		t.Status, t.Error = string(d.Action), errString(err)
		bt.Pending = append(bt.Pending[:idx], bt.Pending[idx+1:]...)
		bt.Completed = append(bt.Completed, t)
		if d.Action == engine.FailureProceedWithGap {
			bt.Gaps = append(bt.Gaps, taskID)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
