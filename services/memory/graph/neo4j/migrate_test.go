package neo4j_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/graphtest"
	neo4jstore "github.com/praetorhq/praetor/services/memory/graph/neo4j"
)

// A database written before the signs that end a name counted ("C++" was
// "C" in content hashes, content keys and entity keys): EnsureSchema, which
// Open runs, recomputes them for the nodes with signs, once.
func TestEnsureSchemaRecomputesContentHashes(t *testing.T) {
	s := openStore(t)
	graphtest.RunSignMigration(t, graphtest.MigrationHarness{
		Open: func(t *testing.T) (graph.Store, string) { return s, testenv.Neo4jTenant(t) },
		Age: func(t *testing.T, _ graph.Store, tenant string, entityKeys map[string]string) {
			t.Helper()
			age(t, s, tenant, entityKeys)
		},
		Migrate: func(t *testing.T, _ graph.Store) graph.Store {
			t.Helper()
			if err := s.EnsureSchema(context.Background()); err != nil {
				t.Fatalf("EnsureSchema: %v", err)
			}
			return s
		},
	})
}

// Two nodes of a scope whose content is the same once signs count cannot
// come from ContentHash (the old hash made them one); written by something
// else, they stop the migration with an error that names both, and nothing
// changes.
func TestRehashRefusesSameContent(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	sc := graph.ProjectScope("p1")
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range graphtest.SameContentPairs(sc, at) {
		t.Run(tt.Name, func(t *testing.T) {
			tenant := testenv.Neo4jTenant(t)
			// Node ids are unique across tenants.
			tt.A.ID, tt.B.ID = tenant+"-a", tenant+"-b"
			if err := s.EnsureProject(ctx, tenant, "p1"); err != nil {
				t.Fatal(err)
			}
			err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
				return errors.Join(tx.Create(ctx, tt.A), tx.Create(ctx, tt.B))
			})
			if err != nil {
				t.Fatal(err)
			}
			age(t, s, tenant, nil)
			for range 2 {
				n, err := s.RehashTenant(ctx, tenant)
				if !errors.Is(err, graph.ErrDuplicateContent) || !strings.Contains(err.Error(), tt.A.ID) || !strings.Contains(err.Error(), tt.B.ID) {
					t.Errorf("rehash = %d, %v; want ErrDuplicateContent naming %s and %s", n, err, tt.A.ID, tt.B.ID)
				}
			}
			var hashes []string
			err = s.Read(ctx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
				nodes, err := tx.Nodes(ctx, sc.Area())
				for _, n := range nodes {
					hashes = append(hashes, n.ContentHash)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{tt.A.ContentHash, tt.B.ContentHash}; !slices.Equal(hashes, want) {
				t.Errorf("content hashes after the failed migrations = %q, want them unchanged, %q", hashes, want)
			}
		})
	}
}

// age makes a tenant's nodes look as an older version left them (see
// graphtest.MigrationHarness.Age): it sets the entity keys given and takes
// rehashed_seq from the tenant's scopes, as a version that did not keep it.
func age(t *testing.T, s *neo4jstore.Store, tenant string, entityKeys map[string]string) {
	t.Helper()
	ctx := context.Background()
	for id, key := range entityKeys {
		res, err := neo4j.ExecuteQuery(ctx, s.Driver(),
			`MATCH (n:Memory {id: $id}) WHERE n.tenant_id = $tenant SET n.entity_key = $key RETURN n.id AS id`,
			map[string]any{"id": id, "tenant": tenant, "key": key}, neo4j.EagerResultTransformer)
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("set the entity key of %s: %v", id, err)
		}
	}
	_, err := neo4j.ExecuteQuery(ctx, s.Driver(), `MATCH (s:Scope) WHERE s.tenant_id = $tenant REMOVE s.rehashed_seq`,
		map[string]any{"tenant": tenant}, neo4j.EagerResultTransformer)
	if err != nil {
		t.Fatalf("age the scopes of %s: %v", tenant, err)
	}
}

