package graphtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// RunPort tests the contract of graph.Store itself.
func RunPort(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"ScopeNodes", testScopeNodes},
		{"WriteNeedsScope", testWriteNeedsScope},
		{"CreateAndRead", testCreateAndRead},
		{"LiveOrderAndLimit", testLiveOrderAndLimit},
		{"ContentKeyUnique", testContentKeyUnique},
		{"Supersede", testSupersede},
		{"SupersedeOutsideTheScope", testSupersedeOutsideTheScope},
		{"Reinstate", testReinstate},
		{"ReinstateAChain", testReinstateChain},
		{"ReinstateRefused", testReinstateRefused},
		{"Candidates", testCandidates},
		{"QuerySyntaxIsText", testQuerySyntaxIsText},
		{"Conflicts", testConflicts},
		{"HygieneQueries", testHygieneQueries},
		{"WriteRollsBack", testWriteRollsBack},
		{"TenantIsolation", testTenantIsolation},
		{"InvalidInput", testInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, h) })
	}
}

func testScopeNodes(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ctx := ctxT(t)
	info := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) {
		return tx.Scope(ctx, "p1", "api")
	})
	if info.ProjectExists || info.FocusExists {
		t.Fatalf("Scope of a missing project = %+v, want nothing", info)
	}
	if err := s.EnsureFocusArea(ctx, tenant, "p1", "api"); !errors.Is(err, graph.ErrScopeNotFound) {
		t.Fatalf("EnsureFocusArea of a missing project: err = %v, want ErrScopeNotFound", err)
	}
	for range 2 { // idempotent
		ensureProject(t, s, tenant, "p1", "api", "focus / with:odd chars")
	}
	for _, tc := range []struct {
		focus                string
		wantProject, wantFoc bool
	}{
		{"", true, false},
		{"api", true, true},
		{"focus / with:odd chars", true, true},
		{"focus", true, false},
		{"API", true, false},
	} {
		info := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) {
			return tx.Scope(ctx, "p1", tc.focus)
		})
		if info.ProjectExists != tc.wantProject || info.FocusExists != tc.wantFoc {
			t.Errorf("Scope(p1, %q) = %+v, want project %v focus %v", tc.focus, info, tc.wantProject, tc.wantFoc)
		}
		if !info.LastHygieneAt.IsZero() {
			t.Errorf("Scope(p1, %q).LastHygieneAt = %v, want zero before any hygiene", tc.focus, info.LastHygieneAt)
		}
	}
}

func testWriteNeedsScope(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ctx := ctxT(t)
	noop := func(context.Context, graph.WriteTx) error { return nil }
	if err := s.Write(ctx, tenant, graph.ProjectScope("missing"), noop); !errors.Is(err, graph.ErrScopeNotFound) {
		t.Errorf("Write to a missing project: err = %v, want ErrScopeNotFound", err)
	}
	ensureProject(t, s, tenant, "p1")
	if err := s.Write(ctx, tenant, graph.FocusScope("p1", "nope"), noop); !errors.Is(err, graph.ErrScopeNotFound) {
		t.Errorf("Write to a missing focus area: err = %v, want ErrScopeNotFound", err)
	}
	if err := s.Write(ctx, tenant, graph.ProjectScope("p1"), noop); err != nil {
		t.Errorf("Write to an existing project: %v", err)
	}
	// The global scope needs no setup.
	n := newNode(graph.Decision, graph.GlobalScope(), "Use UTC everywhere", "one clock", base)
	put(t, s, tenant, n)
	got := nodesOf(t, s, tenant, graph.GlobalArea())
	if len(got) != 1 || got[0].ID != n.ID {
		t.Errorf("global area nodes = %v, want [%s]", ids(got), n.ID)
	}
}

func testCreateAndRead(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	focus := graph.FocusScope("p1", "api")
	d := newNode(graph.Decision, focus, "Use PostgreSQL for the ledger", "ACID, mature tooling", base)
	p := newNode(graph.Pattern, graph.ProjectScope("p1"), "Outbox for events", "write events in the same transaction", base.Add(time.Hour))
	p.LastValidatedAt = base.Add(2 * time.Hour)
	f := newNode(graph.EntityFact, graph.ProjectScope("p1"), "PostgreSQL", "version 16 in production", base.Add(3*time.Hour))
	put(t, s, tenant, d, p, f)

	got := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, d.ID) })
	if !sameNode(got, d) {
		t.Errorf("Node(%s) = %+v, want %+v", d.ID, got, d)
	}
	gotP := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, p.ID) })
	if !gotP.LastValidatedAt.Equal(p.LastValidatedAt) || gotP.Kind != graph.Pattern {
		t.Errorf("pattern read back = %+v, want LastValidatedAt %v", gotP, p.LastValidatedAt)
	}
	gotF := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, f.ID) })
	if gotF.EntityName != "PostgreSQL" || gotF.Kind != graph.EntityFact {
		t.Errorf("entity fact read back = %+v", gotF)
	}
	all := nodesOf(t, s, tenant, graph.Area{ProjectID: "p1"})
	if g, w := ids(all), []string{d.ID, p.ID, f.ID}; !slices.Equal(g, w) {
		t.Errorf("Nodes(p1) = %v, want %v (focus and project nodes, oldest first)", g, w)
	}
	err := s.Read(ctxT(t), tenant, func(ctx context.Context, tx graph.ReadTx) error {
		_, err := tx.Node(ctx, "no-such-node")
		return err
	})
	if !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("Node(missing): err = %v, want ErrNotFound", err)
	}
}

