package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
)

// cached returns the query texts the writer's connection keeps prepared, most
// recently used first.
func cached(t *testing.T, db *DB) []string {
	t.Helper()
	conn, err := db.writer.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []string
	if err := conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		for e := c.lru.Front(); e != nil; e = e.Next() {
			out = append(out, e.Value.(*cachedStmt).query)
		}
		if len(out) != len(c.stmts) {
			return fmt.Errorf("%d statements listed, %d by query", len(out), len(c.stmts))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStatementCache(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "c.db"), CachedStatements: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const (
		create = `CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`
		insert = `INSERT INTO kv (k, v) VALUES ($1, $2)`
		get    = `SELECT v FROM kv WHERE k = $1`
		bump   = `UPDATE kv SET v = v + 1 WHERE k = $1`
	)
	if _, err := db.Exec(ctx, create); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := db.Exec(ctx, insert, fmt.Sprint("k", i), i); err != nil {
			t.Fatal(err)
		}
	}
	// A statement that fails leaves its prepared form usable.
	if _, err := db.Exec(ctx, insert, "k0", 9); err == nil {
		t.Fatal("a duplicate key was inserted")
	}
	if _, err := db.Exec(ctx, insert, "k5", 5); err != nil {
		t.Fatalf("insert after a failed one: %v", err)
	}
	if got, want := cached(t, db), []string{insert, create}; !slices.Equal(got, want) {
		t.Errorf("cached = %q, want %q", got, want)
	}

	// In a transaction: the same statement again while its rows are open
	// runs unprepared, and a busy statement pushed out of the cache closes
	// with its rows.
	err = db.Tx(ctx, func(tx store.Querier) error {
		rows, err := tx.Query(ctx, `SELECT k, v FROM kv ORDER BY k`)
		if err != nil {
			return err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var (
				k string
				v int
			)
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, bump, k); err != nil {
				return err
			}
			var again int
			if err := tx.QueryRow(ctx, `SELECT k, v FROM kv ORDER BY k`).Scan(new(string), &again); err != nil {
				return fmt.Errorf("the open query again: %w", err)
			}
			if err := tx.QueryRow(ctx, get, k).Scan(&again); err != nil {
				return err
			}
			if again != v+1 {
				return fmt.Errorf("%s = %d after the bump, want %d", k, again, v+1)
			}
			n++
		}
		if n != 6 {
			return fmt.Errorf("%d rows, want 6", n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each round: bump, the open query again (prepared anew: its first
	// statement left the cache while busy), then get.
	if got, want := cached(t, db), []string{get, `SELECT k, v FROM kv ORDER BY k`}; !slices.Equal(got, want) {
		t.Errorf("cached = %q, want %q", got, want)
	}

	// Readers keep their own statements; every result is still right.
	for range 3 {
		for i := range 6 {
			var v int
			if err := db.QueryRow(ctx, get, fmt.Sprint("k", i)).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != i+1 {
				t.Errorf("k%d = %d, want %d", i, v, i+1)
			}
		}
	}
	// A statement that does not parse is an error, and is not kept.
	if _, err := db.Exec(ctx, `UPDATE nowhere SET x = 1`); err == nil {
		t.Error("an update of a missing table succeeded")
	}
	if got := cached(t, db); slices.Contains(got, `UPDATE nowhere SET x = 1`) {
		t.Errorf("cached = %q, holds the failed statement", got)
	}
}

// TestStatementCacheAfterSchemaChange: a kept statement follows the table it
// reads when the table changes.
func TestStatementCacheAfterSchemaChange(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`CREATE TABLE t (a INTEGER)`, `INSERT INTO t VALUES (1)`} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []any {
		rows, err := db.writer.QueryContext(ctx, `SELECT * FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, vals...)
		}
		return out
	}
	if got := read(); len(got) != 1 {
		t.Fatalf("before: %v", got)
	}
	for _, q := range []string{`ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'`} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(); len(got) != 2 || got[1] != "x" {
		t.Fatalf("after ALTER TABLE: %v, want [1 x]", got)
	}
}
