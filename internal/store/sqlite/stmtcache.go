package sqlite

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"reflect"
	"sync/atomic"

	"modernc.org/sqlite"
)

// The driver parses a statement each time it runs one (a third of SQLite's
// work on a turn was its parser). The adapter keeps the statements of each
// connection prepared instead, as pgx does on PostgreSQL: a connector wraps
// every connection of the driver in a cachingConn, which runs Exec and Query
// on a prepared statement kept by query text. database/sql uses a connection
// from one goroutine at a time, so a connection's cache needs no lock.

// defaultCachedStatements bounds the prepared statements kept per connection.
const defaultCachedStatements = 256

// connector opens the driver's connections (through the driver's own
// connector: the driver registered as "sqlite", with whatever functions and
// hooks are registered on it), each with a statement cache.
//
// rollbacks, when not nil, counts the transactions SQLite rolls back on the
// connections (explicitly, or by itself after an error: see group).
type connector struct {
	driver.Connector
	size      int
	rollbacks *atomic.Int64
}

func newConnector(dsn string, size int, rollbacks *atomic.Int64) (*connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return &connector{Connector: c, size: size, rollbacks: rollbacks}, nil
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if c.rollbacks != nil {
		h, ok := conn.(interface{ RegisterRollbackHook(sqlite.RollbackHookFn) })
		if !ok {
			_ = conn.Close()
			return nil, errors.New("sqlite: the driver's connection has no rollback hook")
		}
		h.RegisterRollbackHook(func() { c.rollbacks.Add(1) })
	}
	return newCachingConn(conn, c.size)
}

// innerConn is what the driver's connections implement.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// innerStmt is what the driver's statements implement.
type innerStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// cachingConn is a driver connection that keeps its statements prepared, the
// least recently used dropped past size.
type cachingConn struct {
	innerConn
	size  int
	lru   list.List // of *cachedStmt, most recently used first
	stmts map[string]*list.Element
}

// cachedStmt is a prepared statement of one connection. busy: rows of it are
// open, so it cannot run again until they close; dropped: it left the cache
// while busy, and is closed with its rows.
type cachedStmt struct {
	query   string
	st      innerStmt
	busy    bool
	dropped bool
}

func newCachingConn(conn driver.Conn, size int) (driver.Conn, error) {
	ic, ok := conn.(innerConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("sqlite: the driver's connection lacks a database/sql interface the adapter needs")
	}
	return &cachingConn{innerConn: ic, size: size, stmts: map[string]*list.Element{}}, nil
}

// stmt returns the prepared statement of query, preparing and keeping it on
// first use. ok is false when the statement is busy with open rows (a query
// run again while its previous rows are still being read): the caller then
// runs the query unprepared.
func (c *cachingConn) stmt(ctx context.Context, query string) (cs *cachedStmt, ok bool, err error) {
	if e, hit := c.stmts[query]; hit {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, false, nil
		}
		c.lru.MoveToFront(e)
		return cs, true, nil
	}
	ds, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	st, isInner := ds.(innerStmt)
	if !isInner {
		_ = ds.Close()
		return nil, false, nil
	}
	cs = &cachedStmt{query: query, st: st}
	c.stmts[query] = c.lru.PushFront(cs)
	for c.lru.Len() > c.size {
		c.drop(c.lru.Back())
	}
	return cs, true, nil
}

// drop takes a statement out of the cache and closes it, or leaves it to its
// open rows to close.
func (c *cachingConn) drop(e *list.Element) {
	cs := c.lru.Remove(e).(*cachedStmt)
	delete(c.stmts, cs.query)
	if cs.busy {
		cs.dropped = true
		return
	}
	_ = cs.st.Close()
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, ok, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if !ok {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	return cs.st.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, ok, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if !ok {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	r, err := cs.st.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return &cachedRows{Rows: r, cs: cs}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for e := c.lru.Front(); e != nil; e = e.Next() {
		if cs := e.Value.(*cachedStmt); !cs.busy {
			errs = append(errs, cs.st.Close())
		}
	}
	c.lru.Init()
	clear(c.stmts)
	return errors.Join(append(errs, c.innerConn.Close())...)
}

// cachedRows are the rows of a cached statement: closing them frees it.
type cachedRows struct {
	driver.Rows
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if cs := r.cs; cs != nil {
		r.cs = nil
		cs.busy = false
		if cs.dropped {
			err = errors.Join(err, cs.st.Close())
		}
	}
	return err
}

// The column type interfaces of the driver's rows, for sql.Rows.ColumnTypes.

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.Rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(i)
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	return r.Rows.(driver.RowsColumnTypeLength).ColumnTypeLength(i)
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	return r.Rows.(driver.RowsColumnTypeNullable).ColumnTypeNullable(i)
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	return r.Rows.(driver.RowsColumnTypePrecisionScale).ColumnTypePrecisionScale(i)
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	return r.Rows.(driver.RowsColumnTypeScanType).ColumnTypeScanType(i)
}

// The driver's rows have every column type interface.
var _ interface {
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
} = (*cachedRows)(nil)
