package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/praetorhq/praetor/internal/datadir"
	"github.com/praetorhq/praetor/internal/store"
)

// Memory is the Path of a private in-memory database. It lives in one
// connection, which then serves readers and the writer alike, and is gone
// when the DB closes.
const Memory = ":memory:"

// Config is the adapter's configuration.
type Config struct {
	// Path is the database file, created with its directory when missing, or
	// Memory. Required.
	Path string
	// BusyTimeout is how long a statement waits for a lock held by another
	// process (another praetor on the same file) before failing. Default 5s.
	BusyTimeout time.Duration
	// MaxReaders bounds the connections that serve queries outside
	// transactions. Default 4.
	MaxReaders int
	// MaxTxAttempts is how many times Tx runs fn when the database stays busy
	// past BusyTimeout. Default 5.
	MaxTxAttempts int
	// CachedStatements bounds the prepared statements each connection keeps,
	// the least recently used closed first. Default 256.
	CachedStatements int
	// CheckpointInterval is how often a connection of its own copies the
	// write-ahead log into the database file, so that commits never do
	// (see checkpointer). Default 100ms; negative leaves checkpoints to the
	// commits, as SQLite does by default.
	CheckpointInterval time.Duration
	// RestartFrames is the length of the log, in pages, past which the
	// checkpointer starts it over, holding the writer for as long as that
	// takes (see checkpointer). Default 16384 (64 MiB of 4 KiB pages).
	RestartFrames int
	// GroupCommit bounds how many concurrent transactions commit together
	// (see group); 1 commits each on its own. Default 16.
	GroupCommit int
	// Logger receives the checkpointer's warnings. Default: slog.Default().
	Logger *slog.Logger
}

// checkpoints reports whether a checkpointer runs (and commits never
// checkpoint): a file, with a positive CheckpointInterval.
func (c Config) checkpoints() bool { return c.CheckpointInterval > 0 && c.Path != Memory }

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.BusyTimeout = cmp.Or(c.BusyTimeout, 5*time.Second)
	c.MaxReaders = cmp.Or(c.MaxReaders, 4)
	c.MaxTxAttempts = cmp.Or(c.MaxTxAttempts, 5)
	c.CachedStatements = cmp.Or(c.CachedStatements, defaultCachedStatements)
	c.CheckpointInterval = cmp.Or(c.CheckpointInterval, 100*time.Millisecond)
	c.RestartFrames = cmp.Or(c.RestartFrames, 16384)
	c.GroupCommit = cmp.Or(c.GroupCommit, 16)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	var errs []error
	switch {
	case c.Path == "":
		errs = append(errs, errors.New(`Path is empty: set it to the database file, or ":memory:"`))
	case strings.ContainsAny(c.Path, "?#") || strings.HasPrefix(c.Path, "file:"):
		errs = append(errs, fmt.Errorf("Path %q: want a plain file path, without '?', '#' or a file: prefix (the adapter sets the options)", c.Path))
	}
	if c.BusyTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("BusyTimeout is %s: want at least 1ms", c.BusyTimeout))
	}
	if c.MaxReaders < 1 {
		errs = append(errs, fmt.Errorf("MaxReaders is %d: want at least 1", c.MaxReaders))
	}
	if c.RestartFrames < 1 {
		errs = append(errs, fmt.Errorf("RestartFrames is %d: want at least 1", c.RestartFrames))
	}
	if c.CachedStatements < 1 {
		errs = append(errs, fmt.Errorf("CachedStatements is %d: want at least 1", c.CachedStatements))
	}
	if c.GroupCommit < 1 {
		errs = append(errs, fmt.Errorf("GroupCommit is %d: want at least 1", c.GroupCommit))
	}
	if c.MaxTxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxTxAttempts is %d: want at least 1", c.MaxTxAttempts))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite config: %w", err)
	}
	return nil
}

// DB is an SQLite database; it implements store.DB and store.Migratable.
type DB struct {
	writer    *sql.DB // one connection: every write and every transaction
	readers   *sql.DB // queries outside transactions; the writer for Memory
	cfg       Config
	closeOnce sync.Once
	ckpt      *checkpointer // nil for Memory or a negative CheckpointInterval
	group     *group        // runs the transactions on writer

	locksMu sync.Mutex
	locks   map[string]bool
}

// TryLock implements store.DB within this process.
func (db *DB) TryLock(_ context.Context, name string) (func(), bool, error) {
	db.locksMu.Lock()
	defer db.locksMu.Unlock()
	if db.locks == nil {
		db.locks = map[string]bool{}
	}
	if db.locks[name] {
		return nil, false, nil
	}
	db.locks[name] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			db.locksMu.Lock()
			delete(db.locks, name)
			db.locksMu.Unlock()
		})
	}, true, nil
}

