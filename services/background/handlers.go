package background

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm"
)

// Task is one attempt of a background task, as a handler gets it.
type Task struct {
	TenantID string
	// TaskID is the engine's task id; OwnerID the session waiting for it.
	TaskID  string
	OwnerID string
	Attempt int
	Handler string
	// Input is the task's input, a tasks.Input as JSON for the engines'
	// tasks.
	Input json.RawMessage
}

// Handler runs one attempt of a task and returns its result (JSON). Return
// an error wrapping ErrPermanent when retrying cannot help. It must honour
// ctx: the attempt's timeout, and the worker's shutdown.
type Handler func(ctx context.Context, t Task) (json.RawMessage, error)

// ErrPermanent marks a task failure that retrying cannot fix (a bad input):
// the task's failure strategy then skips its retries.
var ErrPermanent = errors.New("permanent")

// ErrDuplicate is returned when a handler name is registered twice.
var ErrDuplicate = errors.New("already registered")

type entry struct {
	description string
	fn          Handler
}

// Handlers holds the task handlers by name. Register everything before the
// service starts; reads are safe from any goroutine.
type Handlers struct {
	mu sync.RWMutex
	m  map[string]entry
}

// NewHandlers returns an empty registry.
func NewHandlers() *Handlers { return &Handlers{m: map[string]entry{}} }

// Register adds a handler under name, with what it does.
func (h *Handlers) Register(name, description string, fn Handler) error {
	if strings.TrimSpace(name) == "" || fn == nil {
		return errors.New("register task handler: name and function are required")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.m[name]; ok {
		return fmt.Errorf("register task handler %q: %w", name, ErrDuplicate)
	}
	h.m[name] = entry{description: description, fn: fn}
	return nil
}

// Lookup returns a handler.
func (h *Handlers) Lookup(name string) (Handler, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.m[name]
	return e.fn, ok
}

// Names returns the registered names, sorted.
func (h *Handlers) Names() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.m))
	for n := range h.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Descriptions returns what each handler does, by name.
func (h *Handlers) Descriptions() map[string]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]string, len(h.m))
	for n, e := range h.m {
		out[n] = e.description
	}
	return out
}

// Research handlers of the shipped engines.
const (
	HandlerCompetitors       = "research.competitors"
	HandlerSolutionLandscape = "research.solution_landscape"
)

// DefaultHandlers returns the handlers the shipped engines name: research
// handlers asking c for findings.
func DefaultHandlers(c llm.Client) (*Handlers, error) {
	h := NewHandlers()
	for _, r := range []struct{ name, description, brief string }{
		{HandlerCompetitors, "look up existing products that solve a problem",
			"Find existing products and services that already solve the user's problem: what they do, what they cost, " +
				"and where they fall short of what this user needs."},
		{HandlerSolutionLandscape, "research solution options, precedents and typical costs",
			"Map the kinds of solution for the user's problem (off-the-shelf, no-code, custom and others), with " +
				"precedents, typical costs and time to launch, and the tradeoffs between them."},
	} {
		if err := h.Register(r.name, r.description, Research(r.name, r.brief, c)); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// researchSchema is the JSON Schema of a research answer (tasks.Findings).
var researchSchema = json.RawMessage(`{"type":"object","required":["summary","findings"],"properties":{
	"summary":{"type":"string","minLength":1},
	"findings":{"type":"array","items":{"type":"object","required":["title","detail"],"properties":{
		"title":{"type":"string"},"detail":{"type":"string"}}}},
	"source":{"type":"string"}}}`)

// Research returns a handler registered as name that asks c for findings
// on the task (brief says what to research), given what the session knows,
// and answers with tasks.Findings. An input that is not a task's is a
// permanent failure; the model's failures are the attempt's.
func Research(name, brief string, c llm.Client) Handler {
	return func(ctx context.Context, t Task) (json.RawMessage, error) {
		var in tasks.Input
		if err := json.Unmarshal(t.Input, &in); err != nil || in.TaskID == "" {
			return nil, fmt.Errorf("%s: the input is not a task's (%v): %w", name, err, ErrPermanent)
		}
		body, err := json.Marshal(tasks.ResearchRequest{Handler: name, Task: in})
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %w", name, err, ErrPermanent)
		}
		req := llm.Request{Purpose: tasks.PurposeResearch, TenantID: t.TenantID, Scope: t.OwnerID,
			CallID: fmt.Sprintf("task/%s/%d/%s", t.TaskID, t.Attempt, tasks.PurposeResearch), MaxTokens: 800,
			Schema: &llm.Schema{Name: "findings", JSON: researchSchema},
			Messages: []llm.Message{
				{Role: llm.System, Content: "You are a research assistant working in the background of a conversation. " + brief +
					" Use only what you know; say so when unsure. Answer with JSON: {\"summary\": one or two sentences, " +
					"\"findings\": [{\"title\", \"detail\"}] with three to six findings}. The task and what the user said so far " +
					"follow as JSON."},
				{Role: llm.User, Content: string(body)},
			}}
		var f tasks.Findings
		resp, err := llm.CompleteJSON(ctx, c, req, &f)
		if err != nil {
			if errors.Is(err, llm.ErrInvalidAnswer) {
				return nil, fmt.Errorf("%s: the model's answer is not findings: %w", name, err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if f.Source == "" {
			f.Source = resp.Provider
		}
		return json.Marshal(f)
	}
}
