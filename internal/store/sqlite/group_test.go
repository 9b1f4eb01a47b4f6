package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/praetorhq/praetor/internal/store"
)

// openGroup opens a database with a table t (v INTEGER UNIQUE) and a
// trigger that rolls the whole transaction back on inserting 666, as SQLite
// itself does on a full disk or an I/O error.
func openGroup(t *testing.T, groupCommit int) *DB {
	t.Helper()
	db, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "group.db"), GroupCommit: groupCommit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, ddl := range []string{`CREATE TABLE t (v INTEGER UNIQUE)`,
		`CREATE TRIGGER boom BEFORE INSERT ON t WHEN NEW.v = 666 BEGIN SELECT RAISE(ROLLBACK, 'boom'); END`} {
		if _, err := db.Exec(t.Context(), ddl); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func insert(ctx context.Context, tx store.Querier, v int) error {
	_, err := tx.Exec(ctx, `INSERT INTO t (v) VALUES ($1)`, v)
	return err
}

func values(t *testing.T, db *DB) []int {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT v FROM t ORDER BY v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

// queued waits until n callers wait for the writer.
func queued(t *testing.T, db *DB, n int) {
	t.Helper()
	if got, ok := waitQueued(db, n); !ok {
		t.Fatalf("%d callers wait for the writer, want %d", got, n)
	}
}

// waitQueued waits, for 10 seconds at most, until n callers wait for the
// writer, and returns how many do.
func waitQueued(db *DB, n int) (int, bool) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		db.group.mu.Lock()
		got := len(db.group.queue)
		db.group.mu.Unlock()
		if got == n {
			return got, true
		}
		if time.Now().After(deadline) {
			return got, false
		}
	}
}

// wait waits for wg, failing the test if it takes a minute: a bug that
// strands a caller fails with a message instead of hanging the suite.
func wait(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("transactions still waiting after a minute: a caller was stranded")
	}
}

// outcome is what one caller's Tx returned, or the value it panicked with.
type outcome struct {
	err      error
	panicked any
}

// together runs fns as concurrent transactions that queue, in order, behind
// a first one, which holds the writer meanwhile, so that they join its batch
// as far as GroupCommit allows. The first runs holder, or inserts 0 if it is
// nil. ctxs, if not nil, are their contexts (nil for the test's), then the
// first's; before runs once all are queued, before the first goes on. It
// returns each one's outcome, the first's last.
func together(t *testing.T, db *DB, ctxs []context.Context, before func(),
	holder func(context.Context, store.Querier) error, fns ...func(context.Context, store.Querier) error) []outcome {
	t.Helper()
	ctx := t.Context()
	hold, holding := make(chan struct{}), make(chan struct{})
	out := make([]outcome, len(fns)+1)
	var wg sync.WaitGroup
	var started sync.Once
	first := ctx
	if len(ctxs) > len(fns) {
		first = ctxs[len(fns)]
	}
	wg.Go(func() {
		out[len(fns)].err = db.Tx(first, func(tx store.Querier) error {
			started.Do(func() { close(holding) })
			<-hold
			if holder != nil {
				return holder(first, tx)
			}
			return insert(ctx, tx, 0)
		})
	})
	<-holding
	for i, fn := range fns {
		c := ctx
		if ctxs != nil && ctxs[i] != nil {
			c = ctxs[i]
		}
		wg.Go(func() {
			defer func() { out[i].panicked = recover() }()
			out[i].err = db.Tx(c, func(tx store.Querier) error { return fn(c, tx) })
		})
		queued(t, db, i+1)
	}
	if before != nil {
		before()
	}
	close(hold)
	wait(t, &wg)
	return out
}

// wantOK fails the test for each of the outcomes out[i] that is an error or
// a panic.
func wantOK(t *testing.T, out []outcome, is ...int) {
	t.Helper()
	for _, i := range is {
		if out[i].err != nil || out[i].panicked != nil {
			t.Errorf("transaction %d: %v %v", i, out[i].err, out[i].panicked)
		}
	}
}

