package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/praetorhq/praetor/internal/store"
)

// Config is the adapter's configuration.
type Config struct {
	// URL is the connection string, as a URL (postgres://user:pass@host:5432/db?sslmode=disable)
	// or as keyword=value pairs. Required. Query parameters the server knows,
	// such as search_path, are set on every connection.
	URL string
	// MaxConns bounds the connection pool. Default 10.
	MaxConns int32
	// ConnectTimeout bounds Open's first connection, and every new one when
	// the URL sets no connect_timeout. Default 10s.
	ConnectTimeout time.Duration
	// MaxTxAttempts is how many times Tx runs fn when PostgreSQL reports a
	// serialization failure or a deadlock. Default 10.
	MaxTxAttempts int
	// TCPUserTimeout is how long the server may leave unacknowledged what a
	// connection sent it, a statement or a keepalive probe, before the
	// connection is dropped as dead (TCP_USER_TIMEOUT on Linux; elsewhere
	// keepalive probes alone, for idle connections). A database that stops
	// answering without closing its connections (a partition, a frozen
	// host) then fails the statements waiting on it after about this long,
	// instead of the kernel's 15 minutes; a statement that runs long on a
	// server that is there is not cut short. The URL's tcp_user_timeout
	// (milliseconds, as libpq's; 0 leaves it to the kernel) wins. Default 30s.
	TCPUserTimeout time.Duration

	// dial, set by tests, dials for the pool with the dialer Open made.
	dial func(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error)
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.MaxConns = cmp.Or(c.MaxConns, 10)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, 10*time.Second)
	c.MaxTxAttempts = cmp.Or(c.MaxTxAttempts, 10)
	c.TCPUserTimeout = cmp.Or(c.TCPUserTimeout, 30*time.Second)
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is empty: set it to the database's connection string (DATABASE_URL)"))
	}
	if c.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("MaxConns is %d: want at least 1", c.MaxConns))
	}
	if c.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ConnectTimeout is %s: want more than 0", c.ConnectTimeout))
	}
	if c.MaxTxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxTxAttempts is %d: want at least 1", c.MaxTxAttempts))
	}
	if c.TCPUserTimeout <= 0 {
		errs = append(errs, fmt.Errorf("TCPUserTimeout is %s: want more than 0", c.TCPUserTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("postgres config: %w", err)
	}
	return nil
}

// DB is a PostgreSQL database; it implements store.DB and store.Migratable.
type DB struct {
	pool      *pgxpool.Pool
	sqldb     *sql.DB
	cfg       Config
	closeOnce sync.Once
}

var _ store.Migratable = (*DB)(nil)

// TryLock implements store.DB with a session advisory lock on a connection
// held until unlock. Advisory locks span the database; the key names the
// schema the connection works in (current_schema(), read with the lock, so
// a schema created after Open counts), so that stores in two schemas of one
// database (tests, tenants apart) do not take each other's locks.
func (db *DB) TryLock(ctx context.Context, name string) (func(), bool, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", name, err)
	}
	var (
		key int64
		ok  bool
	)
	if err := conn.QueryRow(ctx, `SELECT k, pg_try_advisory_lock(k)
		FROM (SELECT hashtextextended('praetor/' || coalesce(current_schema(), '') || '/' || $1, 0) AS k) AS l`,
		name).Scan(&key, &ok); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("lock %s: %w", name, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
				// The lock dies with the session: drop the connection.
				_ = conn.Conn().Close(uctx)
			}
			conn.Release()
		})
	}, true, nil
}

// Open connects to PostgreSQL and checks that it answers.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		// pgx's parse errors quote the connection string with its password
		// masked; they say which part is wrong.
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	if pc.ConnConfig.ConnectTimeout == 0 { // the URL's connect_timeout wins
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	}
	userTimeout := cfg.TCPUserTimeout
	if v, ok := pc.ConnConfig.RuntimeParams["tcp_user_timeout"]; ok { // the URL's wins
		// libpq's parameter, not the server's setting of the same name
		delete(pc.ConnConfig.RuntimeParams, "tcp_user_timeout")
		ms, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return nil, fmt.Errorf("postgres: parse URL: tcp_user_timeout is %q: want milliseconds", v)
		}
		userTimeout = time.Duration(ms) * time.Millisecond
	}
	d := dialer(userTimeout)
	pc.ConnConfig.DialFunc = d.DialContext
	if set := serverKeepalive(userTimeout, pc.ConnConfig.RuntimeParams); set != "" {
		pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			if _, err := c.Exec(ctx, set); err != nil {
				return fmt.Errorf("postgres: set the server's keepalive: %w", err)
			}
			return nil
		}
	}
	if cfg.dial != nil {
		pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return cfg.dial(ctx, d, network, addr)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d database %s: %w",
			pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database, err)
	}
	return &DB{pool: pool, sqldb: stdlib.OpenDBFromPool(pool), cfg: cfg}, nil
}

