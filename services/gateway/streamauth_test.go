package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
)

// tokenQueries counts the queries that read a token's row.
type tokenQueries struct {
	store.DB
	n atomic.Int64
}

func (q *tokenQueries) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if strings.Contains(query, "FROM api_tokens WHERE token_hash") {
		q.n.Add(1)
	}
	return q.DB.QueryRow(ctx, query, args...)
}

// tenantDB is a store with the tenant acme, its token queries counted.
func tenantDB(t *testing.T) *tokenQueries {
	t.Helper()
	db := &tokenQueries{DB: testdb.SQLite(t)}
	if err := store.CreateTenant(context.Background(), db, store.Tenant{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	return db
}

// newToken creates a token of acme.
func newToken(t *testing.T, db store.Querier, expires *time.Time) (string, store.APIToken) {
	t.Helper()
	secret, tok, err := store.CreateToken(context.Background(), db, "acme", "service", expires)
	if err != nil {
		t.Fatal(err)
	}
	return secret, tok
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// TestStreamAuthSharesAQueryPerInterval: the re-checks of one token, however
// many ask at once, make one query per interval; a revocation is seen by all
// of them at the next interval, an expiry at once, and expired answers are
// dropped.
func TestStreamAuthSharesAQueryPerInterval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := tenantDB(t)
	clock := &fakeClock{now: time.Now()}
	expires := clock.Now().Add(90 * time.Second)
	secret, tok := newToken(t, db, nil)
	expiring, _ := newToken(t, db, &expires)
	const interval, streams = time.Minute, 50
	a := newStreamAuth(db, interval, clock.Now)
	// round has every stream check the token at once, and returns the
	// queries it took and the errors the streams got.
	round := func(secret string) (int64, []error) {
		t.Helper()
		before := db.n.Load()
		errs := make([]error, streams)
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() { _, errs[i] = a.check(ctx, secret) })
		}
		wg.Wait()
		return db.n.Load() - before, errs
	}
	wantAll := func(name string, errs []error, reason store.TokenReason) {
		t.Helper()
		for _, err := range errs {
			var denied *store.TokenError
			switch {
			case reason == "" && err != nil:
				t.Fatalf("%s: a stream got %v, want the token valid", name, err)
			case reason != "" && (!errors.As(err, &denied) || denied.Reason != reason):
				t.Fatalf("%s: a stream got %v, want the token %s", name, err, reason)
			}
		}
	}

	queries, errs := round(secret)
	wantAll("first interval", errs, "")
	if queries != 1 {
		t.Errorf("%d streams checking a token at once made %d queries, want 1", streams, queries)
	}
	clock.advance(interval / 2)
	if queries, errs = round(secret); queries != 0 {
		t.Errorf("the streams' checks within the interval made %d queries, want 0", queries)
	}
	wantAll("same interval", errs, "")

	if err := store.RevokeToken(ctx, db, "acme", tok.ID, clock.Now()); err != nil {
		t.Fatal(err)
	}
	clock.advance(interval / 2)
	queries, errs = round(secret)
	wantAll("after the revocation", errs, store.TokenRevoked)
	if queries != 1 {
		t.Errorf("the checks of the next interval made %d queries, want 1", queries)
	}

	// An answer kept from before the expiry says expired after it.
	if queries, errs = round(expiring); queries != 1 {
		t.Errorf("the checks of another token made %d queries, want 1", queries)
	}
	wantAll("before the expiry", errs, "")
	clock.advance(interval - time.Second)
	if queries, errs = round(expiring); queries != 0 {
		t.Errorf("the checks after the expiry within the interval made %d queries, want 0", queries)
	}
	wantAll("after the expiry", errs, store.TokenExpired)

	// Answers older than the interval are dropped as new ones come in.
	clock.advance(2 * interval)
	round(expiring)
	a.mu.Lock()
	kept := len(a.kept)
	a.mu.Unlock()
	if kept != 1 {
		t.Errorf("%d answers kept, want 1: the expired one of the revoked token is still there", kept)
	}
}

// A store that cannot say is not an answer kept: the next check asks again.
func TestStreamAuthKeepsNoFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := tenantDB(t)
	secret, _ := newToken(t, db, nil)
	clock := &fakeClock{now: time.Now()}
	a := newStreamAuth(&failingQueries{db}, time.Minute, clock.Now)
	var denied *store.TokenError
	if _, err := a.check(ctx, secret); err == nil || errors.As(err, &denied) {
		t.Fatalf("check with the store down = %v, want the store's error", err)
	}
	a.db = db
	if _, err := a.check(ctx, secret); err != nil || db.n.Load() != 1 {
		t.Errorf("check with the store back = %v after %d queries, want the token valid after 1", err, db.n.Load())
	}
}

type failingQueries struct{ store.DB }

func (failingQueries) QueryRow(context.Context, string, ...any) store.Row { return failedRow{} }

type failedRow struct{}

func (failedRow) Scan(...any) error { return errors.New("connection refused") }
