package graphtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/hygiene"
	"github.com/praetorhq/praetor/services/memory/retrieval"
	"github.com/praetorhq/praetor/services/memory/scope"
	"github.com/praetorhq/praetor/services/memory/write"
)

// RunEngines runs the seed's engines on the adapter through every state and
// threshold.
func RunEngines(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"ScopeStates", testScopeStates},
		{"RetrievalPriorityMerge", testRetrievalMerge},
		{"RetrievalReadGate", testRetrievalReadGate},
		{"RetrievalConflicted", testRetrievalConflicted},
		{"RetrievalHygieneDue", testRetrievalHygieneDue},
		{"RetrievalTimeoutAndRetry", testRetrievalRetry},
		{"DedupExact", testDedupExact},
		{"DedupThresholds", testDedupThresholds},
		{"DedupScopeAndKind", testDedupScopeAndKind},
		{"DedupBestOfCandidates", testDedupBestCandidate},
		{"DedupKeepsSigns", testDedupSigns},
		{"DedupFindsAnOldNearDuplicate", testDedupOldNearDuplicate},
		{"DedupReinstatesARevert", testDedupReinstates},
		{"DedupKeepsARetrySuperseded", testDedupRetryNotReinstated},
		{"ReinstatedIsConfirmedAtItsWrite", testReinstatedConfirmed},
		{"WriteOutcomes", testWriteOutcomes},
		{"WriteBlockedScope", testWriteBlocked},
		{"WriteGovernance", testWriteGovernance},
		{"WriteBadInput", testWriteBadInput},
		{"WriteBatch", testWriteBatch},
		{"WritePendingThenSaved", testWritePendingSaved},
		{"WritePendingExhausted", testWritePendingExhausted},
		{"WritePendingSurvivesRestart", testWritePendingRestart},
		{"Hygiene", testHygiene},
		{"HygieneReadOnly", testHygieneReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, h) })
	}
}

func testScopeStates(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	eng := scope.New(s)
	tests := []struct {
		project, focus string
		want           scope.State
		wantFocus      string
		dropped        bool
		reads          []graph.Scope
		writeDefault   graph.Scope // zero: blocked
	}{
		{"", "", scope.Unresolved, "", false, nil, graph.Scope{}},
		{"", "api", scope.Unresolved, "", false, nil, graph.Scope{}},
		{"nope", "", scope.Uncertain, "", false, []graph.Scope{graph.ProjectScope("nope")}, graph.Scope{}},
		{"nope", "api", scope.Uncertain, "", false, []graph.Scope{graph.ProjectScope("nope")}, graph.Scope{}},
		{"p1", "", scope.ResolvedProject, "", false,
			[]graph.Scope{graph.ProjectScope("p1"), graph.GlobalScope()}, graph.ProjectScope("p1")},
		// resolved_project -> resolved_focus: focus provided and the FocusArea exists.
		{"p1", "api", scope.ResolvedFocus, "api", false,
			[]graph.Scope{graph.FocusScope("p1", "api"), graph.ProjectScope("p1"), graph.GlobalScope()}, graph.FocusScope("p1", "api")},
		// A focus without a FocusArea stays at project level.
		{"p1", "missing", scope.ResolvedProject, "", true,
			[]graph.Scope{graph.ProjectScope("p1"), graph.GlobalScope()}, graph.ProjectScope("p1")},
	}
	for _, tt := range tests {
		r, err := eng.Resolve(ctxT(t), tenant, tt.project, tt.focus)
		if err != nil {
			t.Fatalf("Resolve(%q, %q): %v", tt.project, tt.focus, err)
		}
		if r.State != tt.want || r.Focus != tt.wantFocus || r.FocusDropped != tt.dropped {
			t.Errorf("Resolve(%q, %q) = %s focus %q dropped %v, want %s focus %q dropped %v",
				tt.project, tt.focus, r.State, r.Focus, r.FocusDropped, tt.want, tt.wantFocus, tt.dropped)
		}
		if got := r.ReadScopes(); !slices.Equal(got, tt.reads) {
			t.Errorf("Resolve(%q, %q).ReadScopes() = %v, want %v", tt.project, tt.focus, got, tt.reads)
		}
		got, err := r.WriteScope("")
		if tt.writeDefault == (graph.Scope{}) {
			if !errors.Is(err, scope.ErrBlocked) {
				t.Errorf("%s: WriteScope = %v, %v; want blocked", tt.want, got, err)
			}
		} else if err != nil || got != tt.writeDefault {
			t.Errorf("%s: WriteScope(\"\") = %v, %v; want %v", tt.want, got, err, tt.writeDefault)
		}
	}
	// resolved_focus -> resolved_project: the focus is cleared.
	r, _ := eng.Resolve(ctxT(t), tenant, "p1", "api")
	if r.State != scope.ResolvedFocus {
		t.Fatalf("state = %s", r.State)
	}
	if r, _ = eng.Resolve(ctxT(t), tenant, "p1", ""); r.State != scope.ResolvedProject {
		t.Errorf("after clearing the focus, state = %s, want resolved_project", r.State)
	}
	if _, err := r.WriteScope(graph.LevelFocus); !errors.Is(err, scope.ErrBlocked) {
		t.Errorf("focus-level write at resolved_project: err = %v, want ErrBlocked", err)
	}
	if _, err := eng.Resolve(ctxT(t), tenant, "bad id", ""); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Resolve(bad id): err = %v, want ErrInvalid", err)
	}
}

