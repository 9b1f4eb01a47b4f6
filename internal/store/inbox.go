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
	if tenantID == "" || consumer == "" || eventID == "" {
		return false, errors.New("mark handled: tenant id, consumer and event id must all be set")
	}
	n, err := q.Exec(ctx,
		`INSERT INTO inbox (consumer, event_id, tenant_id, handled_at) VALUES ($1, $2, $3, $4) ON CONFLICT (consumer, event_id) DO NOTHING`,
		consumer, eventID, tenantID, at.UTC())
	if err != nil {
		return false, fmt.Errorf("mark event %s handled by %s: %w", eventID, consumer, err)
	}
	return n == 1, nil
}

// PruneInbox deletes the inbox rows handled before a time and returns how
// many went. An event redelivered after its row is pruned is handled again,
// so keep rows well past the longest redelivery horizon (the stream's
// duplicate window and the consumers' MaxDeliver × backoff).
func PruneInbox(ctx context.Context, q Querier, before time.Time) (int64, error) {
	n, err := q.Exec(ctx, `DELETE FROM inbox WHERE handled_at < $1`, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("prune inbox: %w", err)
	}
	return n, nil
}
