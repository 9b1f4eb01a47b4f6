package memory_test

import (
	"testing"

	"github.com/praetorhq/praetor/services/memory"
)

// The flags of a memory's stores name each store the command must reach,
// a URL's password masked, and the data directory only for a store kept
// there.
func TestStoreFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		graph       memory.GraphSettings
		databaseURL string
		dataDir     string
		want        string
	}{
		{"dev", memory.GraphSettings{Dir: "/d"}, "", "/d", " --data-dir /d"},
		{"serve", memory.GraphSettings{Neo4jURI: "bolt://neo4j:7687"}, "postgres://u:pw@db/p?sslmode=disable", "",
			" --neo4j-uri bolt://neo4j:7687 --database-url postgres://u:xxxxx@db/p?sslmode=disable"},
		{"PostgreSQL, embedded graph", memory.GraphSettings{Dir: ".praetor"}, "postgres://u:pw@db/p", ".praetor",
			" --database-url postgres://u:xxxxx@db/p --data-dir .praetor"},
		{"Neo4j, SQLite", memory.GraphSettings{Neo4jURI: "bolt://u:pw@neo4j:7687"}, "", "/d",
			" --neo4j-uri bolt://u:xxxxx@neo4j:7687 --data-dir /d"},
	} {
		if got := memory.StoreFlags(tc.graph, tc.databaseURL, tc.dataDir); got != tc.want {
			t.Errorf("%s: StoreFlags = %q, want %q", tc.name, got, tc.want)
		}
	}
}
