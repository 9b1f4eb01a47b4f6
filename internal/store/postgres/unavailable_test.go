package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/testenv"
)

// What says the database is unavailable, to be waited out, and what says
// the statement or its data is at fault.
func TestIsUnavailableOfErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"cannot connect now (starting up)", fmt.Errorf("load: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"refused", fmt.Errorf("save: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"query canceled", &pgconn.PgError{Code: "57014"}, false},
		{"not found", store.ErrNotFound, false},
		{"cancelled", context.Canceled, false},
		{"plain", errors.New("connection refused"), false},
		{"nil", nil, false},
	} {
		if got := postgres.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("IsUnavailable(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// Against a real server: a database behind a proxy that goes away (the
// ops review's test) and a backend terminated by an administrator are
// unavailable, to be waited out; a bad statement and a broken constraint
// are not.
func TestIsUnavailableOfTheServer(t *testing.T) {
	url := testenv.Postgres(t)
	pc, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))))
	db, err := postgres.Open(t.Context(), postgres.WithDial(postgres.Config{URL: url, MaxConns: 2},
		func(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", proxy.Addr())
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()

	if _, err := db.Exec(ctx, `SELECT nope`); err == nil || postgres.IsUnavailable(err) {
		t.Errorf("a bad statement: %v, IsUnavailable = %v, want an error, not unavailable", err, postgres.IsUnavailable(err))
	}
	if _, err := db.Exec(ctx, `CREATE TEMP TABLE u (k int PRIMARY KEY); INSERT INTO u VALUES (1), (1)`); err == nil || postgres.IsUnavailable(err) {
		t.Errorf("a broken constraint: %v, IsUnavailable = %v, want an error, not unavailable", err, postgres.IsUnavailable(err))
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.Exec(cancelled, `SELECT 1`); err == nil || postgres.IsUnavailable(err) {
		t.Errorf("a statement of a cancelled caller: %v, IsUnavailable = %v, want an error, not unavailable", err, postgres.IsUnavailable(err))
	}

	// A backend terminated under a pooled connection.
	var pid int
	if err := db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	admin, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	// The pool hands out the idle connection whose backend is gone, or a
	// new one: the first statement fails unavailable, or succeeds.
	for range 2 {
		_, err := db.Exec(ctx, `SELECT 1`)
		t.Logf("after the backend was terminated: %v", err)
		if err != nil && !postgres.IsUnavailable(err) {
			t.Errorf("a statement on a terminated backend: %v, want unavailable", err)
		}
	}

	// The proxy down, as a database host that went down: its connections
	// cut and new ones refused.
	proxy.SetDown(true)
	for i := range 2 { // a connection of the pool, then a new one
		_, err := db.Exec(ctx, `SELECT 1`)
		t.Logf("with the database gone: %v", err)
		if err == nil || !postgres.IsUnavailable(err) {
			t.Errorf("statement %d with the database gone: %v, want unavailable", i+1, err)
		}
	}
	if err := db.Ping(ctx); !postgres.IsUnavailable(err) {
		t.Errorf("Ping with the database gone: %v, want unavailable", err)
	}
}
