package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// others' in place. A member's statements are never interrupted by its
// context (an interrupted write rolls back SQLite's whole transaction): a
// canceled context fails the next statement instead, before it runs.
type group struct {
	writer *sql.DB
	max    int // members in a batch

	mu    sync.Mutex
	busy  bool      // a member holds the connection
	queue []*member // waiting for it, first come first served
	cur   *batch    // the open transaction, if any

	commits, committed atomic.Int64 // batches committed, and their members
}

// batch is one transaction and its members.
type batch struct {
	tx      *sql.Tx
	members int           // whose work is in tx
	done    chan struct{} // closed once tx is committed or abandoned
	err     error         // of the commit, or errBatchLost; set before done
}

type member struct {
	ready chan struct{} // closed when the connection is handed over
}

// errBatchLost is what a member of a batch gets when another member's
// failure rolled back the whole transaction (SQLite does so on some errors:
// a full disk, an I/O error, RAISE(ROLLBACK)): its work is gone and is done
// again (Tx retries).
var errBatchLost = errors.New("sqlite: the transaction was rolled back by another caller's failure in the same batch")

func newGroup(writer *sql.DB, max int) *group {
	return &group{writer: writer, max: max}
}

// tx runs fn in the current batch, or a new one, and returns fn's error or
// the batch's.
func (g *group) tx(ctx context.Context, fn func(tx store.Querier) error) (err error) {
	if err := g.acquire(ctx); err != nil {
		return err
	}
	b := g.cur
	if b == nil {
		// context.WithoutCancel: the transaction outlives this caller
		// when others join it.
		tx, err := g.writer.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			g.release(nil)
			return fmt.Errorf("sqlite: begin: %w", err)
		}
		b = &batch{tx: tx, done: make(chan struct{})}
		g.cur = b
	}
	q := querier{batchTx{b.tx}}
	first := b.members == 0
	if !first {
		if _, err := q.Exec(context.Background(), "SAVEPOINT member"); err != nil {
			_ = g.finish(b) // the others' work
			return fmt.Errorf("sqlite: savepoint: %w", err)
		}
	}
	defer func() {
		p := recover()
		if p != nil {
			err = fmt.Errorf("sqlite: transaction panicked: %v", p)
		}
		if err == nil && !first {
			if _, rerr := q.Exec(context.Background(), "RELEASE member"); rerr != nil {
				err = fmt.Errorf("sqlite: release savepoint: %w", rerr)
			}
		}
		if err != nil {
			err = g.undo(b, q, first, err)
		} else {
			b.members++
			err = g.finish(b)
		}
		if p != nil {
			panic(p)
		}
	}()
	return fn(q)
}

// undo rolls back a member's failed work, and returns its error. The first
// member's is the whole transaction, which ends the batch; a later member's
// goes back to its savepoint, unless SQLite rolled the whole transaction
// back already, which fails the batch.
func (g *group) undo(b *batch, q querier, first bool, err error) error {
	ctx := context.Background()
	if first {
		g.abandon(b, errBatchLost)
		return err
	}
	if _, rerr := q.Exec(ctx, "ROLLBACK TO member"); rerr != nil {
		g.abandon(b, errBatchLost)
		return err
	}
	if _, rerr := q.Exec(ctx, "RELEASE member"); rerr != nil {
		g.abandon(b, errBatchLost)
		return err
	}
	// The others' work stands: commit it, or leave it to the next.
	if ferr := g.finish(b); ferr != nil && !errors.Is(ferr, errBatchLost) {
		return errors.Join(err, ferr)
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
	g.mu.Lock()
	for i, w := range g.queue {
		if w == m {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.mu.Unlock()
			return ctx.Err()
		}
	}
	g.mu.Unlock()
	// Handed the connection as ctx ended: pass it on, or commit the
	// batch open on it.
	<-m.ready
	if b := g.cur; b != nil {
		_ = g.finish(b)
	} else {
		g.release(nil)
	}
	return ctx.Err()
}

// batchTx runs a member's statements in the batch's transaction, without
// letting its context interrupt them.
type batchTx struct{ tx *sql.Tx }

func (t batchTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return t.tx.ExecContext(context.WithoutCancel(ctx), query, args...)
}

func (t batchTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return t.tx.QueryContext(context.WithoutCancel(ctx), query, args...)
}

func (t batchTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	// A *sql.Row cannot be made with an error: a canceled context's
	// statement runs, and fn sees the cancellation at its next Exec or
	// Query (or its own check).
	return t.tx.QueryRowContext(context.WithoutCancel(ctx), query, args...)
}

// TxStats counts the transactions Tx committed and the commits they took:
// Transactions/Commits is the mean batch of group commit.
type TxStats struct{ Transactions, Commits int64 }

// TxStats returns the counts since the DB opened.
func (db *DB) TxStats() TxStats {
	return TxStats{Transactions: db.group.committed.Load(), Commits: db.group.commits.Load()}
}