// serverKeepalive returns the statement that gives the server's end of a
// connection the bound its client end has (userTimeout; "" for none): a
// replica cut off from the database mid-work would otherwise leave its
// session, with its locks (the relay's advisory lock: no relay would lead;
// a transaction's row locks), to the server's kernel keepalive, some two
// hours. The server's settings of the same names in the URL (sent at
// start, as parameters or in its options: -c name=value, --name=value)
// win. A server that cannot set one (a Unix socket, a system without the
// option) ignores it.
func serverKeepalive(userTimeout time.Duration, params map[string]string) string {
	if userTimeout <= 0 {
		return ""
	}
	options := strings.ReplaceAll(params["options"], "-", "_") // --tcp-user-timeout=… names tcp_user_timeout
	secs := func(d time.Duration) int64 { return max(int64(d/time.Second), 1) }
	var sets []setting
	for _, kv := range []setting{
		{"tcp_keepalives_idle", secs(userTimeout / 2)},
		{"tcp_keepalives_interval", secs(userTimeout / 10)},
		{"tcp_keepalives_count", 5},
		{"tcp_user_timeout", userTimeout.Milliseconds()},
	} {
		if _, given := params[kv.name]; !given && !strings.Contains(options, kv.name+"=") {
			sets = append(sets, kv)
		}
	}
	return setSettings(sets)
}

// setting is a server setting of a whole number.
type setting struct {
	name  string
	value int64
}

// setSettings returns the statement that sets each of sets for the session
// ("" for none). A setting the server does not have (tcp_user_timeout
// before PostgreSQL 12) is left out rather than failing the connection.
func setSettings(sets []setting) string {
	if len(sets) == 0 {
		return ""
	}
	rows := make([]string, len(sets))
	for i, s := range sets {
		rows[i] = fmt.Sprintf("('%s', '%d')", s.name, s.value)
	}
	return `SELECT set_config(s.name, v.value, false) FROM (VALUES ` + strings.Join(rows, ", ") +
		`) AS v(name, value) JOIN pg_settings s ON s.name = v.name`
}

// dialer returns the dialer of the pool's connections. With userTimeout (0
// leaves the kernel's defaults), they send keepalive probes once idle for
// half of it, and the kernel drops one whose data or probes go
// unacknowledged that long.
func dialer(userTimeout time.Duration) *net.Dialer {
	if userTimeout == 0 {
		return &net.Dialer{}
	}
	return &net.Dialer{
		// Probes for the other half: the count is what ends a connection
		// where TCP_USER_TIMEOUT is not (Linux ignores it once that is set).
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: userTimeout / 2, Interval: userTimeout / 10, Count: 5},
		Control: func(network, _ string, c syscall.RawConn) error {
			if !strings.HasPrefix(network, "tcp") { // a Unix socket has no TCP options
				return nil
			}
			return setUserTimeout(c, userTimeout)
		},
	}
}

// Pool returns the underlying pool, for what the port does not cover (COPY,
// LISTEN). It belongs to the DB.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// SQLDB returns a database/sql handle on the pool, for goose.
func (db *DB) SQLDB() *sql.DB { return db.sqldb }

// Dialect is store.Postgres.
func (db *DB) Dialect() store.Dialect { return store.Postgres }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Close closes the pool; it may be called twice.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		err = db.sqldb.Close()
		db.pool.Close()
	})
	return err
}

// Exec runs a statement outside a transaction.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return querier{db.pool}.Exec(ctx, query, args...)
}

// Query runs a query outside a transaction.
func (db *DB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	return querier{db.pool}.Query(ctx, query, args...)
}

// QueryRow runs a single-row query outside a transaction.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	return querier{db.pool}.QueryRow(ctx, query, args...)
}

