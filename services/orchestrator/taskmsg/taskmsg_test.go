package taskmsg_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

var task = agent.Task{RunID: "run-1", TaskID: "design", DispatchID: "run-1/design/2", Attempt: 2, Agent: "architect",
	Kind: agent.KindWork, Outputs: []string{"design.md"}, Timeout: time.Minute}

var at = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// wire sends an event through the binary content mode, as NATS carries it.
func wire(t *testing.T, ev event.Event) event.Event {
	t.Helper()
	subject, err := contracts.Subject(ev)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	back, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestDispatchRoundTrip(t *testing.T) {
	t.Parallel()
	c := agent.Context{Instructions: "Design it.", Constitution: "## Rule\nBe brief.",
		Handover:   []agent.Handover{{TaskID: "req", State: []byte(`{"r":["R1"]}`)}},
		Inputs:     []agent.Input{{Name: "requirements.md", Source: "file requirements.md", Content: "R1. Rooms."}},
		Definition: "id: design\n"}
	deadline := at.Add(90 * time.Second)
	ev, err := taskmsg.Dispatched("acme", task, c, at, deadline, 0)
	if err != nil {
		t.Fatal(err)
	}
	if subject, _ := contracts.Subject(ev); subject != "praetor.task.dispatched.acme.architect" {
		t.Fatalf("subject = %s: worker pools filter on the agent", subject)
	}
	if ev.ID() != taskmsg.DispatchEventID("acme", task.DispatchID) {
		t.Fatal("the dispatch event id is not derived from the dispatch id")
	}
	d, err := taskmsg.DecodeDispatched(wire(t, ev))
	if err != nil {
		t.Fatal(err)
	}
	if d.Tenant != "acme" || fmt.Sprint(d.Task) != fmt.Sprint(task) || agent.Render(d.Task, d.Context) != agent.Render(task, c) ||
		!d.Deadline.Equal(deadline) {
		t.Fatalf("decoded %+v", d)
	}
	if ev, err := taskmsg.Dispatched("acme", task, c, at, time.Time{}, 0); err != nil {
		t.Fatal(err)
	} else if d, err := taskmsg.DecodeDispatched(wire(t, ev)); err != nil || !d.Deadline.IsZero() {
		t.Fatalf("without a deadline: %+v, %v", d.Deadline, err)
	}

	if _, err := taskmsg.Dispatched("acme", task, agent.Context{Inputs: []agent.Input{{Content: strings.Repeat("x", 2000)}}}, at, time.Time{}, 1000); !errors.Is(err, taskmsg.ErrTooLarge) ||
		!events.IsPermanent(err) || !strings.Contains(err.Error(), "task design") {
		t.Fatalf("oversized dispatch = %v, want a permanent ErrTooLarge naming the task", err)
	}

	other := contracts.MustEvent(contracts.Meta{ID: "bg"}, contracts.TaskDispatched{TenantID: "acme", TaskID: "t1", Kind: "architect",
		Handler: "research", OwnerID: "s1", Attempt: 1})
	if _, err := taskmsg.DecodeDispatched(other); !errors.Is(err, taskmsg.ErrNotWorkflow) || !events.IsPermanent(err) {
		t.Fatalf("a background task = %v, want a permanent ErrNotWorkflow", err)
	}
}

func TestCompletedRoundTrip(t *testing.T) {
	t.Parallel()
	binary := []byte{0, 1, 2, 0xff, '\n'}
	r := agent.Result{Outputs: map[string][]byte{"design.md": binary}, Handover: []byte(`{"k":"v"}`),
		Approval: &agent.Approval{Approved: true, Reason: "fine"}}
	parent := taskmsg.DispatchEventID("acme", task.DispatchID)
	ev, err := taskmsg.Completed("acme", parent, task, r, at, 0)
	if err != nil {
		t.Fatal(err)
	}
	if subject, _ := contracts.Subject(ev); subject != "praetor.task.completed.acme.run-1" {
		t.Fatalf("subject = %s", subject)
	}
	o, err := taskmsg.DecodeOutcome(wire(t, ev))
	if err != nil {
		t.Fatal(err)
	}
	if !o.OK || o.DispatchID != task.DispatchID || o.RunID != "run-1" || o.EventID != taskmsg.ResultEventID(parent) ||
		string(o.Result.Outputs["design.md"]) != string(binary) || string(o.Result.Handover) != `{"k":"v"}` || !o.Result.Approval.Approved {
		t.Fatalf("outcome = %+v", o)
	}
	if o.Err() != nil {
		t.Fatal("a completed outcome has an error")
	}
	big := agent.Result{Outputs: map[string][]byte{"design.md": make([]byte, 3000)}}
	if _, err := taskmsg.Completed("acme", parent, task, big, at, 2000); !errors.Is(err, taskmsg.ErrTooLarge) ||
		!strings.Contains(err.Error(), "design.md 3000 bytes") {
		t.Fatalf("oversized result = %v", err)
	}
}

// A failure crosses the wire with its text and its class intact, so the
// executor records the same error kind as for a local failure.
func TestFailedKeepsTheClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		err       error
		class     string
		permanent bool
	}{
		{"agent", errors.New("model refused"), taskmsg.ClassAgent, false},
		{"permanent agent", events.Permanent(errors.New("cannot start")), taskmsg.ClassAgent, true},
		{"output", errors.Join(&agent.OutputError{Output: "design.md", Reason: "missing"}), taskmsg.ClassOutput, false},
		{"rejected", agent.Rejected("not traced"), taskmsg.ClassRejected, true},
		{"timeout", fmt.Errorf("command stopped: %w", context.DeadlineExceeded), taskmsg.ClassTimeout, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := taskmsg.Failed("acme", "parent", task, tc.err, at)
			if err != nil {
				t.Fatal(err)
			}
			o, err := taskmsg.DecodeOutcome(wire(t, ev))
			if err != nil {
				t.Fatal(err)
			}
			if o.OK || o.Class != tc.class || o.Permanent != tc.permanent {
				t.Fatalf("outcome = %+v, want class %s permanent %v", o, tc.class, tc.permanent)
			}
			got := o.Err()
			if got.Error() != tc.err.Error() {
				t.Errorf("text %q, want %q", got, tc.err)
			}
			if events.IsPermanent(got) != events.IsPermanent(tc.err) || taskmsg.Class(got) != taskmsg.Class(tc.err) {
				t.Errorf("rebuilt error: permanent %v class %s; local: %v %s",
					events.IsPermanent(got), taskmsg.Class(got), events.IsPermanent(tc.err), taskmsg.Class(tc.err))
			}
		})
	}
	bg := contracts.MustEvent(contracts.Meta{ID: "bg"}, contracts.TaskCompleted{TenantID: "acme", TaskID: "research-1", Kind: "research", OwnerID: "s1", Attempt: 1})
	if _, err := taskmsg.DecodeOutcome(bg); !errors.Is(err, taskmsg.ErrNotWorkflow) {
		t.Fatalf("a background task's answer = %v, want ErrNotWorkflow", err)
	}
}
