package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
)

// outboxRow is one workflow.* event ready for the outbox, as
// store.Enqueue writes it.
type outboxRow struct {
	eventID string
	subject string
	header  string
	data    []byte
}

// outbox encodes a change's events as outbox rows.
func (s *Store) outbox(ctx context.Context, evs []engine.Event) ([]outboxRow, error) {
	rows := make([]outboxRow, 0, len(evs))
	for _, e := range evs {
		ce, err := runevents.CloudEvent(s.cfg.TenantID, e)
		if err != nil {
			return nil, err
		}
		msg, err := s.cfg.Encoder.Encode(ctx, ce)
		if err != nil {
			return nil, fmt.Errorf("encode event %d: %w", e.Seq, err)
		}
		header := []byte("{}")
		if len(msg.Header) > 0 {
			if header, err = json.Marshal(msg.Header); err != nil {
				return nil, fmt.Errorf("encode event %d: header: %w", e.Seq, err)
			}
		}
		data := msg.Data
		if data == nil {
			data = []byte{}
		}
		rows = append(rows, outboxRow{eventID: ce.ID(), subject: msg.Subject, header: string(header), data: data})
	}
	return rows, nil
}

// enqueue writes outbox rows with one multi-row INSERT per batch, in the
// form store.Enqueue writes them (which inserts one row per statement: a
// change of a few hundred dispatches would wait for as many round trips).
// The relay publishes them like any other.
func enqueue(ctx context.Context, tx store.Querier, tenant string, rows []outboxRow, now time.Time) error {
	for len(rows) > 0 {
		n := min(len(rows), maxRowsPerInsert)
		batch := rows[:n]
		rows = rows[n:]
		var b strings.Builder
		b.WriteString(`INSERT INTO outbox (tenant_id, event_id, subject, header, data, created_at) VALUES `)
		args := make([]any, 0, 2+4*n)
		args = append(args, tenant, now)
		for i, r := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			p := 3 + 4*i
			fmt.Fprintf(&b, "($1, $%d, $%d, $%d, $%d, $2)", p, p+1, p+2, p+3)
			args = append(args, r.eventID, r.subject, r.header, r.data)
		}
		b.WriteString(` ON CONFLICT (event_id) DO NOTHING`)
		if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}
