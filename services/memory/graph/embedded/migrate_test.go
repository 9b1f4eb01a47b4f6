package embedded_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/embedded"
	"github.com/praetorhq/praetor/services/memory/graph/graphtest"
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
		_, err := tx.Reinstate(ctx, a.ID, at.Add(time.Hour))
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

// A file written before the signs that end a name counted ("C++" was "C"
// in content hashes and entity keys): Open recomputes the hashes and keys
// of the nodes with signs, once.
func TestOpenRecomputesContentHashes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "memory.db")
	var logs []logRecord
	graphtest.RunSignMigration(t, graphtest.MigrationHarness{
		Open: func(t *testing.T) (graph.Store, string) { return openAt(t, path), "t1" },
		Age: func(t *testing.T, _ graph.Store, tenant string, entityKeys map[string]string) {
			t.Helper()
			age(t, path, tenant, entityKeys)
		},
		Migrate: func(t *testing.T, s graph.Store) graph.Store {
			t.Helper()
			if err := s.(*embedded.Store).Close(); err != nil {
				t.Fatal(err)
			}
			reopened, err := embedded.Open(context.Background(), embedded.Config{Path: path, Logger: slog.New(&recorder{records: &logs})})
			if err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			t.Cleanup(func() { _ = reopened.Close() })
			return reopened
		},
		Alone: true,
	})
	// The first open changed the decisions, the pattern and the fact with
	// signs; the others had nothing to do.
	want := []logRecord{{msg: "embedded graph: content hashes recomputed", nodes: 4}}
	if !slices.Equal(logs, want) {
		t.Errorf("logged %+v, want %+v", logs, want)
	}
}

// Two nodes of a scope whose content is the same once signs count cannot
// come from ContentHash (the old hash made them one); written by something
// else, they stop Open with an error that names both, and the file is left
// as it was.
func TestOpenRefusesSameContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "t1"
	sc := graph.ProjectScope("p1")
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range graphtest.SameContentPairs(sc, at) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "memory.db")
			s := openAt(t, path)
			if err := s.EnsureProject(ctx, tenant, "p1"); err != nil {
				t.Fatal(err)
			}
			err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
				return errors.Join(tx.Create(ctx, tt.A), tx.Create(ctx, tt.B))
			})
			if err != nil {
				t.Fatal(err)
			}
			age(t, path, tenant, nil)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				s, err := embedded.Open(ctx, embedded.Config{Path: path})
				if err == nil {
					_ = s.Close()
					t.Fatal("Open succeeded with two nodes of the same content")
				}
				if !errors.Is(err, graph.ErrDuplicateContent) || !strings.Contains(err.Error(), " a and b ") && !strings.Contains(err.Error(), " b and a ") {
					t.Errorf("Open: err = %v, want ErrDuplicateContent naming a and b", err)
				}
			}
			var hashes []string
			rows, err := rawDB(t, path).Query(`SELECT content_hash FROM mem_nodes ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var h string
				if err := rows.Scan(&h); err != nil {
					t.Fatal(err)
				}
				hashes = append(hashes, h)
			}
			if want := []string{tt.A.ContentHash, tt.B.ContentHash}; !slices.Equal(hashes, want) {
				t.Errorf("content hashes after the failed opens = %q, want them unchanged, %q", hashes, want)
			}
		})
	}
}

// age makes the nodes of a store's file look as an older version left them
// (see graphtest.MigrationHarness.Age): it sets the entity keys given and
// forgets which nodes Open has checked.
func age(t *testing.T, path, tenant string, entityKeys map[string]string) {
	t.Helper()
	db := rawDB(t, path)
	for id, key := range entityKeys {
		res, err := db.Exec(`UPDATE mem_nodes SET entity_key = ? WHERE tenant_id = ? AND id = ?`, key, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("entity key of %s: %d rows updated", id, n)
		}
	}
	if _, err := db.Exec(`DELETE FROM mem_meta WHERE name = 'rehashed_seq'`); err != nil {
		t.Fatal(err)
	}
}

// rawDB opens the file of a store with plain SQL, for writes the store's
// API does not make.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

type logRecord struct {
	msg   string
	nodes int64
}

// recorder is a slog.Handler that keeps the message and "nodes" attribute
// of every record at Info or above.
type recorder struct{ records *[]logRecord }

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler           { return r }
func (r *recorder) WithGroup(string) slog.Handler                { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{msg: rec.Message}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "nodes" {
			lr.nodes = a.Value.Int64()
		}
		return true
	})
	*r.records = append(*r.records, lr)
	return nil
}

// Open checks the nodes added since it last ran, also when an older
// version added them: written with an old content hash after a migration,
// a node has its current hash after the next Open.
func TestOpenChecksNodesAddedSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	const tenant = "t1"
	sc := graph.ProjectScope("p1")
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := openAt(t, path)
	if err := s.EnsureProject(ctx, tenant, "p1"); err != nil {
		t.Fatal(err)
	}
	const why = "Speed."
	// An older version stores the content hash of "Use C for the tools" for
	// a node about C++.
	old := graph.Node{ID: "old", Kind: graph.Decision, Scope: sc, Title: "Use C++ for the tools", Rationale: why,
		ContentHash: dedup.ContentHash(graph.Decision, "", "Use C for the tools", why), CreatedAt: at}
	if err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error { return tx.Create(ctx, old) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logs []logRecord
	s, err := embedded.Open(ctx, embedded.Config{Path: path, Logger: slog.New(&recorder{records: &logs})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var got graph.Node
	err = s.Read(ctx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
		var err error
		got, err = tx.Node(ctx, old.ID)
		return err
	})
	if want := dedup.ContentHash(graph.Decision, "", old.Title, why); err != nil || got.ContentHash != want {
		t.Errorf("content hash of the node added since = %s, %v; want %s", got.ContentHash, err, want)
	}
	if want := []logRecord{{msg: "embedded graph: content hashes recomputed", nodes: 1}}; !slices.Equal(logs, want) {
		t.Errorf("logged %+v, want %+v", logs, want)
	}
}
