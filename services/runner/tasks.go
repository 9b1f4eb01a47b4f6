package runner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/completeness"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/engine/sidebar"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// TaskKind is the kind (worker pool) of the engines' background tasks: the
// last token of their task.dispatched subject.
const TaskKind = contracts.TaskKindBackground

// IntelligenceTaskID is the task id under which lines of background
// intelligence (Config.Intelligence) are merged into a session. Engine task
// ids are snake_case, so it never names one of theirs.
const IntelligenceTaskID = "_intelligence"

// SidebarTasksSection is the id of the sidebar section listing the
// session's background tasks.
const SidebarTasksSection = "background_tasks"

// dispatch is the dispatch of a task record: its handler, attempt and
// backoff, the timeout from the task's estimated duration, and what the
// session knows for the handler to work on.
func (r *Runner) dispatch(def *engine.Definition, m *engine.WorkingMemory, rec engine.TaskRecord) (TaskDispatch, error) {
	t, ok := tasks.Lookup(def, rec.TaskID)
	if !ok {
		return TaskDispatch{}, fmt.Errorf("runner: engine %s defines no background task %s", def.EngineID, rec.TaskID)
	}
	in, err := json.Marshal(tasks.NewInput(def, m, t))
	if err != nil {
		return TaskDispatch{}, fmt.Errorf("runner: task input: %w", err)
	}
	return TaskDispatch{TaskID: rec.TaskID, Handler: cmp.Or(rec.Handler, t.Handler), Attempt: rec.Attempt,
		Timeout: time.Duration(float64(t.EstimatedDuration.D()) * r.cfg.TaskTimeoutFactor), NotBefore: rec.NotBefore, Input: in}, nil
}

// TaskOutcome is what came back for one attempt of a background task (or,
// under IntelligenceTaskID, lines of background intelligence as a JSON
// array of strings in Output).
type TaskOutcome struct {
	TaskID    string
	Attempt   int
	Completed bool
	Output    json.RawMessage
	Error     string
	Permanent bool
	// At is when the worker answered; a retry's backoff counts from it.
	At time.Time
	// From, when set, is the session that dispatched the task and handed
	// off to this one before its result came back (see Merged.Forward).
	From string
}

// OutcomeOf reads a task.returned event's payload.
func OutcomeOf(tr contracts.TaskReturned) TaskOutcome {
	return TaskOutcome{TaskID: tr.TaskID, Attempt: tr.Attempt, Completed: tr.Completed, Output: tr.Output,
		Error: tr.Error, Permanent: tr.Permanent, At: tr.ReturnedAt, From: tr.FromSessionID}
}

// Forward is a task result for another session to merge: the session the
// conversation went on in, after the one that dispatched the task handed
// off to it.
type Forward struct {
	SessionID string
	Outcome   TaskOutcome
}

// Merged is a task outcome merged into working memory.
type Merged struct {
	// Applied is false when the session did not wait for this attempt (a
	// duplicate, or an attempt a retry replaced): State is then the state
	// given, unchanged.
	Applied   bool
	State     *engine.WorkingMemory
	StateHash string
	Sidebar   sidebar.State
	// Status is the task's status after the merge (contracts.TaskStatus*),
	// Note the failure strategy's word for the agent.
	Status string
	Note   string
	// Tasks are the attempts to dispatch now: a retry, or a stalled task
	// tried again.
	Tasks []TaskDispatch
	// Forward, when the session has handed off, is the result for the
	// handoff's target session: research the source started serves the
	// engine the conversation went on with.
	Forward *Forward
}

// ErrBadOutcome is returned for an outcome that cannot be merged.
var ErrBadOutcome = errors.New("runner: task outcome cannot be merged")

