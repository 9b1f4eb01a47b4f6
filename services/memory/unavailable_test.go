package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/memory/internal/memtest"
)

// A write request taken while PostgreSQL (the inbox, the tokens and the
// pending writes) is down does not spend its deliveries on the outage: the
// consumer pauses, probing the database, and once it is back the request
// is answered, once; nothing is dead-lettered.
func TestServiceWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := memtest.Ctx(t)
	db, proxy := testdb.PostgresBehindProxy(t)
	r := newRig(t, db)
	g := memtest.Embedded(t)
	m := r.memory(t, g, nil)
	memtest.Tenant(t, db, "acme")
	memtest.Project(t, g, "acme", "shop")
	metrics, err := events.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(eventstest.Connect(t, r.srv), events.Config{Subject: contracts.Subject, Metrics: metrics,
		Logger: memtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	s, err := memory.NewService(memory.ServiceConfig{Memory: m, Bus: bus, DB: db, Relay: r.relay, AckWait: 2 * time.Second,
		Logger: memtest.Logger(t), Unavailable: postgres.IsUnavailable})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })

	proxy.SetDown(true)
	r.request(t, write1("acme", "r-outage", "shop", "Orders are kept for seven years"))
	paused := func() bool { return testutil.ToFloat64(metrics.PausedOf(memory.Consumer)) == 1 }
	memtest.WaitFor(t, "the consumer paused, or the request dead-lettered", 30*time.Second, func() bool {
		return paused() || len(eventstest.DeadLetters(t, bus, contracts.StreamMemory, memory.Consumer)) > 0
	})
	if !paused() {
		t.Fatalf("the request was dead-lettered while the database was down: %+v",
			eventstest.DeadLetters(t, bus, contracts.StreamMemory, memory.Consumer))
	}
	proxy.SetDown(false)
	if a := r.answer(t, "r-outage"); a.Status != "saved" {
		t.Errorf("answer once the database is back: %+v, want saved", a)
	}
	if dls := eventstest.DeadLetters(t, bus, contracts.StreamMemory, memory.Consumer); len(dls) != 0 {
		t.Errorf("dead letters = %+v, want none", dls)
	}
	// The relay publishes what the inbox committed; a second answer would
	// be a second handling.
	r.mu.Lock()
	n := len(r.written["r-outage"])
	r.mu.Unlock()
	if n != 1 {
		t.Errorf("%d answers, want one", n)
	}
}