func newRetrieval(t *testing.T, s retrieval.Reader, now time.Time, mod func(*retrieval.Config)) *retrieval.Engine {
	t.Helper()
	cfg := retrieval.Config{Store: s, Now: func() time.Time { return now }, Backoff: time.Millisecond, Logger: quiet}
	if mod != nil {
		mod(&cfg)
	}
	e, err := retrieval.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func retrieve(t *testing.T, e *retrieval.Engine, tenant, project, focus string) retrieval.Bundle {
	t.Helper()
	b, err := e.Retrieve(ctxT(t), tenant, project, focus)
	if err != nil {
		t.Fatalf("Retrieve(%q, %q): %v", project, focus, err)
	}
	return b
}

// seedLevel writes n decisions into sc, one minute apart after start, plus
// one newer decision that is superseded; it returns the live ids newest
// first and the superseded id.
func seedLevel(t *testing.T, s graph.Store, tenant string, sc graph.Scope, n int, start time.Time) ([]string, string) {
	t.Helper()
	var live []string
	for i := range n {
		d := newNode(graph.Decision, sc, fmt.Sprintf("%s decision %d", sc.Level, i), "r", start.Add(time.Duration(i)*time.Minute))
		put(t, s, tenant, d)
		live = append([]string{d.ID}, live...)
	}
	old := newNode(graph.Decision, sc, fmt.Sprintf("%s superseded decision", sc.Level), "r", start.Add(time.Hour))
	nu := newNode(graph.Decision, sc, fmt.Sprintf("%s replacing decision", sc.Level), "r", start.Add(-time.Hour))
	put(t, s, tenant, old)
	err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		if err := tx.Create(ctx, nu); err != nil {
			return err
		}
		return tx.Supersede(ctx, nu.ID, old.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	// nu is the oldest live node: last of the level.
	return append(live, nu.ID), old.ID
}

func testRetrievalMerge(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api", "ui")
	ensureProject(t, s, tenant, "p2")
	focus, fsup := seedLevel(t, s, tenant, graph.FocusScope("p1", "api"), 12, base)
	project, psup := seedLevel(t, s, tenant, graph.ProjectScope("p1"), 12, base)
	global, gsup := seedLevel(t, s, tenant, graph.GlobalScope(), 7, base)
	noise := []graph.Node{
		newNode(graph.Decision, graph.FocusScope("p1", "ui"), "other focus area", "r", base.Add(48*time.Hour)),
		newNode(graph.Decision, graph.ProjectScope("p2"), "other project", "r", base.Add(48*time.Hour)),
	}
	put(t, s, tenant, noise...)
	e := newRetrieval(t, s, base, nil)

	b := retrieve(t, e, tenant, "p1", "api")
	want := slices.Concat(focus[:10], project[:10], global[:5])
	if b.Status != retrieval.Succeeded || !slices.Equal(ids(b.Nodes), want) {
		t.Fatalf("Retrieve(p1, api) = %s %v,\nwant succeeded %v (focus 10, project 10, global 5, newest first)", b.Status, ids(b.Nodes), want)
	}
	if !slices.Equal(b.Attempts, []retrieval.Status{retrieval.Succeeded}) {
		t.Errorf("attempts = %v, want [succeeded]", b.Attempts)
	}
	for _, sup := range []string{fsup, psup, gsup} {
		if slices.Contains(ids(b.Nodes), sup) {
			t.Errorf("superseded node %s returned", sup)
		}
	}
	b = retrieve(t, e, tenant, "p1", "")
	if want := slices.Concat(project[:10], global[:5]); !slices.Equal(ids(b.Nodes), want) {
		t.Errorf("Retrieve(p1) = %v, want project 10 then global 5 %v", ids(b.Nodes), want)
	}
	small := newRetrieval(t, s, base, func(c *retrieval.Config) { c.FocusLimit, c.ProjectLimit, c.GlobalLimit = 2, 1, 3 })
	b = retrieve(t, small, tenant, "p1", "api")
	if want := slices.Concat(focus[:2], project[:1], global[:3]); !slices.Equal(ids(b.Nodes), want) {
		t.Errorf("with limits 2/1/3: %v, want %v", ids(b.Nodes), want)
	}
	// Every level short of its limit returns all its live nodes.
	b = retrieve(t, newRetrieval(t, s, base, func(c *retrieval.Config) { c.GlobalLimit = 50 }), tenant, "p2", "")
	if want := slices.Concat([]string{noise[1].ID}, global); !slices.Equal(ids(b.Nodes), want) {
		t.Errorf("Retrieve(p2) = %v, want %v", ids(b.Nodes), want)
	}
}

func testRetrievalReadGate(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	put(t, s, tenant, newNode(graph.Decision, graph.GlobalScope(), "global decision", "r", base))
	e := newRetrieval(t, s, base, nil)

	// unresolved: empty, without reading the graph at all.
	noRead := newRetrieval(t, failingReads{s}, base, nil)
	b := retrieve(t, noRead, tenant, "", "api")
	if b.Status != retrieval.Empty || b.Scope.State != scope.Unresolved || len(b.Nodes) != 0 || len(b.Attempts) != 0 {
		t.Errorf("unresolved: %+v, want empty with no attempt", b)
	}
	// uncertain: project scope only, so the global node is not read.
	b = retrieve(t, e, tenant, "ghost", "")
	if b.Status != retrieval.Empty || b.Scope.State != scope.Uncertain || len(b.Nodes) != 0 || b.HygieneDue {
		t.Errorf("uncertain: %s %s %v hygiene_due %v, want empty uncertain, no nodes, no hygiene_due", b.Status, b.Scope.State, ids(b.Nodes), b.HygieneDue)
	}
	// empty: a resolved project with nothing anywhere but the global node.
	other := h.NewTenant(t)
	ensureProject(t, s, other, "p1")
	b = retrieve(t, e, other, "p1", "")
	if b.Status != retrieval.Empty || b.Scope.State != scope.ResolvedProject || !slices.Equal(b.Attempts, []retrieval.Status{retrieval.Empty}) {
		t.Errorf("resolved empty project: %s %s attempts %v, want empty", b.Status, b.Scope.State, b.Attempts)
	}
	if _, err := e.Retrieve(ctxT(t), "bad tenant", "p1", ""); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("bad tenant: err = %v, want ErrInvalid", err)
	}
}

func testRetrievalConflicted(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ctx := ctxT(t)
	ensureProject(t, s, tenant, "p1")
	ensureProject(t, s, tenant, "p2")
	sc := graph.ProjectScope("p1")
	a := newNode(graph.Decision, sc, "Deploy on Fridays", "r", base)
	b := newNode(graph.Decision, graph.GlobalScope(), "Never deploy on Fridays", "r", base)
	c := newNode(graph.Decision, sc, "Use trunk-based development", "r", base)
	far := newNode(graph.Decision, graph.ProjectScope("p2"), "Deploy only on Mondays", "r", base)
	put(t, s, tenant, a, b, c, far)
	if err := s.Link(ctx, tenant, graph.ConflictsWith, c.ID, far.ID); err != nil {
		t.Fatal(err)
	}
	e := newRetrieval(t, s, base, nil)
	got := retrieve(t, e, tenant, "p1", "")
	if got.Status != retrieval.Succeeded || len(got.Conflicts) != 0 {
		t.Fatalf("conflict with a node outside the results: %s %v, want succeeded", got.Status, got.Conflicts)
	}
	if err := s.Link(ctx, tenant, graph.ConflictsWith, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	got = retrieve(t, e, tenant, "p1", "")
	if got.Status != retrieval.Conflicted || len(got.Conflicts) != 1 {
		t.Fatalf("Retrieve = %s conflicts %v, want conflicted with one pair", got.Status, got.Conflicts)
	}
	pair := got.Conflicts[0]
	names := []string{pair.A.Title, pair.B.Title}
	slices.Sort(names)
	if !slices.Equal(names, []string{a.Title, b.Title}) || pair.A.ID == "" || pair.B.ID == "" {
		t.Errorf("conflict pair = %q/%q, want it to name %q and %q", pair.A.Title, pair.B.Title, a.Title, b.Title)
	}
	if len(got.Nodes) != 3 {
		t.Errorf("conflicted bundle holds %d nodes, want all 3", len(got.Nodes))
	}
}

func testRetrievalHygieneDue(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	put(t, s, tenant, newNode(graph.Decision, graph.ProjectScope("p1"), "d", "r", base))
	now := base.AddDate(0, 3, 0)
	e := newRetrieval(t, s, now, nil)
	if b := retrieve(t, e, tenant, "p1", ""); !b.HygieneDue {
		t.Error("never cleaned: hygiene_due = false, want true")
	}
	for _, tc := range []struct {
		ago  time.Duration
		want bool
	}{
		{31 * 24 * time.Hour, true},
		{30*24*time.Hour + time.Second, true},
		{29 * 24 * time.Hour, false},
		{time.Hour, false},
	} {
		if err := s.MarkHygiene(ctxT(t), tenant, graph.Area{ProjectID: "p1"}, now.Add(-tc.ago)); err != nil {
			t.Fatal(err)
		}
		if b := retrieve(t, e, tenant, "p1", ""); b.HygieneDue != tc.want {
			t.Errorf("last hygiene %s ago: hygiene_due = %v, want %v", tc.ago, b.HygieneDue, tc.want)
		}
	}
}

// unavailableReads fails the first n reads with graph.ErrUnavailable.
type unavailableReads struct {
	graph.Store
	mu   sync.Mutex
	left int
}

func (u *unavailableReads) Read(ctx context.Context, tenant string, fn func(context.Context, graph.ReadTx) error) error {
	u.mu.Lock()
	fail := u.left > 0
	if fail {
		u.left--
	}
	u.mu.Unlock()
	if fail {
		return fmt.Errorf("%w: connection refused", graph.ErrUnavailable)
	}
	return u.Store.Read(ctx, tenant, fn)
}

func testRetrievalRetry(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	other := h.NewTenant(t)
	ensureProject(t, s, other, "p1")
	put(t, s, tenant, newNode(graph.Decision, graph.ProjectScope("p1"), "d", "r", base))
	// Long enough for a real read on a loaded machine, short enough that
	// the attempts made to time out do not slow the suite down.
	fast := func(c *retrieval.Config) { c.Timeout = 500 * time.Millisecond }
	tests := []struct {
		name         string
		store        retrieval.Reader
		tenant       string
		wantStatus   retrieval.Status
		wantAttempts []retrieval.Status
	}{
		{"timed_out then succeeded", &slowReads{Store: s, left: 1}, tenant, retrieval.Succeeded,
			[]retrieval.Status{retrieval.TimedOut, retrieval.Succeeded}},
		{"timed_out then empty", &slowReads{Store: s, left: 1}, other, retrieval.Empty,
			[]retrieval.Status{retrieval.TimedOut, retrieval.Empty}},
		{"timed_out until retry exhausted", &slowReads{Store: s, left: 3}, tenant, retrieval.Failed,
			[]retrieval.Status{retrieval.TimedOut, retrieval.TimedOut, retrieval.TimedOut}},
		{"unavailable then succeeded", &unavailableReads{Store: s, left: 2}, tenant, retrieval.Succeeded,
			[]retrieval.Status{retrieval.Failed, retrieval.Failed, retrieval.Succeeded}},
		{"unavailable until retry exhausted", &unavailableReads{Store: s, left: 5}, tenant, retrieval.Failed,
			[]retrieval.Status{retrieval.Failed, retrieval.Failed, retrieval.Failed}},
		{"permanent error is not retried", failingReads{s}, tenant, retrieval.Failed,
			[]retrieval.Status{retrieval.Failed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := retrieve(t, newRetrieval(t, tt.store, base, fast), tt.tenant, "p1", "")
			if b.Status != tt.wantStatus || !slices.Equal(b.Attempts, tt.wantAttempts) {
				t.Errorf("status %s attempts %v, want %s %v (detail %q)", b.Status, b.Attempts, tt.wantStatus, tt.wantAttempts, b.Detail)
			}
			if b.Status == retrieval.Failed && b.Detail == "" {
				t.Error("failed bundle without detail")
			}
		})
	}
}

func newDedup(t *testing.T) *dedup.Engine {
	t.Helper()
	d, err := dedup.New(dedup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runDedup runs dedup for n in its scope and returns the result.
func runDedup(t *testing.T, s graph.Store, tenant string, d *dedup.Engine, n graph.Node, opt dedup.Options) dedup.Result {
	t.Helper()
	var res dedup.Result
	err := s.Write(ctxT(t), tenant, n.Scope, func(ctx context.Context, tx graph.WriteTx) error {
		var err error
		res, err = d.Run(ctx, tx, n, opt)
		return err
	})
	if err != nil {
		t.Fatalf("dedup %q: %v", n.Title, err)
	}
	return res
}

func decision(sc graph.Scope, title, rationale string) graph.Node {
	n := newNode(graph.Decision, sc, title, rationale, base)
	n.ContentHash = "" // dedup computes it
	return n
}

func testDedupExact(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	d := newDedup(t)
	first := decision(sc, "Use PostgreSQL for the ledger", "ACID guarantees; mature tooling.")
	if r := runDedup(t, s, tenant, d, first, dedup.Options{}); r.Outcome != dedup.OutcomeNew || r.NodeID != first.ID {
		t.Fatalf("first write: %+v, want new %s", r, first.ID)
	}
	for _, v := range []struct{ title, rationale string }{
		{"Use PostgreSQL for the ledger", "ACID guarantees; mature tooling."},
		{"use postgresql for the ledger", "acid guarantees mature tooling"},
		{"  Use   PostgreSQL for the ledger!  ", "ACID guarantees -- mature tooling"},
		{"USE POSTGRESQL FOR THE LEDGER.", "ACID GUARANTEES, MATURE TOOLING."},
	} {
		r := runDedup(t, s, tenant, d, decision(sc, v.title, v.rationale), dedup.Options{})
		if r.Outcome != dedup.OutcomeDuplicateSkip || r.NodeID != first.ID || r.Match == nil || r.Match.Score != 1 {
			t.Errorf("%q / %q: %+v, want duplicate_skip of %s", v.title, v.rationale, r, first.ID)
		}
	}
	if got := nodesOf(t, s, tenant, sc.Area()); len(got) != 1 {
		t.Errorf("nodes after duplicates = %d, want 1", len(got))
	}
	// Moving words between title and rationale is other content.
	r := runDedup(t, s, tenant, d, decision(sc, "Use PostgreSQL for the ledger ACID", "guarantees; mature tooling."), dedup.Options{})
	if r.Outcome == dedup.OutcomeDuplicateSkip {
		t.Errorf("title/rationale boundary ignored: %+v", r)
	}
}

// nato words have no stopword, no plural fold and no shared stem.
var nato = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango")

func words(idx ...int) string {
	var out []string
	for _, i := range idx {
		out = append(out, nato[i])
	}
	return strings.Join(out, " ")
}

func testDedupThresholds(t *testing.T, h Harness) {
	eight := words(0, 1, 2, 3, 4, 5, 6, 7)
	seven := words(0, 1, 2, 3, 4, 5, 6)
	tests := []struct {
		name            string
		existing, title string
		scoreOnly       bool
		want            dedup.Outcome
		score           float64
	}{
		{"same title, new rationale (1.0)", eight, eight, false, dedup.OutcomeSupersede, 1},
		{"one word dropped (7/8)", eight, seven, false, dedup.OutcomeSupersede, 7.0 / 8},
		{"exactly 0.70 (7/10), words added", seven, words(0, 1, 2, 3, 4, 5, 6, 10, 11, 12), false, dedup.OutcomeSupersede, 0.7},
		{"0.636 (7/11), words added", seven, words(0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13), false, dedup.OutcomeManualReview, 7.0 / 11},
		{"exactly 0.50 (5/10)", eight, words(0, 1, 2, 3, 4, 10, 11), false, dedup.OutcomeManualReview, 0.5},
		{"0.4545 (5/11)", eight, words(0, 1, 2, 3, 4, 10, 11, 12), false, dedup.OutcomeNew, 5.0 / 11},
		{"0.0667 (1/15)", eight, words(0, 10, 11, 12, 13, 14, 15, 16), false, dedup.OutcomeNew, 1.0 / 15},
		{"0.80 with a number changed", "Alert when p99 latency exceeds 500 ms for 5 minutes",
			"Alert when p99 latency exceeds 300 ms for 5 minutes", false, dedup.OutcomeSupersede, 8.0 / 10},
		{"0.78 with a word replaced", "Grant read-only production database access to the data team",
			"Grant read-only production database access to the support team", false, dedup.OutcomeManualReview, 7.0 / 9},
		{"0.78 with a word replaced, score only", "Grant read-only production database access to the data team",
			"Grant read-only production database access to the support team", true, dedup.OutcomeSupersede, 7.0 / 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, tenant := h.Open(t)
			ensureProject(t, s, tenant, "p1")
			sc := graph.ProjectScope("p1")
			d, err := dedup.New(dedup.Config{ScoreOnly: tt.scoreOnly})
			if err != nil {
				t.Fatal(err)
			}
			old := decision(sc, tt.existing, "the original rationale")
			runDedup(t, s, tenant, d, old, dedup.Options{})
			n := decision(sc, tt.title, "a new rationale")
			r := runDedup(t, s, tenant, d, n, dedup.Options{})
			if r.Outcome != tt.want {
				t.Fatalf("outcome %s (match %+v), want %s", r.Outcome, r.Match, tt.want)
			}
			if tt.want != dedup.OutcomeNew && (r.Match == nil || r.Match.ID != old.ID || !approx(r.Match.Score, tt.score)) {
				t.Errorf("match = %+v, want %s with score %.4f", r.Match, old.ID, tt.score)
			}
			if r.Outcome == dedup.OutcomeManualReview && tt.score >= 0.7 && !strings.Contains(r.Reason, `"data"`) {
				t.Errorf("reason = %q, want it to name the replaced word", r.Reason)
			}
			nodes := nodesOf(t, s, tenant, sc.Area())
			edges := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Edge, error) {
				return tx.Edges(ctx, sc.Area(), graph.Supersedes)
			})
			switch tt.want {
			case dedup.OutcomeSupersede:
				want := []graph.Edge{{Rel: graph.Supersedes, From: n.ID, To: old.ID}}
				if len(nodes) != 2 || r.NodeID != n.ID || !slices.Equal(edges, want) {
					t.Errorf("supersede wrote %d nodes, edges %v; want 2 nodes and %v", len(nodes), edges, want)
				}
			case dedup.OutcomeManualReview:
				if len(nodes) != 1 || r.NodeID != "" || len(edges) != 0 {
					t.Errorf("manual_review wrote %d nodes (node id %q), edges %v; want nothing written", len(nodes), r.NodeID, edges)
				}
				// A person confirms: the write goes through as new.
				c := runDedup(t, s, tenant, d, n, dedup.Options{Confirmed: true})
				if c.Outcome != dedup.OutcomeNew || len(nodesOf(t, s, tenant, sc.Area())) != 2 {
					t.Errorf("confirmed write: %+v, want new", c)
				}
			case dedup.OutcomeNew:
				if len(nodes) != 2 || len(edges) != 0 {
					t.Errorf("new wrote %d nodes, edges %v; want 2 nodes, no edge", len(nodes), edges)
				}
			}
		})
	}
}

func approx(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func testDedupScopeAndKind(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	d := newDedup(t)
	title := words(0, 1, 2, 3, 4, 5)
	put(t, s, tenant, newNode(graph.Decision, graph.ProjectScope("p1"), title, "project rationale", base))
	// The same title in another scope is not a candidate.
	if r := runDedup(t, s, tenant, d, decision(graph.FocusScope("p1", "api"), title, "focus rationale"), dedup.Options{}); r.Outcome != dedup.OutcomeNew {
		t.Errorf("near-duplicate in another scope: %s, want new", r.Outcome)
	}
	// Patterns and entity facts: exact hash only.
	sc := graph.ProjectScope("p1")
	pat := newNode(graph.Pattern, sc, "Retry with exponential backoff", "jitter included", base)
	pat.ContentHash = ""
	if r := runDedup(t, s, tenant, d, pat, dedup.Options{}); r.Outcome != dedup.OutcomeNew {
		t.Fatalf("first pattern: %s", r.Outcome)
	}
	pat2 := pat
	pat2.ID, pat2.Rationale = pat.ID+"-2", "jitter included, capped at 30 s"
	if r := runDedup(t, s, tenant, d, pat2, dedup.Options{}); r.Outcome != dedup.OutcomeNew {
		t.Errorf("pattern with the same title, other body: %s, want new (patterns use the hash only)", r.Outcome)
	}
	pat3 := pat
	pat3.ID, pat3.Title = pat.ID+"-3", "RETRY with exponential backoff!"
	if r := runDedup(t, s, tenant, d, pat3, dedup.Options{}); r.Outcome != dedup.OutcomeDuplicateSkip || r.NodeID != pat.ID {
		t.Errorf("same pattern content: %+v, want duplicate_skip of %s", r, pat.ID)
	}
	fact := newNode(graph.EntityFact, sc, "PostgreSQL", "version 16", base)
	fact.ContentHash = ""
	runDedup(t, s, tenant, d, fact, dedup.Options{})
	fact2 := fact
	fact2.ID, fact2.EntityName = fact.ID+"-2", "MySQL"
	if r := runDedup(t, s, tenant, d, fact2, dedup.Options{}); r.Outcome != dedup.OutcomeNew {
		t.Errorf("same fact text about another entity: %s, want new", r.Outcome)
	}
	fact3 := fact
	fact3.ID = fact.ID + "-3"
	if r := runDedup(t, s, tenant, d, fact3, dedup.Options{}); r.Outcome != dedup.OutcomeDuplicateSkip {
		t.Errorf("same entity fact: %s, want duplicate_skip", r.Outcome)
	}
}

func testDedupBestCandidate(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	d := newDedup(t)
	weak := decision(sc, words(0, 1, 2, 3, 4, 10, 11), "r1")     // 5/8 with the new title
	strong := decision(sc, words(0, 1, 2, 3, 4, 5, 6, 12), "r2") // 7/9
	runDedup(t, s, tenant, d, weak, dedup.Options{})
	if r := runDedup(t, s, tenant, d, strong, dedup.Options{}); r.Outcome != dedup.OutcomeManualReview {
		t.Fatalf("setup: strong vs weak = %s, want manual_review (5/10)", r.Outcome)
	}
	runDedup(t, s, tenant, d, strong, dedup.Options{Confirmed: true})
	n := decision(sc, words(0, 1, 2, 3, 4, 5, 6), "r3")
	r := runDedup(t, s, tenant, d, n, dedup.Options{})
	if r.Outcome != dedup.OutcomeSupersede || r.Match.ID != strong.ID {
		t.Fatalf("outcome %s match %+v, want supersede of the best candidate %s", r.Outcome, r.Match, strong.ID)
	}
	// A chain: the next near-duplicate supersedes the live head, never the
	// superseded node.
	n2 := decision(sc, words(0, 1, 2, 3, 4, 5, 6, 13), "r4")
	r2 := runDedup(t, s, tenant, d, n2, dedup.Options{})
	if r2.Outcome != dedup.OutcomeSupersede || r2.Match.ID != n.ID {
		t.Errorf("chain: %s of %+v, want supersede of %s", r2.Outcome, r2.Match, n.ID)
	}
}

// Names that differ by a sign that ends them are different names: "Use C
// for the engine" is neither the content of "Use C++ for the engine"
// (duplicate_skip, with signs dropped from the hash) nor its update
// (supersede, with signs dropped from the title tokens). Somewhat alike as
// titles, it waits for review, and confirmed, both are kept; an entity fact
// about C is not one about C++.
func testDedupSigns(t *testing.T, h Harness) {
	tests := []struct {
		name, first, second string
		score               float64
		// reason is what Result.Reason names when the score alone would
		// supersede: the replaced word.
		reason string
	}{
		{"C++ then C", "Use C++ for the engine", "Use C for the engine", 0.5, ""},
		{"C then C++", "Use C for the engine", "Use C++ for the engine", 0.5, ""},
		{"C# then C", "Use C# for the build tools", "Use C for the build tools", 3.0 / 5, ""},
		{"F# then F", "Price the options in F#", "Price the options in F", 0.5, ""},
		{"g++ then g, a long title", "Build the engine with g++ on the Linux release builders",
			"Build the engine with g on the Linux release builders", 5.0 / 7, `"g++" with "g"`},
	}
	const why = "Speed and control over memory."
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, tenant := h.Open(t)
			ensureProject(t, s, tenant, "p1")
			sc := graph.ProjectScope("p1")
			d := newDedup(t)
			first := decision(sc, tt.first, why)
			if r := runDedup(t, s, tenant, d, first, dedup.Options{}); r.Outcome != dedup.OutcomeNew {
				t.Fatalf("%q: %+v, want new", tt.first, r)
			}
			second := decision(sc, tt.second, why)
			r := runDedup(t, s, tenant, d, second, dedup.Options{})
			if r.Outcome != dedup.OutcomeManualReview || r.Match == nil || r.Match.ID != first.ID || !approx(r.Match.Score, tt.score) {
				t.Fatalf("%q after %q: %s, match %+v; want manual_review of %s at %.3f", tt.second, tt.first, r.Outcome, r.Match, first.ID, tt.score)
			}
			if tt.reason != "" && !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to name the replaced word (%s)", r.Reason, tt.reason)
			}
			if c := runDedup(t, s, tenant, d, second, dedup.Options{Confirmed: true}); c.Outcome != dedup.OutcomeNew || c.NodeID != second.ID {
				t.Fatalf("confirmed %q: %+v, want new", tt.second, c)
			}
			if got := liveIDs(t, s, tenant, sc); !slices.Equal(sorted(got), sorted([]string{first.ID, second.ID})) {
				t.Errorf("live nodes = %v, want both decisions, %s and %s", got, first.ID, second.ID)
			}
			if edges := supersedesEdges(t, s, tenant, sc.Area()); len(edges) != 0 {
				t.Errorf("SUPERSEDES edges %v, want none", edges)
			}
			// Each is still its own content.
			for _, n := range []graph.Node{first, second} {
				again := decision(sc, n.Title, why)
				if r := runDedup(t, s, tenant, d, again, dedup.Options{}); r.Outcome != dedup.OutcomeDuplicateSkip || r.NodeID != n.ID {
					t.Errorf("%q again: %+v, want duplicate_skip of %s", n.Title, r, n.ID)
				}
			}
		})
	}
	t.Run("entity facts", func(t *testing.T) {
		s, tenant := h.Open(t)
		ensureProject(t, s, tenant, "p1")
		sc := graph.ProjectScope("p1")
		d := newDedup(t)
		for _, name := range []string{"C++", "C", "C#"} {
			fact := newNode(graph.EntityFact, sc, name, "compiles slowly", base)
			fact.ContentHash = ""
			if r := runDedup(t, s, tenant, d, fact, dedup.Options{}); r.Outcome != dedup.OutcomeNew {
				t.Errorf("fact about %s: %+v, want new", name, r)
			}
		}
	})
}