func testLiveOrderAndLimit(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	var want []string
	for i := range 6 {
		n := newNode(graph.Decision, sc, "decision number "+string(rune('a'+i)), "because", base.Add(time.Duration(i)*time.Minute))
		put(t, s, tenant, n)
		want = append([]string{n.ID}, want...)
	}
	live := func(limit int) []string {
		return ids(read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Node, error) { return tx.Live(ctx, sc, limit) }))
	}
	if got := live(4); !slices.Equal(got, want[:4]) {
		t.Errorf("Live(limit 4) = %v, want newest first %v", got, want[:4])
	}
	// A node ranks by when it was last confirmed: a pattern validated when
	// created, between two decisions; a node created last but validated
	// before the others were created (the port does not forbid it), last.
	between := newNode(graph.Pattern, sc, "validated when created", "", base.Add(3*time.Minute+30*time.Second))
	between.LastValidatedAt = between.CreatedAt
	early := newNode(graph.Pattern, sc, "validated before the rest", "", base.Add(time.Hour))
	early.LastValidatedAt = base.Add(-time.Hour)
	put(t, s, tenant, between, early)
	want = slices.Concat(want[:2], []string{between.ID}, want[2:], []string{early.ID})
	if got := live(4); !slices.Equal(got, want[:4]) {
		t.Errorf("Live(limit 4) = %v, want by last confirmation %v", got, want[:4])
	}
	// A node created long ago and confirmed since comes first.
	confirmed := newNode(graph.Pattern, sc, "confirmed last", "", base.Add(-24*time.Hour))
	confirmed.LastValidatedAt = base.Add(10 * time.Minute)
	put(t, s, tenant, confirmed)
	want = append([]string{confirmed.ID}, want...)
	if got := live(4); !slices.Equal(got, want[:4]) {
		t.Errorf("Live(limit 4) = %v, want the confirmed %s first %v", got, confirmed.ID, want[:4])
	}
	if got := live(10); !slices.Equal(got, want) {
		t.Errorf("Live(limit 10) = %v, want all by last confirmation %v", got, want)
	}
	none := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Node, error) {
		return tx.Live(ctx, graph.ProjectScope("other"), 10)
	})
	if len(none) != 0 {
		t.Errorf("Live(other project) = %v, want none", ids(none))
	}
}

func testContentKeyUnique(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	a := newNode(graph.Decision, graph.ProjectScope("p1"), "Adopt gRPC", "typed contracts", base)
	put(t, s, tenant, a)
	dup := a
	dup.ID = a.ID + "-2"
	err := s.Write(ctxT(t), tenant, a.Scope, func(ctx context.Context, tx graph.WriteTx) error { return tx.Create(ctx, dup) })
	if !errors.Is(err, graph.ErrDuplicateContent) {
		t.Fatalf("second node with the same content key: err = %v, want ErrDuplicateContent", err)
	}
	// The same content in another scope, or of another kind, is another key.
	other := dup
	other.Scope = graph.FocusScope("p1", "api")
	put(t, s, tenant, other)
	pat := newNode(graph.Pattern, a.Scope, a.Title, a.Rationale, base)
	put(t, s, tenant, pat)
	err = s.Write(ctxT(t), tenant, a.Scope, func(ctx context.Context, tx graph.WriteTx) error {
		n, found, err := tx.ByContentHash(ctx, graph.Decision, a.ContentHash)
		if err != nil {
			return err
		}
		if !found || n.ID != a.ID {
			t.Errorf("ByContentHash(decision, %s) = %s, %v; want %s", a.ContentHash, n.ID, found, a.ID)
		}
		if _, found, _ := tx.ByContentHash(ctx, graph.EntityFact, a.ContentHash); found {
			t.Error("ByContentHash found the hash under another kind")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testSupersede(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	old := newNode(graph.Decision, sc, "Cache sessions in Redis", "fast", base)
	nu := newNode(graph.Decision, sc, "Cache user sessions in Redis", "fast, shared", base.Add(time.Hour))
	put(t, s, tenant, old)
	err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		if err := tx.Create(ctx, nu); err != nil {
			return err
		}
		return tx.Supersede(ctx, nu.ID, old.ID)
	})
	if err != nil {
		t.Fatalf("supersede: %v", err)
	}
	gotOld := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, old.ID) })
	if gotOld.SupersededBy != nu.ID || gotOld.Live() {
		t.Errorf("old node SupersededBy = %q, want %s", gotOld.SupersededBy, nu.ID)
	}
	live := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Node, error) { return tx.Live(ctx, sc, 10) })
	if !slices.Equal(ids(live), []string{nu.ID}) {
		t.Errorf("Live after supersede = %v, want only %s", ids(live), nu.ID)
	}
	edges := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Edge, error) {
		return tx.Edges(ctx, sc.Area(), graph.Supersedes)
	})
	if want := []graph.Edge{{Rel: graph.Supersedes, From: nu.ID, To: old.ID}}; !slices.Equal(edges, want) {
		t.Errorf("SUPERSEDES edges = %v, want %v", edges, want)
	}
	third := newNode(graph.Decision, sc, "Cache all sessions in Redis", "x", base.Add(2*time.Hour))
	err = s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		if err := tx.Create(ctx, third); err != nil {
			return err
		}
		if err := tx.Supersede(ctx, third.ID, old.ID); !errors.Is(err, graph.ErrNotLive) {
			t.Errorf("superseding a superseded node: err = %v, want ErrNotLive", err)
		}
		if err := tx.Supersede(ctx, third.ID, "missing"); !errors.Is(err, graph.ErrNotFound) {
			t.Errorf("superseding a missing node: err = %v, want ErrNotFound", err)
		}
		cands, err := tx.Candidates(ctx, graph.Decision, "cache sessions redis", 5)
		if err != nil {
			return err
		}
		if slices.Contains(ids2(cands), old.ID) {
			t.Errorf("Candidates returned the superseded node %s: %v", old.ID, cands)
		}
		return nil
	})
	if err != nil && !errors.Is(err, graph.ErrNotLive) && !errors.Is(err, graph.ErrNotFound) {
		t.Fatalf("write: %v", err)
	}
}

