package write

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/scope"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nopStore is never reached by these tests.
type nopStore struct{}

func (nopStore) Read(context.Context, string, func(context.Context, graph.ReadTx) error) error {
	return errors.New("unexpected read")
}

func (nopStore) Write(context.Context, string, graph.Scope, func(context.Context, graph.WriteTx) error) error {
	return errors.New("unexpected write")
}

func newEngine(t *testing.T, mod func(*Config)) *Engine {
	t.Helper()
	cfg := Config{Store: nopStore{}, Tokens: governance.NewTokens(nil)}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if c.WriteTimeout != 3*time.Second || c.MaxTitle != 256 || c.RetryAttempts != 30 || c.Queue == nil || c.PollInterval != time.Minute {
		t.Errorf("defaults = %+v", c)
	}
	for name, cfg := range map[string]Config{
		"no store":  {Tokens: governance.NewTokens(nil)},
		"no tokens": {Store: nopStore{}},
		"bad retry": {Store: nopStore{}, Tokens: governance.NewTokens(nil), RetryBackoff: time.Minute, RetryMaxBackoff: time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestBatchStatus(t *testing.T) {
	t.Parallel()
	r := func(ss ...Status) []Receipt {
		out := make([]Receipt, len(ss))
		for i, s := range ss {
			out[i] = Receipt{Status: s}
		}
		return out
	}
	tests := []struct {
		items []Receipt
		want  Status
	}{
		{r(Saved, Saved), Saved},
		{r(Saved, Failed), Partial},
		{r(Saved, BlockedScope), Partial},
		{r(Saved, PendingRetry), PendingRetry},
		{r(Saved, PendingRetry, Failed), Partial},
		{r(PendingRetry, Failed), PendingRetry},
		{r(Failed, Failed), Failed},
		{r(BlockedScope, BlockedScope), BlockedScope},
		{r(BlockedScope, Failed), Failed},
	}
	for _, tt := range tests {
		if got := BatchStatus(tt.items); got != tt.want {
			t.Errorf("BatchStatus(%v) = %s, want %s", tt.items, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *Config) { c.RetryBackoff, c.RetryMaxBackoff = time.Second, 5*time.Second })
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := e.backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	e := newEngine(t, nil)
	if err := e.Stop(context.Background()); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	// It can start again after a stop.
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryQueue(t *testing.T) {
	t.Parallel()
	q := NewMemoryQueue()
	ctx := context.Background()
	now := time.Now()
	_ = q.Put(ctx, Pending{NodeID: "b", NextAt: now.Add(time.Second)})
	_ = q.Put(ctx, Pending{NodeID: "a", NextAt: now.Add(time.Second)})
	_ = q.Put(ctx, Pending{NodeID: "c", NextAt: now})
	_ = q.Put(ctx, Pending{NodeID: "b", NextAt: now.Add(time.Second), Attempts: 2}) // replace, keeps its place
	got, _ := q.List(ctx)
	if len(got) != 3 || got[0].NodeID != "c" || got[1].NodeID != "b" || got[2].NodeID != "a" || got[1].Attempts != 2 {
		t.Errorf("List = %+v, want c, b (replaced), a", got)
	}
	_ = q.Done(ctx, Pending{NodeID: "b"}, Settlement{})
	_ = q.Done(ctx, Pending{NodeID: "missing"}, Settlement{})
	_ = q.Done(ctx, Pending{NodeID: "a", Request: Request{TenantID: "other"}}, Settlement{}) // another tenant's key
	if got, _ := q.List(ctx); len(got) != 2 {
		t.Errorf("after Delete: %d entries", len(got))
	}
}

// Unregistered names the registration a blocked save lacks, and only for a
// block of that kind.
func TestUnregistered(t *testing.T) {
	fix := Fix{Flags: " --tenant acme", ProjectArg: "project_id", FocusScopeArg: "scope focus"}
	r := Request{TenantID: "acme", ProjectID: "shop", Focus: "api"}
	focus := r
	focus.Level = graph.LevelFocus
	for _, tc := range []struct {
		name string
		r    Request
		rc   Receipt
		want string
	}{
		{"unknown project", r, Receipt{Status: BlockedScope, ScopeState: scope.Uncertain},
			"project shop is not registered in the memory of tenant acme: register it with " +
				"praetor memory add-project --project shop --tenant acme, or correct project_id"},
		{"unknown focus area", focus, Receipt{Status: BlockedScope, ScopeState: scope.ResolvedProject},
			"focus area api of project shop is not registered: register it with " +
				"praetor memory add-project --project shop --focus api --tenant acme, or save without scope focus"},
		{"no project", Request{TenantID: "acme"}, Receipt{Status: BlockedScope, ScopeState: scope.Unresolved}, ""},
		{"saved", r, Receipt{Status: Saved, ScopeState: scope.ResolvedProject}, ""},
		{"pending, scope unknown", r, Receipt{Status: PendingRetry}, ""},
	} {
		if got := Unregistered(tc.r, tc.rc, fix); got != tc.want {
			t.Errorf("%s: Unregistered = %q, want %q", tc.name, got, tc.want)
		}
	}
}