func newWrite(t *testing.T, s write.Store, tokens write.TokenChecker, mod func(*write.Config)) *write.Engine {
	t.Helper()
	if tokens == nil {
		tokens = governance.NewTokens(nil)
	}
	cfg := write.Config{Store: s, Tokens: tokens, Now: func() time.Time { return base }, Logger: quiet}
	if mod != nil {
		mod(&cfg)
	}
	e, err := write.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func save(t *testing.T, e *write.Engine, r write.Request) write.Receipt {
	t.Helper()
	rc, err := e.Save(ctxT(t), r)
	if err != nil {
		t.Fatalf("Save(%q): %v", r.Title, err)
	}
	return rc
}

func testWriteOutcomes(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	e := newWrite(t, s, nil, nil)
	req := write.Request{TenantID: tenant, ProjectID: "p1", Focus: "api", Kind: graph.Decision,
		Title: words(0, 1, 2, 3, 4, 5, 6, 7), Rationale: `because C++ && (Rust) "both" \ fit: *yes*?`}
	first := save(t, e, req)
	if first.Status != write.Saved || first.Outcome != dedup.OutcomeNew || first.NodeID == "" ||
		first.Scope != graph.FocusScope("p1", "api") || first.ScopeState != scope.ResolvedFocus {
		t.Fatalf("first write: %+v, want saved/new in the focus scope", first)
	}
	dup := save(t, e, req)
	if dup.Status != write.Saved || dup.Outcome != dedup.OutcomeDuplicateSkip || dup.NodeID != first.NodeID {
		t.Errorf("same write again: %+v, want saved/duplicate_skip of %s", dup, first.NodeID)
	}
	sup := req
	sup.Title, sup.Rationale = words(0, 1, 2, 3, 4, 5, 6), "refined"
	rs := save(t, e, sup)
	if rs.Status != write.Saved || rs.Outcome != dedup.OutcomeSupersede || rs.Match == nil || rs.Match.ID != first.NodeID {
		t.Errorf("near-duplicate: %+v, want saved/supersede of %s", rs, first.NodeID)
	}
	rev := req
	rev.Title, rev.Rationale = words(0, 1, 2, 3, 4, 10, 11), "related"
	rr := save(t, e, rev)
	if rr.Status != write.Failed || rr.Outcome != dedup.OutcomeManualReview || rr.Match == nil || rr.Match.ID != rs.NodeID ||
		rr.NodeID != "" || !strings.Contains(rr.Detail, rs.NodeID) {
		t.Errorf("related decision: %+v, want failed/manual_review naming candidate %s", rr, rs.NodeID)
	}
	rev.Confirmed = true
	if rc := save(t, e, rev); rc.Status != write.Saved || rc.Outcome != dedup.OutcomeNew {
		t.Errorf("confirmed related decision: %+v, want saved/new", rc)
	}
	proj := req
	proj.Level, proj.Title = graph.LevelProject, "A project-level decision"
	if rc := save(t, e, proj); rc.Status != write.Saved || rc.Scope != graph.ProjectScope("p1") {
		t.Errorf("project-level write: %+v", rc)
	}
	pat := write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Pattern, Title: "Outbox", Rationale: "same tx"}
	pr := save(t, e, pat)
	n := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, pr.NodeID) })
	if !n.LastValidatedAt.Equal(base) || n.Status != graph.StatusSaved {
		t.Errorf("pattern saved as %+v, want validated at creation and status saved", n)
	}
}