func ids2(cs []graph.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func candidates(t *testing.T, s graph.Store, tenant string, sc graph.Scope, kind graph.Kind, text string, limit int) []graph.Candidate {
	t.Helper()
	var out []graph.Candidate
	err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		var err error
		out, err = tx.Candidates(ctx, kind, text, limit)
		return err
	})
	if err != nil {
		t.Fatalf("Candidates(%q): %v", text, err)
	}
	return out
}

func testCandidates(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	sc := graph.ProjectScope("p1")
	best := newNode(graph.Decision, sc, "Use Kafka for event streaming", "durable log, replay", base)
	some := newNode(graph.Decision, sc, "Use Kafka Connect for CDC", "connectors", base)
	unrelated := newNode(graph.Decision, sc, "Write the frontend in TypeScript", "types", base)
	otherScope := newNode(graph.Decision, graph.FocusScope("p1", "api"), "Use Kafka for event streaming", "same words, other scope", base)
	pattern := newNode(graph.Pattern, sc, "Kafka event streaming pattern", "a pattern, not a decision", base)
	put(t, s, tenant, best, some, unrelated, otherScope, pattern)

	got := candidates(t, s, tenant, sc, graph.Decision, "Use Kafka for event streaming with replay", 5)
	if len(got) == 0 || got[0].ID != best.ID {
		t.Fatalf("Candidates = %v, want %s (%q) first", got, best.ID, best.Title)
	}
	if got[0].Title != best.Title {
		t.Errorf("candidate title = %q, want %q", got[0].Title, best.Title)
	}
	gotIDs := ids2(got)
	for _, n := range []graph.Node{unrelated, otherScope, pattern} {
		if slices.Contains(gotIDs, n.ID) {
			t.Errorf("Candidates returned %q (%s, %s), which is not a live decision of the scope sharing words", n.Title, n.Kind, n.Scope)
		}
	}
	if !slices.Contains(gotIDs, some.ID) {
		t.Errorf("Candidates = %v, want it to include %s (%q), which shares words", gotIDs, some.ID, some.Title)
	}
	if one := candidates(t, s, tenant, sc, graph.Decision, "Kafka", 1); len(one) != 1 {
		t.Errorf("Candidates(limit 1) returned %d", len(one))
	}
	pats := candidates(t, s, tenant, sc, graph.Pattern, "kafka streaming", 5)
	if !slices.Equal(ids2(pats), []string{pattern.ID}) {
		t.Errorf("pattern Candidates = %v, want [%s]", ids2(pats), pattern.ID)
	}
	if none := candidates(t, s, tenant, sc, graph.Decision, "zebra quokka", 5); len(none) != 0 {
		t.Errorf("Candidates for unknown words = %v, want none", none)
	}
}

// luceneNasties are texts full of query syntax of Lucene and FTS5; a search
// must treat them as words and never fail.
var luceneNasties = []string{
	`C++ && (foo OR bar) AND NOT "baz" \ ~ * ? : / [ ] { } ^ ! - + |`,
	`AND`, `OR NOT`, `NOT`, `"unterminated`, `title:injected ft_scope:x`, `*`, `?`, `\`, `\\"`,
	`foo^10 bar~2 "a b"~3 [a TO z] {a TO z}`, `/regex.*/`, `NEAR(a b)`, `a AND (b OR`, `^`, `-`, `+`,
	`!!!`, `   `, ``, `emoji 🚀 and 中文 тест`, strings.Repeat("many words ", 400),
}

func testQuerySyntaxIsText(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	target := newNode(graph.Decision, sc, `Support C++ && Rust (native) modules: "yes"`, `build with cmake \ cargo`, base)
	put(t, s, tenant, target)
	for _, q := range luceneNasties {
		for _, kind := range []graph.Kind{graph.Decision, graph.Pattern} {
			err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
				_, err := tx.Candidates(ctx, kind, q, 5)
				return err
			})
			if err != nil {
				t.Errorf("Candidates(%s, %.40q): %v; query syntax must be escaped", kind, q, err)
			}
		}
	}
	got := candidates(t, s, tenant, sc, graph.Decision, `C++ && Rust (native)`, 5)
	if len(got) != 1 || got[0].ID != target.ID {
		t.Errorf("Candidates for text with syntax characters = %v, want [%s]", got, target.ID)
	}
}

