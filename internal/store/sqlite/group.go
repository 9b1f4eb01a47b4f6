package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/praetorhq/praetor/internal/store"
)

// group commits the transactions of this process's concurrent callers
// together: group commit.
//
// Every transaction runs on the one writer connection, one at a time. A
// caller that finishes its work while others wait for the connection leaves
// the transaction open and hands the connection to the next, whose work runs
// in the same transaction inside a savepoint of its own; the last of a batch
// commits for all, and each returns once that commit is done. A batch's
// pages written by several members (the outbox's last leaf and its indexes,
// the inbox's) go to the log once, and a batch pays for one commit: under
// load, batches grow and the writer drains its queue faster; idle, every
// transaction is a batch of one, committed at once.
//
// A member's failed work is rolled back to its savepoint and leaves the
// others' in place. A member whose statement made SQLite roll back the whole
// transaction (seen by the connection's rollback hook) gets its error, and
// the others theirs to run again (errBatchLost). A member's statements are
// never interrupted by its context (an interrupted write rolls back SQLite's
// whole transaction): a canceled context fails the next statement instead,
// before it runs.
type group struct {
	writer *sql.DB
	max    int // members in a batch

	mu    sync.Mutex
	busy  bool      // a member holds the connection
	queue []*member // waiting for it, first come first served
	cur   *batch    // the open transaction, if any

	// rollbacks counts the transactions rolled back on the writer (its
	// rollback hook, see connector): explicitly, or by SQLite itself after
	// some errors (a full disk, an I/O error, RAISE(ROLLBACK)).
	rollbacks          atomic.Int64
	commits, committed atomic.Int64 // batches committed, and their members

	// canceled, a test hook, runs when a waiter's context has ended, before
	// it leaves the queue.
	canceled func()
}

// batch is one transaction and its members.
type batch struct {
	conn      *sql.Conn
	tx        *sql.Tx
	rollbacks int64         // group.rollbacks at BEGIN
	members   int           // whose work is in tx
	done      chan struct{} // closed once tx is committed or rolled back
	err       error         // of the commit, or errBatchLost; set before done
}

type member struct {
	ready chan struct{} // closed when the connection is handed over
}

// errBatchLost is what a member of a batch gets when the transaction its
// work was in did not commit: another member's failure rolled it back, or
// its commit failed after this member's own work had failed on the others'
// (which it could see). Tx runs its function again.
var errBatchLost = errors.New("sqlite: the transaction was lost with the batch it shared with other callers (rolled back by another's failure, or its commit failed)")

// tx runs fn in the open batch, or a new one, and returns fn's error or the
// batch's.
func (g *group) tx(ctx context.Context, fn func(tx store.Querier) error) (err error) {
	if err := g.acquire(ctx); err != nil {
		return err
	}
	b := g.cur
	if b == nil {
		if b, err = g.begin(ctx); err != nil {
			g.release(nil)
			return err
		}
	}
	first := b.members == 0
	if !first {
		if _, err := (querier{b.tx}).Exec(context.Background(), "SAVEPOINT member"); err != nil {
			_ = g.finish(b) // the others' work
			return fmt.Errorf("sqlite: savepoint: %w", err)
		}
	}
	returned := false
	defer func() {
		p := recover()
		switch {
		case p != nil:
			err = fmt.Errorf("sqlite: transaction panicked: %v", p)
		case !returned:
			err = errors.New("sqlite: the transaction's function did not return (runtime.Goexit)")
		}
		err = g.end(b, first, err)
		if p != nil {
			panic(p)
		}
	}()
	err = fn(memberQuerier{g, b})
	returned = true
	return err
}

// begin opens a batch on the writer connection, waiting for it (held by a
// statement outside transactions, or by the checkpointer) as long as ctx
// lets it.
func (g *group) begin(ctx context.Context) (*batch, error) {
	conn, err := g.writer.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: begin: %w", err)
	}
	// context.WithoutCancel: the transaction outlives this caller when
	// others join it.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("sqlite: begin: %w", err)
	}
	g.cur = &batch{conn: conn, tx: tx, rollbacks: g.rollbacks.Load(), done: make(chan struct{})}
	return g.cur, nil
}

