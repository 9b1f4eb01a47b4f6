package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/praetorhq/praetor/internal/store"
)

// recheckTimeout bounds a stream's re-check of its token in the store: one
// slower than that is a store that cannot say, and the next check asks
// again.
const recheckTimeout = 10 * time.Second

// streamAuth shares the re-checks of a token among the streams open with
// it: a chat gateway's service token may hold thousands of streams, and
// each asking the store every Config.StreamAuthInterval made thousands of
// identical queries. A token's answer (its row, or why it no longer
// authenticates) is kept for one interval, keyed by the token's hash; the
// streams that miss it together share one query. A request's first
// authentication does not go through it: a token revoked a moment ago is
// refused at once.
type streamAuth struct {
	db       store.Querier
	interval time.Duration
	now      func() time.Time
	flights  singleflight.Group

	mu    sync.Mutex
	kept  map[string]tokenCheck // by store.HashToken
	swept time.Time             // when expired answers were last dropped
}

// tokenCheck is the store's answer about a token at a time.
type tokenCheck struct {
	at  time.Time
	tok store.APIToken
	err error // nil or a *store.TokenError
}

func newStreamAuth(db store.Querier, interval time.Duration, now func() time.Time) *streamAuth {
	return &streamAuth{db: db, interval: interval, now: now, kept: map[string]tokenCheck{}}
}

// check authenticates secret again, from an answer of the last interval
// when there is one. It returns when the store was asked for the answer
// (which is kept one interval from then) and a *store.TokenError when the
// token no longer authenticates (a token that expired since the answer is
// told so without asking). Another error is a store that could not say: it
// is not kept, and the time returned is now.
func (a *streamAuth) check(ctx context.Context, secret string) (time.Time, error) {
	key := store.HashToken(secret)
	if c, ok := a.lookup(key); ok {
		return c.at, c.result(a.now())
	}
	answer := a.flights.DoChan(key, func() (any, error) {
		// A flight that ended between the lookup and this one left its
		// answer: no second query.
		if c, ok := a.lookup(key); ok {
			return c, nil
		}
		// The query is the streams' in common: it does not end with the
		// stream that started it.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recheckTimeout)
		defer cancel()
		now := a.now()
		tok, err := store.Authenticate(qctx, a.db, secret, now)
		var denied *store.TokenError
		if err != nil && !errors.As(err, &denied) {
			return nil, err
		}
		c := tokenCheck{at: now, tok: tok, err: err}
		a.keep(key, c)
		return c, nil
	})
	select {
	case <-ctx.Done():
		return a.now(), ctx.Err()
	case r := <-answer:
		if r.Err != nil {
			return a.now(), r.Err
		}
		c := r.Val.(tokenCheck)
		return c.at, c.result(a.now())
	}
}

// result is the answer at now: a token that authenticated then and has
// expired since is expired.
func (c tokenCheck) result(now time.Time) error {
	if c.err == nil && c.tok.ExpiresAt != nil && !now.Before(*c.tok.ExpiresAt) {
		return &store.TokenError{Reason: store.TokenExpired, TokenID: c.tok.ID}
	}
	return c.err
}

func (a *streamAuth) lookup(key string) (tokenCheck, bool) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.kept[key]
	return c, ok && a.fresh(c, now)
}

func (a *streamAuth) fresh(c tokenCheck, now time.Time) bool {
	return now.Sub(c.at) < a.interval
}

// keep stores an answer, and drops the expired ones once an interval: the
// map holds the tokens checked in the last two intervals at the most.
func (a *streamAuth) keep(key string, c tokenCheck) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kept[key] = c
	if c.at.Sub(a.swept) < a.interval {
		return
	}
	a.swept = c.at
	for k, old := range a.kept {
		if !a.fresh(old, c.at) {
			delete(a.kept, k)
		}
	}
}
