package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/sqlite"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/internal/testenv"
)

// On a database a newer build migrated (a migration above this build's
// newest), praetor migrate --status lists that migration as applied by a
// newer build, and praetor migrate refuses naming it: --status said
// nothing was wrong, so a rolled-back node's failures had no visible cause.
func TestMigrateDatabaseOfANewerBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (store.DB, []string)
	}{
		{"sqlite", func(t *testing.T) (store.DB, []string) {
			dir := t.TempDir()
			db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "praetor.db")})
			if err != nil {
				t.Fatal(err)
			}
			return db, []string{"--data-dir", dir, "--database-url", ""}
		}},
		{"postgres", func(t *testing.T) (store.DB, []string) {
			url := testenv.Postgres(t)
			db, err := postgres.Open(context.Background(), postgres.Config{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			return db, []string{"--database-url", url}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, flags := tc.open(t)
			testdb.Migrate(t, db)
			status, err := store.Status(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			future := fmt.Sprintf("%05d", status[len(status)-1].Version+1)
			if _, err := db.Exec(context.Background(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, $2)`, status[len(status)-1].Version+1, true); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()

			cmd := exec.Command(binary, append([]string{"migrate", "--status"}, flags...)...)
			cmd.Env = append(os.Environ(), "DATABASE_URL=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("migrate --status: %v\n%s", err, out)
			}
			var line string
			for l := range strings.Lines(string(out)) {
				if strings.HasPrefix(l, future) {
					line = l
				}
			}
			if !strings.Contains(line, "applied by a newer build") {
				t.Errorf("migrate --status has no line of %s applied by a newer build:\n%s", future, out)
			}
			cmd = exec.Command(binary, append([]string{"migrate"}, flags...)...)
			cmd.Env = append(os.Environ(), "DATABASE_URL=")
			out, err = cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), future) || !strings.Contains(string(out), "newer build") {
				t.Errorf("migrate = %v, want a refusal naming %s and the newer build:\n%s", err, future, out)
			}
			if tc.name != "postgres" {
				return
			}
			// The workflow commands keep their runs in PostgreSQL alone.
			cmd = exec.Command(binary, append([]string{"workflow", "status", "some-run", "--state-dir", t.TempDir()}, flags...)...)
			cmd.Env = append(os.Environ(), "DATABASE_URL=")
			out, err = cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), future) || !strings.Contains(string(out), "newer build") {
				t.Errorf("workflow status = %v, want a refusal naming %s and the newer build:\n%s", err, future, out)
			}
		})
	}
}