// end closes a member's part of batch b, its function having returned err:
// its work kept and the batch committed or handed on, or its work undone.
// It returns what Tx returns to the member.
func (g *group) end(b *batch, first bool, err error) error {
	if g.rollbacks.Load() != b.rollbacks {
		// SQLite rolled the whole transaction back, the others' work with
		// it, in one of this member's statements.
		g.abandon(b, errBatchLost)
		if err == nil {
			return errors.New("sqlite: the transaction was rolled back by a statement whose error its function did not return")
		}
		return err
	}
	if first {
		if err != nil {
			g.abandon(b, errBatchLost) // nobody else's work in it
			return err
		}
		b.members++
		return g.finish(b)
	}
	q, bg := querier{b.tx}, context.Background()
	if err == nil {
		_, rerr := q.Exec(bg, "RELEASE member")
		if rerr == nil {
			b.members++
			return g.finish(b)
		}
		err = fmt.Errorf("sqlite: release savepoint: %w", rerr)
	}
	if _, rerr := q.Exec(bg, "ROLLBACK TO member"); rerr != nil {
		g.abandon(b, errBatchLost)
		return err
	}
	if _, rerr := q.Exec(bg, "RELEASE member"); rerr != nil {
		g.abandon(b, errBatchLost)
		return err
	}
	if ferr := g.finish(b); ferr != nil {
		// Its function saw the others' work, which did not commit: its
		// failure may have been on that work.
		return fmt.Errorf("%w (its own error, on work since rolled back: %w)", errBatchLost, err)
	}
	return err
}

// finish hands the connection on with the batch open when someone waits
// and the batch has room, and waits for the commit; else it commits.
func (g *group) finish(b *batch) error {
	g.mu.Lock()
	if len(g.queue) > 0 && b.members < g.max {
		next := g.queue[0]
		g.queue = g.queue[1:]
		g.mu.Unlock()
		close(next.ready)
		<-b.done
		return b.err
	}
	g.mu.Unlock()
	if err := b.tx.Commit(); err != nil {
		b.err = fmt.Errorf("sqlite: commit: %w", err)
	} else {
		g.commits.Add(1)
		g.committed.Add(int64(b.members))
	}
	g.release(b)
	return b.err
}

// abandon rolls the batch back: its members that wait get err.
func (g *group) abandon(b *batch, err error) {
	_ = b.tx.Rollback()
	b.err = err
	g.release(b)
}

// release ends the batch b (nil: none began), wakes its members and hands
// the connection to the next caller, if any.
func (g *group) release(b *batch) {
	if b != nil {
		_ = b.conn.Close() // back to the pool
	}
	g.mu.Lock()
	g.cur = nil
	var next *member
	if len(g.queue) > 0 {
		next, g.queue = g.queue[0], g.queue[1:]
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	if b != nil {
		close(b.done)
	}
	if next != nil {
		close(next.ready)
	}
}

// acquire waits for the connection, or for ctx to end.
func (g *group) acquire(ctx context.Context) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	m := &member{ready: make(chan struct{})}
	g.queue = append(g.queue, m)
	g.mu.Unlock()
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
	}
	if g.canceled != nil {
		g.canceled()
	}
	g.mu.Lock()
	if i := slices.Index(g.queue, m); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.mu.Unlock()
		return ctx.Err()
	}
	g.mu.Unlock()
	// Handed the connection as ctx ended: commit the batch open on it, or
	// pass it on.
	<-m.ready
	if b := g.cur; b != nil {
		_ = g.finish(b)
	} else {
		g.release(nil)
	}
	return ctx.Err()
}

// memberQuerier runs a member's statements in the batch's transaction. A
// member's context never interrupts a statement (an interrupted write rolls
// back SQLite's whole transaction, the others' work with it): once it has
// ended, the next statement fails before it runs. Once SQLite has rolled
// the transaction back, every statement fails: it would run outside any
// transaction, committed on its own.
type memberQuerier struct {
	g *group
	b *batch
}

// ready returns why the member's next statement must not run, if it must
// not.
func (m memberQuerier) ready(ctx context.Context) error {
	if m.g.rollbacks.Load() != m.b.rollbacks {
		return errRolledBack
	}
	return ctx.Err()
}

// errRolledBack fails the statements of a member after SQLite rolled its
// transaction back.
var errRolledBack = errors.New("sqlite: the transaction was rolled back after an error in an earlier statement")

func (m memberQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := m.ready(ctx); err != nil {
		return 0, err
	}
	return querier{m.b.tx}.Exec(context.WithoutCancel(ctx), query, args...)
}

func (m memberQuerier) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	if err := m.ready(ctx); err != nil {
		return nil, err
	}
	return querier{m.b.tx}.Query(context.WithoutCancel(ctx), query, args...)
}

func (m memberQuerier) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if err := m.ready(ctx); err != nil {
		return errRow{err}
	}
	return querier{m.b.tx}.QueryRow(context.WithoutCancel(ctx), query, args...)
}

// TxStats counts the transactions Tx committed and the commits they took:
// Transactions/Commits is the mean batch of group commit.
type TxStats struct{ Transactions, Commits int64 }

// TxStats returns the counts since the DB opened.
func (db *DB) TxStats() TxStats {
	return TxStats{Transactions: db.group.committed.Load(), Commits: db.group.commits.Load()}
}