// Every write of this version keeps a scope's rehashed_seq level with its
// write_seq, so an up-to-date database has no scope to check; a write by an
// older version (a replica not yet upgraded) leaves the scope behind, and
// the next migration checks it.
func TestRehashChecksScopesAnOlderVersionWrote(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	tenant := testenv.Neo4jTenant(t)
	sc := graph.ProjectScope("p1")
	if err := s.EnsureProject(ctx, tenant, "p1"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	create := func(n graph.Node) {
		t.Helper()
		if err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error { return tx.Create(ctx, n) }); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func() (write, rehashed int64) {
		t.Helper()
		res, err := neo4j.ExecuteQuery(ctx, s.Driver(), `MATCH (s:Scope) WHERE s.tenant_id = $tenant RETURN s.write_seq, s.rehashed_seq`,
			map[string]any{"tenant": tenant}, neo4j.EagerResultTransformer)
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("read the scope of %s: %d records, %v", tenant, len(res.Records), err)
		}
		write, _ = res.Records[0].Values[0].(int64)
		rehashed, _ = res.Records[0].Values[1].(int64)
		return write, rehashed
	}
	const title, why = "Use C++ for the engine", "Speed."
	for i := range 3 {
		create(graph.Node{ID: tenant + "-" + string(rune('a'+i)), Kind: graph.Decision, Scope: sc, Title: title + strings.Repeat("!", i),
			Rationale: why + strings.Repeat(" again", i), ContentHash: dedup.ContentHash(graph.Decision, "", title, why+strings.Repeat(" again", i)), CreatedAt: at})
	}
	if write, rehashed := seqs(); write != 3 || rehashed != 3 {
		t.Fatalf("after three writes write_seq = %d, rehashed_seq = %d; want 3 and 3", write, rehashed)
	}
	if n, err := s.RehashTenant(ctx, tenant); n != 0 || err != nil {
		t.Errorf("rehash of an up-to-date tenant = %d, %v; want 0, nil", n, err)
	}
	// An older version writes the content hash of "Use C for the engine"
	// for a node about C++, and counts its write without rehashed_seq.
	old := graph.Node{ID: tenant + "-old", Kind: graph.Decision, Scope: sc, Title: "Use C++ for the tools", Rationale: why,
		ContentHash: dedup.ContentHash(graph.Decision, "", "Use C for the tools", why), CreatedAt: at}
	if _, err := neo4j.ExecuteQuery(ctx, s.Driver(), `MATCH (s:Scope) WHERE s.tenant_id = $tenant SET s.write_seq = s.write_seq + 1`,
		map[string]any{"tenant": tenant}, neo4j.EagerResultTransformer); err != nil {
		t.Fatal(err)
	}
	create(old) // behind already, the scope stays behind
	create(graph.Node{ID: tenant + "-new", Kind: graph.Decision, Scope: sc, Title: "Use Go for the server", Rationale: why,
		ContentHash: dedup.ContentHash(graph.Decision, "", "Use Go for the server", why), CreatedAt: at})
	if write, rehashed := seqs(); write != 6 || rehashed != 3 {
		t.Fatalf("after an older version's write write_seq = %d, rehashed_seq = %d; want 6 and still 3", write, rehashed)
	}
	if n, err := s.RehashTenant(ctx, tenant); n != 1 || err != nil {
		t.Errorf("rehash after an older version's write = %d, %v; want 1 node changed", n, err)
	}
	if write, rehashed := seqs(); write != 6 || rehashed != 6 {
		t.Errorf("after rehash write_seq = %d, rehashed_seq = %d; want 6 and 6", write, rehashed)
	}
	var got graph.Node
	err := s.Read(ctx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
		var err error
		got, err = tx.Node(ctx, old.ID)
		return err
	})
	if want := dedup.ContentHash(graph.Decision, "", old.Title, why); err != nil || got.ContentHash != want {
		t.Errorf("content hash of the older version's node = %s, %v; want %s", got.ContentHash, err, want)
	}
	if n, err := s.RehashTenant(ctx, tenant); n != 0 || err != nil {
		t.Errorf("rehash again = %d, %v; want 0, nil", n, err)
	}
}
