package store

import (
	"context"
	"errors"
	"fmt"
)

// Handled reports whether consumer has already handled an event, so a
// redelivery can be acknowledged before any work is redone. It is a read: the
// authoritative check is MarkHandled (or MarkHandledWith) in the committing
// transaction.
func Handled(ctx context.Context, q Querier, consumer, eventID string) (bool, error) {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM inbox WHERE consumer = $1 AND event_id = $2`, consumer, eventID).Scan(&one)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up event %s in the inbox of %s: %w", eventID, consumer, err)
	}
	return true, nil
}