// wantRows fails the test unless t holds exactly want, in order.
func wantRows(t *testing.T, db *DB, want ...int) {
	t.Helper()
	if got := values(t, db); !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

func inserting(v int) func(context.Context, store.Querier) error {
	return func(ctx context.Context, tx store.Querier) error { return insert(ctx, tx, v) }
}

// TestGroupCommitsTogether checks that transactions waiting for the writer
// commit with the one holding it, GroupCommit at most a commit, and that
// each returns only once its work is committed.
func TestGroupCommitsTogether(t *testing.T) {
	for _, tc := range []struct{ groupCommit, commits int }{{16, 1}, {4, 2}, {1, 6}} {
		t.Run(fmt.Sprint(tc.groupCommit), func(t *testing.T) {
			db := openGroup(t, tc.groupCommit)
			before := db.TxStats()
			var fns []func(context.Context, store.Querier) error
			for v := 1; v <= 5; v++ {
				fns = append(fns, func(ctx context.Context, tx store.Querier) error {
					if err := insert(ctx, tx, v); err != nil {
						return err
					}
					// The earlier members' work is visible, uncommitted.
					var n int
					if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); err != nil {
						return err
					}
					if n < v {
						return fmt.Errorf("member %d sees %d rows", v, n)
					}
					return nil
				})
			}
			for i, o := range together(t, db, nil, nil, nil, fns...) {
				if o.err != nil || o.panicked != nil {
					t.Errorf("transaction %d: %v %v", i, o.err, o.panicked)
				}
			}
			wantRows(t, db, 0, 1, 2, 3, 4, 5)
			after := db.TxStats()
			if got := after.Transactions - before.Transactions; got != 6 {
				t.Errorf("%d transactions counted, want 6", got)
			}
			if got := after.Commits - before.Commits; got != int64(tc.commits) {
				t.Errorf("%d commits, want %d", got, tc.commits)
			}
		})
	}
}

// runOnce wraps fns to fail the test if any runs more than once: undoing a
// member's work to its savepoint must not lose the batch.
func runOnce(t *testing.T, fns ...func(context.Context, store.Querier) error) []func(context.Context, store.Querier) error {
	out := make([]func(context.Context, store.Querier) error, len(fns))
	for i, fn := range fns {
		var runs atomic.Int32
		out[i] = func(ctx context.Context, tx store.Querier) error {
			if runs.Add(1) > 1 {
				t.Errorf("transaction %d ran again", i)
			}
			return fn(ctx, tx)
		}
	}
	return out
}

// TestGroupMemberFailure checks that a member that fails, or panics, loses
// its own work and nobody else's.
func TestGroupMemberFailure(t *testing.T) {
	db := openGroup(t, 16)
	errMember := errors.New("member failed")
	out := together(t, db, nil, nil, nil, runOnce(t,
		inserting(1),
		func(ctx context.Context, tx store.Querier) error {
			if err := insert(ctx, tx, 2); err != nil {
				return err
			}
			return errMember
		},
		inserting(3),
		func(ctx context.Context, tx store.Querier) error {
			if err := insert(ctx, tx, 4); err != nil {
				return err
			}
			panic("member panicked")
		},
		inserting(1), // a constraint violation fails the statement only
		inserting(5),
	)...)
	if !errors.Is(out[1].err, errMember) {
		t.Errorf("failed member: %v, want its error", out[1].err)
	}
	if out[3].panicked != "member panicked" {
		t.Errorf("panicking member: recovered %v, want its panic", out[3].panicked)
	}
	if out[4].err == nil {
		t.Errorf("duplicate insert: no error")
	}
	wantOK(t, out, 0, 2, 5, 6)
	wantRows(t, db, 0, 1, 3, 5)
}

// TestGroupMemberRollsBackTheTransaction checks a member whose failure made
// SQLite roll back the whole transaction: it gets its error, and the
// members before it, whose work was lost with it, are run again.
func TestGroupMemberRollsBackTheTransaction(t *testing.T) {
	db := openGroup(t, 16)
	var runs atomic.Int32
	out := together(t, db, nil, nil, nil,
		func(ctx context.Context, tx store.Querier) error {
			runs.Add(1)
			return insert(ctx, tx, 1)
		},
		inserting(666),
		inserting(3),
	)
	if out[1].err == nil || !strings.Contains(out[1].err.Error(), "boom") {
		t.Errorf("member that rolled back: %v, want boom", out[1].err)
	}
	wantOK(t, out, 0, 2, 3)
	wantRows(t, db, 0, 1, 3)
	if n := runs.Load(); n != 2 {
		t.Errorf("the member before ran %d times, want 2 (once more after the batch was lost)", n)
	}
	// The first member's failure is its transaction's: nothing to redo.
	if err := db.Tx(t.Context(), func(tx store.Querier) error { return insert(t.Context(), tx, 666) }); err == nil {
		t.Error("a lone transaction inserting 666: no error")
	}
}

