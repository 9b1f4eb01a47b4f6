package engine

import (
	"maps"
	"time"
)

// Change applies transitions to a state one after another, as the
// executor does with the answers (or dispatches) that arrive together, and
// as a replay does with a run's events. It gives the same states and events
// as the transitions applied one by one, for a fraction of the cost: a
// transition on its own copies the state's task map (and, when it adds to
// it, the artifact map), O(tasks); a Change copies each at most once, on its
// first write, and changes its own copies in place after that. On a
// 1,000-task plan the copies were most of the executor's allocations.
//
// States stay immutable values: State returns the state so far, and the
// change copies again before its next write, so no returned state is ever
// modified. A transition that fails leaves the change as it was.
type Change struct {
	s State
	// ownTasks and ownArts say whether s.Tasks and s.Artifacts are this
	// change's own copies, written by no one else and seen by no one else.
	ownTasks, ownArts bool
}

// NewChange starts a change of s; s itself is never modified.
func NewChange(s State) *Change { return &Change{s: s} }

// State returns the state after the transitions applied so far.
func (ch *Change) State() State {
	ch.ownTasks, ch.ownArts = false, false
	return ch.s
}

// View returns the state so far to read, such as for Decide, without
// ending the change: unlike State's, it is valid only until the change's
// next transition, which may write its maps in place. Do not keep it.
func (ch *Change) View() State { return ch.s }

// Task returns a task's state so far, nil for a task the plan does not
// have. Read it only: TaskStates are shared with the states returned.
func (ch *Change) Task(id string) *TaskState { return ch.s.Tasks[id] }

// Next returns the context of the next transition, at now: Next of the
// state so far.
func (ch *Change) Next(now time.Time) Ctx { return Next(ch.s, now) }

// putTask replaces a task's state. The TaskState itself is new (callers
// never write through the pointers of a state).
func (ch *Change) putTask(id string, t *TaskState) {
	if !ch.ownTasks {
		ch.s.Tasks = maps.Clone(ch.s.Tasks)
		ch.ownTasks = true
	}
	ch.s.Tasks[id] = t
}

// putArtifact adds or replaces an artifact.
func (ch *Change) putArtifact(key string, a Artifact) {
	if !ch.ownArts {
		ch.s.Artifacts = maps.Clone(ch.s.Artifacts)
		if ch.s.Artifacts == nil {
			ch.s.Artifacts = map[string]Artifact{}
		}
		ch.ownArts = true
	}
	ch.s.Artifacts[key] = a
}

// commit records a stamped event as the state's last.
func (ch *Change) commit(e Event, logHash string) {
	ch.s.Seq = e.Seq
	ch.s.LogHash = logHash
}
