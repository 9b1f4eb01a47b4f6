package embedded

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Live reads a scope's live nodes along an index in the order it returns
// them (by last confirmation), and a file made when that index was on
// created_at alone is given the new one, the old one dropped, when it
// opens.
func TestLiveReadsItsIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	// The file as it was: the live index on created_at.
	for _, stmt := range []string{
		`DROP INDEX mem_nodes_live_confirmed`,
		`CREATE INDEX mem_nodes_live ON mem_nodes (scope_uid, created_at) WHERE superseded_by IS NULL`,
	} {
		if _, err := s.writer.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	rows, err := s.reader.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mem_nodes' AND name LIKE 'mem_nodes_live%'`)
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"mem_nodes_live_confirmed"}; !slices.Equal(indexes, want) {
		t.Errorf("live indexes after Open = %v, want %v", indexes, want)
	}

	rows, err = s.reader.QueryContext(ctx, `EXPLAIN QUERY PLAN `+liveQuery, "t", "t|p/p1", 10)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// A sort of the right part of the order (the id, among nodes of one
	// instant) is fine; a sort of the whole scope is not.
	if !slices.ContainsFunc(plan, func(d string) bool { return strings.Contains(d, "USING INDEX mem_nodes_live_confirmed (scope_uid=?)") }) ||
		slices.Contains(plan, "USE TEMP B-TREE FOR ORDER BY") {
		t.Errorf("plan of Live = %q, want a search of mem_nodes_live_confirmed that gives the order", plan)
	}
}