// TestGroupCanceledMember checks members whose context ends: while queued,
// they leave the queue; while working, their next statement fails before
// it runs (an interrupted write would roll back the whole transaction);
// once done, waiting for the commit, nothing changes; and the others' work
// stands.
func TestGroupCanceledMember(t *testing.T) {
	db := openGroup(t, 16)
	queuedCtx, cancelQueued := context.WithCancel(t.Context())
	workingCtx, cancelWorking := context.WithCancel(t.Context())
	firstCtx, cancelFirst := context.WithCancel(t.Context())
	got := together(t, db, []context.Context{nil, queuedCtx, workingCtx, nil, firstCtx},
		func() { cancelQueued(); queued(t, db, 3) }, nil,
		func(ctx context.Context, tx store.Querier) error {
			// The first member is done, its work not yet committed: its
			// context ending must not roll the batch back.
			cancelFirst()
			return insert(ctx, tx, 1)
		},
		inserting(2),
		func(ctx context.Context, tx store.Querier) error {
			if err := insert(ctx, tx, 3); err != nil {
				return err
			}
			cancelWorking()
			var n int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); !errors.Is(err, context.Canceled) {
				t.Errorf("QueryRow after the context ended: %v, want context.Canceled", err)
			}
			return insert(ctx, tx, 4)
		},
		inserting(5),
	)
	if !errors.Is(got[1].err, context.Canceled) {
		t.Errorf("member canceled while queued: %v, want context.Canceled", got[1].err)
	}
	if !errors.Is(got[2].err, context.Canceled) {
		t.Errorf("member canceled while working: %v, want context.Canceled", got[2].err)
	}
	wantOK(t, got, 0, 3, 4)
	wantRows(t, db, 0, 1, 5)
}

// TestGroupUnderLoad runs many concurrent transactions, some failing, some
// canceled at random moments: a row is there if and only if its Tx
// returned nil, and the writer serves transactions after.
func TestGroupUnderLoad(t *testing.T) {
	db := openGroup(t, 8)
	const workers, each = 8, 60
	results := make([][]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		results[w] = make([]error, each)
		wg.Go(func() {
			for i := range each {
				v := w*each + i + 1
				ctx, cancel := context.WithCancel(t.Context())
				if rand.IntN(8) == 0 {
					time.AfterFunc(time.Duration(rand.IntN(300))*time.Microsecond, cancel)
				}
				results[w][i] = db.Tx(ctx, func(tx store.Querier) error {
					if err := insert(ctx, tx, v); err != nil {
						return err
					}
					switch rand.IntN(10) {
					case 0:
						return errors.New("fails")
					case 1:
						return insert(ctx, tx, 666)
					}
					return insert(ctx, tx, -v)
				})
				cancel()
			}
		})
	}
	wg.Wait()
	have := map[int]bool{}
	for _, v := range values(t, db) {
		have[v] = true
	}
	committed := 0
	for w := range workers {
		for i, err := range results[w] {
			v := w*each + i + 1
			if (err == nil) != have[v] || have[v] != have[-v] {
				t.Errorf("transaction %d returned %v; rows %d: %v, %d: %v", v, err, v, have[v], -v, have[-v])
			}
			if err == nil {
				committed++
			}
		}
	}
	if committed == 0 {
		t.Fatal("no transaction committed")
	}
	st := db.TxStats()
	t.Logf("%d of %d transactions committed, in %d commits", committed, workers*each, st.Commits)
	if st.Transactions != int64(committed) {
		t.Errorf("TxStats counts %d transactions, want %d", st.Transactions, committed)
	}
	if err := db.Tx(t.Context(), func(tx store.Querier) error { return insert(t.Context(), tx, 100_000) }); err != nil {
		t.Errorf("Tx after the load: %v", err)
	}
}

// TestGroupFirstSwallowsRollback checks a first member that ignores the
// error of a statement after which SQLite rolled back the transaction: its
// later statements fail instead of committing one by one, it gets an error,
// and the next transaction does not run in the dead one.
func TestGroupFirstSwallowsRollback(t *testing.T) {
	db := openGroup(t, 16)
	var after error
	out := together(t, db, nil, nil,
		func(ctx context.Context, tx store.Querier) error {
			if err := insert(ctx, tx, 1); err != nil {
				return err
			}
			_ = insert(ctx, tx, 666)
			// Outside any transaction now: it must not run.
			after = insert(ctx, tx, 7)
			return nil
		},
		inserting(2),
	)
	if !errors.Is(after, errRolledBack) {
		t.Errorf("statement after the rollback: %v, want errRolledBack", after)
	}
	if out[1].err == nil {
		t.Error("first member, its transaction rolled back: no error")
	}
	if out[0].err != nil {
		t.Errorf("next transaction: %v", out[0].err)
	}
	wantRows(t, db, 2)
}

// TestGroupGoexit checks a member whose function ends the goroutine
// (t.Fatal does): its work is undone, the others' committed.
func TestGroupGoexit(t *testing.T) {
	db := openGroup(t, 16)
	out := together(t, db, nil, nil, nil,
		inserting(1),
		func(ctx context.Context, tx store.Querier) error {
			if err := insert(ctx, tx, 2); err != nil {
				return err
			}
			runtime.Goexit()
			return nil
		},
		inserting(3),
	)
	wantOK(t, out, 0, 2, 3)
	wantRows(t, db, 0, 1, 3)
}

