// Package memtest holds the test helpers of the memory service: the
// relational store on both adapters, an embedded NATS with the catalog
// streams, and polling. The TCP proxy that cuts a server off is
// testenv.Proxy.
package memtest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// Ctx is a context that ends with the test (at most after two minutes).
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Logger is discarded unless PRAETOR_TEST_LOG is set (debug, info, warn,
// error), then text on stderr. t.Log is avoided: goroutines that outlive a
// test would make it panic.
func Logger(testing.TB) *slog.Logger {
	v := os.Getenv("PRAETOR_TEST_LOG")
	if v == "" {
		return slog.New(slog.DiscardHandler)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(v))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Tenant creates a tenant.
func Tenant(t testing.TB, db store.DB, id string) {
	t.Helper()
	if err := store.CreateTenant(context.Background(), db, store.Tenant{ID: id, Name: id}); err != nil {
		t.Fatal(err)
	}
}

// NATS starts an embedded JetStream server with the catalog streams
// (ordered ones with 4 partitions).
func NATS(t testing.TB) *events.Server {
	t.Helper()
	srv := eventstest.StartServer(t)
	bus := Bus(t, srv)
	if err := node.Provision(Ctx(t), bus, node.StreamSettings{Partitions: 4, Replicas: 1, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// Bus opens a bus on a new connection, closed when the test ends.
func Bus(t testing.TB, srv *events.Server) *events.Bus {
	t.Helper()
	nc := eventstest.Connect(t, srv)
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject, Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bus.Close(ctx)
	})
	return bus
}

// WaitFor polls cond every 10ms until it holds, failing the test after d.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		<-tick.C
	}
}
