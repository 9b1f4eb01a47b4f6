package mock

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

func TestMockRecordsAndAnswers(t *testing.T) {
	t.Parallel()
	m := New(Config{
		Default: Outcome{Handover: map[string]any{"n": 1}},
		Tasks: map[string]Outcome{
			"b":   {Outputs: map[string]string{"b.md": "custom"}, FailAttempts: 1},
			"bad": {Fail: "disk on fire"},
			"ok":  {Reject: "not convinced"},
		},
	})
	ctx := context.Background()
	a := agent.Task{TaskID: "a", Agent: "w", Attempt: 1, Outputs: []string{"a.md", "a.json", "a.yaml"}}
	r, err := m.Dispatch(ctx, a, agent.Context{Definition: "id: a"})
	if err != nil {
		t.Fatal(err)
	}
	r0 := r
	if err := agent.Check(a, r, 0); err != nil {
		t.Fatalf("default answer does not pass Check: %v", err)
	}
	if string(r.Handover) != `{"n":1}` {
		t.Fatalf("handover = %s", r.Handover)
	}
	b := agent.Task{TaskID: "b", Agent: "w", Attempt: 1, Outputs: []string{"b.md"}}
	if _, err := m.Dispatch(ctx, b, agent.Context{}); !errors.Is(err, ErrFailed) {
		t.Fatalf("first attempt of b = %v, want a configured failure", err)
	}
	b.Attempt = 2
	r, err = m.Dispatch(ctx, b, agent.Context{})
	if err != nil || string(r.Outputs["b.md"]) != "custom" {
		t.Fatalf("second attempt of b = %v %q", err, r.Outputs["b.md"])
	}
	if _, err := m.Dispatch(ctx, agent.Task{TaskID: "bad", Attempt: 5}, agent.Context{}); err == nil || err.Error() != "mock: configured failure: disk on fire" {
		t.Fatalf("bad = %v", err)
	}
	r, err = m.Dispatch(ctx, agent.Task{TaskID: "ok", Kind: agent.KindApproval, Attempt: 1}, agent.Context{})
	if err != nil || r.Approval == nil || r.Approval.Approved || r.Approval.Reason != "not convinced" {
		t.Fatalf("approval = %v %+v", err, r.Approval)
	}
	if got := m.TaskIDs(); len(got) != 5 || got[0] != "a" || got[4] != "ok" {
		t.Fatalf("recorded calls = %v", got)
	}
	if c := m.CallsFor("a"); len(c) != 1 || c[0].Context.Definition != "id: a" {
		t.Fatalf("calls for a = %+v", c)
	}
	var placeholder map[string]string
	if err := json.Unmarshal(r0.Outputs["a.json"], &placeholder); err != nil || placeholder["task"] != "a" {
		t.Fatalf("a.json placeholder = %s (%v)", r0.Outputs["a.json"], err)
	}
}

func TestMockDelayHonoursCancellation(t *testing.T) {
	t.Parallel()
	m := New(Config{Default: Outcome{Delay: time.Hour}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Dispatch(ctx, agent.Task{TaskID: "slow", Attempt: 1}, agent.Context{})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a delayed mock ignored cancellation")
	}
}
