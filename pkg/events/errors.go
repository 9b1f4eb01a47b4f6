package events

import (
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