// Tx runs fn in a SERIALIZABLE transaction, retried on serialization
// failures and deadlocks up to MaxTxAttempts times in all.
func (db *DB) Tx(ctx context.Context, fn func(tx store.Querier) error) error {
	for attempt := 1; ; attempt++ {
		err := db.tx(ctx, fn)
		if err == nil || !store.SerializationFailure(err) {
			return err
		}
		if attempt >= db.cfg.MaxTxAttempts {
			return fmt.Errorf("postgres: transaction failed %d times: %w", attempt, err)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}

func (db *DB) tx(ctx context.Context, fn func(tx store.Querier) error) (err error) {
	tx := &lazyTx{pool: db.pool}
	returned := false
	defer func() {
		// fn panicked, or ended its goroutine (runtime.Goexit, as a test's
		// t.Fatal does): the transaction gives its connection back.
		if !returned {
			tx.rollback(context.WithoutCancel(ctx))
		}
	}()
	err = fn(querier{tx})
	returned = true
	if err != nil {
		tx.rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

// lazyTx is a SERIALIZABLE transaction begun by its first statement: the
// begin goes in one batch with that statement (pgx.Batch.BeginTx), which
// saves a round trip a transaction. Until then it holds no connection.
type lazyTx struct {
	pool *pgxpool.Pool
	tx   pgx.Tx // nil until the first statement
}

// begin sends the begin and the first statement; the caller reads the
// statement's result from the batch and closes it.
func (t *lazyTx) begin(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.Serializable})
	b.Queue(sql, args...)
	br := t.pool.SendBatch(ctx, b)
	t.tx = br.Tx()
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("postgres: begin (with the first statement): %w", err)
	}
	return br, nil
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.tx != nil {
		return t.tx.Exec(ctx, sql, args...)
	}
	br, err := t.begin(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.tx != nil {
		return t.tx.Query(ctx, sql, args...)
	}
	br, err := t.begin(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: r, br: br}, nil
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.tx != nil {
		return t.tx.QueryRow(ctx, sql, args...)
	}
	br, err := t.begin(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{r: br.QueryRow(), br: br}
}

func (t *lazyTx) commit(ctx context.Context) error {
	if t.tx == nil {
		return nil // nothing ran: there is no transaction
	}
	return t.tx.Commit(ctx)
}

func (t *lazyTx) rollback(ctx context.Context) {
	if t.tx != nil {
		_ = t.tx.Rollback(ctx)
	}
}

// batchRows are the rows of a transaction's first statement: closing them,
// or reading them to the end, closes its batch, which frees the connection
// for the next statement.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err, r.br = r.br.Close(), nil
	}
}

// Err, called once the rows are read, closes them too, so that it also
// reports the batch's own error.
func (r *batchRows) Err() error {
	r.Close()
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is the row of a transaction's first statement; Scan closes its
// batch.
type batchRow struct {
	r  pgx.Row
	br pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// backoff returns a random wait before the attempt after the given one:
// full jitter under 2 ms doubling to at most 100 ms, so the transactions that
// collided do not collide again in step.
func backoff(attempt int) time.Duration {
	ceiling := min(2*time.Millisecond<<min(attempt-1, 10), 100*time.Millisecond)
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

// pgxQuerier is what a pool and a transaction have in common.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// querier adapts a pool or a transaction to store.Querier.
type querier struct{ q pgxQuerier }

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, query, convertArgs(args)...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q querier) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	r, err := q.q.Query(ctx, query, convertArgs(args)...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	return row{q.q.QueryRow(ctx, query, convertArgs(args)...)}
}

type rows struct{ pgx.Rows }

func (r rows) Scan(dest ...any) error {
	if err := r.Rows.Scan(convertDest(dest)...); err != nil {
		return err
	}
	utcDest(dest)
	return nil
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	if err := r.r.Scan(convertDest(dest)...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	}
	utcDest(dest)
	return nil
}

// convertArgs returns args with times in UTC, so that a TIMESTAMP (without
// time zone) column stores the same instant as a TIMESTAMPTZ one (pgx
// writes a time's wall clock there, in whatever zone it has), and
// store.Large values as the text they are (a string, which every query
// exec mode sends as text, where []byte would be sent as bytea) and
// store.LargeBytes ones as bytes: the server compresses large values
// itself.
func convertArgs(args []any) []any {
	var out []any
	for i, a := range args {
		var v any
		switch t := a.(type) {
		case store.Large:
			if t != nil {
				v = string(t)
			}
		case store.LargeBytes:
			v = []byte(t)
		case time.Time:
			v = t.UTC()
		case *time.Time:
			if t == nil {
				continue
			}
			u := t.UTC()
			v = &u
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	if out == nil {
		return args
	}
	return out
}

// convertDest has pgx scan a *store.Large or *store.LargeBytes as the
// *[]byte it is.
func convertDest(dest []any) []any {
	var out []any
	for i, d := range dest {
		var b *[]byte
		switch l := d.(type) {
		case *store.Large:
			b = (*[]byte)(l)
		case *store.LargeBytes:
			b = (*[]byte)(l)
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), dest...)
		}
		out[i] = b
	}
	if out == nil {
		return dest
	}
	return out
}

// utcDest puts the times just scanned in UTC: pgx reads TIMESTAMPTZ in the
// local zone, and callers compare and serialize times as UTC.
func utcDest(dest []any) {
	for _, d := range dest {
		switch t := d.(type) {
		case *time.Time:
			if !t.IsZero() {
				*t = t.UTC()
			}
		case **time.Time:
			if *t != nil {
				u := (*t).UTC()
				*t = &u
			}
		case *sql.NullTime:
			if t.Valid {
				t.Time = t.Time.UTC()
			}
		}
	}
}
