package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// OutboxMessage is an event written in a handler's transaction and published
// later by the relay, with Nats-Msg-Id = EventID so that a second publish is
// dropped by the server.
type OutboxMessage struct {
	// ID orders the messages; set by the database.
	ID       int64
	TenantID string
	// EventID is unique: enqueueing an id again is a no-op.
	EventID string
	// Subject is where the relay publishes it.
	Subject string
	// Header holds the NATS headers (the CloudEvents attributes); empty comes
	// back as nil.
	Header map[string][]string
	// Data is the message body; empty comes back as nil.
	Data []byte
	// CreatedAt is set by Enqueue to now when zero.
	CreatedAt time.Time
	// SentAt is when MarkSent marked it; nil while unsent.
	SentAt *time.Time
}

// Enqueue writes messages to the outbox, a few hundred to a statement. A
// message whose EventID is already there (from an earlier run of the same
// handler, which derives the same ids) is skipped, so a re-run enqueues
// nothing twice.
func Enqueue(ctx context.Context, q Querier, msgs ...OutboxMessage) error {
	now := time.Now()
	for len(msgs) > 0 {
		n := min(len(msgs), enqueueBatch)
		batch := msgs[:n]
		msgs = msgs[n:]
		var b strings.Builder
		b.WriteString(`INSERT INTO outbox (tenant_id, event_id, subject, header, data, created_at) VALUES `)
		args := make([]any, 0, 6*n)
		for i, m := range batch {
			header, data, created, err := outboxRow(i, m, now)
			if err != nil {
				return err
			}
			if i > 0 {
				b.WriteString(", ")
			}
			p := 6 * i
			fmt.Fprintf(&b, "($%d, $%d, $%d, $%d, $%d, $%d)", p+1, p+2, p+3, p+4, p+5, p+6)
			args = append(args, m.TenantID, m.EventID, m.Subject, header, LargeBytes(data), created)
		}
		b.WriteString(` ON CONFLICT (event_id) DO NOTHING`)
		if _, err := q.Exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("enqueue %d events: %w", n, err)
		}
	}
	return nil
}

// outboxRow checks message i of an enqueue and returns the columns that
// are not stored as given: the header as JSON, the data never nil (NULL, in
// a NOT NULL column), the creation time in UTC, now when unset.
func outboxRow(i int, m OutboxMessage, now time.Time) (header string, data []byte, created time.Time, err error) {
	if m.TenantID == "" || m.EventID == "" || m.Subject == "" {
		return "", nil, time.Time{}, fmt.Errorf("enqueue: message %d (event %q): tenant id, event id and subject must all be set", i, m.EventID)
	}
	header = "{}"
	if len(m.Header) > 0 {
		b, err := json.Marshal(m.Header)
		if err != nil {
			return "", nil, time.Time{}, fmt.Errorf("enqueue event %s: header: %w", m.EventID, err)
		}
		header = string(b)
	}
	data = m.Data
	if data == nil {
		data = []byte{}
	}
	created = m.CreatedAt
	if created.IsZero() {
		created = now
	}
	return header, data, created.UTC(), nil
}

// outboxColumns are messages as PostgreSQL arrays, one per column, for
// unnest: a statement whose text does not depend on the number of rows is
// prepared once per connection, and has no limit on bound parameters.
type outboxColumns struct {
	tenant, event, subject, header []string
	data                           [][]byte
	created                        []time.Time
}

func newOutboxColumns(msgs []OutboxMessage, now time.Time) (outboxColumns, error) {
	c := outboxColumns{tenant: make([]string, len(msgs)), event: make([]string, len(msgs)), subject: make([]string, len(msgs)),
		header: make([]string, len(msgs)), data: make([][]byte, len(msgs)), created: make([]time.Time, len(msgs))}
	for i, m := range msgs {
		h, d, at, err := outboxRow(i, m, now)
		if err != nil {
			return outboxColumns{}, err
		}
		c.tenant[i], c.event[i], c.subject[i], c.header[i], c.data[i], c.created[i] = m.TenantID, m.EventID, m.Subject, h, d, at
	}
	return c, nil
}

func (c outboxColumns) args() []any {
	return []any{c.tenant, c.event, c.subject, c.header, c.data, c.created}
}

