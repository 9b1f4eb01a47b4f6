package store

import (
	"context"
	"fmt"
)

// OutboxHead returns the highest id the outbox has given (0 when it is
// empty): every message committed before the call has an id up to it.
func OutboxHead(ctx context.Context, q Querier) (int64, error) {
	var head int64
	if err := q.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&head); err != nil {
		return 0, fmt.Errorf("outbox head: %w", err)
	}
	return head, nil
}