func testWriteBlocked(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	tokens := governance.NewTokens(func() time.Time { return base })
	tok, _, _ := tokens.Issue(tenant, time.Hour)
	e := newWrite(t, s, tokens, nil)
	tests := []struct {
		name  string
		req   write.Request
		state scope.State
	}{
		{"unresolved", write.Request{Title: "x"}, scope.Unresolved},
		{"unresolved global, even with a token", write.Request{Title: "x", Level: graph.LevelGlobal, GovernanceToken: tok}, scope.Unresolved},
		{"uncertain", write.Request{ProjectID: "ghost", Title: "x"}, scope.Uncertain},
		{"focus level without a focus area", write.Request{ProjectID: "p1", Focus: "missing", Level: graph.LevelFocus, Title: "x"}, scope.ResolvedProject},
	}
	for _, tt := range tests {
		tt.req.TenantID, tt.req.Kind = tenant, graph.Decision
		rc := save(t, e, tt.req)
		if rc.Status != write.BlockedScope || rc.ScopeState != tt.state || rc.Detail == "" {
			t.Errorf("%s: %+v, want blocked_scope in state %s with a reason", tt.name, rc, tt.state)
		}
	}
	if got := nodesOf(t, s, tenant, graph.Area{ProjectID: "p1"}); len(got) != 0 {
		t.Errorf("blocked writes wrote %v", ids(got))
	}
}

