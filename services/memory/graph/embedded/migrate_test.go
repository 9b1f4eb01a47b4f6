package embedded_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/embedded"
)

// A file written before reinstatement has no mem_edges.reinstated column:
// Open adds it, the relationships already there read as not reinstated, and
// Reinstate works on the file.
func TestOpenAddsTheReinstatedColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	const tenant = "t1"
	sc := graph.ProjectScope("p1")
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	a := graph.Node{ID: "a", Kind: graph.Decision, Scope: sc, Title: "Cache user sessions in Redis", ContentHash: "ha", CreatedAt: at}
	b := graph.Node{ID: "b", Kind: graph.Decision, Scope: sc, Title: "Cache user sessions in Redis with a TTL", ContentHash: "hb", CreatedAt: at}

	s := openAt(t, path)
	if err := s.EnsureProject(ctx, tenant, "p1"); err != nil {
		t.Fatal(err)
	}
	err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		for _, n := range []graph.Node{a, b} {
			if err := tx.Create(ctx, n); err != nil {
				return err
			}
		}
		return tx.Supersede(ctx, b.ID, a.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dropColumn(t, path, "mem_edges", "reinstated")

	s = openAt(t, path)
	if got, want := edges(t, s, tenant), []graph.Edge{{Rel: graph.Supersedes, From: b.ID, To: a.ID}}; !slices.Equal(got, want) {
		t.Errorf("edges of the old file = %+v, want %+v", got, want)
	}
	err = s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
		_, err := tx.Reinstate(ctx, a.ID)
		return err
	})
	if err != nil {
		t.Fatalf("Reinstate on the migrated file: %v", err)
	}
	if got, want := edges(t, s, tenant), []graph.Edge{{Rel: graph.Supersedes, From: a.ID, To: b.ID, Reinstated: true}}; !slices.Equal(got, want) {
		t.Errorf("edges after Reinstate = %+v, want %+v", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openAt(t, path) // the column exists now: nothing to add
}

func openAt(t *testing.T, path string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(context.Background(), embedded.Config{Path: path})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// dropColumn takes a column away from a closed store's file, as the schema
// was before it had it.
func dropColumn(t *testing.T, path, table, column string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`ALTER TABLE ` + table + ` DROP COLUMN ` + column); err != nil {
		t.Fatalf("drop %s.%s: %v", table, column, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%s.%s still there (%d, %v)", table, column, n, err)
	}
}

func edges(t *testing.T, s *embedded.Store, tenant string) []graph.Edge {
	t.Helper()
	var out []graph.Edge
	err := s.Read(context.Background(), tenant, func(ctx context.Context, tx graph.ReadTx) error {
		var err error
		out, err = tx.Edges(ctx, graph.Area{ProjectID: "p1"}, graph.Supersedes)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