func testConflicts(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ctx := ctxT(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	a := newNode(graph.Decision, sc, "Deploy on Fridays", "ship fast", base)
	b := newNode(graph.Decision, sc, "Never deploy on Fridays", "weekends", base)
	c := newNode(graph.Decision, sc, "Use feature flags", "decouple", base)
	put(t, s, tenant, a, b, c)
	for range 2 { // idempotent
		if err := s.Link(ctx, tenant, graph.ConflictsWith, b.ID, a.ID); err != nil {
			t.Fatalf("Link: %v", err)
		}
	}
	if err := s.Link(ctx, tenant, graph.ConflictsWith, a.ID, "missing"); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("Link to a missing node: err = %v, want ErrNotFound", err)
	}
	if err := s.Link(ctx, tenant, graph.Supersedes, a.ID, c.ID); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Link SUPERSEDES: err = %v, want ErrInvalid (only dedup supersedes)", err)
	}
	if err := s.Link(ctx, tenant, graph.ConflictsWith, a.ID, a.ID); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Link a node to itself: err = %v, want ErrInvalid", err)
	}
	want := graph.Pair{A: min(a.ID, b.ID), B: max(a.ID, b.ID)}
	got := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Pair, error) {
		return tx.Conflicts(ctx, []string{a.ID, b.ID, c.ID})
	})
	if !slices.Equal(got, []graph.Pair{want}) {
		t.Errorf("Conflicts = %v, want [%v]", got, want)
	}
	got = read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Pair, error) {
		return tx.Conflicts(ctx, []string{a.ID, c.ID})
	})
	if len(got) != 0 {
		t.Errorf("Conflicts without one end = %v, want none", got)
	}
}

