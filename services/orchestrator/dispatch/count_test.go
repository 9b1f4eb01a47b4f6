package dispatch_test

import (
	"context"
	"sync/atomic"

	"github.com/praetorhq/praetor/internal/store"
)

// countingDB counts what a benchmark asks of the database: transactions
// (and the attempts of their bodies, which a serialization failure
// repeats), statements inside and outside them, and lock attempts. Each
// statement, begin and commit is one round trip to PostgreSQL.
type countingDB struct {
	store.DB
	txs, txBodies, txStmts, stmts, locks, lockMisses atomic.Int64
}

func (d *countingDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	d.stmts.Add(1)
	return d.DB.Exec(ctx, q, args...)
}

func (d *countingDB) Query(ctx context.Context, q string, args ...any) (store.Rows, error) {
	d.stmts.Add(1)
	return d.DB.Query(ctx, q, args...)
}

func (d *countingDB) QueryRow(ctx context.Context, q string, args ...any) store.Row {
	d.stmts.Add(1)
	return d.DB.QueryRow(ctx, q, args...)
}

func (d *countingDB) Tx(ctx context.Context, fn func(tx store.Querier) error) error {
	d.txs.Add(1)
	return d.DB.Tx(ctx, func(tx store.Querier) error {
		d.txBodies.Add(1)
		return fn(countingTx{tx, d})
	})
}

func (d *countingDB) TryLock(ctx context.Context, name string) (func(), bool, error) {
	d.locks.Add(1)
	unlock, ok, err := d.DB.TryLock(ctx, name)
	if err == nil && !ok {
		d.lockMisses.Add(1)
	}
	return unlock, ok, err
}

type countingTx struct {
	store.Querier
	d *countingDB
}

func (t countingTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	t.d.txStmts.Add(1)
	return t.Querier.Exec(ctx, q, args...)
}

func (t countingTx) Query(ctx context.Context, q string, args ...any) (store.Rows, error) {
	t.d.txStmts.Add(1)
	return t.Querier.Query(ctx, q, args...)
}

func (t countingTx) QueryRow(ctx context.Context, q string, args ...any) store.Row {
	t.d.txStmts.Add(1)
	return t.Querier.QueryRow(ctx, q, args...)
}

// reset zeroes the counts.
func (d *countingDB) reset() {
	for _, c := range []*atomic.Int64{&d.txs, &d.txBodies, &d.txStmts, &d.stmts, &d.locks, &d.lockMisses} {
		c.Store(0)
	}
}
