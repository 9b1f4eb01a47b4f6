package runner_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner"
)

// hangingLLM answers nothing until its caller gives up, and remembers the
// deadline it was given.
type hangingLLM struct {
	mu       sync.Mutex
	deadline time.Time
	bounded  bool
}

func (h *hangingLLM) Complete(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	h.mu.Lock()
	h.deadline, h.bounded = ctx.Deadline()
	h.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

// A turn's reply gets what is left of the turn's budget, counted from when
// the gateway received it: the extraction before it may have spent most of
// it on a model that hangs. At least MinReplyBudget is left, so the reply is
// still tried once.
func TestReplyIsBoundedByWhatIsLeftOfTheTurn(t *testing.T) {
	t.Parallel()
	def := enginetest.Definition()
	tests := []struct {
		name string
		ago  time.Duration // received this long before the turn runs
		want time.Duration // the reply's deadline, after received_at
	}{
		{"extraction was quick", time.Minute, 5 * time.Minute},
		{"extraction spent 4m30s", 4*time.Minute + 30*time.Second, 4*time.Minute + 30*time.Second + time.Minute},
		{"the budget is spent", 7 * time.Minute, 7*time.Minute + time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeLLM{reply: "Fine. Who will use it?"}
			rec := &deadlineLLM{next: fake}
			r, err := runner.New(runner.Config{LLM: rec, Registry: enginetest.Registry(), Logger: slog.New(slog.DiscardHandler),
				Clock: func() time.Time { return epoch }})
			if err != nil {
				t.Fatal(err)
			}
			in := input(t, def, nil, "hello", nil)
			in.ReceivedAt = time.Now().Add(-tc.ago)
			res := process(t, r, def, nil, in)
			if res.Degraded {
				t.Fatalf("degraded: %s", res.DegradedReason)
			}
			if !rec.bounded {
				t.Fatal("the reply's call had no deadline")
			}
			// The runner reads the wall clock once, between these two reads.
			if got, want := rec.deadline.Sub(in.ReceivedAt), tc.want; got < want-5*time.Second || got > want+5*time.Second {
				t.Errorf("deadline %s after received_at, want %s", got, want)
			}
		})
	}
}

type deadlineLLM struct {
	next     runner.Completer
	deadline time.Time
	bounded  bool
}

func (d *deadlineLLM) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	d.deadline, d.bounded = ctx.Deadline()
	return d.next.Complete(ctx, req)
}

// A model that hangs past the turn's budget gets a degraded reply that says
// so, not a turn held until the handler's time runs out.
func TestHangingModelDegradesAtTheTurnsBudget(t *testing.T) {
	t.Parallel()
	def := enginetest.Definition()
	h := &hangingLLM{}
	var logs strings.Builder
	r, err := runner.New(runner.Config{LLM: h, Registry: enginetest.Registry(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Clock: func() time.Time { return epoch }, TurnBudget: 5 * time.Minute, MinReplyBudget: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	in := input(t, def, nil, "hello", nil)
	in.ReceivedAt = time.Now().Add(-10 * time.Minute)
	res := process(t, r, def, nil, in)
	if !res.Degraded || res.DegradedReason == "" {
		t.Errorf("degraded %t (%q), want a degraded reply with its reason", res.Degraded, res.DegradedReason)
	}
	// The reason is the call's error alone (a replay serves it and must
	// rebuild the same turn); the log says the turn's time ran out.
	if strings.Contains(res.DegradedReason, "5m0s") {
		t.Errorf("degraded reason %q names the turn's budget: a replay would not", res.DegradedReason)
	}
	for _, want := range []string{"response degraded", "reply ran out of the turn's time", "turn_budget=5m0s", "received_at="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q, want %q", logs.String(), want)
		}
	}
}

// A turn whose received_at is unknown (an event from before it was carried)
// is bounded by its provider alone.
func TestReplyOfATurnWithoutReceivedAtIsNotBounded(t *testing.T) {
	t.Parallel()
	def := enginetest.Definition()
	rec := &deadlineLLM{next: &fakeLLM{reply: "Fine."}}
	r := newRunner(t, rec)
	process(t, r, def, nil, input(t, def, nil, "hello", nil))
	if rec.bounded {
		t.Errorf("the reply's call has a deadline %s; want none", rec.deadline)
	}
}

// turn.extracted carries the turn's received_at to the runner.
func TestFromContractKeepsReceivedAt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	in, err := runner.FromContract(contracts.TurnExtracted{TenantID: "t", SessionID: "s", TurnID: "x", TurnNumber: 1,
		Message: "hi", ReceivedAt: at}, "p")
	if err != nil || !in.ReceivedAt.Equal(at) {
		t.Errorf("received_at %s, %v; want %s", in.ReceivedAt, err, at)
	}
}
