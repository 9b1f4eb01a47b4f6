package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MarkHandled records that consumer has handled an event. Call it in the
// handler's transaction, with the state change: first is false when the row
// already existed, which means the event is a redelivery whose effect is
// committed already, so the handler must skip it (and the caller acks it).
func MarkHandled(ctx context.Context, q Querier, tenantID, consumer, eventID string, at time.Time) (first bool, err error) {
	if err := checkHandling(tenantID, consumer, eventID); err != nil {
		return false, err
	}
	n, err := q.Exec(ctx,
		`INSERT INTO inbox (consumer, event_id, tenant_id, handled_at) VALUES ($1, $2, $3, $4) ON CONFLICT (consumer, event_id) DO NOTHING`,
		consumer, eventID, tenantID, at.UTC())
	if err != nil {
		return false, fmt.Errorf("mark event %s handled by %s: %w", eventID, consumer, err)
	}
	return n == 1, nil
}

// MarkHandledWith is MarkHandled followed by Enqueue of msgs, in the
// handler's transaction q, at the end of its work: the messages are enqueued
// only when the event is handled for the first time (first); when it is
// not, the caller rolls its work back. On PostgreSQL (d) it is one
// statement: one round trip.
func MarkHandledWith(ctx context.Context, q Querier, d Dialect, tenantID, consumer, eventID string, at time.Time,
	msgs []OutboxMessage) (first bool, err error) {
	if d != Postgres || len(msgs) == 0 || len(msgs) > enqueueBatch {
		if first, err = MarkHandled(ctx, q, tenantID, consumer, eventID, at); err != nil || !first {
			return first, err
		}
		return true, Enqueue(ctx, q, msgs...)
	}
	if err := checkHandling(tenantID, consumer, eventID); err != nil {
		return false, err
	}
	insert, args, err := PostgresEnqueue(msgs, 5, `EXISTS (SELECT 1 FROM h)`)
	if err != nil {
		return false, err
	}
	err = q.QueryRow(ctx, `WITH h AS (
			INSERT INTO inbox (consumer, event_id, tenant_id, handled_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (consumer, event_id) DO NOTHING RETURNING 1),
		o AS (`+insert+`)
		SELECT EXISTS (SELECT 1 FROM h)`, append([]any{consumer, eventID, tenantID, at.UTC()}, args...)...).Scan(&first)
	if err != nil {
		return false, fmt.Errorf("mark event %s handled by %s and enqueue %d events: %w", eventID, consumer, len(msgs), err)
	}
	return first, nil
}

// checkHandling refuses an inbox row with a field unset.
func checkHandling(tenantID, consumer, eventID string) error {
	if tenantID == "" || consumer == "" || eventID == "" {
		return errors.New("mark handled: tenant id, consumer and event id must all be set")
	}
	return nil
}

// PruneInbox deletes the inbox rows handled before a time and returns how
// many went. An event redelivered after its row is pruned is handled again,
// so keep rows well past the longest redelivery horizon: the stream's
// duplicate window, the consumers' MaxDeliver × backoff, and the age of any
// dead letter that may yet be redriven (praetor dlq redrive publishes it
// again with its id). Nothing runs it on a schedule: an operator does
// (praetor inbox prune). It reads the whole table (migration 00008 dropped
// the index of handling times, which cost every handled event a write).
func PruneInbox(ctx context.Context, q Querier, before time.Time) (int64, error) {
	n, err := q.Exec(ctx, `DELETE FROM inbox WHERE handled_at < $1`, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("prune inbox: %w", err)
	}
	return n, nil
}

// Handling is one event a consumer handled, with the message its handling
// emits, if any.
type Handling struct {
	TenantID string
	Consumer string
	EventID  string
	// Emit, when set, is enqueued in the outbox — only when the event was
	// not handled before.
	Emit *OutboxMessage
}