// PostgresEnqueue returns an INSERT of msgs into the outbox, and its
// arguments, to run as a data-modifying WITH query of a larger PostgreSQL
// statement: what Enqueue does, in the round trip (and the commit) of the
// statement's other work. Its parameters are numbered from first (six of
// them); the rows are inserted only where cond, a SQL condition, holds
// ("true" for always), in the order of msgs. PostgreSQL only: SQLite has
// no data-modifying WITH queries.
func PostgresEnqueue(msgs []OutboxMessage, first int, cond string) (string, []any, error) {
	cols, err := newOutboxColumns(msgs, time.Now())
	if err != nil {
		return "", nil, err
	}
	p := func(k int) int { return first + k }
	q := fmt.Sprintf(`INSERT INTO outbox (tenant_id, event_id, subject, header, data, created_at)
		SELECT m.tenant_id, m.event_id, m.subject, m.header::jsonb, m.data, m.created_at
		FROM unnest($%d::text[], $%d::text[], $%d::text[], $%d::text[], $%d::bytea[], $%d::timestamptz[])
			WITH ORDINALITY AS m (tenant_id, event_id, subject, header, data, created_at, ord)
		WHERE %s ORDER BY m.ord ON CONFLICT (event_id) DO NOTHING`, p(0), p(1), p(2), p(3), p(4), p(5), cond)
	return q, cols.args(), nil
}

// enqueueBatch bounds the rows of one INSERT, well under both dialects'
// limits on bound parameters (6 a row).
const enqueueBatch = 500

// Unsent returns up to limit messages not yet sent, oldest (lowest id)
// first, across tenants: the relay publishes for all of them.
func Unsent(ctx context.Context, q Querier, limit int) ([]OutboxMessage, error) {
	return UnsentAfter(ctx, q, 0, limit)
}

// UnsentAfter is Unsent for the messages after id after: the next page of a
// pass that goes on past messages it could not publish.
func UnsentAfter(ctx context.Context, q Querier, after int64, limit int) ([]OutboxMessage, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("unsent: limit %d: want a positive number", limit)
	}
	rows, err := q.Query(ctx,
		`SELECT id, tenant_id, event_id, subject, header, data, created_at, sent_at FROM outbox
		WHERE sent_at IS NULL AND id > $1 ORDER BY id LIMIT $2`,
		after, limit)
	if err != nil {
		return nil, fmt.Errorf("unsent: %w", err)
	}
	defer rows.Close()
	var out []OutboxMessage
	for rows.Next() {
		var (
			m      OutboxMessage
			header []byte
		)
		if err := rows.Scan(&m.ID, &m.TenantID, &m.EventID, &m.Subject, &header, (*LargeBytes)(&m.Data), &m.CreatedAt,
			&m.SentAt); err != nil {
			return nil, fmt.Errorf("unsent: %w", err)
		}
		if err := json.Unmarshal(header, &m.Header); err != nil {
			return nil, fmt.Errorf("unsent: outbox row %d header: %w", m.ID, err)
		}
		if len(m.Header) == 0 {
			m.Header = nil
		}
		if len(m.Data) == 0 {
			m.Data = nil
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unsent: %w", err)
	}
	return out, nil
}

// CountUnsent returns how many messages the outbox holds unsent. It reads
// the unsent messages' partial index (outbox_unsent_subject), not the table:
// the cost of a gauge read every few seconds, never of an event.
func CountUnsent(ctx context.Context, q Querier) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count unsent: %w", err)
	}
	return n, nil
}

