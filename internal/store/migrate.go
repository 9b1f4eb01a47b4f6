package store

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
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
	// Newer reports a migration the database has above the newest this
	// binary knows: applied by a newer build, whose file this one lacks
	// (Name is empty). Such a database is not this binary's to serve.
	Newer bool
}

// NewerError is a database migrated by a newer build than this one: it has
// migrations above the newest this binary knows, so this binary's queries
// may not match its schema (a column they lack, one renamed), and every
// query touching it would fail while the node says it is ready.
type NewerError struct {
	// Versions are the database's migrations above Newest, ascending.
	Versions []int64
	// Newest is the newest migration this binary knows.
	Newest int64
}

func (e *NewerError) Error() string {
	vs := make([]string, len(e.Versions))
	for i, v := range e.Versions {
		vs[i] = fmt.Sprintf("%05d", v)
	}
	return fmt.Sprintf("store: the database has migration %s, applied by a newer build of praetor: this build knows migrations up to %05d "+
		"and cannot serve that schema; run the newer build (or a later one), or restore the database from a backup taken before it was migrated",
		strings.Join(vs, ", "), e.Newest)
}

// CheckNotNewer returns a *NewerError when status (from Status) lists
// migrations applied by a newer build, and nil otherwise.
func CheckNotNewer(status []MigrationStatus) error {
	var e NewerError
	for _, s := range status {
		if s.Newer {
			e.Versions = append(e.Versions, s.Version)
		} else {
			e.Newest = max(e.Newest, s.Version)
		}
	}
	if len(e.Versions) == 0 {
		return nil
	}
	return &e
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
	// Refused: migrating adds nothing a newer build lacks, and an older
	// binary that reported success would then serve a schema it does not
	// know.
	newer, err := newerMigrations(ctx, p, db)
	if err != nil {
		return nil, err
	}
	if len(newer) > 0 {
		e := &NewerError{Newest: newestSource(p)}
		for _, s := range newer {
			e.Versions = append(e.Versions, s.Version)
		}
		return nil, e
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
// in version order, then those db has above the newest this binary knows
// (Newer: applied by a newer build).
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
	newer, err := newerMigrations(ctx, p, db)
	if err != nil {
		return nil, err
	}
	return append(out, newer...), nil
}

// newestSource is the newest migration p knows.
func newestSource(p *goose.Provider) int64 {
	var newest int64
	for _, s := range p.ListSources() {
		newest = max(newest, s.Version)
	}
	return newest
}

// newerMigrations lists the migrations db has above the newest of p: goose
// reports only those its sources name, so a database a newer build migrated
// looks up to date to an older one.
func newerMigrations(ctx context.Context, p *goose.Provider, db DB) ([]MigrationStatus, error) {
	newest := newestSource(p)
	// GetDBVersion creates the version table when it is missing (and takes
	// no migration lock), so the listing below has a table to read.
	latest, err := p.GetDBVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migration version of %s: %w", db.Dialect(), err)
	}
	if latest <= newest {
		return nil, nil
	}
	vt, err := database.NewStore(gooseDialect(db.Dialect()), goose.DefaultTablename)
	if err != nil {
		return nil, fmt.Errorf("store: migrations of %s: %w", db.Dialect(), err)
	}
	sqldb := db.(Migratable).SQLDB()
	list, err := vt.ListMigrations(ctx, sqldb)
	if err != nil {
		return nil, fmt.Errorf("store: list applied migrations of %s: %w", db.Dialect(), err)
	}
	var out []MigrationStatus
	for _, m := range list {
		if m.Version <= newest || !m.IsApplied {
			continue
		}
		got, err := vt.GetMigration(ctx, sqldb, m.Version)
		if err != nil {
			return nil, fmt.Errorf("store: applied migration %d of %s: %w", m.Version, db.Dialect(), err)
		}
		out = append(out, MigrationStatus{Version: m.Version, Applied: true, AppliedAt: got.Timestamp.UTC(), Newer: true})
	}
	slices.SortFunc(out, func(a, b MigrationStatus) int { return cmp.Compare(a.Version, b.Version) })
	return out, nil
}

func gooseDialect(d Dialect) goose.Dialect {
	if d == Postgres {
		return goose.DialectPostgres
	}
	return goose.DialectSQLite3
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
	if db.Dialect() == Postgres {
		locker, err := postgresMigrationLocker(ctx, db)
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gooseDialect(db.Dialect()), m.SQLDB(), fsys, opts...)
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
