package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/praetorhq/praetor/internal/store/sqlite"
)

// The database holds conversations and token hashes: it is created 0600,
// in a directory created 0700, whatever the umask, and SQLite gives its
// -wal and -shm files the database's mode.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "praetor.db")
	db := open(t, sqlite.Config{Path: path})
	if _, err := db.Exec(t.Context(), `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s is %#o, want %#o", name, got, want)
		}
	}
}
