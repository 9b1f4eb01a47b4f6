package events

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStopped is returned by a component used after Stop.
var ErrStopped = errors.New("events: stopped")

// PermanentError marks a failure that retrying cannot fix: the event is
// terminated and copied to the dead-letter stream with the error as reason.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the consumer dead-letters the event instead of
// retrying it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	var p *PermanentError
	if errors.As(err, &p) {
		return err
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err, or an error it wraps, is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// RetryError asks for a redelivery after a given delay instead of the
// consumer's backoff schedule (a rate limit's Retry-After, say).
type RetryError struct {
	Err   error
	After time.Duration
	// Scheduled marks an event put back because it is not due yet, not
	// because anything failed (see Postpone).
	Scheduled bool
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.After, e.Err)
}
func (e *RetryError) Unwrap() error { return e.Err }

// RetryAfter wraps err so the event is redelivered after d.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryError{Err: err, After: d}
}

// Postpone puts an event that is not due yet back, to be delivered again
// after d: RetryAfter, for a handler that waits on purpose (a retry's
// backoff, a deadline to watch). Logging reports it at debug level, not as
// a failure.
func Postpone(why error, d time.Duration) error {
	if why == nil {
		return nil
	}
	return &RetryError{Err: why, After: d, Scheduled: true}
}

// During a rolling upgrade an event may come to a replica of an older build
// that cannot handle it (a session that a newer build started): it passes
// the event on (PassOn) to the next replica that pulls, for one that can.
// Each such delivery counts against the consumer's bound, so a consumer
// whose handler passes events on takes PassOnDeliveries and
// PassOnBackoffMax.
const (
	// PassOnDeliveries bounds the deliveries of an event that replicas pass
	// on: the server hands an event put back to the replicas' waiting pulls
	// in turn, so it lets an event pass about ten older replicas on its way
	// to a newer one.
	PassOnDeliveries = 12
	// PassOnBackoffMax caps the delay between the deliveries of an event
	// whose handler failed (1 s, doubled at each), so that the added
	// deliveries, about two minutes of them, do not hold the other events
	// of a partition for long.
	PassOnBackoffMax = 15 * time.Second
	// passOnDelay is the delay before an event passed on comes again,
	// doubled at each delivery up to PassOnBackoffMax: short, so the event
	// soon reaches the next replica, then longer, so the deliveries span a
	// newer replica's restart (a minute and a half in all).
	passOnDelay = 250 * time.Millisecond
)

// PassOn is a handler's error for an event this process cannot handle and
// a newer one can (see PassOnDeliveries): the event is put back after a
// delay that starts at a quarter of a second and doubles, and logged as a
// handler's failure, so that an operator sees a rollout (or a rollback)
// holding events; on the consumer's last delivery, maxDeliver, it is why
// itself, and the event is dead-lettered with it as its reason.
func PassOn(ctx context.Context, why error, maxDeliver int) error {
	d, _ := DeliveryFrom(ctx)
	if maxDeliver > 0 && d.NumDelivered >= uint64(maxDeliver) {
		return why
	}
	return RetryAfter(why, passOnWait(d.NumDelivered))
}

// passOnWait is the delay before an event passed on at its delivery n
// comes again.
func passOnWait(n uint64) time.Duration {
	d := passOnDelay
	for i := uint64(1); i < n && d < PassOnBackoffMax; i++ {
		d *= 2
	}
	return min(d, PassOnBackoffMax)
}