func testHygieneQueries(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ctx := ctxT(t)
	ensureProject(t, s, tenant, "p1", "api")
	now := base
	sc, fsc := graph.ProjectScope("p1"), graph.FocusScope("p1", "api")
	oldDec := newNode(graph.Decision, fsc, "Old decision never superseding", "x", now.AddDate(0, 0, -200))
	oldSup := newNode(graph.Decision, sc, "Old decision that superseded another", "x", now.AddDate(0, 0, -190))
	oldSupT := newNode(graph.Decision, sc, "Older decision it superseded", "x", now.AddDate(0, 0, -300))
	fresh := newNode(graph.Decision, sc, "Fresh decision", "x", now.AddDate(0, 0, -10))
	confirmed := newNode(graph.Decision, sc, "Old decision confirmed since", "x", now.AddDate(0, 0, -200))
	confirmed.LastValidatedAt = now.AddDate(0, 0, -10)
	stalePat := newNode(graph.Pattern, sc, "Stale pattern", "x", now.AddDate(0, 0, -400))
	stalePat.LastValidatedAt = now.AddDate(0, 0, -100)
	neverValidated := newNode(graph.Pattern, sc, "Never validated pattern", "x", now.AddDate(0, 0, -95))
	freshPat := newNode(graph.Pattern, sc, "Revalidated pattern", "x", now.AddDate(0, 0, -400))
	freshPat.LastValidatedAt = now.AddDate(0, 0, -5)
	e1 := newNode(graph.EntityFact, sc, "PostgreSQL", "runs version 16", now.AddDate(0, 0, -3))
	e2 := newNode(graph.EntityFact, fsc, "postgresql", "hosts the ledger", now.AddDate(0, 0, -2))
	e3 := newNode(graph.EntityFact, sc, "Postgre SQL", "is not the same name", now.AddDate(0, 0, -1))
	e4 := newNode(graph.EntityFact, sc, "Redis", "caches sessions", now)
	// A sign that ends a name is part of it: C++ is one entity, C another.
	e5 := newNode(graph.EntityFact, sc, "C++", "compiles slowly", now.AddDate(0, 0, -5))
	e6 := newNode(graph.EntityFact, fsc, "c++", "has templates", now.AddDate(0, 0, -4))
	e7 := newNode(graph.EntityFact, sc, "C", "compiles slowly", now.AddDate(0, 0, -6))
	pending := newNode(graph.Decision, sc, "Pending decision", "x", now)
	pending.Status = graph.StatusPendingRetry
	failed := newNode(graph.Pattern, sc, "Failed pattern", "x", now)
	failed.Status = graph.StatusFailed
	global := newNode(graph.Decision, graph.GlobalScope(), "Global old decision", "x", now.AddDate(-2, 0, 0))
	put(t, s, tenant, oldDec, oldSupT, fresh, confirmed, stalePat, neverValidated, freshPat, e1, e2, e3, e4, e5, e6, e7, pending, failed, global)
	err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		if err := tx.Create(ctx, oldSup); err != nil {
			return err
		}
		return tx.Supersede(ctx, oldSup.ID, oldSupT.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	area := graph.Area{ProjectID: "p1"}
	type result struct {
		outdated, stale, unresolved []string
		groups                      []graph.EntityGroup
		titles                      []graph.TitleRow
		last                        time.Time
	}
	got := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (result, error) {
		var r result
		var err error
		if r.outdated, err = tx.Outdated(ctx, area, now.AddDate(0, 0, -180)); err != nil {
			return r, err
		}
		if r.stale, err = tx.StalePatterns(ctx, area, now.AddDate(0, 0, -90)); err != nil {
			return r, err
		}
		if r.unresolved, err = tx.Unresolved(ctx, area); err != nil {
			return r, err
		}
		if r.groups, err = tx.EntityGroups(ctx, area); err != nil {
			return r, err
		}
		if err = tx.Titles(ctx, area, func(row graph.TitleRow) error { r.titles = append(r.titles, row); return nil }); err != nil {
			return r, err
		}
		r.last, err = tx.LastHygiene(ctx, area)
		return r, err
	})
	// oldSupT is older than the cutoff and superseded nothing: outdated too.
	// confirmed was created before it, but confirmed since.
	if want := []string{oldSupT.ID, oldDec.ID}; !slices.Equal(got.outdated, want) {
		t.Errorf("Outdated = %v, want %v (last confirmed before the cutoff, no outgoing SUPERSEDES; %s superseded one, %s was confirmed since)",
			got.outdated, want, oldSup.ID, confirmed.ID)
	}
	if want := []string{stalePat.ID, neverValidated.ID}; !slices.Equal(sorted(got.stale), sorted(want)) {
		t.Errorf("StalePatterns = %v, want %v", got.stale, want)
	}
	if want := []string{pending.ID, failed.ID}; !slices.Equal(sorted(got.unresolved), sorted(want)) {
		t.Errorf("Unresolved = %v, want %v", got.unresolved, want)
	}
	wantGroups := []graph.EntityGroup{{EntityName: "C++", IDs: []string{e5.ID, e6.ID}}, {EntityName: "PostgreSQL", IDs: []string{e1.ID, e2.ID}}}
	if !slices.EqualFunc(got.groups, wantGroups, func(a, b graph.EntityGroup) bool { return a.EntityName == b.EntityName && slices.Equal(a.IDs, b.IDs) }) {
		t.Errorf("EntityGroups = %+v, want %+v (same name after normalization, oldest first; C is not C++)", got.groups, wantGroups)
	}
	var titleIDs []string
	for _, r := range got.titles {
		titleIDs = append(titleIDs, r.ID)
		if r.Kind != graph.Decision && r.Kind != graph.Pattern {
			t.Errorf("Titles returned kind %s", r.Kind)
		}
	}
	wantTitles := []string{oldDec.ID, fresh.ID, confirmed.ID, stalePat.ID, neverValidated.ID, freshPat.ID, pending.ID, failed.ID, oldSup.ID}
	if !slices.Equal(sorted(titleIDs), sorted(wantTitles)) {
		t.Errorf("Titles = %v, want the live decisions and patterns of the area %v", titleIDs, wantTitles)
	}
	if !got.last.IsZero() {
		t.Errorf("LastHygiene before any = %v", got.last)
	}
	at := now.Add(-time.Minute)
	if err := s.MarkHygiene(ctx, tenant, area, at); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkHygiene(ctx, tenant, graph.GlobalArea(), at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkHygiene(ctx, tenant, graph.Area{ProjectID: "missing"}, at); !errors.Is(err, graph.ErrScopeNotFound) {
		t.Errorf("MarkHygiene(missing project): err = %v, want ErrScopeNotFound", err)
	}
	last := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) { return tx.Scope(ctx, "p1", "") })
	if !last.LastHygieneAt.Equal(at) {
		t.Errorf("Scope(p1).LastHygieneAt = %v, want %v", last.LastHygieneAt, at)
	}
	glast := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (time.Time, error) {
		return tx.LastHygiene(ctx, graph.GlobalArea())
	})
	if !glast.Equal(at.Add(time.Second)) {
		t.Errorf("LastHygiene(global) = %v, want %v", glast, at.Add(time.Second))
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func testWriteRollsBack(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	n := newNode(graph.Decision, graph.ProjectScope("p1"), "Rolled back", "x", base)
	boom := errors.New("boom")
	err := s.Write(ctxT(t), tenant, n.Scope, func(ctx context.Context, tx graph.WriteTx) error {
		if err := tx.Create(ctx, n); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write returned %v, want the function's error", err)
	}
	if got := nodesOf(t, s, tenant, graph.Area{ProjectID: "p1"}); len(got) != 0 {
		t.Errorf("after a failed write function, nodes = %v, want none", ids(got))
	}
}

func testTenantIsolation(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	other := h.NewTenant(t)
	ctx := ctxT(t)
	ensureProject(t, s, tenant, "p1")
	n := newNode(graph.Decision, graph.ProjectScope("p1"), "Tenant A secret decision", "mine", base)
	put(t, s, tenant, n)

	info := read(t, s, other, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) { return tx.Scope(ctx, "p1", "") })
	if info.ProjectExists {
		t.Error("another tenant sees the project")
	}
	if got := nodesOf(t, s, other, graph.Area{ProjectID: "p1"}); len(got) != 0 {
		t.Errorf("another tenant reads nodes %v", ids(got))
	}
	err := s.Read(ctx, other, func(ctx context.Context, tx graph.ReadTx) error { _, err := tx.Node(ctx, n.ID); return err })
	if !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("another tenant's Node(%s): err = %v, want ErrNotFound", n.ID, err)
	}
	if err := s.Write(ctx, other, graph.ProjectScope("p1"), func(context.Context, graph.WriteTx) error { return nil }); !errors.Is(err, graph.ErrScopeNotFound) {
		t.Errorf("another tenant writing to the project: err = %v, want ErrScopeNotFound", err)
	}
	ensureProject(t, s, other, "p1")
	if c := candidates(t, s, other, graph.ProjectScope("p1"), graph.Decision, n.Title, 5); len(c) != 0 {
		t.Errorf("another tenant's candidates include %v", c)
	}
	twin := n
	twin.ID = n.ID + "-other"
	put(t, s, other, twin) // same content, other tenant: allowed
	if err := s.Link(ctx, other, graph.ConflictsWith, twin.ID, n.ID); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("linking to another tenant's node: err = %v, want ErrNotFound", err)
	}
	if err := s.MarkHygiene(ctx, other, graph.Area{ProjectID: "p1"}, base); err != nil {
		t.Fatal(err)
	}
	mine := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) { return tx.Scope(ctx, "p1", "") })
	if !mine.LastHygieneAt.IsZero() {
		t.Error("another tenant's hygiene mark changed this tenant's project")
	}
}

