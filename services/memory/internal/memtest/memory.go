package memtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/embedded"
)

// Embedded opens an embedded graph in a temporary directory.
func Embedded(t testing.TB) graph.Store {
	t.Helper()
	g, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), memory.GraphFile), Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// Memory assembles memory on g and db; mod edits the configuration first.
// It is stopped when the test ends.
func Memory(t testing.TB, g graph.Store, db store.DB, mod func(*memory.Config)) *memory.Memory {
	t.Helper()
	cfg := memory.Config{Graph: g, DB: db, Logger: Logger(t)}
	if mod != nil {
		mod(&cfg)
	}
	m, err := memory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return m
}

// Project registers a project (and focus areas) in the graph.
func Project(t testing.TB, g graph.Store, tenant, project string, focus ...string) {
	t.Helper()
	if err := g.EnsureProject(context.Background(), tenant, project); err != nil {
		t.Fatal(err)
	}
	for _, f := range focus {
		if err := g.EnsureFocusArea(context.Background(), tenant, project, f); err != nil {
			t.Fatal(err)
		}
	}
}