// MarkHandledAll is MarkHandled and Enqueue for several handled events in
// one commit: their inbox rows, and the messages of those handled for the
// first time, which it reports (first[i] for hs[i]; an event twice in hs is
// first only once). On PostgreSQL it is one statement, so one round trip
// for the whole batch (run again, as Tx would be, on a serialization
// failure); on SQLite one transaction.
func MarkHandledAll(ctx context.Context, db DB, at time.Time, hs []Handling) (first []bool, err error) {
	if len(hs) == 0 {
		return nil, nil
	}
	for _, h := range hs {
		if err := checkHandling(h.TenantID, h.Consumer, h.EventID); err != nil {
			return nil, err
		}
	}
	if db.Dialect() != Postgres {
		return markHandledTx(ctx, db, at, hs)
	}
	var (
		consumers, events, tenants []string
		emits                      []OutboxMessage
		emitConsumer, emitEvent    []string
	)
	seen := make(map[[2]string]bool, len(hs))
	for _, h := range hs {
		consumers, events, tenants = append(consumers, h.Consumer), append(events, h.EventID), append(tenants, h.TenantID)
		k := [2]string{h.Consumer, h.EventID}
		again := seen[k] // an event twice: the first handling alone emits
		seen[k] = true
		if h.Emit != nil && !again {
			emits = append(emits, *h.Emit)
			emitConsumer, emitEvent = append(emitConsumer, h.Consumer), append(emitEvent, h.EventID)
		}
	}
	cols, err := newOutboxColumns(emits, at)
	if err != nil {
		return nil, err
	}
	// The inbox insert returns the rows it wrote, which are the events
	// handled for the first time; the outbox insert takes the messages of
	// those alone.
	const q = `WITH h AS (
			INSERT INTO inbox (consumer, event_id, tenant_id, handled_at)
			SELECT i.consumer, i.event_id, i.tenant_id, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS i (consumer, event_id, tenant_id)
			ON CONFLICT (consumer, event_id) DO NOTHING
			RETURNING consumer, event_id),
		o AS (
			INSERT INTO outbox (tenant_id, event_id, subject, header, data, created_at)
			SELECT m.tenant_id, m.event_id, m.subject, m.header::jsonb, m.data, m.created_at
			FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::timestamptz[])
				WITH ORDINALITY AS m (consumer, handled, tenant_id, event_id, subject, header, data, created_at, ord)
			WHERE EXISTS (SELECT 1 FROM h WHERE h.consumer = m.consumer AND h.event_id = m.handled)
			ORDER BY m.ord
			ON CONFLICT (event_id) DO NOTHING)
		SELECT consumer, event_id FROM h`
	args := []any{consumers, events, tenants, at.UTC(),
		emitConsumer, emitEvent, cols.tenant, cols.event, cols.subject, cols.header, cols.data, cols.created}
	// The statement commits on its own, at the server's default isolation
	// (Retry).
	var fresh map[[2]string]bool
	err = Retry(ctx, func() (err error) {
		fresh, err = markHandledStatement(ctx, db, q, args)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mark %d events handled: %w", len(hs), err)
	}
	first = make([]bool, len(hs))
	for i, h := range hs {
		k := [2]string{h.Consumer, h.EventID}
		first[i] = fresh[k]
		delete(fresh, k) // the same event twice: the first is first
	}
	return first, nil
}

// markHandledStatement runs MarkHandledAll's statement and returns the
// inbox rows it wrote.
func markHandledStatement(ctx context.Context, db DB, q string, args []any) (map[[2]string]bool, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fresh := map[[2]string]bool{}
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, err
		}
		fresh[k] = true
	}
	return fresh, rows.Err()
}

// markHandledTx is MarkHandledAll in a transaction, a statement a row.
func markHandledTx(ctx context.Context, db DB, at time.Time, hs []Handling) ([]bool, error) {
	first := make([]bool, len(hs))
	err := db.Tx(ctx, func(tx Querier) error {
		var emits []OutboxMessage
		for i, h := range hs {
			ok, err := MarkHandled(ctx, tx, h.TenantID, h.Consumer, h.EventID, at)
			if err != nil {
				return err
			}
			first[i] = ok // the transaction may run again: every entry is set
			if ok && h.Emit != nil {
				emits = append(emits, *h.Emit)
			}
		}
		return Enqueue(ctx, tx, emits...)
	})
	if err != nil {
		return nil, err
	}
	return first, nil
}