func testInvalidInput(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ctx := ctxT(t)
	noop := func(context.Context, graph.WriteTx) error { return nil }
	for name, err := range map[string]error{
		"empty tenant read":    s.Read(ctx, "", func(context.Context, graph.ReadTx) error { return nil }),
		"bad tenant write":     s.Write(ctx, "a.b", graph.GlobalScope(), noop),
		"bad project id":       s.EnsureProject(ctx, tenant, "has space"),
		"blank focus":          s.EnsureFocusArea(ctx, tenant, "p1", "  "),
		"long focus":           s.EnsureFocusArea(ctx, tenant, "p1", strings.Repeat("f", graph.MaxFocusLen+1)),
		"bad scope level":      s.Write(ctx, tenant, graph.Scope{Level: "team"}, noop),
		"global with project":  s.Write(ctx, tenant, graph.Scope{Level: graph.LevelGlobal, ProjectID: "p1"}, noop),
		"hygiene bad project":  s.MarkHygiene(ctx, tenant, graph.Area{ProjectID: "../x"}, base),
		"link rel not allowed": s.Link(ctx, tenant, "MERGES_INTO", "a", "b"),
	} {
		if !errors.Is(err, graph.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	good := newNode(graph.Decision, sc, "ok", "x", base)
	for name, mutate := range map[string]func(*graph.Node){
		"no id":          func(n *graph.Node) { n.ID = "" },
		"bad kind":       func(n *graph.Node) { n.Kind = "note" },
		"other scope":    func(n *graph.Node) { n.Scope = graph.GlobalScope() },
		"no hash":        func(n *graph.Node) { n.ContentHash = "" },
		"no time":        func(n *graph.Node) { n.CreatedAt = time.Time{} },
		"bad status":     func(n *graph.Node) { n.Status = "lost" },
		"fact no entity": func(n *graph.Node) { n.Kind = graph.EntityFact; n.EntityName = " " },
	} {
		n := good
		mutate(&n)
		err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error { return tx.Create(ctx, n) })
		if !errors.Is(err, graph.ErrInvalid) {
			t.Errorf("Create with %s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// sameNode compares nodes field by field, times by instant.
func sameNode(a, b graph.Node) bool {
	ta, tb := a, b
	ta.CreatedAt, tb.CreatedAt = time.Time{}, time.Time{}
	ta.LastValidatedAt, tb.LastValidatedAt = time.Time{}, time.Time{}
	return ta == tb && a.CreatedAt.Equal(b.CreatedAt) && a.LastValidatedAt.Equal(b.LastValidatedAt)
}

// A node of another scope is not found by a write of this one, on either
// store (the embedded one said ErrNotLive; found by helper-53).
func testSupersedeOutsideTheScope(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "f1")
	p := newNode(graph.Decision, graph.ProjectScope("p1"), "project node", "", base)
	f := newNode(graph.Decision, graph.FocusScope("p1", "f1"), "focus node", "", base)
	put(t, s, tenant, p, f)
	err := s.Write(context.Background(), tenant, graph.ProjectScope("p1"), func(ctx context.Context, tx graph.WriteTx) error {
		return tx.Supersede(ctx, p.ID, f.ID)
	})
	if !errors.Is(err, graph.ErrNotFound) {
		t.Fatalf("Supersede(project node, focus node) in the project's write = %v; want ErrNotFound", err)
	}
}

// supersede records that newID replaces oldID, in a write of its own.
func supersede(t *testing.T, s graph.Store, tenant string, sc graph.Scope, newID, oldID string) {
	t.Helper()
	err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error { return tx.Supersede(ctx, newID, oldID) })
	if err != nil {
		t.Fatalf("Supersede(%s, %s): %v", newID, oldID, err)
	}
}

// reinstate runs WriteTx.Reinstate in a write of its own, at at.
func reinstate(t *testing.T, s graph.Store, tenant string, sc graph.Scope, id string, at time.Time) (graph.Node, error) {
	t.Helper()
	var head graph.Node
	err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		var err error
		head, err = tx.Reinstate(ctx, id, at)
		return err
	})
	return head, err
}

func supersedesEdges(t *testing.T, s graph.Store, tenant string, area graph.Area) []graph.Edge {
	t.Helper()
	return read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Edge, error) {
		return tx.Edges(ctx, area, graph.Supersedes)
	})
}

func liveIDs(t *testing.T, s graph.Store, tenant string, sc graph.Scope) []string {
	t.Helper()
	return ids(read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Node, error) { return tx.Live(ctx, sc, 10) }))
}

