// Package orchtest holds the orchestrator tests' helpers: databases of both
// store adapters, an embedded JetStream with the catalog streams, and
// workflow files written to a temporary project.
package orchtest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
)

// Ctx is a context that ends with the test and within two minutes, so a
// deadlock fails the test rather than hanging the run.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// Encoder routes and encodes catalog events as the bus does, without a
// connection: what a store needs to fill the outbox.
type Encoder struct{}

// Encode implements delivery.Encoder.
func (Encoder) Encode(_ context.Context, ev event.Event) (*nats.Msg, error) {
	subject, err := contracts.Subject(ev)
	if err != nil {
		return nil, err
	}
	return events.Encode(subject, ev)
}

// NATS is an embedded JetStream server with the catalog streams.
type NATS struct {
	Server *events.Server
}

// StartNATS starts an embedded server and provisions the catalog streams
// (ordered ones with 4 partitions).
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	srv := eventstest.StartServer(t)
	n := &NATS{Server: srv}
	bus := n.Bus(t)
	if err := node.Provision(Ctx(t), bus, node.StreamSettings{Partitions: 4, Replicas: 1, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	return n
}

// Conn opens a connection of its own, as a separate process would have.
func (n *NATS) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	return eventstest.Connect(t, n.Server)
}

// Bus opens a bus on a new connection, closed when the test ends.
func (n *NATS) Bus(t testing.TB) *events.Bus {
	t.Helper()
	return NewBus(t, n.Conn(t))
}

// NewBus returns a bus on nc, closed when the test ends.
func NewBus(t testing.TB, nc *nats.Conn) *events.Bus {
	t.Helper()
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

// Project writes files (name to content) into a new directory and returns it.
func Project(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Bundle writes a workflow (wf.yaml), its registry (agents.yaml) and other
// files into a project and loads it.
func Bundle(t testing.TB, workflow, registry string, files map[string]string) *definition.Bundle {
	t.Helper()
	all := map[string]string{"wf.yaml": workflow, "agents.yaml": registry}
	for k, v := range files {
		all[k] = v
	}
	dir := Project(t, all)
	b, err := definition.Load(definition.LoadOptions{Workflow: filepath.Join(dir, "wf.yaml")})
	if err != nil {
		t.Fatalf("load workflow: %v", err)
	}
	return b
}

// Logger is the tests' logger: discarded unless PRAETOR_TEST_LOG is set
// (to debug, info, warn or error), then text on stderr. Logging to t.Log is
// avoided: goroutines that outlive a test would make it panic.
func Logger(testing.TB) *slog.Logger {
	v := os.Getenv("PRAETOR_TEST_LOG")
	if v == "" {
		return slog.New(slog.DiscardHandler)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(v))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// NewJetStream returns the JetStream API on nc.
func NewJetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Write writes one file into dir.
func Write(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