// TestGroupCanceledWhenHanded checks a waiter whose context ends as it is
// handed the connection: it returns the context's error and commits the
// batch left open for it.
func TestGroupCanceledWhenHanded(t *testing.T) {
	db := openGroup(t, 16)
	ctx, cancel := context.WithCancel(t.Context())
	inHook, handed := make(chan struct{}), make(chan struct{})
	db.group.canceled = func() {
		close(inHook)
		<-handed
	}
	out := together(t, db, []context.Context{ctx}, func() {
		cancel()
		<-inHook // the waiter saw its context end, and is still queued
		go func() {
			// The first hands it the connection.
			if got, ok := waitQueued(db, 0); !ok {
				t.Errorf("%d callers still queued", got)
			}
			close(handed)
		}()
	}, nil, inserting(1))
	if !errors.Is(out[0].err, context.Canceled) {
		t.Errorf("waiter: %v, want context.Canceled", out[0].err)
	}
	if out[1].err != nil {
		t.Errorf("first: %v", out[1].err)
	}
	wantRows(t, db, 0)
	if err := db.Tx(t.Context(), func(tx store.Querier) error { return insert(t.Context(), tx, 2) }); err != nil {
		t.Errorf("Tx after: %v", err)
	}
}

// cancelInStatement, when set, is called by the SQL function
// test_cancel_member from inside a statement, once.
var cancelInStatement atomic.Pointer[context.CancelFunc]

func init() {
	msqlite.MustRegisterScalarFunction("test_cancel_member", 0,
		func(*msqlite.FunctionContext, []driver.Value) (driver.Value, error) {
			if cancel := cancelInStatement.Swap(nil); cancel != nil {
				(*cancel)()
				// Time for an interrupt, were the context to deliver one
				// (the driver's watcher goroutine): more only makes the
				// test slower, never wrongly failing.
				time.Sleep(50 * time.Millisecond)
			}
			return int64(1), nil
		})
}

// TestGroupStatementNotInterrupted checks that a member's context ending
// during its statement does not interrupt it: an interrupted write would roll
// back the whole transaction, and the members before it would run again.
func TestGroupStatementNotInterrupted(t *testing.T) {
	db := openGroup(t, 16)
	if _, err := db.Exec(t.Context(), `CREATE TABLE u (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := together(t, db, []context.Context{nil, ctx}, nil, nil, runOnce(t,
		inserting(1),
		func(ctx context.Context, tx store.Querier) error {
			cancelInStatement.Store(&cancel)
			_, err := tx.Exec(ctx, `INSERT INTO u (n) WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c WHERE n < 10000)
				SELECT n FROM c WHERE test_cancel_member() = 1`)
			return err
		},
	)...)
	if ctx.Err() == nil {
		t.Fatal("the statement did not cancel the context")
	}
	if out[0].err != nil || out[2].err != nil {
		t.Errorf("the others: %v, %v", out[0].err, out[2].err)
	}
	if out[1].err != nil {
		t.Errorf("member canceled during its statement: %v (the statement was interrupted)", out[1].err)
	}
	wantRows(t, db, 0, 1)
}

// TestGroupFailedMemberBatchLost checks a member that failed in a batch
// another member then lost: its failure may have been on the others' work,
// gone with it, so it runs again.
func TestGroupFailedMemberBatchLost(t *testing.T) {
	db := openGroup(t, 16)
	errMember := errors.New("member failed")
	var runs atomic.Int32
	out := together(t, db, nil, nil, nil,
		inserting(1),
		func(ctx context.Context, tx store.Querier) error {
			runs.Add(1)
			return errMember
		},
		inserting(666),
	)
	if !errors.Is(out[1].err, errMember) {
		t.Errorf("failed member: %v, want its error", out[1].err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("failed member ran %d times, want 2 (once more after its batch was lost)", n)
	}
	wantRows(t, db, 0, 1)
}

// TestGroupWaitForConnectionEnds checks that a transaction waiting for the
// writer connection, held outside any transaction (by the checkpointer's
// restart, say), stops waiting when its context ends.
func TestGroupWaitForConnectionEnds(t *testing.T) {
	db := openGroup(t, 16)
	conn, err := db.writer.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- db.Tx(ctx, func(tx store.Querier) error { return insert(ctx, tx, 1) }) }()
	select {
	case err = <-res:
	case <-time.After(time.Minute):
		conn.Close()
		t.Fatal("Tx still waiting for the connection a minute after its context ended")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Tx while the connection is held: %v, want context.DeadlineExceeded", err)
	}
	conn.Close()
	if err := db.Tx(t.Context(), func(tx store.Querier) error { return insert(t.Context(), tx, 2) }); err != nil {
		t.Errorf("Tx once the connection is free: %v", err)
	}
}
