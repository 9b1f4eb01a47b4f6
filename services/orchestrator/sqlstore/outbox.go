package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
)

// outbox encodes a change's events as outbox messages; the change's
// transaction enqueues them and the relay publishes them like any other.
func (s *Store) outbox(ctx context.Context, evs []engine.Event, now time.Time) ([]store.OutboxMessage, error) {
	msgs := make([]store.OutboxMessage, 0, len(evs))
	for _, e := range evs {
		ce, err := runevents.CloudEvent(s.cfg.TenantID, e)
		if err != nil {
			return nil, err
		}
		msg, err := s.cfg.Encoder.Encode(ctx, ce)
		if err != nil {
			return nil, fmt.Errorf("encode event %d: %w", e.Seq, err)
		}
		msgs = append(msgs, store.OutboxMessage{TenantID: s.cfg.TenantID, EventID: ce.ID(), Subject: msg.Subject,
			Header: msg.Header, Data: msg.Data, CreatedAt: now})
	}
	return msgs, nil
}
