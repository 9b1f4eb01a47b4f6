// Package runnertest is the test bench of the runner and background
// services: an embedded NATS JetStream server with the catalog's streams, a
// relational store (SQLite, or PostgreSQL when asked and available) with
// its migrations, a running outbox relay, and the shipped engines plus any
// a test adds — everything a service needs except the services, which the
// tests build themselves. It imports no service, so the services' own
// tests can use it.
package runnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// Tenant is the tenant of the bench's sessions.
const Tenant = "acme"

// Options shape a bench.
type Options struct {
	// Postgres runs the store on PostgreSQL (DATABASE_URL; skipped when
	// unavailable) instead of SQLite.
	Postgres bool
	// Engines are engine files (name → YAML) loaded besides the shipped ones.
	Engines map[string]string
	// TaskHandlers are task handler names registered besides the built-in
	// ones, for the added engines to name.
	TaskHandlers []string
	// Evaluators are custom evaluators registered besides the built-in ones.
	Evaluators map[string]engine.Evaluator
}

// Rig is a running bench.
type Rig struct {
	Server   *events.Server
	Conn     *nats.Conn
	Bus      *events.Bus
	DB       store.DB
	Relay    *delivery.Relay
	Engines  *engine.Catalog
	Registry *engine.Registry
	// Logger writes to Logs, printed when the test fails.
	Logger *slog.Logger
	logs   *testenv.Buffer
}

// New starts a bench that lives until the test ends.
func New(t testing.TB, opts Options) *Rig {
	t.Helper()
	ctx := context.Background()
	r := &Rig{logs: &testenv.Buffer{}}
	r.Logger = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bench log:\n%s", r.logs.String())
		}
	})
	r.Server = eventstest.StartServer(t)
	r.Conn = eventstest.Connect(t, r.Server)
	r.Bus = r.newBus(t, r.Conn)
	if err := node.Provision(ctx, r.Bus, node.StreamSettings{Partitions: partitions, Replicas: 1, Duplicates: time.Minute}); err != nil {
		t.Fatalf("provision the streams: %v", err)
	}
	if opts.Postgres {
		r.DB = testdb.Postgres(t)
	} else {
		r.DB = testdb.SQLite(t)
	}
	var err error
	r.Relay, err = delivery.NewRelay(delivery.RelayConfig{DB: r.DB, Publisher: r.Bus, Logger: r.Logger, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Relay.Stop(context.Background()) })

	if r.Registry, err = builtin.Registry(); err != nil {
		t.Fatal(err)
	}
	for _, h := range opts.TaskHandlers {
		if err := r.Registry.RegisterTaskHandler(h, "test handler"); err != nil {
			t.Fatal(err)
		}
	}
	for name, fn := range opts.Evaluators {
		if err := r.Registry.RegisterEvaluator(name, fn); err != nil {
			t.Fatal(err)
		}
	}
	sources := []engine.Source{builtin.Source()}
	if len(opts.Engines) > 0 {
		fsys := fstest.MapFS{}
		for name, y := range opts.Engines {
			fsys[name] = &fstest.MapFile{Data: []byte(y)}
		}
		sources = append(sources, engine.Source{FS: fsys, Dir: ".", Label: "test"})
	}
	var rep engine.Report
	if r.Engines, rep, err = engine.Load(r.Registry, sources...); err != nil {
		t.Fatalf("load the engines: %v\n%v", err, rep.Errors)
	}
	return r
}

func (r *Rig) newBus(t testing.TB, nc *nats.Conn) *events.Bus {
	t.Helper()
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject, Logger: r.Logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	return bus
}

// Process is another process's connection and bus on the bench's server:
// closing Conn is that process dying.
type Process struct {
	Conn *nats.Conn
	Bus  *events.Bus
}

// NewProcess connects another "process" to the bench's server.
func (r *Rig) NewProcess(t testing.TB) Process {
	t.Helper()
	nc := eventstest.Connect(t, r.Server)
	return Process{Conn: nc, Bus: r.newBus(t, nc)}
}

// Logs returns what the bench's logger wrote.
func (r *Rig) Logs() string { return r.logs.String() }

// CreateSession stores a new session of an engine and publishes its
// session.started, as the gateway does, and returns its id.
func (r *Rig) CreateSession(t testing.TB, engineID, id string) string {
	t.Helper()
	def, ok := r.Engines.Get(engineID)
	if !ok {
		t.Fatalf("no engine %s", engineID)
	}
	at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	m := engine.NewWorkingMemory(def, id, "proj")
	m.UpdatedAt = at
	r.SaveNew(t, def, m)
	r.Publish(t, id+"-started", at, contracts.SessionStarted{TenantID: Tenant, SessionID: id, ProjectID: "proj",
		EngineID: def.EngineID, EngineVersion: def.Version, MemoryVersion: m.SchemaVersion, StartedAt: at})
	return id
}

