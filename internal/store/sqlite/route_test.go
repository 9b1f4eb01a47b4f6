package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestReadOnly(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"SELECT 1", true},
		{"  select * from t", true},
		{"\n-- why\nSELECT 1", true},
		{"/* a */ /* b */VALUES (1)", true},
		{"EXPLAIN QUERY PLAN SELECT 1", true},
		{"SELECTX", false},
		{"INSERT INTO t VALUES (1) RETURNING id", false},
		{"WITH x AS (SELECT 1) SELECT * FROM x", false},
		{"UPDATE t SET a = 1 RETURNING a", false},
		{"DELETE FROM t RETURNING a", false},
		{"PRAGMA journal_mode", false},
		{"-- unterminated comment", false},
		{"/* unterminated", false},
		{"", false},
	} {
		if got := readOnly(tc.query); got != tc.want {
			t.Errorf("readOnly(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestReadersRefuseWrites checks the guard behind the routing: a write that
// reached a reader would fail instead of racing the writer.
func TestReadersRefuseWrites(t *testing.T) {
	db, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "ro.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(t.Context(), `CREATE TABLE x (a INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.readers.ExecContext(t.Context(), `INSERT INTO x (a) VALUES (1)`)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "readonly") {
		t.Errorf("a write on a reader = %v, want a read-only error", err)
	}
}