var _ store.Migratable = (*DB)(nil)

// Open opens (creating if needed) the database at cfg.Path.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if spillErr != nil {
		cfg.Logger.Warn("sqlite: group commit's batches spill to temporary files past 64 kB, SQLite's default", "error", spillErr)
	}
	memory := cfg.Path == Memory
	if !memory {
		// Private: the store holds conversations and token hashes, and
		// SQLite gives the -wal and -shm files the database's mode.
		if err := datadir.CreatePrivate(cfg.Path); err != nil {
			return nil, fmt.Errorf("sqlite: create %s: %w", cfg.Path, err)
		}
	}

	g := &group{max: cfg.GroupCommit}
	wc, err := newConnector(dsn(cfg, false), cfg.CachedStatements, &g.rollbacks)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	writer := sql.OpenDB(wc)
	// A single writer connection makes writers queue in this process instead
	// of failing with SQLITE_BUSY, and keeps a Memory database alive.
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	g.writer = writer
	db := &DB{writer: writer, readers: writer, cfg: cfg, group: g}

	if err := db.checkWriter(ctx, memory); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	if !memory {
		rc, err := newConnector(dsn(cfg, true), cfg.CachedStatements, nil)
		if err != nil {
			writer.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
		}
		readers := sql.OpenDB(rc)
		readers.SetMaxOpenConns(cfg.MaxReaders)
		readers.SetMaxIdleConns(cfg.MaxReaders)
		if err := readers.PingContext(ctx); err != nil {
			readers.Close()
			writer.Close()
			return nil, fmt.Errorf("sqlite: open %s for reading: %w", cfg.Path, err)
		}
		db.readers = readers
		if cfg.checkpoints() {
			ckpt, err := startCheckpointer(ctx, cfg.Path, dsn(cfg, false), writer, cfg.CheckpointInterval, cfg.RestartFrames, cfg.Logger)
			if err != nil {
				readers.Close()
				writer.Close()
				return nil, fmt.Errorf("sqlite: open %s for checkpoints: %w", cfg.Path, err)
			}
			db.ckpt = ckpt
		}
	}
	return db, nil
}

// dsn returns the driver's data source name for the writer or the readers.
func dsn(cfg Config, reader bool) string {
	q := url.Values{}
	// busy_timeout comes first: the driver runs it before the other pragmas,
	// which may themselves need a lock.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if reader {
		// A write sent to a reader by mistake fails loudly instead of racing
		// the writer for the lock.
		q.Add("_pragma", "query_only(1)")
	} else {
		// WAL lets readers read while the writer writes; NORMAL sync is
		// durable across application crashes and what WAL recommends.
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		if cfg.checkpoints() {
			// The checkpointer copies the log; commits never do.
			q.Add("_pragma", "wal_autocheckpoint(0)")
		}
		// BEGIN IMMEDIATE takes the write lock at the start, so two writers
		// never both read and then deadlock upgrading to write.
		q.Set("_txlock", "immediate")
	}
	// Times come back in UTC; the adapter writes them itself (see arg).
	q.Set("_timezone", "UTC")
	q.Set("_time_format", "sqlite")
	// A plain path (no file: prefix): the driver takes its options off the
	// query and opens the path as it is.
	return cfg.Path + "?" + q.Encode()
}

// checkWriter opens the writer connection and checks that the options took.
func (db *DB) checkWriter(ctx context.Context, memory bool) error {
	var mode string
	if err := db.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if want := "wal"; !memory && !strings.EqualFold(mode, want) {
		return fmt.Errorf("journal_mode is %q, not %q: the file system does not support WAL", mode, want)
	}
	var fk int
	if err := db.writer.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return err
	}
	if fk != 1 {
		return errors.New("foreign keys are off after PRAGMA foreign_keys(1)")
	}
	return nil
}

// SQLDB returns the writer, for goose.
func (db *DB) SQLDB() *sql.DB { return db.writer }

// Dialect is store.SQLite.
func (db *DB) Dialect() store.Dialect { return store.SQLite }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.writer.PingContext(ctx); err != nil {
		return err
	}
	return db.readers.PingContext(ctx)
}

// Close closes the connections; it may be called twice.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		if db.ckpt != nil {
			err = db.ckpt.stop()
		}
		if db.readers != db.writer {
			err = errors.Join(err, db.readers.Close())
		}
		err = errors.Join(err, db.writer.Close())
		if db.ckpt != nil {
			// Last: closing it releases the process's locks on the file.
			err = errors.Join(err, db.ckpt.file.Close())
		}
	})
	return err
}

