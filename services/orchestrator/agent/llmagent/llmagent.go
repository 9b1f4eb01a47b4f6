// Package llmagent is the runtime that runs a task as one chat completion
// through the LLM port (internal/llm): the rendered context is the prompt,
// and the model answers a JSON object holding the declared outputs and a
// handover (or, for an approval task, its decision), constrained by a JSON
// Schema where the provider supports one. An answer that is not that object
// fails the attempt with the reason, like any malformed output.
package llmagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// DefaultSystem is the system prompt when the agent sets none.
const DefaultSystem = "You are an agent in a Praetor workflow. Do the task you are given, following the constitution, and answer only with the JSON object asked for."

// Config configures an llm runtime.
type Config struct {
	// Client is the LLM port. Required.
	Client llm.Client
	// Model overrides the client's default model.
	Model string
	// System is the system prompt. Default DefaultSystem.
	System string
	// Temperature and MaxTokens override the provider defaults when set.
	Temperature *float64
	MaxTokens   int
	// TenantID is recorded with every call.
	TenantID string
}

// Runtime runs tasks as chat completions.
type Runtime struct {
	cfg Config
}

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	c.System = cmp.Or(c.System, DefaultSystem)
	return c
}

func (c Config) validate() error {
	if c.Client == nil {
		return errors.New("llmagent: Client is required")
	}
	return nil
}

// New returns an llm runtime.
func New(cfg Config) (*Runtime, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Runtime{cfg: cfg}, nil
}

type answer struct {
	Outputs  map[string]string `json:"outputs"`
	Handover json.RawMessage   `json:"handover,omitempty"`
	Approved *bool             `json:"approved,omitempty"`
	Reason   string            `json:"reason,omitempty"`
}

// Dispatch asks the model once.
func (r *Runtime) Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	schema, format := answerSchema(t)
	req := llm.Request{
		Model: r.cfg.Model,
		Messages: []llm.Message{
			{Role: llm.System, Content: r.cfg.System},
			{Role: llm.User, Content: agent.Render(t, c) + "\n## Answer\n\n" + format},
		},
		JSON:        true,
		Schema:      &llm.Schema{Name: "workflow_task", JSON: schema},
		Temperature: r.cfg.Temperature,
		MaxTokens:   r.cfg.MaxTokens,
		Purpose:     "workflow.task",
		TenantID:    r.cfg.TenantID,
		Scope:       t.RunID,
	}
	resp, err := r.cfg.Client.Complete(ctx, req)
	if err != nil {
		return agent.Result{}, fmt.Errorf("llm agent %s: %w", t.Agent, err)
	}
	var a answer
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(stripFence(resp.Content))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return agent.Result{}, &agent.OutputError{Reason: fmt.Sprintf("the model's answer is not the JSON object asked for: %v", err)}
	}
	res := agent.Result{Outputs: make(map[string][]byte, len(a.Outputs)), Handover: a.Handover}
	for name, content := range a.Outputs {
		res.Outputs[name] = []byte(content)
	}
	if t.Kind == agent.KindApproval {
		if a.Approved == nil {
			return agent.Result{}, &agent.OutputError{Output: "approved", Reason: "missing from the model's answer"}
		}
		res.Approval = &agent.Approval{Approved: *a.Approved, Reason: a.Reason}
	}
	return res, nil
}

// answerSchema is the JSON Schema of the answer, and the same in words for
// providers that ignore schemas.
func answerSchema(t agent.Task) (json.RawMessage, string) {
	props := map[string]any{}
	required := []string{}
	for _, o := range t.Outputs {
		props[o] = map[string]any{"type": "string"}
		required = append(required, o)
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"outputs":  map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false},
			"handover": map[string]any{"type": "object"},
		},
		"required":             []string{"outputs"},
		"additionalProperties": false,
	}
	format := `Answer with one JSON object: {"outputs": {` + quoteList(t.Outputs) + `}, "handover": {...}}, where each output holds the full content of that file and handover holds what the next tasks need to know.`
	if t.Kind == agent.KindApproval {
		p := schema["properties"].(map[string]any)
		p["approved"] = map[string]any{"type": "boolean"}
		p["reason"] = map[string]any{"type": "string"}
		schema["required"] = []string{"outputs", "approved", "reason"}
		format = `Answer with one JSON object: {"approved": true or false, "reason": "...", "outputs": {` + quoteList(t.Outputs) + `}, "handover": {...}}.`
	}
	b, _ := json.Marshal(schema)
	return b, format
}

func quoteList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%q: \"...\"", n)
	}
	return strings.Join(parts, ", ")
}

// stripFence removes a ```json fence some models wrap answers in.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSuffix(strings.TrimSpace(s), "```")
}
