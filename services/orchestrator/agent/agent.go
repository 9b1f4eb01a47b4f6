// Package agent is the contract between the orchestrator and the runtimes
// that run its tasks (the seed's RuntimeAdapter): a Runtime receives a Task
// (one attempt of one workflow task) and a Context (constitution, handover of
// upstream tasks, input contents, task definition) and returns a Result (the
// declared outputs, a handover for downstream tasks, an approval decision)
// or an error.
//
// The types are plain JSON so the same contract works in process and across
// NATS: a JetStream dispatcher can publish Task and Context in a
// task.dispatched event and decode a Result from task.completed.
//
// Adapters live in subpackages: mock (records calls, no LLM), llmagent (a
// chat completion through the LLM port) and command (an external agent CLI).
// Router dispatches to them by agent name.
//
// Errors: a Runtime's error is retried up to the task's retries unless it is
// permanent (events.Permanent), a *RejectedError (an approval refused) or the
// run is stopping. *OutputError reports a missing or malformed output.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
)

// Kinds of task, as in the engine.
const (
	KindWork     = "work"
	KindApproval = "approval"
)

// Task is one attempt of one workflow task, as dispatched.
type Task struct {
	RunID  string `json:"run_id"`
	TaskID string `json:"task_id"`
	// DispatchID identifies the attempt; a re-dispatch after an
	// orchestrator restart carries the same id, so a runtime or worker that
	// remembers ids can answer without running the task twice.
	DispatchID string `json:"dispatch_id"`
	Attempt    int    `json:"attempt"`
	Agent      string `json:"agent"`
	// Kind is work or approval.
	Kind string `json:"kind"`
	// Outputs name the files a successful attempt must produce.
	Outputs []string `json:"outputs,omitempty"`
	// Timeout bounds the attempt; the dispatch context carries the deadline.
	Timeout time.Duration `json:"timeout"`
}

// Context is what the agent works from (the seed's AgentContext).
type Context struct {
	// Instructions say what to do (the task's instructions or description).
	Instructions string `json:"instructions,omitempty"`
	// Constitution is the merged constitution, rendered with each rule's
	// source.
	Constitution string `json:"constitution,omitempty"`
	// Handover holds the handover state of the completed upstream tasks, in
	// dependency order.
	Handover []Handover `json:"handover,omitempty"`
	// Inputs are the contents of the task's inputs, in declared order.
	Inputs []Input `json:"inputs,omitempty"`
	// Definition is the task's definition as YAML.
	Definition string `json:"definition"`
}

// Handover is the handover state of one upstream task.
type Handover struct {
	TaskID string          `json:"task_id"`
	State  json.RawMessage `json:"state"`
}

// Input is the content of one input.
type Input struct {
	// Name is the input as the task wrote it.
	Name string `json:"name"`
	// Source says where the content came from: "file brief.md" or "output
	// requirements.md of task define-requirements".
	Source  string `json:"source"`
	Content string `json:"content"`
}

// Approval is an approval task's decision.
type Approval struct {
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
}

// Result is a successful attempt's product.
type Result struct {
	// Outputs hold the content of each declared output, by name.
	Outputs map[string][]byte `json:"outputs,omitempty"`
	// Handover is a JSON object handed to downstream tasks (optional).
	Handover json.RawMessage `json:"handover,omitempty"`
	// Approval is required from an approval task.
	Approval *Approval `json:"approval,omitempty"`
}

// Runtime runs tasks: one agent kind (mock, llm, command) or a Router over
// several. Implementations are safe for concurrent use and honour the
// context's deadline and cancellation.
type Runtime interface {
	Dispatch(ctx context.Context, t Task, c Context) (Result, error)
}

// Abandoner is a Runtime that can stop what an attempt left running
// without its dispatcher: a durable command started by a worker that died,
// when the attempt reaches another worker only after the orchestrator gave
// up on it. Abandon stops it, if anything of it runs, and returns once it
// has.
type Abandoner interface {
	Abandon(ctx context.Context, t Task) error
}

// OutputError reports an output that is missing or malformed; the task
// fails with it (and retries, if it has retries left: an agent may do better
// on a second try).
type OutputError struct {
	Output string
	Reason string
}

func (e *OutputError) Error() string {
	if e.Output == "" {
		return e.Reason
	}
	return fmt.Sprintf("output %s: %s", e.Output, e.Reason)
}

// RejectedError is an approval task's refusal. It is permanent.
type RejectedError struct{ Reason string }

func (e *RejectedError) Error() string { return "approval refused: " + e.Reason }

// Rejected returns the error of an approval refused for reason.
func Rejected(reason string) error {
	return events.Permanent(&RejectedError{Reason: cmpOr(reason, "no reason given")})
}

// ErrUnknownAgent is returned by Router for an agent it has no runtime for.
var ErrUnknownAgent = errors.New("agent: no runtime for agent")

// Router dispatches each task to the runtime of its agent.
type Router struct {
	runtimes map[string]Runtime
}

// NewRouter returns a router over runtimes by agent name.
func NewRouter(runtimes map[string]Runtime) *Router {
	m := make(map[string]Runtime, len(runtimes))
	for k, v := range runtimes {
		m[k] = v
	}
	return &Router{runtimes: m}
}

// Dispatch runs t on its agent's runtime.
func (r *Router) Dispatch(ctx context.Context, t Task, c Context) (Result, error) {
	rt, ok := r.runtimes[t.Agent]
	if !ok {
		return Result{}, events.Permanent(fmt.Errorf("%w %q", ErrUnknownAgent, t.Agent))
	}
	return rt.Dispatch(ctx, t, c)
}

// Abandon stops what t left running, when its agent's runtime is an
// Abandoner (see there); nothing otherwise.
func (r *Router) Abandon(ctx context.Context, t Task) error {
	if a, ok := r.runtimes[t.Agent].(Abandoner); ok {
		return a.Abandon(ctx, t)
	}
	return nil
}

// Runtime returns the runtime of an agent.
func (r *Router) Runtime(agent string) (Runtime, bool) {
	rt, ok := r.runtimes[agent]
	return rt, ok
}

// Agents returns the agent names, sorted.
func (r *Router) Agents() []string {
	names := make([]string, 0, len(r.runtimes))
	for n := range r.runtimes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