// Exec runs a statement on the writer, outside a transaction.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return querier{db.writer}.Exec(ctx, query, args...)
}

// Query runs a query outside a transaction: a read on a reader (see read),
// anything else (INSERT ... RETURNING, say) on the writer, under ctx (as
// every statement of the in-memory database, whose readers are the
// writer).
func (db *DB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	if pool := db.route(query); pool == db.writer {
		return querier{pool}.Query(ctx, query, args...)
	}
	conn, uctx, err := db.read(ctx)
	if err != nil {
		return nil, err
	}
	r, err := querier{conn}.Query(uctx, query, args...)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return connRows{r, conn}, nil
}

// QueryRow runs a single-row query outside a transaction, routed as Query.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if pool := db.route(query); pool == db.writer {
		return querier{pool}.QueryRow(ctx, query, args...)
	}
	conn, uctx, err := db.read(ctx)
	if err != nil {
		return errRow{err}
	}
	return connRow{querier{conn}.QueryRow(uctx, query, args...), conn}
}

// read takes a reader connection for a read outside a transaction, waiting
// for one as long as ctx lets it, and returns the context to run the read
// under: ctx without its cancellation. Once started, a read runs to its
// end. Under a context that can end, the driver starts a goroutine for
// each statement to interrupt it, and database/sql one for each query's
// rows to close them, each woken when the statement is done, where the
// turn path's reads take tens of microseconds: they took ten goroutines
// and as many wake-ups a turn. A read waiting for a lock (busy_timeout)
// waits the timeout out, not ctx; in WAL mode readers rarely wait.
func (db *DB) read(ctx context.Context) (*sql.Conn, context.Context, error) {
	conn, err := db.readers.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	return conn, context.WithoutCancel(ctx), nil
}

// connRows are the rows of a read on a connection of its own, which goes
// back to the pool when they close.
type connRows struct {
	store.Rows
	conn *sql.Conn
}

func (r connRows) Close() {
	r.Rows.Close()
	_ = r.conn.Close()
}

// connRow is connRows' row.
type connRow struct {
	store.Row
	conn *sql.Conn
}

func (r connRow) Scan(dest ...any) error {
	defer func() { _ = r.conn.Close() }()
	return r.Row.Scan(dest...)
}

func (db *DB) route(query string) *sql.DB {
	if readOnly(query) {
		return db.readers
	}
	return db.writer
}

// readOnly reports whether a statement surely only reads: it starts with
// SELECT, VALUES or EXPLAIN. A WITH may hide an INSERT ... RETURNING, so it
// goes to the writer, which can run anything.
func readOnly(query string) bool {
	s := query
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return false
			}
			s = s[i+1:]
			continue
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return false
			}
			s = s[i+2:]
			continue
		}
		break
	}
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end < 0 {
		end = len(s)
	}
	switch strings.ToUpper(s[:end]) {
	case "SELECT", "VALUES", "EXPLAIN":
		return true
	}
	return false
}