// SaveNew stores a new session holding m.
func (r *Rig) SaveNew(t testing.TB, def *engine.Definition, m *engine.WorkingMemory) {
	t.Helper()
	state, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := engine.StateHash(m)
	err = conversation.CreateSession(context.Background(), r.DB, conversation.Session{ID: m.SessionID, TenantID: Tenant,
		ProjectID: m.ProjectID, EngineID: def.EngineID, EngineVersion: def.Version, Status: conversation.StatusActive,
		Phase: m.Phase.Current, State: state, StateHash: hash, CreatedAt: m.UpdatedAt, UpdatedAt: m.UpdatedAt})
	if err != nil {
		t.Fatal(err)
	}
}

// Session reads a session and its working memory.
func (r *Rig) Session(t testing.TB, id string) (conversation.Session, *engine.WorkingMemory) {
	t.Helper()
	s, err := conversation.GetSession(context.Background(), r.DB, Tenant, id)
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	var m engine.WorkingMemory
	if err := json.Unmarshal(s.State, &m); err != nil {
		t.Fatal(err)
	}
	return s, &m
}

// Event builds a catalog event.
func Event(t testing.TB, id string, at time.Time, p contracts.Payload) event.Event {
	t.Helper()
	ev, err := contracts.NewEvent(contracts.Meta{ID: id, Source: "/praetor/test", Time: at}, p)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// Publish publishes a catalog event.
func (r *Rig) Publish(t testing.TB, id string, at time.Time, p contracts.Payload) {
	t.Helper()
	if err := r.Bus.Publish(context.Background(), Event(t, id, at, p)); err != nil {
		t.Fatalf("publish %s: %v", p.Spec().Name, err)
	}
}

// Turn is the turn.extracted of a session's turn n: message, and the
// session's whole extraction after it (path → value, at confidence 0.9).
func Turn(sessionID string, n int, message string, fields map[string]any) contracts.TurnExtracted {
	x := engine.NewExtraction()
	for p, v := range fields {
		b, _ := json.Marshal(v)
		x.Fields[p] = engine.ExtractedField{Value: b, Confidence: 0.9, ExtractedFromTurns: []int{n}, LastUpdatedAtTurn: n,
			LastMessageID: TurnID(sessionID, n)}
	}
	raw, _ := json.Marshal(x)
	return contracts.TurnExtracted{TenantID: Tenant, SessionID: sessionID, TurnID: TurnID(sessionID, n), TurnNumber: n,
		Message: message, Extraction: raw}
}

// TurnID is the id of a session's turn n on the bench.
func TurnID(sessionID string, n int) string { return fmt.Sprintf("%s-turn-%d", sessionID, n) }

// Events reads a stream and returns its events of a type, in order.
func (r *Rig) Events(t testing.TB, stream, ceType string) []event.Event {
	t.Helper()
	var out []event.Event
	err := r.Bus.Replay(context.Background(), events.ReplayConfig{Stream: stream}, func(rec events.Record) error {
		if rec.Err == nil && rec.Event.Type() == ceType {
			out = append(out, rec.Event)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SessionEvents are a session's events on the turns stream, in order, as
// praetor replay --session reads them.
func (r *Rig) SessionEvents(t testing.TB, sessionID string) []event.Event {
	t.Helper()
	var out []event.Event
	err := r.Bus.Replay(context.Background(), events.ReplayConfig{Stream: contracts.StreamTurns,
		Subjects: []string{"praetor.turn.*.*." + sessionID + ".*"}}, func(rec events.Record) error {
		if rec.Err == nil {
			out = append(out, rec.Event)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Drained waits until the outbox has relayed every event committed so far:
// a handler commits a session's state and its events together, and the
// events reach the stream a little later.
func (r *Rig) Drained(t testing.TB) {
	t.Helper()
	WaitFor(t, 30*time.Second, "the outbox to drain", func() bool {
		rows, err := store.Unsent(context.Background(), r.DB, 1)
		return err == nil && len(rows) == 0
	})
}

// Delivered counts the deliveries a keyed consumer of the turns stream
// made, over the rig's partitions (0 while it cannot be read).
func (r *Rig) Delivered(consumer string) uint64 {
	js, err := jetstream.New(r.Conn)
	if err != nil {
		return 0
	}
	var n uint64
	for p := range partitions {
		c, err := js.Consumer(context.Background(), contracts.StreamTurns, events.PartitionConsumer(consumer, p))
		if err != nil {
			return 0
		}
		info, err := c.Info(context.Background())
		if err != nil {
			return 0
		}
		n += info.Delivered.Consumer
	}
	return n
}

// partitions is the rig's partition count of the keyed streams.
const partitions = 2

// WaitFor polls cond until it holds or the timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an outcome
	}
}

// ForEachStore runs fn as a subtest, with a rig of its own, on each store:
// SQLite, then PostgreSQL.
func ForEachStore(t *testing.T, fn func(t *testing.T, rig *Rig)) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) { fn(t, New(t, Options{Postgres: pg})) })
	}
}
