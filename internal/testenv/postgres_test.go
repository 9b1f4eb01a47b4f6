package testenv

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestWithSearchPath(t *testing.T) {
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"URL", "postgres://u:p@localhost:5432/db", "postgres://u:p@localhost:5432/db?search_path=t_1"},
		{"URL with query", "postgres://u:p@localhost/db?sslmode=disable", "postgres://u:p@localhost/db?search_path=t_1&sslmode=disable"},
		{"URL with a search_path", "postgresql://localhost/db?search_path=public", "postgresql://localhost/db?search_path=t_1"},
		{"keyword/value", "host=localhost dbname=db ", "host=localhost dbname=db search_path=t_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withSearchPath(tc.dsn, "t_1")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("withSearchPath(%q) = %q, want %q", tc.dsn, got, tc.want)
			}
			// pgx must read it back as a run-time parameter.
			cfg, err := pgx.ParseConfig(got)
			if err != nil {
				t.Fatalf("pgx.ParseConfig(%q): %v", got, err)
			}
			if sp := cfg.RuntimeParams["search_path"]; sp != "t_1" {
				t.Errorf("search_path parsed from %q = %q, want t_1", got, sp)
			}
		})
	}
}

// TestPostgres checks that each call gets an empty schema of its own, that
// the URL's connections use it, and that it is gone after the test.
func TestPostgres(t *testing.T) {
	ctx := t.Context()
	schemaOf := func(t *testing.T, dsn string) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var schema string
		var tables int
		if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatalf("current_schema: %v", err)
		}
		if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("schema %s has %d tables, want none", schema, tables)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE mine (id INT)`); err != nil {
			t.Fatalf("create a table in %s: %v", schema, err)
		}
		return schema
	}
	var first, second string
	t.Run("first", func(t *testing.T) { first = schemaOf(t, Postgres(t)) })
	t.Run("second", func(t *testing.T) { second = schemaOf(t, Postgres(t)) })
	if t.Failed() || first == "" {
		return
	}
	if first == second || !strings.HasPrefix(first, "t_") {
		t.Errorf("schemas %q and %q: want two distinct t_ schemas", first, second)
	}
	base := os.Getenv(DatabaseURLVar)
	if base == "" {
		base = postgresOnce.url
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var left int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_namespace WHERE nspname IN ($1, $2)`, first, second).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of the schemas %s, %s are left after their tests", left, first, second)
	}
}
