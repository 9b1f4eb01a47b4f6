// Package testdb opens migrated relational stores for tests: SQLite in a
// temporary directory, and a PostgreSQL schema of the test's own (or a skip
// naming DATABASE_URL; see internal/testenv).
package testdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/sqlite"
	"github.com/praetorhq/praetor/internal/testenv"
)

// Adapter names a store adapter and opens a database of it: migrated
// (Open) or with no tables yet (Empty).
type Adapter struct {
	Name  string
	Open  func(t testing.TB) store.DB
	Empty func(t testing.TB) store.DB
}

// Adapters are SQLite (always) and PostgreSQL (DATABASE_URL, or a skip).
func Adapters() []Adapter {
	return []Adapter{{"sqlite", SQLite, EmptySQLite}, {"postgres", Postgres, EmptyPostgres}}
}

// ForEach runs fn as a parallel subtest on each adapter.
func ForEach(t *testing.T, fn func(t *testing.T, db store.DB)) {
	t.Helper()
	for _, a := range Adapters() {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, a.Open(t))
		})
	}
}

// SQLite opens a migrated SQLite store in a temporary directory.
func SQLite(t testing.TB) store.DB {
	t.Helper()
	return SQLiteAt(t, t.TempDir())
}

// SQLiteAt opens the migrated SQLite store of a data directory (its
// praetor.db, as praetor dev lays it out).
func SQLiteAt(t testing.TB, dir string) store.DB {
	t.Helper()
	db := openSQLite(t, dir)
	Migrate(t, db)
	return db
}

// EmptySQLite opens a SQLite store in a temporary directory, not migrated.
func EmptySQLite(t testing.TB) store.DB {
	t.Helper()
	return openSQLite(t, t.TempDir())
}

func openSQLite(t testing.TB, dir string) store.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "praetor.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Postgres opens a migrated schema of the test's own on the test PostgreSQL.
func Postgres(t testing.TB) store.DB {
	t.Helper()
	db := EmptyPostgres(t)
	Migrate(t, db)
	return db
}

// EmptyPostgres opens a schema of the test's own on the test PostgreSQL, not
// migrated.
func EmptyPostgres(t testing.TB) store.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Config{URL: testenv.Postgres(t), MaxConns: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// PostgresBehindProxy opens a migrated schema of the test's own on the test
// PostgreSQL, reached through a testenv.Proxy: SetDown(true) is the
// database host going down (connections cut, new ones refused), and
// SetDown(false) its coming back.
func PostgresBehindProxy(t testing.TB) (store.DB, *testenv.Proxy) {
	t.Helper()
	dsn, p := testenv.PostgresProxy(t)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: dsn, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	Migrate(t, db)
	return db, p
}

// Migrate applies the migrations or fails the test.
func Migrate(t testing.TB, db store.DB) {
	t.Helper()
	if _, err := store.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

// MigrateTo applies the migrations up to version, included, or fails the
// test: the schema a later migration upgrades.
func MigrateTo(t testing.TB, db store.DB, version int64) {
	t.Helper()
	if _, err := store.MigrateTo(context.Background(), db, version); err != nil {
		t.Fatalf("migrate to %d: %v", version, err)
	}
}
