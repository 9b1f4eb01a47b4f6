// Package graphtest is the conformance suite of the graph port: every
// adapter of graph.Store must pass Run. It tests the port's contract (scopes,
// nodes, content-key uniqueness, supersession and reinstatement, full-text
// candidates, conflicts, hygiene queries, tenant isolation) and runs the
// memory engines on the adapter through every state and threshold of seed
// 001, including the concurrency proofs: 32 writers of the same or
// near-same decision into one scope, repeated, never produce a duplicate or
// two successors of one node.
package graphtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// Harness tells the suite how to get stores of the adapter under test.
type Harness struct {
	// Open returns the store under test, and a tenant that no other test
	// uses and that is empty. It registers its own cleanup.
	Open func(t *testing.T) (graph.Store, string)
	// NewTenant returns another fresh tenant for the store of Open.
	NewTenant func(t *testing.T) string
	// ReadUpdates, when set, returns the updates the adapter has seen in
	// read transactions so far (from the server's result summaries); the
	// suite asserts hygiene and retrieval add none.
	ReadUpdates func() int64
	// Writers and Rounds size the concurrency tests. Defaults 32 and 200.
	Writers, Rounds int
}

func (h Harness) withDefaults() Harness {
	if h.Writers == 0 {
		h.Writers = 32
	}
	if h.Rounds == 0 {
		h.Rounds = 200
	}
	return h
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	h = h.withDefaults()
	t.Run("Port", func(t *testing.T) { RunPort(t, h) })
	t.Run("Engines", func(t *testing.T) { RunEngines(t, h) })
	t.Run("Concurrency", func(t *testing.T) { RunConcurrency(t, h) })
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// quiet discards the engines' logs: the tests assert what they report.
var quiet = slog.New(slog.DiscardHandler)

// base is the suite's reference time; nodes are dated relative to it.
var base = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// newNode builds a node ready for WriteTx.Create.
func newNode(kind graph.Kind, sc graph.Scope, title, rationale string, at time.Time) graph.Node {
	n := graph.Node{
		ID: uuid.NewString(), Kind: kind, Scope: sc, Title: title, Rationale: rationale,
		CreatedAt: at, Status: graph.StatusSaved,
	}
	if kind == graph.EntityFact {
		n.EntityName = title
		n.Title = "fact about " + title + ": " + rationale
	}
	n.ContentHash = dedup.ContentHash(n.Kind, n.EntityName, n.Title, n.Rationale)
	return n
}

// put writes nodes into their scope with plain Create (no dedup).
func put(t *testing.T, s graph.Store, tenant string, nodes ...graph.Node) {
	t.Helper()
	for _, n := range nodes {
		err := s.Write(ctxT(t), tenant, n.Scope, func(ctx context.Context, tx graph.WriteTx) error {
			return tx.Create(ctx, n)
		})
		if err != nil {
			t.Fatalf("create %s %q in %s: %v", n.Kind, n.Title, n.Scope, err)
		}
	}
}

func ensureProject(t *testing.T, s graph.Store, tenant, project string, focus ...string) {
	t.Helper()
	if err := s.EnsureProject(ctxT(t), tenant, project); err != nil {
		t.Fatalf("EnsureProject(%s): %v", project, err)
	}
	for _, f := range focus {
		if err := s.EnsureFocusArea(ctxT(t), tenant, project, f); err != nil {
			t.Fatalf("EnsureFocusArea(%s, %s): %v", project, f, err)
		}
	}
}

func read[T any](t *testing.T, s graph.Store, tenant string, fn func(ctx context.Context, tx graph.ReadTx) (T, error)) T {
	t.Helper()
	var out T
	err := s.Read(ctxT(t), tenant, func(ctx context.Context, tx graph.ReadTx) error {
		var err error
		out, err = fn(ctx, tx)
		return err
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

func nodesOf(t *testing.T, s graph.Store, tenant string, area graph.Area) []graph.Node {
	t.Helper()
	return read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Node, error) { return tx.Nodes(ctx, area) })
}

func ids(nodes []graph.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// Flaky wraps a store and fails every call with graph.ErrUnavailable while
// it is down, as a store whose server is unreachable does. Calls counts the
// calls made while down.
type Flaky struct {
	graph.Store
	down  atomic.Bool
	Calls atomic.Int64
}

// NewFlaky wraps s, up.
func NewFlaky(s graph.Store) *Flaky { return &Flaky{Store: s} }

// SetDown makes the store fail (true) or work (false).
func (f *Flaky) SetDown(down bool) { f.down.Store(down) }

func (f *Flaky) fail() error {
	if f.down.Load() {
		f.Calls.Add(1)
		return fmt.Errorf("flaky store: %w: connection refused", graph.ErrUnavailable)
	}
	return nil
}

func (f *Flaky) Read(ctx context.Context, tenant string, fn func(context.Context, graph.ReadTx) error) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.Read(ctx, tenant, fn)
}

func (f *Flaky) Write(ctx context.Context, tenant string, sc graph.Scope, fn func(context.Context, graph.WriteTx) error) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.Write(ctx, tenant, sc, fn)
}

func (f *Flaky) MarkHygiene(ctx context.Context, tenant string, area graph.Area, at time.Time) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.MarkHygiene(ctx, tenant, area, at)
}

// slowReads makes the first n reads block until their context ends, as a
// graph that does not answer in time.
type slowReads struct {
	graph.Store
	mu   sync.Mutex
	left int
}

func (s *slowReads) Read(ctx context.Context, tenant string, fn func(context.Context, graph.ReadTx) error) error {
	s.mu.Lock()
	slow := s.left > 0
	if slow {
		s.left--
	}
	s.mu.Unlock()
	if slow {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.Read(ctx, tenant, fn)
}

// failingReads fails every read with a non-transient error.
type failingReads struct{ graph.Store }

var errBroken = errors.New("broken query")

func (failingReads) Read(context.Context, string, func(context.Context, graph.ReadTx) error) error {
	return errBroken
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
