package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/gateway/gatewaytest"
)

var errDatabaseDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

// downDB is a store whose statements fail as a database that is down
// while down is set.
type downDB struct {
	store.DB
	down *atomic.Bool
}

func (d downDB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if d.down.Load() {
		return failedRow{errDatabaseDown}
	}
	return d.DB.QueryRow(ctx, query, args...)
}

type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// With the database down, a request is answered 503 unavailable with a
// Retry-After, for the client to try again shortly: the client is not at
// fault, and nothing in the server is broken that a 500 would report. A
// store failure the gateway is not told is an outage stays a 500.
func TestUnavailableDatabaseIs503(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		classify  bool
		status    int
		code      string
		mentions  string
		retryWhen bool
	}{
		{"an outage", true, http.StatusServiceUnavailable, "unavailable", "the database is unavailable", true},
		{"another failure", false, http.StatusInternalServerError, "internal", "see the server log", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			down := &atomic.Bool{}
			n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}, Gateway: func(c *gateway.Config) {
				c.DB = downDB{DB: c.DB, down: down}
				if tc.classify {
					c.Unavailable = func(err error) bool { return errors.Is(err, errDatabaseDown) }
				}
			}})
			token := n.Tenant(t, "acme")
			down.Store(true)
			res := n.Post(t, "/v1/sessions", token, map[string]any{"engine_id": "ideation"})
			wantError(t, res, tc.status, tc.code, tc.mentions)
			if got := res.Header.Get("Retry-After"); (got != "") != tc.retryWhen {
				t.Errorf("Retry-After %q, want one: %v", got, tc.retryWhen)
			}
			down.Store(false)
			if res := n.Get(t, "/v1/engines", token); res.Status != http.StatusOK {
				t.Errorf("with the database back: %d %s", res.Status, res.Body)
			}
		})
	}
}
