package background_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/background"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// A dispatch taken while PostgreSQL is down does not spend its deliveries
// on the outage: the consumer pauses (the dispatch waits, its task not
// run), and once the database is back the task runs once and its answer is
// committed; nothing is dead-lettered.
func TestDispatchWhileTheDatabaseIsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	metrics, err := events.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(eventstest.Connect(t, eventstest.StartServer(t)), events.Config{Subject: contracts.Subject, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	if err := node.Provision(ctx, bus, node.StreamSettings{Partitions: 1, Replicas: 1, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	db, proxy := testdb.PostgresBehindProxy(t)
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: bus, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Stop(context.Background()) })

	var ran atomic.Int32
	h := background.NewHandlers()
	if err := h.Register(testHandler, "the test's handler", func(context.Context, background.Task) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`{"summary":"found it","findings":[]}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	s, err := background.New(background.Config{DB: db, Bus: bus, Relay: relay, Handlers: h, AckWait: time.Second,
		MaxDeliver: 3, Unavailable: postgres.IsUnavailable})
	if err != nil {
		t.Fatal(err)
	}
	startService(t, s)

	proxy.SetDown(true)
	now := time.Now()
	ev := runnertest.Event(t, "dispatch-outage", now, contracts.TaskDispatched{TenantID: runnertest.Tenant, TaskID: "probe",
		Kind: contracts.TaskKindBackground, Handler: testHandler, OwnerID: "sess-outage", Attempt: 1, Timeout: 30 * time.Second,
		Deadline: now.Add(time.Hour), Input: json.RawMessage(`{}`)})
	if err := bus.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	paused := func() bool { return testutil.ToFloat64(metrics.PausedOf(background.Consumer)) == 1 }
	eventstest.Eventually(t, 30*time.Second, "the consumer paused, or the dispatch dead-lettered", func() bool {
		return paused() || len(eventstest.DeadLetters(t, bus, contracts.StreamTasks, background.Consumer)) > 0
	})
	if !paused() {
		t.Fatalf("the dispatch was dead-lettered while the database was down: %+v",
			eventstest.DeadLetters(t, bus, contracts.StreamTasks, background.Consumer))
	}
	proxy.SetDown(false)
	eventstest.Eventually(t, 30*time.Second, "the dispatch handled once the database is back", func() bool {
		done, err := store.Handled(ctx, db, background.Consumer, ev.ID())
		return err == nil && done
	})
	if n := ran.Load(); n != 1 {
		t.Errorf("the task ran %d times, want once", n)
	}
	if dls := eventstest.DeadLetters(t, bus, contracts.StreamTasks, background.Consumer); len(dls) != 0 {
		t.Errorf("dead letters = %+v, want none", dls)
	}
}
