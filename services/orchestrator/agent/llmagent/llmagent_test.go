package llmagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// fakeClient answers with a fixed content and records requests.
type fakeClient struct {
	mu      sync.Mutex
	content string
	err     error
	reqs    []llm.Request
}

func (f *fakeClient) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return nil, f.err
	}
	return &llm.Response{Content: f.content, Provider: "fake"}, nil
}

var task = agent.Task{RunID: "run-1", TaskID: "design", Agent: "architect", Attempt: 1, Kind: agent.KindWork, Outputs: []string{"design.md"}}

func TestLLMAgentAnswer(t *testing.T) {
	t.Parallel()
	temp := 0.2
	fc := &fakeClient{content: "```json\n{\"outputs\": {\"design.md\": \"# Design\"}, \"handover\": {\"risk\": \"low\"}}\n```"}
	r, err := New(Config{Client: fc, Model: "m1", System: "Be brief.", Temperature: &temp})
	if err != nil {
		t.Fatal(err)
	}
	c := agent.Context{Constitution: "### Use UTC", Definition: "id: design\n"}
	res, err := r.Dispatch(context.Background(), task, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Check(task, res, 0); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if string(res.Outputs["design.md"]) != "# Design" || string(res.Handover) != `{"risk": "low"}` {
		t.Fatalf("result = %+v", res)
	}
	req := fc.reqs[0]
	if req.Model != "m1" || req.Messages[0].Content != "Be brief." || req.Scope != "run-1" || req.Purpose != "workflow.task" || *req.Temperature != 0.2 {
		t.Fatalf("request = %+v", req)
	}
	if !strings.Contains(req.Messages[1].Content, "### Use UTC") || !strings.Contains(req.Messages[1].Content, `"design.md": "..."`) {
		t.Fatalf("prompt lacks the context or the answer format:\n%s", req.Messages[1].Content)
	}
	var schema map[string]any
	if err := json.Unmarshal(req.Schema.JSON, &schema); err != nil || schema["type"] != "object" {
		t.Fatalf("schema = %s (%v)", req.Schema.JSON, err)
	}
}

func TestLLMAgentBadAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, content, want string }{
		{"not json", "Sure! Here is the design.", "not the JSON object asked for"},
		{"unknown field", `{"outputs": {}, "files": {}}`, "unknown field"},
		{"missing output", `{"outputs": {}}`, "output design.md: missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := New(Config{Client: &fakeClient{content: tc.content}})
			res, err := r.Dispatch(context.Background(), task, agent.Context{})
			if err == nil {
				err = agent.Check(task, res, 0)
			}
			var oe *agent.OutputError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want OutputError with %q", err, tc.want)
			}
		})
	}
	boom := errors.New("429 too many requests")
	r, _ := New(Config{Client: &fakeClient{err: boom}})
	if _, err := r.Dispatch(context.Background(), task, agent.Context{}); !errors.Is(err, boom) {
		t.Fatalf("client error = %v", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a client")
	}
}

func TestLLMAgentApproval(t *testing.T) {
	t.Parallel()
	approval := agent.Task{TaskID: "signoff", Kind: agent.KindApproval}
	r, _ := New(Config{Client: &fakeClient{content: `{"approved": false, "reason": "no tests", "outputs": {}}`}})
	res, err := r.Dispatch(context.Background(), approval, agent.Context{})
	if err != nil {
		t.Fatal(err)
	}
	var re *agent.RejectedError
	if err := agent.Check(approval, res, 0); !errors.As(err, &re) || re.Reason != "no tests" {
		t.Fatalf("Check = %v", err)
	}
	r, _ = New(Config{Client: &fakeClient{content: `{"outputs": {}}`}})
	if _, err := r.Dispatch(context.Background(), approval, agent.Context{}); err == nil || !strings.Contains(err.Error(), "approved") {
		t.Fatalf("approval without decision = %v", err)
	}
}
