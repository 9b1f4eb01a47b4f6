package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/tasks"
)

// A task declared overdue (workers backlogged) under proceed-with-gap
// becomes a gap; when its attempt's result arrives after all, it is taken
// and the gap closes (it used to be dropped, the gap staying until a later
// phase ran the research again; found by helper-52).
func TestTheLateResultOfAGapClosesIt(t *testing.T) {
	def, m := dispatched(t, engine.FailureStrategy{Type: engine.FailureProceedWithGap})
	def.BackgroundTasks[0].EstimatedDuration = engine.Duration(30 * time.Second)
	now := epoch.Add(2*time.Minute + time.Second)
	for _, late := range tasks.Overdue(def, m, 2, now) {
		tasks.Fail(def, m, nil, late.TaskID, late.Attempt, tasks.Failure{Message: "no answer from the background workers in time"}, now)
	}
	if len(m.BackgroundTasks.Gaps) != 1 {
		t.Fatalf("gaps = %v", m.BackgroundTasks.Gaps)
	}
	// The worker that had attempt 1 in its backlog answers a moment later.
	if !tasks.Complete(m, "research", 1, json.RawMessage(`{"summary":"found it","findings":[]}`)) {
		r, _ := m.BackgroundTasks.Task("research")
		t.Fatalf("the late result of the gap's attempt was dropped: task %s, gaps %v", r.Status, m.BackgroundTasks.Gaps)
	}
	r, _ := m.BackgroundTasks.Task("research")
	if r.Status != engine.TaskCompleted || string(r.Result) != `{"summary":"found it","findings":[]}` || len(m.BackgroundTasks.Gaps) != 0 ||
		len(m.BackgroundTasks.Completed) != 1 {
		t.Errorf("after the late result: %+v, gaps %v, %d completed", r, m.BackgroundTasks.Gaps, len(m.BackgroundTasks.Completed))
	}
	// A second copy of it changes nothing.
	if tasks.Complete(m, "research", 1, json.RawMessage(`{"summary":"again"}`)) {
		t.Error("a second copy of the result was taken")
	}
}