func testWriteGovernance(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	other := h.NewTenant(t)
	ensureProject(t, s, tenant, "p1")
	now := base
	tokens := governance.NewTokens(func() time.Time { return now })
	valid, _, _ := tokens.Issue(tenant, time.Hour)
	expired, _, _ := tokens.Issue(tenant, time.Minute)
	foreign, _, _ := tokens.Issue(other, time.Hour)
	revoked, _, _ := tokens.Issue(tenant, time.Hour)
	tokens.Revoke(revoked)
	now = base.Add(30 * time.Minute)
	e := newWrite(t, s, tokens, nil)
	req := write.Request{TenantID: tenant, ProjectID: "p1", Level: graph.LevelGlobal, Kind: graph.Decision, Title: "All services log JSON"}
	for _, tc := range []struct {
		name, token string
		want        error
	}{
		{"no token", "", governance.ErrTokenMissing},
		{"forged", "gov_forged-token", governance.ErrTokenInvalid},
		{"expired", expired, governance.ErrTokenExpired},
		{"another tenant's", foreign, governance.ErrTokenInvalid},
		{"revoked", revoked, governance.ErrTokenInvalid},
	} {
		r := req
		r.GovernanceToken = tc.token
		rc := save(t, e, r)
		if rc.Status != write.Failed || !strings.Contains(rc.Detail, tc.want.Error()) {
			t.Errorf("%s token: %+v, want failed saying %q", tc.name, rc, tc.want)
		}
	}
	if got := nodesOf(t, s, tenant, graph.GlobalArea()); len(got) != 0 {
		t.Fatalf("rejected global writes wrote %v", ids(got))
	}
	r := req
	r.GovernanceToken = valid
	rc := save(t, e, r)
	if rc.Status != write.Saved || rc.Scope != graph.GlobalScope() {
		t.Fatalf("valid token: %+v, want saved in the global scope", rc)
	}
	// Authorize replaces the token check: its refusal fails the write, its
	// approval saves it, and a valid token does not override a refusal.
	denied := req
	denied.Title, denied.GovernanceToken = "Proof-checked decision", valid
	denied.Authorize = func(context.Context) error { return governance.ErrTokenInvalid }
	if rc := save(t, e, denied); rc.Status != write.Failed || !strings.Contains(rc.Detail, governance.ErrTokenInvalid.Error()) {
		t.Errorf("Authorize refusing: %+v, want failed", rc)
	}
	allowed := denied
	allowed.GovernanceToken = ""
	allowed.Authorize = func(context.Context) error { return nil }
	if rc := save(t, e, allowed); rc.Status != write.Saved || rc.Scope != graph.GlobalScope() {
		t.Errorf("Authorize approving: %+v, want saved in the global scope", rc)
	}
	// Project writes need no token.
	if rc := save(t, e, write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: "Project decision"}); rc.Status != write.Saved {
		t.Errorf("project write without token: %+v", rc)
	}
}

func testWriteBadInput(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	e := newWrite(t, s, nil, nil)
	ok := write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: "t", Rationale: "r"}
	tests := []struct {
		name   string
		mutate func(*write.Request)
		field  string
	}{
		{"oversized title", func(r *write.Request) { r.Title = strings.Repeat("long ", 60) }, "title"},
		{"empty title", func(r *write.Request) { r.Title = "  " }, "title"},
		{"punctuation-only title", func(r *write.Request) { r.Title = "?!" }, "title"},
		{"multi-line title", func(r *write.Request) { r.Title = "one\ntwo" }, "title"},
		{"oversized rationale", func(r *write.Request) { r.Rationale = strings.Repeat("x", 8001) }, "rationale"},
		{"bad kind", func(r *write.Request) { r.Kind = "memo" }, "kind"},
		{"bad tenant", func(r *write.Request) { r.TenantID = "a b" }, "tenant_id"},
		{"bad level", func(r *write.Request) { r.Level = "team" }, "level"},
		{"bad project id", func(r *write.Request) { r.ProjectID = "p/1" }, "project_id"},
		{"entity fact without entity", func(r *write.Request) { r.Kind = graph.EntityFact }, "entity_name"},
		{"entity name on a decision", func(r *write.Request) { r.EntityName = "X" }, "entity_name"},
		{"invalid UTF-8", func(r *write.Request) { r.Title = "bad \xff byte" }, "title"},
	}
	for _, tt := range tests {
		r := ok
		tt.mutate(&r)
		_, err := e.Save(ctxT(t), r)
		var ie *write.InputError
		if !errors.As(err, &ie) || !errors.Is(err, graph.ErrInvalid) || !strings.HasPrefix(ie.Field, tt.field) || ie.Rule == "" {
			t.Errorf("%s: err = %v, want an InputError on %s", tt.name, err, tt.field)
		}
	}
	_, err := e.Save(ctxT(t), write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: strings.Repeat("é", 257)})
	if err == nil || !strings.Contains(err.Error(), "257 characters; the limit is 256") {
		t.Errorf("oversized title error = %v, want it to give the size and the limit", err)
	}
	if got := nodesOf(t, s, tenant, graph.Area{ProjectID: "p1"}); len(got) != 0 {
		t.Errorf("bad requests wrote %v", ids(got))
	}
}

