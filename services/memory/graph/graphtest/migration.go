package graphtest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// MigrationHarness lets RunSignMigration stand in for a database that an
// older version wrote, before the signs that end a name counted in content
// hashes and entity names ("C++" was "C").
type MigrationHarness struct {
	// Open returns a store and a fresh, empty tenant, as Harness.Open does.
	Open func(t *testing.T) (graph.Store, string)
	// Age makes what the suite wrote into tenant look as an older version
	// left it: the normalized entity name that the store keeps for each node
	// of entityKeys (graph.NormalizeEntity at the time of writing) is
	// overwritten with the one given, as that version computed it, and
	// whatever the store keeps to know which nodes it has checked since is
	// reset for the tenant.
	Age func(t *testing.T, s graph.Store, tenant string, entityKeys map[string]string)
	// Migrate runs what opening the store runs, and returns the store to
	// use after it: the same one, or one opened anew on the same database.
	Migrate func(t *testing.T, s graph.Store) graph.Store
	// Alone says that nothing else migrates the database while the suite
	// runs (a file of the test's own, not a shared server), so the suite can
	// check that the old state it wrote has the old defects before it
	// migrates.
	Alone bool
}

// blankSigns turns the signs (graph.SignRunes) into spaces. graph.Words,
// which an older version normalized content and entity names with, took
// every sign for a separator, so what it made of a text is what the current
// form makes of the text without its signs.
var blankSigns = func() *strings.Replacer {
	var pairs []string
	for _, r := range graph.SignRunes {
		pairs = append(pairs, string(r), " ")
	}
	return strings.NewReplacer(pairs...)
}()

// legacyHash is the content hash an older version stored for n.
func legacyHash(n graph.Node) string {
	return dedup.ContentHash(n.Kind, blankSigns.Replace(n.EntityName), blankSigns.Replace(n.Title), blankSigns.Replace(n.Rationale))
}

