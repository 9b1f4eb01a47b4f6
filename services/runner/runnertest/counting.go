package runnertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
)

// Counts are the store calls a CountingDB has seen.
type Counts struct {
	// Statements run outside a transaction (each one round trip).
	Statements int
	// Transactions, and the statements run inside them.
	Transactions, TxStatements int
	// Locks taken with TryLock (on PostgreSQL an advisory lock: a round
	// trip to take it and one to release it; on SQLite none).
	Locks   int
	dialect store.Dialect
}

// RoundTrips is the number of exchanges with the database server the calls
// took: one a statement, plus BEGIN and COMMIT for each transaction, plus
// two a lock on PostgreSQL.
func (c Counts) RoundTrips() int {
	n := c.Statements + c.TxStatements + 2*c.Transactions
	if c.dialect == store.Postgres {
		n += 2 * c.Locks
	}
	return n
}

// CountingDB is a store.DB that counts the calls made through it, to measure
// the round trips and transactions a piece of work costs.
type CountingDB struct {
	store.DB

	mu sync.Mutex
	c  Counts
}

// NewCountingDB counts the calls made to db through it.
func NewCountingDB(db store.DB) *CountingDB { return &CountingDB{DB: db} }

// Counts returns the counts so far.
func (d *CountingDB) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.c
	c.dialect = d.DB.Dialect()
	return c
}

// Reset sets the counts to zero.
func (d *CountingDB) Reset() {
	d.mu.Lock()
	d.c = Counts{}
	d.mu.Unlock()
}

func (d *CountingDB) add(f func(c *Counts)) {
	d.mu.Lock()
	f(&d.c)
	d.mu.Unlock()
}

// Exec implements store.Querier.
func (d *CountingDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	d.add(func(c *Counts) { c.Statements++ })
	return d.DB.Exec(ctx, query, args...)
}

// Query implements store.Querier.
func (d *CountingDB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	d.add(func(c *Counts) { c.Statements++ })
	return d.DB.Query(ctx, query, args...)
}

// QueryRow implements store.Querier.
func (d *CountingDB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	d.add(func(c *Counts) { c.Statements++ })
	return d.DB.QueryRow(ctx, query, args...)
}

// TryLock implements store.DB.
func (d *CountingDB) TryLock(ctx context.Context, name string) (func(), bool, error) {
	d.add(func(c *Counts) { c.Locks++ })
	return d.DB.TryLock(ctx, name)
}

// Tx implements store.DB. A transaction the store runs again counts again.
func (d *CountingDB) Tx(ctx context.Context, fn func(tx store.Querier) error) error {
	return d.DB.Tx(ctx, func(tx store.Querier) error {
		d.add(func(c *Counts) { c.Transactions++ })
		return fn(countingTx{tx, d})
	})
}

type countingTx struct {
	store.Querier
	d *CountingDB
}

func (t countingTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	t.d.add(func(c *Counts) { c.TxStatements++ })
	return t.Querier.Exec(ctx, query, args...)
}

func (t countingTx) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	t.d.add(func(c *Counts) { c.TxStatements++ })
	return t.Querier.Query(ctx, query, args...)
}

func (t countingTx) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	t.d.add(func(c *Counts) { c.TxStatements++ })
	return t.Querier.QueryRow(ctx, query, args...)
}

// Counted stops the rig's relay and returns the rig's store wrapped in a
// CountingDB, with a relay of its own on it (started, stopped at cleanup),
// so that every call a service and its relay make is counted.
func (r *Rig) Counted(t testing.TB) (*CountingDB, *delivery.Relay) {
	t.Helper()
	ctx := context.Background()
	if err := r.Relay.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	db := NewCountingDB(r.DB)
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: r.Bus, Logger: r.Logger, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Stop(context.Background()) })
	return db, relay
}

// CheckTurns checks the store calls counted over turns turns of a service
// that answers each in one read and one transaction, then marks its
// published events sent: one transaction a turn, at most two statements a
// turn outside them (three on SQLite, whose mark is two statements, in
// process), and at most maxInTx statements in them in all.
func (c Counts) CheckTurns(t testing.TB, turns, maxInTx int) {
	t.Helper()
	t.Logf("%d turns: %d transactions, %d statements in them, %d outside, %d locks; %.1f round trips a turn",
		turns, c.Transactions, c.TxStatements, c.Statements, c.Locks, float64(c.RoundTrips())/float64(turns))
	if c.Transactions != turns {
		t.Errorf("%d transactions for %d turns, want one a turn", c.Transactions, turns)
	}
	most, what := 2*turns, "the read, the mark"
	if c.dialect == store.SQLite {
		most, what = 3*turns, "the read, the mark's two statements"
	}
	if c.Statements > most {
		t.Errorf("%d statements outside transactions for %d turns, want at most %d (%s)", c.Statements, turns, most, what)
	}
	if c.TxStatements > maxInTx {
		t.Errorf("%d statements in transactions for %d turns, want at most %d", c.TxStatements, turns, maxInTx)
	}
}