// Merge merges a background task's outcome into a session's working
// memory: a result settles the task (completed), a failure goes to the
// failure strategy (retry, degrade, stall, proceed-with-gap), lines of
// intelligence replace the session's. A session that has handed off tries
// nothing again, and passes a result on to the handoff's target session
// (Forward), where it merges as a completed task (From set). Obligations,
// completeness and the sidebar are brought up to date. Like Process it is
// pure: a replay merging the same outcome at the same point gets the same
// state.
func (r *Runner) Merge(def *engine.Definition, state *engine.WorkingMemory, out TaskOutcome) (*Merged, error) {
	if state == nil || state.EngineID != def.EngineID {
		return nil, fmt.Errorf("%w: the state is not of engine %s", ErrEngineMismatch, def.EngineID)
	}
	m := state.Clone()
	res := &Merged{State: m}
	switch {
	case out.TaskID == IntelligenceTaskID:
		var lines []string
		if err := json.Unmarshal(out.Output, &lines); err != nil {
			return nil, fmt.Errorf("%w: intelligence is not a list of lines: %v", ErrBadOutcome, err)
		}
		m.BackgroundTasks.Intelligence = lines
		res.Applied, res.Status = true, contracts.TaskStatusCompleted
	case out.From != "":
		res.Applied = out.Completed && tasks.Adopt(m, out.TaskID, out.Attempt, out.Output)
		res.Status = contracts.TaskStatusCompleted
	case out.Completed:
		res.Applied = tasks.Complete(m, out.TaskID, out.Attempt, out.Output)
		res.Status = contracts.TaskStatusCompleted
	default:
		d, ok := tasks.Fail(def, m, r.cfg.TaskStrategy, out.TaskID, out.Attempt,
			tasks.Failure{Message: out.Error, Permanent: out.Permanent}, out.At)
		res.Applied, res.Note = ok, d.Note
		if rec, found := m.BackgroundTasks.Task(out.TaskID); ok && found {
			res.Status = rec.Status
			if d.NextAttempt > 0 {
				dispatch, err := r.dispatch(def, m, rec)
				if err != nil {
					return nil, err
				}
				res.Tasks = append(res.Tasks, dispatch)
			}
		}
	}
	if !res.Applied {
		return &Merged{State: state, Status: contracts.TaskStatusIgnored}, nil
	}
	if x := m.Exit; x != nil && x.HandoffID != "" && out.Completed && out.TaskID != IntelligenceTaskID {
		fwd := out
		fwd.From = m.SessionID
		res.Forward = &Forward{SessionID: TargetSessionID(x.HandoffID), Outcome: fwd}
	}
	if !out.At.IsZero() && out.At.After(m.UpdatedAt) {
		m.UpdatedAt = out.At.UTC()
	}
	m.Obligations = obligation.Evaluate(def, m, r.cfg.Registry)
	m.Completeness = completeness.Evaluate(def, m, r.cfg.Registry)
	res.Sidebar = withTasks(sidebar.Build(def, m, r.cfg.Registry), def, m)
	hash, err := engine.StateHash(m)
	if err != nil {
		return nil, fmt.Errorf("runner: state: %w", err)
	}
	res.StateHash = hash
	return res, nil
}

// withTasks adds to a sidebar the section of the session's background
// tasks, when it has any: each task with its status (pending, retrying,
// stalled, completed, degraded, proceed-with-gap).
func withTasks(sb sidebar.State, def *engine.Definition, m *engine.WorkingMemory) sidebar.State {
	bt := m.BackgroundTasks
	if len(bt.Pending)+len(bt.Completed) == 0 {
		return sb
	}
	sec := sidebar.Section{ID: SidebarTasksSection, Title: "Background research", Visible: true, Dynamic: true, Items: []sidebar.Item{}}
	for _, list := range [][]engine.TaskRecord{bt.Completed, bt.Pending} {
		for _, t := range list {
			label := t.TaskID
			if d, ok := tasks.Lookup(def, t.TaskID); ok {
				label = cmp.Or(d.DisplayName, label)
			}
			sec.Items = append(sec.Items, sidebar.Item{ObligationID: t.TaskID, Label: label,
				Status: engine.ObligationStatusValue(cmp.Or(t.Status, engine.TaskPending))})
		}
	}
	sb.Sections = append(sb.Sections, sec)
	return sb
}
