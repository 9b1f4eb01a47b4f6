package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A tool given no --database-url (nor DATABASE_URL) opens the SQLite store
// of --data-dir; when that store is not migrated — a directory with only
// workflow state, say — the error names the file it opened and the way to
// PostgreSQL, not "the database" alone.
func TestUnmigratedStoreIsNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".praetor", "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "tenant", "list")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("tenant list on an unmigrated store succeeded:\n%s", out)
	}
	for _, want := range []string{"the SQLite store " + filepath.Join(dir, ".praetor", "praetor.db"), "lacks migration 00001_core.sql",
		"praetor migrate --data-dir", "--database-url (DATABASE_URL)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