// checkSupersession asserts that SupersededBy and the Supersedes
// relationships of area say the same: a relationship from X to Y exactly
// when Y is superseded by X.
func checkSupersession(t *testing.T, s graph.Store, tenant string, area graph.Area) {
	t.Helper()
	byID := map[string]graph.Node{}
	for _, n := range nodesOf(t, s, tenant, area) {
		byID[n.ID] = n
	}
	into := map[string][]string{}
	for _, e := range supersedesEdges(t, s, tenant, area) {
		into[e.To] = append(into[e.To], e.From)
		if by := byID[e.To].SupersededBy; by != e.From {
			t.Errorf("SUPERSEDES %s -> %s, but %s is superseded by %q", e.From, e.To, e.To, by)
		}
	}
	for id, n := range byID {
		if !n.Live() && !slices.Equal(into[id], []string{n.SupersededBy}) {
			t.Errorf("%s is superseded by %s, but its incoming SUPERSEDES come from %v", id, n.SupersededBy, into[id])
		}
	}
}

// The revert: A is superseded by B, then A comes back. A is live and
// searchable again, confirmed at the reinstatement and still created when
// it was, B is superseded by A, and the relationships say so.
func testReinstate(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	a := newNode(graph.Decision, sc, "Cache user sessions in Redis", "fast", base)
	b := newNode(graph.Decision, sc, "Cache user sessions in Redis with a TTL", "fast, bounded", base.Add(time.Hour))
	put(t, s, tenant, a, b)
	supersede(t, s, tenant, sc, b.ID, a.ID)

	at := base.Add(2 * time.Hour)
	head, err := reinstate(t, s, tenant, sc, a.ID, at)
	if err != nil {
		t.Fatalf("Reinstate(%s): %v", a.ID, err)
	}
	if head.ID != b.ID || head.Title != b.Title || head.SupersededBy != a.ID {
		t.Errorf("Reinstate returned head %+v, want %s superseded by %s", head, b.ID, a.ID)
	}
	gotA := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, a.ID) })
	gotB := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, b.ID) })
	if !gotA.Live() || gotB.SupersededBy != a.ID {
		t.Errorf("after Reinstate: %s superseded by %q, %s by %q; want %s live and %s superseded by it",
			a.ID, gotA.SupersededBy, b.ID, gotB.SupersededBy, a.ID, b.ID)
	}
	if !gotA.CreatedAt.Equal(a.CreatedAt) || !gotA.LastValidatedAt.Equal(at) || !gotB.LastValidatedAt.IsZero() {
		t.Errorf("after Reinstate: %s created %v validated %v, %s validated %v; want %s created %v validated %v, %s never",
			a.ID, gotA.CreatedAt, gotA.LastValidatedAt, b.ID, gotB.LastValidatedAt, a.ID, a.CreatedAt, at, b.ID)
	}
	if got := liveIDs(t, s, tenant, sc); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("Live after Reinstate = %v, want only the reinstated %s", got, a.ID)
	}
	want := []graph.Edge{{Rel: graph.Supersedes, From: a.ID, To: b.ID, Reinstated: true}}
	if got := supersedesEdges(t, s, tenant, sc.Area()); !slices.Equal(got, want) {
		t.Errorf("SUPERSEDES after Reinstate = %+v, want %+v (the one into %s removed)", got, want, a.ID)
	}
	checkSupersession(t, s, tenant, sc.Area())
	// Full-text: the reinstated node is a candidate again, the head no more.
	if got := ids2(candidates(t, s, tenant, sc, graph.Decision, "cache user sessions redis", 5)); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("Candidates after Reinstate = %v, want [%s]", got, a.ID)
	}
	// Back again: B reinstated over A, the relationship from A removed.
	if head, err := reinstate(t, s, tenant, sc, b.ID, base.Add(3*time.Hour)); err != nil || head.ID != a.ID {
		t.Fatalf("Reinstate(%s) back = %+v, %v; want head %s", b.ID, head, err, a.ID)
	}
	want = []graph.Edge{{Rel: graph.Supersedes, From: b.ID, To: a.ID, Reinstated: true}}
	if got := supersedesEdges(t, s, tenant, sc.Area()); !slices.Equal(got, want) {
		t.Errorf("SUPERSEDES after reinstating back = %+v, want %+v", got, want)
	}
	if got := liveIDs(t, s, tenant, sc); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("Live after reinstating back = %v, want [%s]", got, b.ID)
	}
	checkSupersession(t, s, tenant, sc.Area())
}

