// Package mock is the mock runtime (the seed's MockRuntimeAdapter): it
// records every call, answers from configured outcomes, and never calls a
// model. Workflows run end to end with it in tests, in `praetor dev` without
// a model, and in benchmarks.
package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// Outcome is what the mock answers for a task.
type Outcome struct {
	// Outputs give the content of outputs by name; a declared output not
	// listed gets a placeholder (valid JSON or YAML for .json and .yaml
	// names).
	Outputs map[string]string
	// Handover is handed downstream; nil hands {"agent": ..., "task": ...}.
	Handover map[string]any
	// Fail fails every attempt with this message (retryable).
	Fail string
	// FailAttempts fails the first n attempts (retryable), then succeeds.
	FailAttempts int
	// Reject refuses an approval task with this reason.
	Reject string
	// Delay holds each attempt this long, or until its context ends.
	Delay time.Duration
}

// Func answers a call in place of the outcomes, for tests that need to
// block, count or fail in a particular way.
type Func func(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error)

// Config configures a mock runtime.
type Config struct {
	// Default is the outcome of tasks without their own.
	Default Outcome
	// Tasks are outcomes by task id.
	Tasks map[string]Outcome
	// Func, when set, answers every call (after it is recorded).
	Func Func
}

// Call is one recorded dispatch.
type Call struct {
	Task    agent.Task
	Context agent.Context
}

// Runtime is the mock runtime.
type Runtime struct {
	cfg   Config
	mu    sync.Mutex
	calls []Call
}

// New returns a mock runtime.
func New(cfg Config) *Runtime { return &Runtime{cfg: cfg} }

// ErrFailed is the error of a configured failure.
var ErrFailed = errors.New("mock: configured failure")

// Dispatch records the call and answers it.
func (m *Runtime) Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	m.mu.Lock()
	m.calls = append(m.calls, Call{Task: t, Context: c})
	m.mu.Unlock()
	if m.cfg.Func != nil {
		return m.cfg.Func(ctx, t, c)
	}
	o, ok := m.cfg.Tasks[t.TaskID]
	if !ok {
		o = m.cfg.Default
	}
	if o.Delay > 0 {
		timer := time.NewTimer(o.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return agent.Result{}, err
	}
	switch {
	case o.Fail != "":
		return agent.Result{}, fmt.Errorf("%w: %s", ErrFailed, o.Fail)
	case t.Attempt <= o.FailAttempts:
		return agent.Result{}, fmt.Errorf("%w: attempt %d of %d failing attempts", ErrFailed, t.Attempt, o.FailAttempts)
	}
	r := agent.Result{Outputs: make(map[string][]byte, len(t.Outputs))}
	for _, name := range t.Outputs {
		if content, ok := o.Outputs[name]; ok {
			r.Outputs[name] = []byte(content)
			continue
		}
		r.Outputs[name] = placeholder(t, name)
	}
	handover := o.Handover
	if handover == nil {
		handover = map[string]any{"agent": t.Agent, "task": t.TaskID}
	}
	h, err := json.Marshal(handover)
	if err != nil {
		return agent.Result{}, fmt.Errorf("mock: handover of %s: %w", t.TaskID, err)
	}
	r.Handover = h
	if t.Kind == agent.KindApproval {
		r.Approval = &agent.Approval{Approved: o.Reject == "", Reason: cmpOr(o.Reject, "approved by the mock agent")}
	}
	return r, nil
}

func placeholder(t agent.Task, name string) []byte {
	switch strings.ToLower(path.Ext(name)) {
	case ".json":
		b, _ := json.Marshal(map[string]string{"task": t.TaskID, "output": name, "agent": t.Agent})
		return b
	case ".yaml", ".yml":
		return fmt.Appendf(nil, "task: %q\noutput: %q\nagent: %q\n", t.TaskID, name, t.Agent)
	}
	return fmt.Appendf(nil, "# %s\n\nMock output of task %s by agent %s.\n", name, t.TaskID, t.Agent)
}

// Calls returns every call so far, in the order they arrived.
func (m *Runtime) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// CallsFor returns the calls for one task.
func (m *Runtime) CallsFor(taskID string) []Call {
	var out []Call
	for _, c := range m.Calls() {
		if c.Task.TaskID == taskID {
			out = append(out, c)
		}
	}
	return out
}

// TaskIDs returns the task id of every call, in order.
func (m *Runtime) TaskIDs() []string {
	calls := m.Calls()
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.Task.TaskID
	}
	return ids
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
