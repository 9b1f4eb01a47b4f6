package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
)

// tempFiles counts the process's open files that are deleted: SQLite
// unlinks its temporary files as soon as it opens them.
func tempFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list open files (/proc/self/fd): %v", err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasSuffix(target, " (deleted)") {
			n++
		}
	}
	return n
}

// TestSubJournalStaysInMemory rewrites about a megabyte of pages inside a
// savepoint, as a group commit member does: past SQLite's default spill of
// 64 kB its sub-journal would be a temporary file, under subJournalSpill it
// stays in memory.
func TestSubJournalStaysInMemory(t *testing.T) {
	if spillErr != nil {
		t.Fatal(spillErr)
	}
	db := openGroup(t, 16)
	ctx := t.Context()
	for _, q := range []string{`CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB)`,
		`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000)
			INSERT INTO big SELECT i, randomblob(400) FROM c`} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before := tempFiles(t)
	var during int
	err := db.Tx(ctx, func(tx store.Querier) error {
		if _, err := tx.Exec(ctx, `SAVEPOINT probe`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE big SET b = randomblob(400)`); err != nil {
			return err
		}
		during = tempFiles(t)

		_, err := tx.Exec(context.WithoutCancel(ctx), `RELEASE probe`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != before {
		t.Errorf("%d SQLite temporary files open while the savepoint's pages were journaled, %d before: the sub-journal spilled", during, before)
	}
}