// A node superseded twice over (A <- B <- C) replaces the live head of its
// chain, C; B stays superseded by C. Every kind can be reinstated: a
// pattern becomes a full-text candidate again, an entity fact (no
// full-text) live.
func testReinstateChain(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	a := newNode(graph.Decision, sc, words(0, 1, 2, 3), "a", base)
	b := newNode(graph.Decision, sc, words(0, 1, 2, 3, 4), "b", base.Add(time.Hour))
	c := newNode(graph.Decision, sc, words(0, 1, 2, 3, 4, 5), "c", base.Add(2*time.Hour))
	put(t, s, tenant, a, b, c)
	supersede(t, s, tenant, sc, b.ID, a.ID)
	supersede(t, s, tenant, sc, c.ID, b.ID)

	head, err := reinstate(t, s, tenant, sc, a.ID, base.Add(3*time.Hour))
	if err != nil || head.ID != c.ID {
		t.Fatalf("Reinstate(%s) = %+v, %v; want the head of its chain %s", a.ID, head, err, c.ID)
	}
	want := []graph.Edge{{Rel: graph.Supersedes, From: a.ID, To: c.ID, Reinstated: true}, {Rel: graph.Supersedes, From: c.ID, To: b.ID}}
	slices.SortFunc(want, func(x, y graph.Edge) int { return strings.Compare(x.From, y.From) })
	if got := supersedesEdges(t, s, tenant, sc.Area()); !slices.Equal(got, want) {
		t.Errorf("SUPERSEDES = %+v, want %+v", got, want)
	}
	if got := liveIDs(t, s, tenant, sc); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("Live = %v, want [%s]", got, a.ID)
	}
	checkSupersession(t, s, tenant, sc.Area())
	// B's chain now runs through C to A.
	if head, err := reinstate(t, s, tenant, sc, b.ID, base.Add(4*time.Hour)); err != nil || head.ID != a.ID {
		t.Fatalf("Reinstate(%s) = %+v, %v; want head %s", b.ID, head, err, a.ID)
	}
	if got := liveIDs(t, s, tenant, sc); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("Live = %v, want [%s]", got, b.ID)
	}
	checkSupersession(t, s, tenant, sc.Area())

	p1 := newNode(graph.Pattern, sc, "Retry with backoff", "p1", base)
	p2 := newNode(graph.Pattern, sc, "Retry with capped backoff", "p2", base.Add(time.Hour))
	f1 := newNode(graph.EntityFact, sc, "Redis", "version 7", base)
	f2 := newNode(graph.EntityFact, sc, "Redis", "version 8", base.Add(time.Hour))
	put(t, s, tenant, p1, p2, f1, f2)
	supersede(t, s, tenant, sc, p2.ID, p1.ID)
	supersede(t, s, tenant, sc, f2.ID, f1.ID)
	for _, tc := range []struct{ old, head graph.Node }{{p1, p2}, {f1, f2}} {
		if head, err := reinstate(t, s, tenant, sc, tc.old.ID, base.Add(5*time.Hour)); err != nil || head.ID != tc.head.ID {
			t.Errorf("Reinstate(%s %s) = %+v, %v; want head %s", tc.old.Kind, tc.old.ID, head, err, tc.head.ID)
		}
	}
	if got := ids2(candidates(t, s, tenant, sc, graph.Pattern, "retry backoff", 5)); !slices.Equal(got, []string{p1.ID}) {
		t.Errorf("pattern Candidates = %v, want the reinstated [%s]", got, p1.ID)
	}
	live := liveIDs(t, s, tenant, sc)
	if !slices.Contains(live, f1.ID) || slices.Contains(live, f2.ID) {
		t.Errorf("Live = %v, want the reinstated fact %s and not %s", live, f1.ID, f2.ID)
	}
	checkSupersession(t, s, tenant, sc.Area())
}

// Reinstate refuses what it cannot do, with the port's errors, and a
// refused Reinstate changes nothing.
func testReinstateRefused(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "f1")
	sc := graph.ProjectScope("p1")
	live := newNode(graph.Decision, sc, "A live decision", "", base)
	a := newNode(graph.Decision, sc, "Cycle end one", "", base)
	b := newNode(graph.Decision, sc, "Cycle end two", "", base)
	other := newNode(graph.Decision, graph.FocusScope("p1", "f1"), "A superseded node of another scope", "", base)
	otherNew := newNode(graph.Decision, other.Scope, "Its successor", "", base)
	put(t, s, tenant, live, a, b, other, otherNew)
	supersede(t, s, tenant, other.Scope, otherNew.ID, other.ID)
	// A cycle, which no engine writes but the port allows: A superseded by
	// B, then B by A.
	supersede(t, s, tenant, sc, b.ID, a.ID)
	supersede(t, s, tenant, sc, a.ID, b.ID)
	// A superseded node that could be reinstated, but not without a time.
	c := newNode(graph.Decision, sc, "Superseded once", "", base)
	d := newNode(graph.Decision, sc, "Its replacement", "", base)
	put(t, s, tenant, c, d)
	supersede(t, s, tenant, sc, d.ID, c.ID)
	before := nodesOf(t, s, tenant, sc.Area())
	for _, tc := range []struct {
		name, id string
		at       time.Time
		want     error
	}{
		{"a live node", live.ID, base, graph.ErrInvalid},
		{"a missing node", "no-such-node", base, graph.ErrNotFound},
		{"a node of another scope", other.ID, base, graph.ErrNotFound},
		{"a node on a cycle", a.ID, base, graph.ErrNoLiveHead},
		{"a zero time", c.ID, time.Time{}, graph.ErrInvalid},
	} {
		if _, err := reinstate(t, s, tenant, sc, tc.id, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("Reinstate(%s): err = %v, want %v", tc.name, err, tc.want)
		}
	}
	after := nodesOf(t, s, tenant, sc.Area())
	if len(after) != len(before) {
		t.Fatalf("refused Reinstate changed the nodes: %d -> %d", len(before), len(after))
	}
	for i := range after {
		if !sameNode(after[i], before[i]) {
			t.Errorf("refused Reinstate changed %s: %+v -> %+v", after[i].ID, before[i], after[i])
		}
	}
}
