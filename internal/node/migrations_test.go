package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/sqlite"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/events"
)

// A node rolled back onto a database a newer build migrated (one migration
// more) refuses to start, naming the version and the way out, on dev's
// SQLite and serve's PostgreSQL, with --migrate or without: it started
// ready and answered every turn 500 for a column its queries lacked.
func TestDatabaseOfANewerBuildRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     func(t *testing.T) (node.Config, store.DB)
		migrate bool
	}{
		{"dev on SQLite", devOnSQLite, false},
		{"serve on PostgreSQL", serveOnPostgres, false},
		{"serve --migrate on PostgreSQL", serveOnPostgres, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, db := tc.cfg(t)
			cfg.Migrate = tc.migrate
			testdb.Migrate(t, db)
			status, err := store.Status(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			newest := status[len(status)-1].Version
			future := newest + 1
			if _, err := db.Exec(context.Background(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, $2)`, future, true); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()

			var built atomic.Int32
			cfg.Services = []string{"svc"}
			cfg.Available = map[string]node.Factory{
				"svc": func(context.Context, node.Deps) (node.Service, error) {
					built.Add(1)
					return startCounter{new(atomic.Int32)}, nil
				},
			}
			cfg.HTTPAddr = "127.0.0.1:0"
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg.Ready = func(string) {
				t.Error("the node said it was ready")
				cancel()
			}
			err = node.Run(ctx, cfg)
			var ne *store.NewerError
			if !errors.As(err, &ne) {
				t.Fatalf("Run = %v, want a store.NewerError", err)
			}
			for _, want := range []string{fmt.Sprintf("%05d", future), fmt.Sprintf("up to %05d", newest), "newer build", "restore the database"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run's error %q does not say %q", err, want)
				}
			}
			if n := built.Load(); n != 0 {
				t.Errorf("%d services built, want none", n)
			}
		})
	}
}

func devOnSQLite(t *testing.T) (node.Config, store.DB) {
	dir := t.TempDir()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "praetor.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return node.Config{Dev: true, DataDir: dir}, db
}

func serveOnPostgres(t *testing.T) (node.Config, store.DB) {
	url := testenv.Postgres(t)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return node.Config{DataDir: t.TempDir(), NATSURL: srv.ClientURL(), DatabaseURL: url}, db
}
