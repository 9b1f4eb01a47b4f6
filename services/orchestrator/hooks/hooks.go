// Package hooks is how overlays attach to workflow runs (review rules,
// confidence thresholds, notifications): the engine knows no overlay, only
// four hook points, each registered for a task id or "*" for every task.
//
//   - pre-task: before each attempt is dispatched. An error vetoes the
//     attempt (it fails, and is retried if the task has retries left).
//   - post-task: after an attempt succeeded, with its result, before the
//     result is recorded. An error rejects the result (likewise a failure).
//   - on-failure: after a task has FAILED for good, with the error.
//   - on-loop-exit: after a task's attempt loop has ended, COMPLETED or
//     FAILED, with the number of attempts.
//
// Hooks of a point run in registration order, whatever their task pattern.
// At pre-task and post-task the first error stops the chain; on-failure and
// on-loop-exit hooks all run and their errors are joined (and only logged by
// the executor: the task's fate is already sealed). A hook may record
// annotations (Event.Annotate), which the executor applies to the run state
// through the engine's ANNOTATE action, so an overlay's findings are part of
// the replayable history. Hooks of different tasks run concurrently, so a
// hook must be safe for concurrent use.
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// Point is a hook point.
type Point string

// The hook points of the seed.
const (
	PreTask    Point = "pre-task"
	PostTask   Point = "post-task"
	OnFailure  Point = "on-failure"
	OnLoopExit Point = "on-loop-exit"
)

// AllTasks registers a hook for every task.
const AllTasks = "*"

// Event is what a hook is called with.
type Event struct {
	Point  Point
	RunID  string
	TaskID string
	// Task is the attempt (pre-task, post-task) or the last attempt.
	Task agent.Task
	// Result is the attempt's result, at post-task.
	Result *agent.Result
	// Error is the failure, at on-failure (and on-loop-exit after a failure).
	Error *engine.TaskError
	// Status is the task's final status, at on-loop-exit.
	Status engine.TaskStatus
	// Iterations is the number of attempts, at on-loop-exit.
	Iterations int

	notes *notes
}

type notes struct {
	mu   sync.Mutex
	list []Annotation
}

// Annotation is a key and JSON value a hook asked to store in the run.
type Annotation struct {
	TaskID string
	Key    string
	Value  json.RawMessage
}

// Annotate asks the executor to store value (marshalled to JSON) under key
// in the run's artifacts. Keys hold no ':'.
func (e Event) Annotate(key string, value any) error {
	if e.notes == nil {
		return errors.New("hooks: Annotate outside a hook call")
	}
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("hooks: annotation %q: %w", key, err)
	}
	e.notes.mu.Lock()
	e.notes.list = append(e.notes.list, Annotation{TaskID: e.TaskID, Key: key, Value: b})
	e.notes.mu.Unlock()
	return nil
}

// Func is a hook.
type Func func(ctx context.Context, e Event) error

// Error is a hook's failure: which hook, and its error.
type Error struct {
	Point Point
	// Index is the hook's position among the point's registrations.
	Index int
	// Pattern is the task id (or "*") it was registered for.
	Pattern string
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s hook #%d (%s): %v", e.Point, e.Index+1, e.Pattern, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

type entry struct {
	pattern string
	fn      Func
}

// Registry holds the hooks of a run (or of every run of an executor).
// Registration is safe while runs are going.
type Registry struct {
	mu    sync.RWMutex
	hooks map[Point][]entry
}

// New returns an empty registry.
func New() *Registry { return &Registry{hooks: map[Point][]entry{}} }

// Register adds fn at p for task (a task id or AllTasks).
func (r *Registry) Register(p Point, task string, fn Func) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks[p] = append(r.hooks[p], entry{pattern: task, fn: fn})
}

// OnPreTask registers a pre-task hook.
func (r *Registry) OnPreTask(task string, fn Func) { r.Register(PreTask, task, fn) }

// OnPostTask registers a post-task hook.
func (r *Registry) OnPostTask(task string, fn Func) { r.Register(PostTask, task, fn) }

// OnFailure registers an on-failure hook.
func (r *Registry) OnFailure(task string, fn Func) { r.Register(OnFailure, task, fn) }

// OnLoopExit registers an on-loop-exit hook.
func (r *Registry) OnLoopExit(task string, fn Func) { r.Register(OnLoopExit, task, fn) }

// Has reports whether a hook is registered at p for task (by its id or
// AllTasks): whether Run at that point would call anything. A nil registry
// has none.
func (r *Registry) Has(p Point, task string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, h := range r.hooks[p] {
		if h.pattern == AllTasks || h.pattern == task {
			return true
		}
	}
	return false
}

// Run calls the hooks of e.Point that match e.TaskID, in registration
// order, and returns the annotations they recorded. A nil registry runs
// nothing. A panicking hook is reported as its error.
func (r *Registry) Run(ctx context.Context, e Event) ([]Annotation, error) {
	if r == nil {
		return nil, nil
	}
	r.mu.RLock()
	list := append([]entry(nil), r.hooks[e.Point]...)
	r.mu.RUnlock()
	e.notes = &notes{}
	stopAtFirst := e.Point == PreTask || e.Point == PostTask
	var errs []error
	for i, h := range list {
		if h.pattern != AllTasks && h.pattern != e.TaskID {
			continue
		}
		if err := call(ctx, h.fn, e); err != nil {
			errs = append(errs, &Error{Point: e.Point, Index: i, Pattern: h.pattern, Err: err})
			if stopAtFirst {
				break
			}
		}
	}
	e.notes.mu.Lock()
	defer e.notes.mu.Unlock()
	return e.notes.list, errors.Join(errs...)
}

func call(ctx context.Context, fn Func, e Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hook panicked: %v", p)
		}
	}()
	return fn(ctx, e)
}
