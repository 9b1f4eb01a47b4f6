package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Dialect names a SQL dialect.
type Dialect string

// The dialects of the two adapters.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// ErrNotFound is returned when a row that must exist does not.
var ErrNotFound = errors.New("store: not found")

// ErrConflict is returned when a row to create already exists.
var ErrConflict = errors.New("store: already exists")

// Large is a text value the store may keep compressed: a column of
// kilobytes of JSON rewritten on every turn (a session's working memory,
// its sidebar). Pass it as an argument and scan into *Large; what is read
// back equals what was written. PostgreSQL compresses every large value
// itself (TOAST) and is sent a Large as the text it is. The SQLite store,
// which compresses nothing, compresses one of 512 bytes or more with S2
// when that saves an eighth, which cuts the pages a turn writes; such a
// value is a BLOB SQL cannot read, so a column written as Large is read
// only through *Large. A NULL scans as nil, and a nil Large is written as
// NULL. LargeBytes is the same for a bytes column (BYTEA, BLOB).
type Large []byte

// LargeBytes is Large for a bytes column: PostgreSQL is sent it as bytes.
type LargeBytes []byte

// Querier runs SQL: a DB outside a transaction, or a transaction.
type Querier interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query returning rows; the caller closes them.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query expected to return at most one row. Scan returns
	// ErrNotFound when there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is the result of Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// DB is a relational database.
type DB interface {
	Querier
	// Tx runs fn in one transaction: committed when fn returns nil, rolled
	// back otherwise (and on panic, which is re-raised). A serialization or
	// busy failure is retried a few times before Tx gives up.
	Tx(ctx context.Context, fn func(tx Querier) error) error
	// Dialect tells which SQL the database speaks.
	Dialect() Dialect
	// TryLock takes the named lock without waiting, and holds it across
	// statements and transactions until unlock is called (which may be
	// called twice). ok is false when another holder has it: on PostgreSQL
	// any session of any process (an advisory lock on a connection of its
	// own, freed by the server if the process dies); on SQLite any caller in
	// this process (its database belongs to one process).
	TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the connections; it may be called twice.
	Close() error
}

// Migratable is a DB whose schema Migrate can manage. Both adapters are:
// goose, which runs the migrations, speaks database/sql.
type Migratable interface {
	DB
	// SQLDB returns a database/sql handle on the same database (the writer,
	// for SQLite). It belongs to the DB: Close closes it, callers do not.
	SQLDB() *sql.DB
}

// SerializationFailure reports whether err is a PostgreSQL serialization
// failure or deadlock (SQLSTATE 40001, 40P01): what failed may succeed when
// run again from the start.
func SerializationFailure(err error) bool {
	var e interface{ SQLState() string }
	return errors.As(err, &e) && (e.SQLState() == "40001" || e.SQLState() == "40P01")
}

// maxStatementAttempts bounds the runs of Retry.
const maxStatementAttempts = 10

// Retry runs fn, a statement that commits on its own (outside Tx), again
// while it fails with a serialization failure, as Tx does for a
// transaction: under a serializable default isolation a concurrent
// transaction can make it fail, and nothing of a failed run was committed.
// It waits a millisecond more before each new run, and gives up after
// maxStatementAttempts runs or when ctx ends.
func Retry(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !SerializationFailure(err) || attempt >= maxStatementAttempts {
			return err
		}
		t := time.NewTimer(time.Duration(attempt) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