func testWriteBatch(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	e := newWrite(t, s, nil, nil)
	d := func(project, title string) write.Request {
		return write.Request{TenantID: tenant, ProjectID: project, Kind: graph.Decision, Title: title}
	}
	b, err := e.SaveBatch(ctxT(t), []write.Request{d("p1", "Use Go for services"), d("p1", "Keep configuration in YAML files")})
	if err != nil || b.Status != write.Saved || len(b.Items) != 2 {
		t.Fatalf("all good: %+v, %v; want saved", b, err)
	}
	b, err = e.SaveBatch(ctxT(t), []write.Request{d("p1", "Publish metrics with Prometheus"), d("ghost", "blocked one")})
	if err != nil || b.Status != write.Partial || b.Items[0].Status != write.Saved || b.Items[1].Status != write.BlockedScope {
		t.Errorf("one saved, one blocked: %+v, %v; want partial", b, err)
	}
	_, err = e.SaveBatch(ctxT(t), []write.Request{d("p1", "would be saved"), d("p1", "")})
	if err == nil || !strings.Contains(err.Error(), "request 1") {
		t.Errorf("batch with a bad request: err = %v, want it to name request 1", err)
	}
	if got := nodesOf(t, s, tenant, graph.Area{ProjectID: "p1"}); len(got) != 3 {
		t.Errorf("nodes = %d, want 3 (the bad batch writes nothing)", len(got))
	}
}

// settled collects settlements on a channel.
func settled(c *write.Config) chan write.Settlement {
	ch := make(chan write.Settlement, 16)
	c.OnSettled = func(s write.Settlement) { ch <- s }
	return ch
}

func waitSettled(t *testing.T, ch chan write.Settlement) write.Settlement {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(time.Minute):
		t.Fatal("no settlement within a minute")
		return write.Settlement{}
	}
}

func startWrite(t *testing.T, e *write.Engine) {
	t.Helper()
	if err := e.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		_ = e.Stop(context.Background()) // a second Stop does nothing
	})
}

func testWritePendingSaved(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	flaky := NewFlaky(s)
	var ch chan write.Settlement
	e := newWrite(t, flaky, nil, func(c *write.Config) {
		c.RetryBackoff, c.RetryMaxBackoff = 5*time.Millisecond, 20*time.Millisecond
		ch = settled(c)
	})
	startWrite(t, e)
	flaky.SetDown(true)
	req := write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: "Written while the graph is down",
		Rationale: `lucene: "quotes" && (parens)`, RequestID: "req-1"}
	rc := save(t, e, req)
	if rc.Status != write.PendingRetry || rc.NodeID == "" || rc.RequestID != "req-1" || rc.Detail == "" {
		t.Fatalf("Save while down: %+v, want pending_retry with the future node id", rc)
	}
	waitFor(t, "retries while down", time.Minute, func() bool { return flaky.Calls.Load() >= 3 })
	if p, _ := e.PendingWrites(ctxT(t)); len(p) != 1 || p[0].Attempts < 1 {
		t.Fatalf("pending writes = %+v, want the one write", p)
	}
	flaky.SetDown(false)
	st := waitSettled(t, ch)
	if st.Receipt.Status != write.Saved || st.Receipt.NodeID != rc.NodeID || st.Request.RequestID != "req-1" || st.Attempts < 2 {
		t.Fatalf("settlement = %+v, want saved as %s after several attempts", st, rc.NodeID)
	}
	got := nodesOf(t, s, tenant, graph.Area{ProjectID: "p1"})
	if len(got) != 1 || got[0].ID != rc.NodeID || got[0].Title != req.Title {
		t.Errorf("nodes = %+v, want exactly the pending write", got)
	}
	if p, _ := e.PendingWrites(ctxT(t)); len(p) != 0 {
		t.Errorf("pending after settling = %d", len(p))
	}
	// A pending global write keeps its governance check, not its token.
	tokens := governance.NewTokens(nil)
	tok, _, _ := tokens.Issue(tenant, time.Hour)
	var ch2 chan write.Settlement
	e2 := newWrite(t, flaky, tokens, func(c *write.Config) { c.RetryBackoff = 5 * time.Millisecond; ch2 = settled(c) })
	flaky.SetDown(true)
	g := save(t, e2, write.Request{TenantID: tenant, ProjectID: "p1", Level: graph.LevelGlobal, Kind: graph.Decision,
		Title: "Global write while down", GovernanceToken: tok})
	if g.Status != write.PendingRetry {
		t.Fatalf("global write while down: %+v", g)
	}
	p, _ := e2.PendingWrites(ctxT(t))
	if len(p) != 1 || !p[0].GovernanceOK || p[0].Request.GovernanceToken != "" {
		t.Fatalf("pending global write = %+v, want governance checked and no token kept", p)
	}
	tokens.Revoke(tok) // accepted before revocation: still saved
	flaky.SetDown(false)
	startWrite(t, e2)
	if st := waitSettled(t, ch2); st.Receipt.Status != write.Saved || st.Receipt.Scope != graph.GlobalScope() {
		t.Errorf("global settlement = %+v, want saved", st.Receipt)
	}
	// A forged token is refused even while the graph is down.
	flaky.SetDown(true)
	f := save(t, e2, write.Request{TenantID: tenant, ProjectID: "p1", Level: graph.LevelGlobal, Kind: graph.Decision,
		Title: "Forged global write", GovernanceToken: "forged"})
	if f.Status != write.Failed {
		t.Errorf("forged token while down: %+v, want failed", f)
	}
	flaky.SetDown(false)
}

func testWritePendingExhausted(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	flaky := NewFlaky(s)
	flaky.SetDown(true)
	var ch chan write.Settlement
	e := newWrite(t, flaky, nil, func(c *write.Config) {
		c.RetryBackoff, c.RetryAttempts = time.Millisecond, 4
		ch = settled(c)
	})
	startWrite(t, e)
	rc := save(t, e, write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: "Never reaches the graph"})
	if rc.Status != write.PendingRetry {
		t.Fatalf("Save: %+v", rc)
	}
	st := waitSettled(t, ch)
	if st.Receipt.Status != write.Failed || st.Attempts != 4 || !strings.Contains(st.Receipt.Detail, "retry exhausted after 4 attempts") {
		t.Errorf("settlement = %+v attempts %d, want failed: retry exhausted after 4 attempts", st.Receipt, st.Attempts)
	}
	if p, _ := e.PendingWrites(ctxT(t)); len(p) != 0 {
		t.Errorf("pending after exhaustion = %d, want 0", len(p))
	}
}

func testWritePendingRestart(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	flaky := NewFlaky(s)
	queue := write.NewMemoryQueue()
	first := newWrite(t, flaky, nil, func(c *write.Config) { c.Queue = queue })
	flaky.SetDown(true)
	rc := save(t, first, write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: "Queued before a restart"})
	if rc.Status != write.PendingRetry {
		t.Fatalf("Save: %+v", rc)
	}
	flaky.SetDown(false)
	// Another engine on the same (durable) queue picks the write up at Start.
	var ch chan write.Settlement
	second := newWrite(t, flaky, nil, func(c *write.Config) { c.Queue, c.RetryBackoff = queue, time.Millisecond; ch = settled(c) })
	startWrite(t, second)
	if st := waitSettled(t, ch); st.Receipt.Status != write.Saved || st.Receipt.NodeID != rc.NodeID {
		t.Errorf("settlement after restart = %+v, want saved %s", st.Receipt, rc.NodeID)
	}
}

