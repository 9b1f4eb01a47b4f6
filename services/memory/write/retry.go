package write

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Start runs the retry loop of pending writes (those in the Queue,
// including ones left by an earlier process) until Stop. ctx only bounds
// the start.
func (e *Engine) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stop != nil {
		return errors.New("write: retry loop already started")
	}
	items, err := e.cfg.Queue.List(ctx)
	if err != nil {
		return fmt.Errorf("write: list pending writes: %w", err)
	}
	e.pending.Set(float64(len(items)))
	lctx, cancel := context.WithCancel(context.Background())
	e.stop, e.done = cancel, make(chan struct{})
	go e.loop(lctx, e.done)
	return nil
}

// Stop ends the retry loop and waits for the attempt in flight, at most
// until ctx is done. Pending writes stay in the Queue. A second Stop does
// nothing.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	stop, done := e.stop, e.done
	e.stop, e.done = nil, nil
	e.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("write: stop retry loop: %w", ctx.Err())
	}
}

// PendingWrites lists the writes waiting for a retry.
func (e *Engine) PendingWrites(ctx context.Context) ([]Pending, error) { return e.cfg.Queue.List(ctx) }

func (e *Engine) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		next, err := e.retryDue(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := time.Until(next)
		if err != nil {
			e.cfg.Logger.Error("memory write retry loop: list pending writes", "err", err)
			wait = e.cfg.RetryBackoff
		} else if next.IsZero() {
			wait = e.cfg.PollInterval // nothing pending here: look again later, or when poked
		}
		// Another process may leave pending writes in a shared queue.
		wait = min(wait, e.cfg.PollInterval)
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// retryDue retries every due pending write once and returns when the next
// one is due (zero when none is pending).
func (e *Engine) retryDue(ctx context.Context) (time.Time, error) {
	items, err := e.cfg.Queue.List(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, p := range items {
		if ctx.Err() != nil {
			return next, nil
		}
		if wait := time.Until(p.NextAt); wait > 0 {
			if next.IsZero() || p.NextAt.Before(next) {
				next = p.NextAt
			}
			continue
		}
		if at := e.retry(ctx, p); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, nil
}

// retry runs one attempt of p and records what happened. It returns the
// time of the next attempt when p stays pending.
func (e *Engine) retry(ctx context.Context, p Pending) time.Time {
	rc, err := e.run(ctx, &p, nil)
	if err != nil && ctx.Err() != nil {
		return time.Time{} // stopping: the attempt does not count
	}
	p.Attempts++
	if err != nil && p.Attempts < e.cfg.RetryAttempts {
		p.LastError = err.Error()
		p.NextAt = time.Now().Add(e.backoff(p.Attempts))
		if qerr := e.cfg.Queue.Put(ctx, p); qerr != nil {
			e.cfg.Logger.Error("memory write retry: update pending write", "request", p.Request.RequestID, "err", qerr)
		}
		e.cfg.Logger.Warn("memory write retry failed", "request", p.Request.RequestID, "attempts", p.Attempts, "err", err)
		return p.NextAt
	}
	if err != nil {
		rc = e.receipt(&p, Failed)
		rc.Detail = fmt.Sprintf("retry exhausted after %d attempts: %v", p.Attempts, err)
	}
	s := Settlement{Request: p.Request, Receipt: rc, Attempts: p.Attempts}
	if qerr := e.cfg.Queue.Done(ctx, p, s); qerr != nil {
		// Keep it: a write that cannot leave the queue is retried again
		// (idempotent) rather than reported twice as settled.
		e.cfg.Logger.Error("memory write retry: remove settled write", "request", p.Request.RequestID, "err", qerr)
		return time.Now().Add(e.cfg.RetryBackoff)
	}
	e.pending.Dec()
	e.count(rc)
	e.cfg.Logger.Info("memory write settled", "request", p.Request.RequestID, "status", rc.Status, "attempts", p.Attempts)
	if e.cfg.OnSettled != nil {
		e.cfg.OnSettled(s)
	}
	return time.Time{}
}
