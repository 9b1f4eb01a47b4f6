package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"path"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrationFiles embed.FS

// MigrationStatus is the state of one migration in a database.
type MigrationStatus struct {
	// Version is the number the file name starts with.
	Version int64
	// Name is the file name, e.g. "00001_core.sql".
	Name string
	// Applied reports whether the database has it.
	Applied bool
	// AppliedAt is when it was applied, in UTC; zero when pending.
	AppliedAt time.Time
}

// Migrations returns the migration files of a dialect, for tools that list
// or check them.
func Migrations(d Dialect) (fs.FS, error) {
	switch d {
	case Postgres, SQLite:
		return fs.Sub(migrationFiles, path.Join("migrations", string(d)))
	default:
		return nil, fmt.Errorf("store: no migrations for dialect %q", d)
	}
}

// Migrate applies the migrations db does not have yet and returns their
// versions in the order applied (none when it is up to date). Concurrent
// calls on one PostgreSQL schema are serialized by an advisory lock, so
// replicas may all migrate at start; on SQLite the single writer serializes
// them.
func Migrate(ctx context.Context, db DB) ([]int64, error) {
	return MigrateTo(ctx, db, math.MaxInt64)
}

// MigrateTo is Migrate up to version, included: for a test of a later
// migration on the rows of an earlier schema.
func MigrateTo(ctx context.Context, db DB, version int64) ([]int64, error) {
	p, err := newProvider(ctx, db)
	if err != nil {
		return nil, err
	}
	results, err := p.UpTo(ctx, version)
	var applied []int64
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, r.Source.Version)
		}
	}
	if err != nil {
		return applied, fmt.Errorf("store: migrate %s: %w", db.Dialect(), err)
	}
	return applied, nil
}

// Status lists every migration known to this binary with whether db has it,
// in version order.
func Status(ctx context.Context, db DB) ([]MigrationStatus, error) {
	p, err := newProvider(ctx, db)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migration status %s: %w", db.Dialect(), err)
	}
	out := make([]MigrationStatus, 0, len(st))
	for _, s := range st {
		ms := MigrationStatus{
			Version: s.Source.Version,
			Name:    path.Base(s.Source.Path),
			Applied: s.State == goose.StateApplied,
		}
		if ms.Applied {
			ms.AppliedAt = s.AppliedAt.UTC()
		}
		out = append(out, ms)
	}
	return out, nil
}

// newProvider builds the goose provider for db. It is not closed after use:
// Provider.Close would close the DB's own *sql.DB.
func newProvider(ctx context.Context, db DB) (*goose.Provider, error) {
	m, ok := db.(Migratable)
	if !ok {
		return nil, fmt.Errorf("store: %T cannot be migrated: it has no SQLDB method", db)
	}
	fsys, err := Migrations(db.Dialect())
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		// Only this package's SQL files: never Go migrations that some
		// imported package registered globally with goose.
		goose.WithDisableGlobalRegistry(true),
		// Engineers add migrations on parallel branches; a database that
		// already has a later version must still get an earlier one that
		// merged after it, not refuse to start.
		goose.WithAllowOutofOrder(true),
	}
	var dialect goose.Dialect
	switch db.Dialect() {
	case Postgres:
		dialect = goose.DialectPostgres
		locker, err := postgresMigrationLocker(ctx, db)
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	case SQLite:
		dialect = goose.DialectSQLite3
	}
	p, err := goose.NewProvider(dialect, m.SQLDB(), fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("store: migrations of %s: %w", db.Dialect(), err)
	}
	return p, nil
}

// postgresMigrationLocker locks migrations per schema: replicas migrating the
// same schema take turns, while tests migrating schemas of their own in one
// database do not wait for each other.
func postgresMigrationLocker(ctx context.Context, db DB) (lock.SessionLocker, error) {
	var schema *string
	if err := db.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, fmt.Errorf("store: migrate: current schema: %w", err)
	}
	if schema == nil {
		return nil, errors.New("store: migrate: no current schema: the search_path names no schema that exists")
	}
	h := fnv.New64a()
	h.Write([]byte("praetor.migrate:" + *schema))
	return lock.NewPostgresSessionLocker(
		lock.WithLockID(int64(h.Sum64())),
		// Retry every second for up to 5 minutes: a replica waits for
		// another's migrations rather than failing its start.
		lock.WithLockTimeout(1, 300),
	)
}