func newHygiene(t *testing.T, s hygiene.Store, now time.Time) *hygiene.Engine {
	t.Helper()
	e, err := hygiene.New(hygiene.Config{Store: s, Now: func() time.Time { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func testHygiene(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "api")
	now := base
	sc, fsc := graph.ProjectScope("p1"), graph.FocusScope("p1", "api")
	// Duplicates: identical token sets across two scopes, 10/11 > 0.9, and
	// 9/10 = 0.9 which is not above the threshold.
	ten := words(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	d1 := newNode(graph.Decision, sc, ten, "r", now)
	d2 := newNode(graph.Decision, fsc, strings.ToUpper(ten)+"!", "other", now)
	d3 := newNode(graph.Decision, fsc, ten+" "+nato[10], "r", now)
	p1 := newNode(graph.Pattern, sc, words(11, 12, 13, 14, 15, 16, 17, 18, 19), "r", now)
	p2 := newNode(graph.Pattern, fsc, words(11, 12, 13, 14, 15, 16, 17, 18, 19, 10), "r", now)
	crossKind := newNode(graph.Pattern, fsc, ten, "same title, a pattern", now)
	oldDec := newNode(graph.Decision, sc, "An old decision", "r", now.AddDate(0, 0, -181))
	stale := newNode(graph.Pattern, sc, "A stale pattern", "r", now.AddDate(0, 0, -200))
	stale.LastValidatedAt = now.AddDate(0, 0, -91)
	e1 := newNode(graph.EntityFact, sc, "Kafka", "three brokers", now.AddDate(0, 0, -2))
	e2 := newNode(graph.EntityFact, fsc, "kafka", "topic per tenant", now.AddDate(0, 0, -1))
	e3 := newNode(graph.EntityFact, sc, "KAFKA", "retention 7 days", now)
	unres := newNode(graph.Decision, sc, "Half-saved decision", "r", now)
	unres.Status = graph.StatusFailed
	put(t, s, tenant, d1, d2, d3, p1, p2, crossKind, oldDec, stale, e1, e2, e3, unres)

	rep, err := newHygiene(t, s, now).Run(ctxT(t), tenant, graph.Area{ProjectID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	pair := func(a, b string) [2]string { return [2]string{min(a, b), max(a, b)} }
	var gotPairs [][2]string
	for _, d := range rep.Duplicates {
		gotPairs = append(gotPairs, [2]string{d.A, d.B})
	}
	// d1 and d2 form a group of identical token sets; d3 pairs with the
	// group's representative, whichever of the two the store listed first.
	if len(gotPairs) != 2 || !slices.Contains(gotPairs, pair(d1.ID, d2.ID)) ||
		!slices.Contains(gotPairs, pair(d1.ID, d3.ID)) && !slices.Contains(gotPairs, pair(d2.ID, d3.ID)) {
		t.Errorf("duplicates = %v, want %v and a pair of %s with one of them; not %s-%s (exactly 0.9) nor the pattern %s",
			gotPairs, pair(d1.ID, d2.ID), d3.ID, p1.ID, p2.ID, crossKind.ID)
	}
	for _, d := range rep.Duplicates {
		if d.Kind != graph.Decision || d.Score <= 0.9 {
			t.Errorf("duplicate %+v: want a decision pair scored above 0.9", d)
		}
	}
	if !slices.Equal(rep.Outdated, []string{oldDec.ID}) {
		t.Errorf("outdated = %v, want [%s]", rep.Outdated, oldDec.ID)
	}
	if !slices.Equal(rep.ObsoletePatterns, []string{stale.ID}) {
		t.Errorf("obsolete patterns = %v, want [%s]", rep.ObsoletePatterns, stale.ID)
	}
	if len(rep.EntityMerges) != 1 || rep.EntityMerges[0].Into != e1.ID || !slices.Equal(rep.EntityMerges[0].From, []string{e2.ID, e3.ID}) {
		t.Errorf("entity merges = %+v, want %s <- [%s %s]", rep.EntityMerges, e1.ID, e2.ID, e3.ID)
	}
	if !slices.Equal(rep.Unresolved, []string{unres.ID}) {
		t.Errorf("unresolved = %v, want [%s]", rep.Unresolved, unres.ID)
	}
	if !rep.Recorded || !rep.GeneratedAt.Equal(now) {
		t.Errorf("report recorded %v at %v", rep.Recorded, rep.GeneratedAt)
	}
	info := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) { return tx.Scope(ctx, "p1", "") })
	if !info.LastHygieneAt.Equal(now) {
		t.Errorf("last_hygiene_at = %v, want %v", info.LastHygieneAt, now)
	}
	// Global area.
	put(t, s, tenant, newNode(graph.Decision, graph.GlobalScope(), "Global old", "r", now.AddDate(-1, 0, 0)))
	grep, err := newHygiene(t, s, now).Run(ctxT(t), tenant, graph.GlobalArea())
	if err != nil || len(grep.Outdated) != 1 {
		t.Errorf("global hygiene = %+v, %v; want one outdated decision", grep, err)
	}
	if _, err := newHygiene(t, s, now).Run(ctxT(t), tenant, graph.Area{ProjectID: "ghost"}); !errors.Is(err, graph.ErrScopeNotFound) {
		t.Errorf("hygiene of a missing project: err = %v, want ErrScopeNotFound", err)
	}
	// Each list is capped, the rest counted, so a large graph's report
	// stays a size its reader takes.
	put(t, s, tenant, newNode(graph.Decision, sc, "Another old decision", "r", now.AddDate(0, 0, -300)),
		newNode(graph.Decision, sc, "A third old decision", "r", now.AddDate(0, 0, -400)))
	small, err := hygiene.New(hygiene.Config{Store: s, Now: func() time.Time { return now }, Logger: quiet, MaxListed: 1})
	if err != nil {
		t.Fatal(err)
	}
	capped, err := small.Run(ctxT(t), tenant, graph.Area{ProjectID: "p1"})
	if err != nil || len(capped.Outdated) != 1 || capped.Omitted["outdated"] != 2 || len(capped.ObsoletePatterns) != 1 ||
		capped.Omitted["obsolete_patterns"] != 0 {
		t.Errorf("capped at one: outdated %v, omitted %v (%v); want one listed and two counted", capped.Outdated, capped.Omitted, err)
	}
	// A merge's ids too: Kafka's three facts merge two into one.
	if len(capped.EntityMerges) != 1 || len(capped.EntityMerges[0].From) != 1 || capped.Omitted["entity_merge_ids"] != 1 {
		t.Errorf("capped at one: merges %+v, omitted %v; want one id of the merge listed and one counted", capped.EntityMerges, capped.Omitted)
	}
}

func testHygieneReadOnly(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	a := newNode(graph.Decision, sc, words(0, 1, 2), "r", base.AddDate(-1, 0, 0))
	b := newNode(graph.Decision, sc, words(0, 1, 2)+".", "other", base.AddDate(-1, 0, 0))
	f1 := newNode(graph.EntityFact, sc, "Redis", "a", base)
	f2 := newNode(graph.EntityFact, sc, "redis", "b", base)
	put(t, s, tenant, a, b, f1, f2)
	area := graph.Area{ProjectID: "p1"}
	snapshot := func() ([]graph.Node, []graph.Edge) {
		return nodesOf(t, s, tenant, area), read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Edge, error) {
			es, err := tx.Edges(ctx, area, graph.Supersedes)
			if err != nil {
				return nil, err
			}
			cs, err := tx.Edges(ctx, area, graph.ConflictsWith)
			return append(es, cs...), err
		})
	}
	beforeN, beforeE := snapshot()
	var updates int64
	if h.ReadUpdates != nil {
		updates = h.ReadUpdates()
	}
	// A failed read produces no report and no mark.
	flaky := NewFlaky(s)
	flaky.SetDown(true)
	if _, err := newHygiene(t, flaky, base).Run(ctxT(t), tenant, area); !errors.Is(err, graph.ErrUnavailable) {
		t.Fatalf("hygiene on an unavailable graph: err = %v", err)
	}
	info := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.ScopeInfo, error) { return tx.Scope(ctx, "p1", "") })
	if !info.LastHygieneAt.IsZero() {
		t.Fatalf("last_hygiene_at set by a failed run: %v", info.LastHygieneAt)
	}
	rep, err := newHygiene(t, s, base).Run(ctxT(t), tenant, area)
	if err != nil || rep.Candidates() == 0 {
		t.Fatalf("hygiene: %+v, %v; want candidates", rep, err)
	}
	afterN, afterE := snapshot()
	if len(afterN) != len(beforeN) || len(afterE) != len(beforeE) {
		t.Fatalf("hygiene changed the graph: %d->%d nodes, %d->%d edges", len(beforeN), len(afterN), len(beforeE), len(afterE))
	}
	for i := range afterN {
		if !sameNode(afterN[i], beforeN[i]) {
			t.Errorf("hygiene changed node %s: %+v -> %+v", afterN[i].ID, beforeN[i], afterN[i])
		}
	}
	if h.ReadUpdates != nil {
		if d := h.ReadUpdates() - updates; d != 0 {
			t.Errorf("read transactions reported %d updates, want 0", d)
		}
	}
}

// A near-duplicate older than hundreds of decisions that share only
// stopwords with the new text ("for the") is still found: the embedded
// store ranked the newest 500 full-text matches of any word, stopwords
// included, and missed it (found by helper-53).
func testDedupOldNearDuplicate(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	old := newNode(graph.Decision, sc, "Use Redis for the session cache", "", base)
	put(t, s, tenant, old)
	var filler []graph.Node
	for i := range 600 {
		filler = append(filler, newNode(graph.Decision, sc, fmt.Sprintf("Adopt tool%d for the build", i), "", base.Add(time.Duration(i+1)*time.Second)))
	}
	put(t, s, tenant, filler...)
	n := decision(sc, "Use Redis for the session cache layer", "")
	r := runDedup(t, s, tenant, newDedup(t), n, dedup.Options{})
	if r.Outcome != dedup.OutcomeSupersede || r.Match == nil || r.Match.ID != old.ID {
		t.Fatalf("outcome %s, match %+v; want supersede of %s (title Jaccard 4/5 = 0.8)", r.Outcome, r.Match, old.ID)
	}
}