// Tx runs fn in a BEGIN IMMEDIATE transaction on the writer, committed
// together with those of concurrent callers (see group), and retried when
// another process keeps the database busy past BusyTimeout.
func (db *DB) Tx(ctx context.Context, fn func(tx store.Querier) error) error {
	for attempt := 1; ; attempt++ {
		err := db.group.tx(ctx, fn)
		if err == nil || !retryable(err) {
			return err
		}
		if attempt >= db.cfg.MaxTxAttempts {
			return fmt.Errorf("sqlite: transaction failed %d times: %w", attempt, err)
		}
		if errors.Is(err, errBatchLost) {
			continue // nothing to wait for
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}

// retryable reports whether err is SQLite's "busy" or "locked" (another
// connection held the lock for longer than the busy timeout), or a batch
// lost to another caller's failure.
func retryable(err error) bool {
	if errors.Is(err, errBatchLost) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// backoff returns a random wait before the attempt after the given one.
func backoff(attempt int) time.Duration {
	ceiling := min(10*time.Millisecond<<min(attempt-1, 10), 500*time.Millisecond)
	return time.Duration(rand.Int64N(int64(ceiling)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sqlQuerier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// querier adapts a database/sql handle or transaction to store.Querier.
type querier struct{ q sqlQuerier }

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	args, err := convertArgs(args)
	if err != nil {
		return 0, err
	}
	res, err := q.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q querier) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	args, err := convertArgs(args)
	if err != nil {
		return nil, err
	}
	r, err := q.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	args, err := convertArgs(args)
	if err != nil {
		return errRow{err}
	}
	return row{q.q.QueryRowContext(ctx, query, args...)}
}

type rows struct{ r *sql.Rows }

func (r rows) Next() bool             { return r.r.Next() }
func (r rows) Err() error             { return r.r.Err() }
func (r rows) Close()                 { _ = r.r.Close() }
func (r rows) Scan(dest ...any) error { return r.r.Scan(convertDest(dest)...) }

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(convertDest(dest)...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// timeLayout is how the adapter writes times: UTC, microseconds (what
// PostgreSQL keeps), fixed width, so that comparing two as text compares them
// as times, and in a form the driver parses back into time.Time.
const timeLayout = "2006-01-02 15:04:05.000000-07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// convertArgs returns args with times written as timeLayout text and
// store.Large and store.LargeBytes values compressed (see largeArg). The
// driver would write times itself, but with as many fractional digits as
// each time has, in its own zone: text that sorts wrongly.
func convertArgs(args []any) ([]any, error) {
	var out []any
	for i, a := range args {
		v, ok, err := arg(a)
		if err != nil {
			return nil, fmt.Errorf("sqlite: argument $%d: %w", i+1, err)
		}
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	if out == nil {
		return args, nil
	}
	return out, nil
}

// arg converts a store.Large, a store.LargeBytes or a time argument
// (time.Time, *time.Time, or a driver.Valuer such as sql.NullTime that
// yields one); ok is false for any other argument, which goes to the driver
// as it is.
func arg(a any) (v any, ok bool, err error) {
	switch t := a.(type) {
	case store.Large:
		return largeArg(t), true, nil
	case store.LargeBytes:
		return largeArg(t), true, nil
	case time.Time:
		return formatTime(t), true, nil
	case *time.Time:
		if t == nil {
			return nil, true, nil
		}
		return formatTime(*t), true, nil
	case driver.Valuer:
		dv, err := t.Value()
		if err != nil {
			return nil, false, err
		}
		if tt, isTime := dv.(time.Time); isTime {
			return formatTime(tt), true, nil
		}
		return dv, true, nil
	}
	return nil, false, nil
}

// convertDest replaces time destinations with scanners that also accept
// text (the driver makes time.Time only of columns declared as times, not
// of expressions such as MAX(created_at), which come back as text), and
// *store.Large and *store.LargeBytes ones with scanners that decompress.
func convertDest(dest []any) []any {
	var out []any
	for i, d := range dest {
		var s sql.Scanner
		switch t := d.(type) {
		case *store.Large:
			s = largeScanner{dst: (*[]byte)(t)}
		case *store.LargeBytes:
			s = largeScanner{dst: (*[]byte)(t)}
		case *time.Time:
			s = &timeScanner{dst: t}
		case **time.Time:
			s = &timeScanner{ptr: t}
		case *sql.NullTime:
			s = &timeScanner{null: t}
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), dest...)
		}
		out[i] = s
	}
	if out == nil {
		return dest
	}
	return out
}

// timeScanner scans a time into exactly one of its destinations.
type timeScanner struct {
	dst  *time.Time
	ptr  **time.Time
	null *sql.NullTime
}

func (s *timeScanner) Scan(src any) error {
	var t time.Time
	switch v := src.(type) {
	case nil:
		switch {
		case s.ptr != nil:
			*s.ptr = nil
		case s.null != nil:
			*s.null = sql.NullTime{}
		default:
			return errors.New("sqlite: cannot scan NULL into *time.Time: use **time.Time or sql.NullTime")
		}
		return nil
	case time.Time:
		t = v
	case string:
		p, err := parseTime(v)
		if err != nil {
			return err
		}
		t = p
	case []byte:
		p, err := parseTime(string(v))
		if err != nil {
			return err
		}
		t = p
	default:
		return fmt.Errorf("sqlite: cannot scan %T into a time", src)
	}
	t = t.UTC()
	switch {
	case s.ptr != nil:
		*s.ptr = &t
	case s.null != nil:
		*s.null = sql.NullTime{Time: t, Valid: true}
	default:
		*s.dst = t
	}
	return nil
}

// parseLayouts are the text forms of times: the adapter's own, then what
// SQLite's date functions write (in UTC).
var parseLayouts = []string{
	timeLayout,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02",
}

func parseTime(s string) (time.Time, error) {
	for _, l := range parseLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("sqlite: cannot parse %s as a time", strconv.Quote(s))
}
