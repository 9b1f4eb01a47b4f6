package neo4j_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/graphtest"
	neo4jstore "github.com/praetorhq/praetor/services/memory/graph/neo4j"
)

// shared is one store per test binary: Open creates the schema, which is
// idempotent but not free, and every test works in its own tenant.
var shared struct {
	once  sync.Once
	store *neo4jstore.Store
	err   error
}

func openStore(t testing.TB) *neo4jstore.Store {
	t.Helper()
	uri, user, password := testenv.Neo4j(t)
	shared.once.Do(func() {
		shared.store, shared.err = neo4jstore.Open(context.Background(), neo4jstore.Config{URI: uri, User: user, Password: password})
	})
	if shared.err != nil {
		t.Fatalf("open Neo4j store at %s: %v", uri, shared.err)
	}
	return shared.store
}

func TestConformance(t *testing.T) {
	s := openStore(t)
	graphtest.Run(t, graphtest.Harness{
		Open:        func(t *testing.T) (graph.Store, string) { return s, testenv.Neo4jTenant(t) },
		NewTenant:   func(t *testing.T) string { return testenv.Neo4jTenant(t) },
		ReadUpdates: func() int64 { return s.Stats().ReadUpdates },
	})
}

// A URI the driver refuses is named without its password: the error is
// printed by the memory commands.
func TestOpenErrorHidesURIPassword(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{"bolt://u:Neo%zzSecret@127.0.0.1:7687", "bogus://u:NeoSecret@127.0.0.1:7687"} {
		s, err := neo4jstore.Open(context.Background(), neo4jstore.Config{URI: uri})
		if err == nil {
			s.Close(context.Background())
			t.Fatalf("Open(%q) succeeded", uri)
		}
		if strings.Contains(err.Error(), "Secret") || !strings.Contains(err.Error(), "u:xxxxx@127.0.0.1:7687") {
			t.Errorf("Open(%q) error is %q, want the URI with its password masked", uri, err)
		}
	}
}