// RunSignMigration writes nodes as an older version stored them (content
// hashes and entity keys without the signs), migrates the store, and checks
// that the nodes with signs have their current hash and key, that the
// others are untouched, that content differing by a sign is no longer
// taken for the same, and that migrating again changes nothing.
func RunSignMigration(t *testing.T, h MigrationHarness) {
	s, tenant := h.Open(t)
	ensureProject(t, s, tenant, "p1")
	sc := graph.ProjectScope("p1")
	area := sc.Area()
	// The same rationale as cpp: with the old hash, "Use C for the engine"
	// was the same content.
	const why = "Speed and control over memory."
	cpp := newNode(graph.Decision, sc, "Use C++ for the engine", why, base)
	csharp := newNode(graph.Pattern, sc, "Write the build tools in C#", "One language for every tool.", base.Add(1))
	// Full-width signs are signs (NFKC), and found as such.
	fsharp := newNode(graph.Decision, sc, "Price the options in Ｆ＃", "Types for units.", base.Add(7))
	cppFact := newNode(graph.EntityFact, sc, "C++", "compiles slowly", base.Add(2))
	// Another fact, about C: the same one could not be stored next to
	// cppFact, whose old hash was its hash. With the old entity keys, the two
	// were facts about one entity, to merge.
	cFact := newNode(graph.EntityFact, sc, "C", "is portable", base.Add(3))
	joined := newNode(graph.Decision, sc, "Keep sessions in Redis+Postgres", "A '+' between words joins them.", base.Add(4))
	plain := newNode(graph.Decision, sc, "Use PostgreSQL for the ledger", "ACID.", base.Add(5))
	changed := []graph.Node{cpp, csharp, cppFact, fsharp}
	for _, n := range changed {
		if legacyHash(n) == n.ContentHash {
			t.Errorf("%s %q: the old and the current content hash are the same; the test needs content whose hash the signs change", n.Kind, n.Title)
		}
	}
	for _, n := range []graph.Node{cFact, joined, plain} {
		if legacyHash(n) != n.ContentHash {
			t.Fatalf("%s %q: the old and the current content hash differ", n.Kind, n.Title)
		}
	}
	current := map[string]string{} // id -> current content hash
	for _, n := range []graph.Node{cpp, csharp, cppFact, cFact, joined, plain, fsharp} {
		current[n.ID] = n.ContentHash
		n.ContentHash = legacyHash(n)
		put(t, s, tenant, n)
	}
	h.Age(t, s, tenant, map[string]string{cppFact.ID: graph.NormalizeEntity(blankSigns.Replace(cppFact.EntityName))})
	before := nodesOf(t, s, tenant, area)
	d := newDedup(t)
	if h.Alone {
		// The old state: the facts about C++ and C are facts about one
		// entity, and "Use C for the engine" is cpp's content.
		groups := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.EntityGroup, error) {
			return tx.EntityGroups(ctx, area)
		})
		if len(groups) != 1 || !slices.Equal(groups[0].IDs, []string{cppFact.ID, cFact.ID}) {
			t.Errorf("EntityGroups of the old state = %+v, want the facts about C++ and C as one entity", groups)
		}
		if r := runDedup(t, s, tenant, d, decision(sc, "Use C for the engine", why), dedup.Options{}); r.Outcome != dedup.OutcomeDuplicateSkip || r.NodeID != cpp.ID {
			t.Errorf("\"Use C for the engine\" in the old state: %+v, want duplicate_skip of %s", r, cpp.ID)
		}
	}

	s = h.Migrate(t, s)
	migrated := nodesOf(t, s, tenant, area)
	if len(migrated) != len(before) {
		t.Fatalf("%d nodes after the migration, %d before", len(migrated), len(before))
	}
	for i, n := range migrated {
		if n.ContentHash != current[n.ID] {
			t.Errorf("%s %q: content hash %s after the migration, want %s (dedup.ContentHash)", n.Kind, n.Title, n.ContentHash, current[n.ID])
		}
		n.ContentHash = before[i].ContentHash
		if !sameNode(n, before[i]) {
			t.Errorf("the migration changed more than the content hash: %+v, was %+v", n, before[i])
		}
	}
	for _, n := range changed {
		got, found := byContentHash(t, s, tenant, sc, n.Kind, current[n.ID])
		if !found || got.ID != n.ID {
			t.Errorf("ByContentHash(%s, current hash of %q) = %q, %v; want %s", n.Kind, n.Title, got.ID, found, n.ID)
		}
		if got, found := byContentHash(t, s, tenant, sc, n.Kind, legacyHash(n)); found {
			t.Errorf("ByContentHash(%s, old hash of %q) still finds %s %q", n.Kind, n.Title, got.ID, got.Title)
		}
	}
	groups := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.EntityGroup, error) {
		return tx.EntityGroups(ctx, area)
	})
	if len(groups) != 0 {
		t.Errorf("EntityGroups after the migration = %+v; facts about C++ and C are about two entities", groups)
	}

	// Migrating again finds nothing to do, and so does checking every node
	// again: the values it would write are those it wrote.
	for _, again := range []struct {
		name  string
		reset bool
	}{{"a second migration", false}, {"a migration that checks every node again", true}} {
		if again.reset {
			h.Age(t, s, tenant, nil)
		}
		s = h.Migrate(t, s)
		if got := nodesOf(t, s, tenant, area); !slices.EqualFunc(got, migrated, sameNode) {
			t.Errorf("%s changed the nodes:\n%+v\nwas\n%+v", again.name, got, migrated)
		}
		if got := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.EntityGroup, error) {
			return tx.EntityGroups(ctx, area)
		}); len(got) != 0 {
			t.Errorf("EntityGroups after %s = %+v, want none", again.name, got)
		}
	}

	// Content that differs from a migrated node by a sign is other content.
	c := decision(sc, "Use C for the engine", why)
	if r := runDedup(t, s, tenant, d, c, dedup.Options{}); r.Outcome != dedup.OutcomeManualReview || r.Match == nil || r.Match.ID != cpp.ID || r.Match.Score != 0.5 {
		t.Errorf("%q after the migrated %q: %+v, want manual_review of %s at 0.5", c.Title, cpp.Title, r, cpp.ID)
	}
	again := decision(sc, cpp.Title, why)
	if r := runDedup(t, s, tenant, d, again, dedup.Options{}); r.Outcome != dedup.OutcomeDuplicateSkip || r.NodeID != cpp.ID {
		t.Errorf("%q again after the migration: %+v, want duplicate_skip of %s", cpp.Title, r, cpp.ID)
	}
	pat := newNode(graph.Pattern, sc, "Write the build tools in C", csharp.Rationale, base.Add(6))
	pat.ContentHash = ""
	if r := runDedup(t, s, tenant, d, pat, dedup.Options{}); r.Outcome != dedup.OutcomeNew {
		t.Errorf("pattern %q after the migrated %q: %+v, want new", pat.Title, csharp.Title, r)
	}
}

func byContentHash(t *testing.T, s graph.Store, tenant string, sc graph.Scope, kind graph.Kind, hash string) (graph.Node, bool) {
	t.Helper()
	var (
		n     graph.Node
		found bool
	)
	err := s.Write(ctxT(t), tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		var err error
		n, found, err = tx.ByContentHash(ctx, kind, hash)
		return err
	})
	if err != nil {
		t.Fatalf("ByContentHash(%s, %s): %v", kind, hash, err)
	}
	return n, found
}

// SameContentPair is two nodes of one scope whose content is the same once
// signs count: they cannot come from dedup.ContentHash (the old hash made
// them one), so a store's migration, meeting them, must refuse to go on.
type SameContentPair struct {
	Name string
	A, B graph.Node
}

// SameContentPairs are the pairs each store's migration test writes, in
// scope sc, created at.
func SameContentPairs(sc graph.Scope, at time.Time) []SameContentPair {
	return []SameContentPair{
		{"both with signs",
			graph.Node{ID: "a", Kind: graph.Decision, Scope: sc, Title: "Use C++ for the engine", ContentHash: "h1", CreatedAt: at},
			graph.Node{ID: "b", Kind: graph.Decision, Scope: sc, Title: "use c++ for the engine!", ContentHash: "h2", CreatedAt: at}},
		{"one without signs holding the new hash",
			graph.Node{ID: "a", Kind: graph.Decision, Scope: sc, Title: "Use C++ for the engine", ContentHash: "h1", CreatedAt: at},
			graph.Node{ID: "b", Kind: graph.Decision, Scope: sc, Title: "Use C for the engine",
				ContentHash: dedup.ContentHash(graph.Decision, "", "Use C++ for the engine", ""), CreatedAt: at}},
	}
}
