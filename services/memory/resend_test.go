package memory_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/internal/memtest"
	"github.com/praetorhq/praetor/services/memory/write"
)

// A request made again after its focus came to exist resolves to another
// scope than its node's: it was done once, and is answered so, not failed
// on its node's id.
func TestRequestResentAfterItsFocusExists(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	g := memtest.Embedded(t)
	m := memtest.Memory(t, g, db, nil)
	memtest.Tenant(t, db, "acme")
	memtest.Project(t, g, "acme", "shop")
	req := write.Request{RequestID: "r-1", TenantID: "acme", ProjectID: "shop", Focus: "billing", Kind: graph.Decision,
		Title: "Invoice monthly", Rationale: "because the accountant asks"}
	first, err := m.Writes.Save(memtest.Ctx(t), req)
	if err != nil || first.Status != write.Saved || first.Outcome != dedup.OutcomeNew {
		t.Fatalf("first: %+v, %v", first, err)
	}
	memtest.Project(t, g, "acme", "shop", "billing")
	again, err := m.Writes.Save(memtest.Ctx(t), req)
	if err != nil || again.Status != write.Saved || again.Outcome != dedup.OutcomeDuplicateSkip || again.NodeID != first.NodeID ||
		again.Scope != first.Scope {
		t.Errorf("again, the focus existing: %+v, %v; want saved/duplicate_skip of %s in %s", again, err, first.NodeID, first.Scope.Key())
	}
}
