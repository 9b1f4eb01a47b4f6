package delivery

import "context"

// DrainForTest runs one pass over every batch, as the relay's loop does.
func DrainForTest(ctx context.Context, r *Relay) (published int, leader bool, err error) {
	return r.run1(ctx, true)
}

// HandledLookupTimeout bounds the inbox look-up after a failed transaction.
const HandledLookupTimeout = handledLookupTimeout