// The revert: A is superseded by B, then A is written again. Dedup
// reinstates A, which supersedes B, instead of skipping A's content as
// stored while B stays current; written a third time, A is a live
// duplicate. Through a chain (A <- B <- C) A replaces the head, C; a
// pattern, which only the port can supersede, follows the same rule.
func testDedupReinstates(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1", "f1")
	d := newDedup(t)
	tests := []struct {
		name  string
		scope graph.Scope
		chain []string // titles: the first is A, each next supersedes the one before
	}{
		{"superseded once", graph.ProjectScope("p1"), []string{"Cache user sessions in Redis", "Cache user sessions in Redis with a TTL"}},
		{"a chain", graph.FocusScope("p1", "f1"), []string{words(0, 1, 2, 3, 4, 5, 6, 7), words(0, 1, 2, 3, 4, 5, 6, 7, 8), words(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var chain []graph.Node
			for i, title := range tt.chain {
				n := decision(tt.scope, title, "rationale "+title)
				r := runDedup(t, s, tenant, d, n, dedup.Options{})
				if want := []dedup.Outcome{dedup.OutcomeNew, dedup.OutcomeSupersede}[min(i, 1)]; r.Outcome != want || r.NodeID != n.ID {
					t.Fatalf("setup %q: %+v, want %s of %s", title, r, want, n.ID)
				}
				chain = append(chain, n)
			}
			a, head := chain[0], chain[len(chain)-1]
			again := decision(tt.scope, a.Title, a.Rationale)
			r := runDedup(t, s, tenant, d, again, dedup.Options{})
			wantScore := dedup.Jaccard(dedup.TitleTokens(a.Title), dedup.TitleTokens(head.Title))
			if r.Outcome != dedup.OutcomeSupersede || r.NodeID != a.ID || r.Match == nil || r.Match.ID != head.ID ||
				r.Match.Title != head.Title || !approx(r.Match.Score, wantScore) {
				t.Fatalf("A written again: %+v (match %+v), want supersede by the reinstated %s of the head %s, score %.2f",
					r, r.Match, a.ID, head.ID, wantScore)
			}
			if !strings.Contains(r.Reason, "reinstated") || !strings.Contains(r.Reason, head.ID) || !strings.Contains(r.Reason, chain[1].ID) {
				t.Errorf("reason = %q, want it to say %s was reinstated over %s (superseded by %s)", r.Reason, a.ID, head.ID, chain[1].ID)
			}
			if nodes := nodesOf(t, s, tenant, tt.scope.Area()); !slices.Contains(ids(nodes), a.ID) || slices.Contains(ids(nodes), again.ID) {
				t.Errorf("nodes %v: want %s reinstated and no node %s written", ids(nodes), a.ID, again.ID)
			}
			if got := liveIDs(t, s, tenant, tt.scope); !slices.Equal(got, []string{a.ID}) {
				t.Errorf("Live = %v, want only %s", got, a.ID)
			}
			third := runDedup(t, s, tenant, d, decision(tt.scope, a.Title, a.Rationale), dedup.Options{})
			if third.Outcome != dedup.OutcomeDuplicateSkip || third.NodeID != a.ID {
				t.Errorf("A written a third time: %+v, want duplicate_skip of %s", third, a.ID)
			}
			checkSupersession(t, s, tenant, tt.scope.Area())
		})
	}
	t.Run("pattern", func(t *testing.T) {
		sc := graph.ProjectScope("p1")
		p1 := newNode(graph.Pattern, sc, "Outbox for events", "same transaction", base)
		p2 := newNode(graph.Pattern, sc, "Outbox for events and commands", "same transaction", base.Add(time.Hour))
		put(t, s, tenant, p1, p2)
		supersede(t, s, tenant, sc, p2.ID, p1.ID)
		again := newNode(graph.Pattern, sc, p1.Title, p1.Rationale, base.Add(2*time.Hour))
		if r := runDedup(t, s, tenant, d, again, dedup.Options{}); r.Outcome != dedup.OutcomeSupersede || r.NodeID != p1.ID || r.Match == nil || r.Match.ID != p2.ID {
			t.Errorf("superseded pattern written again: %+v, want supersede by the reinstated %s of %s", r, p1.ID, p2.ID)
		}
	})
}

// A write retried after its first attempt committed, and after another
// write superseded that node, is not a revert: the retry finds its own
// node and is a duplicate, and the newer node stays.
func testDedupRetryNotReinstated(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	d := newDedup(t)
	n := decision(sc, "Cache user sessions in Redis", "fast")
	runDedup(t, s, tenant, d, n, dedup.Options{})
	newer := decision(sc, "Cache user sessions in Redis with a TTL", "bounded")
	if r := runDedup(t, s, tenant, d, newer, dedup.Options{}); r.Outcome != dedup.OutcomeSupersede {
		t.Fatalf("setup: %+v, want supersede", r)
	}
	r := runDedup(t, s, tenant, d, n, dedup.Options{}) // the same node id: a retry
	if r.Outcome != dedup.OutcomeDuplicateSkip || r.NodeID != n.ID {
		t.Errorf("retry of a superseded write: %+v, want duplicate_skip of its own %s", r, n.ID)
	}
	if got := liveIDs(t, s, tenant, sc); !slices.Equal(got, []string{newer.ID}) {
		t.Errorf("Live = %v, want the newer %s to stay", got, newer.ID)
	}
}

// A decision written again after it was superseded is the current one from
// that write on: the reinstated node keeps its creation time, and the
// write's time becomes its LastValidatedAt, by which retrieval orders each
// level. In a busy scope, ordered by creation, it fell behind the newer
// decisions it is newer than and was left out of the context; and a
// reinstated pattern, confirmed by the write, was reported obsolete.
func testReinstatedConfirmed(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	now := base
	e := newWrite(t, s, nil, func(c *write.Config) { c.Now = func() time.Time { return now } })
	req := func(kind graph.Kind, title string) write.Request {
		return write.Request{TenantID: tenant, ProjectID: "p1", Kind: kind, Title: title, Rationale: "because"}
	}
	a := save(t, e, req(graph.Decision, "Cache user sessions in Redis"))
	now = base.Add(time.Hour)
	if b := save(t, e, req(graph.Decision, "Cache user sessions in Redis with a TTL")); b.Outcome != dedup.OutcomeSupersede {
		t.Fatalf("setup: %+v, want the TTL decision to supersede %s", b, a.NodeID)
	}
	var newer []string
	for i := range 12 {
		now = base.Add(2*time.Hour + time.Duration(i)*time.Minute)
		rc := save(t, e, req(graph.Decision, words(i)))
		if rc.Outcome != dedup.OutcomeNew {
			t.Fatalf("setup %q: %+v, want new", words(i), rc)
		}
		newer = append([]string{rc.NodeID}, newer...)
	}
	reverted := base.Add(3 * time.Hour)
	now = reverted
	if r := save(t, e, req(graph.Decision, "Cache user sessions in Redis")); r.Outcome != dedup.OutcomeSupersede || r.NodeID != a.NodeID {
		t.Fatalf("revert: %+v, want supersede by the reinstated %s", r, a.NodeID)
	}
	got := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) (graph.Node, error) { return tx.Node(ctx, a.NodeID) })
	if !got.Live() || !got.CreatedAt.Equal(base) || !got.LastValidatedAt.Equal(reverted) {
		t.Errorf("reinstated node = %+v, want live, created at %v, validated at the revert %v", got, base, reverted)
	}
	b := retrieve(t, newRetrieval(t, s, reverted, nil), tenant, "p1", "")
	if want := append([]string{a.NodeID}, newer[:9]...); !slices.Equal(ids(b.Nodes), want) {
		t.Errorf("Retrieve(p1) = %v,\nwant the reinstated %s first, then the 9 newest others %v", ids(b.Nodes), a.NodeID, want)
	}

	// A pattern confirmed again by its revert is not obsolete.
	now = base
	p := save(t, e, req(graph.Pattern, "Outbox for events"))
	p2 := newNode(graph.Pattern, graph.ProjectScope("p1"), "Outbox for events and commands", "because", base.Add(time.Hour))
	put(t, s, tenant, p2)
	supersede(t, s, tenant, graph.ProjectScope("p1"), p2.ID, p.NodeID)
	now = base.AddDate(0, 0, 100)
	if r := save(t, e, req(graph.Pattern, "Outbox for events")); r.Outcome != dedup.OutcomeSupersede || r.NodeID != p.NodeID {
		t.Fatalf("pattern revert: %+v, want supersede by the reinstated %s", r, p.NodeID)
	}
	rep, err := newHygiene(t, s, base.AddDate(0, 0, 120)).Run(ctxT(t), tenant, graph.Area{ProjectID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rep.ObsoletePatterns, p.NodeID) {
		t.Errorf("obsolete patterns = %v: %s was confirmed 20 days before the report", rep.ObsoletePatterns, p.NodeID)
	}
}