// UnsentOn returns, in outbox order, the event ids of up to limit messages
// on subject other than the event eventID (any, when eventID is empty) that
// are in the outbox unsent: committed and not yet published (or published
// and not yet marked, see Relay.Published), which an event of the same
// subject published directly (Relay.PublishCommitted) could overtake. It
// reads the subject's unsent messages only (the outbox_unsent_subject
// index).
func UnsentOn(ctx context.Context, q Querier, subject, eventID string, limit int) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT event_id FROM outbox WHERE sent_at IS NULL AND subject = $1 AND event_id <> $2
		ORDER BY id LIMIT $3`, subject, eventID, limit)
	if err != nil {
		return nil, fmt.Errorf("unsent on %s: %w", subject, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("unsent on %s: %w", subject, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unsent on %s: %w", subject, err)
	}
	return ids, nil
}

// markSentBatch bounds the ids of one statement, well under both dialects'
// limits on bound parameters.
const markSentBatch = 500

// markedBatch bounds the messages marked sent earlier that a mark deletes
// with its own: the highest of the last mark, mostly, but after an upgrade
// from a version that kept sent messages for an hour, millions, which the
// prune deletes in batches.
const markedBatch = 64

// MarkSent records that messages were published: it deletes them, since the
// outbox holds only what is still to publish (the stream keeps the rest),
// but for the message with the highest id, which it marks sent at instead
// (see keepHighest). The next mark deletes it with its own messages, as it
// does up to markedBatch messages marked earlier (a prune the rest). Unknown
// ids are ignored.
func MarkSent(ctx context.Context, db DB, ids []int64, at time.Time) error {
	return markSent(ctx, db, "id", ids, at)
}

// MarkSentEvents is MarkSent for messages named by their event ids (unique
// in the outbox).
func MarkSentEvents(ctx context.Context, db DB, eventIDs []string, at time.Time) error {
	return markSent(ctx, db, "event_id", eventIDs, at)
}

// markSent marks the highest and deletes the others: one statement on
// PostgreSQL, two on SQLite, which has no data-modifying WITH queries. Not
// in a transaction: should the delete fail, the others stay unsent, and a
// pass publishes them again, which the stream drops as duplicates.
func markSent[K int64 | string](ctx context.Context, db DB, column string, keys []K, at time.Time) error {
	for len(keys) > 0 {
		n := min(len(keys), markSentBatch)
		batch := keys[:n]
		keys = keys[n:]
		args := make([]any, 0, len(batch)+1)
		args = append(args, at.UTC())
		for _, k := range batch {
			args = append(args, k)
		}
		in := column + " IN (" + Placeholders(2, n) + ")"
		mark := `UPDATE outbox SET sent_at = $1 WHERE sent_at IS NULL AND ` + in + ` AND id = (SELECT max(id) FROM outbox)`
		// Two lookups, one of each index, rather than an OR, which SQLite
		// plans as a scan of the table.
		del := `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE ` + in + `
			UNION ALL SELECT id FROM (SELECT id FROM outbox WHERE sent_at IS NOT NULL ORDER BY sent_at LIMIT ` +
			strconv.Itoa(markedBatch) + `) AS marked_before) AND ` + keepHighest
		if db.Dialect() == Postgres {
			// Both see the same snapshot, hence the same highest id.
			if _, err := db.Exec(ctx, `WITH marked AS (`+mark+`) `+del, args...); err != nil {
				return fmt.Errorf("mark %d outbox messages sent: %w", n, err)
			}
			continue
		}
		if _, err := db.Exec(ctx, mark, args...); err != nil {
			return fmt.Errorf("mark %d outbox messages sent: %w", n, err)
		}
		// $1 unused: SQLite numbers parameters as given.
		if _, err := db.Exec(ctx, del, args...); err != nil {
			return fmt.Errorf("delete %d sent outbox messages: %w", n, err)
		}
	}
	return nil
}

// Placeholders returns n numbered parameters from $first, comma-separated
// ("$3, $4, $5"), for a statement built for a batch of values.
func Placeholders(first, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(first+i))
	}
	return b.String()
}

// DeleteOutbox deletes an unsent message: the relay's last step for a
// message it moved to the dead-letter stream. One published meanwhile stays.
// The message with the highest id is marked sent at instead, and goes with
// a later prune (see keepHighest).
func DeleteOutbox(ctx context.Context, q Querier, id int64, at time.Time) error {
	n, err := q.Exec(ctx, `DELETE FROM outbox WHERE id = $1 AND sent_at IS NULL AND `+keepHighest, id)
	if err == nil && n == 0 {
		_, err = q.Exec(ctx, `UPDATE outbox SET sent_at = $2 WHERE id = $1 AND sent_at IS NULL`, id, at.UTC())
	}
	if err != nil {
		return fmt.Errorf("delete outbox message %d: %w", id, err)
	}
	return nil
}

// keepHighest is the condition of every deletion from the outbox: never
// the message with the highest id. SQLite gives a new message the highest
// id plus one, so were that message deleted a new one could take its id
// while a relay still holds it: a pass's cursor, a mark or a delete by id
// would then fall on the new message. Kept, the highest id is the highest
// ever given, as a sequence's.
const keepHighest = `id < (SELECT max(id) FROM outbox)`

// PruneSent deletes the messages sent before a time and returns how many
// went. Unsent messages are never pruned, nor the one with the highest id
// (keepHighest). It deletes pruneBatch rows to a
// statement, so that on a DB (not in a transaction) no statement holds
// SQLite's single writer for long.
func PruneSent(ctx context.Context, q Querier, before time.Time) (int64, error) {
	var total int64
	for {
		n, err := q.Exec(ctx, `DELETE FROM outbox WHERE id IN (
			SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < $1 AND `+keepHighest+`
			ORDER BY sent_at LIMIT $2)`,
			before.UTC(), pruneBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune sent: %w", err)
		}
		if n < pruneBatch {
			return total, nil
		}
	}
}

const pruneBatch = 1000
