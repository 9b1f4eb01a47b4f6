package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

// outage is a database behind a proxy the test cuts off, and a bus whose
// metrics say which consumers pause.
type outage struct {
	t       *testing.T
	db      store.DB
	proxy   *testenv.Proxy
	bus     *events.Bus
	metrics *events.Metrics
}

func newOutage(t *testing.T) *outage {
	t.Helper()
	o := &outage{t: t}
	o.db, o.proxy = testdb.PostgresBehindProxy(t)
	var err error
	if o.metrics, err = events.NewMetrics(nil); err != nil {
		t.Fatal(err)
	}
	o.bus, err = events.New(orchtest.StartNATS(t).Conn(t), events.Config{Subject: contracts.Subject, Metrics: o.metrics,
		Logger: orchtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.bus.Close(context.Background()) })
	return o
}

// paused waits until consumer pauses for the database, failing the test
// when its event is dead-lettered instead.
func (o *outage) paused(consumer string) {
	o.t.Helper()
	paused := func() bool { return testutil.ToFloat64(o.metrics.PausedOf(consumer)) == 1 }
	eventstest.Eventually(o.t, 30*time.Second, consumer+" paused, or its event dead-lettered", func() bool {
		return paused() || len(eventstest.DeadLetters(o.t, o.bus, contracts.StreamTasks, consumer)) > 0
	})
	if !paused() {
		o.t.Fatalf("%s dead-lettered its event while the database was down: %+v", consumer,
			eventstest.DeadLetters(o.t, o.bus, contracts.StreamTasks, consumer))
	}
}

// An answer received while PostgreSQL is down does not spend its
// deliveries on the outage: the answers' consumer pauses, probing the
// database, and once it is back the answer is recorded, once; nothing is
// dead-lettered.
func TestAnswerWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := orchtest.Ctx(t)
	o := newOutage(t)
	db, proxy, bus := o.db, o.proxy, o.bus
	results, reg := sqlstore.NewResults(db), prometheus.NewRegistry()
	const consumer = "orchestrator-results"
	disp, err := dispatch.New(dispatch.Config{Bus: bus, Results: results, Consumer: consumer, Logger: orchtest.Logger(t),
		Registerer: reg, Unavailable: postgres.IsUnavailable, Probe: db.Ping})
	if err != nil {
		t.Fatal(err)
	}
	if err := disp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = disp.Stop(context.Background()) })

	proxy.SetDown(true)
	const dispatchID = "run-outage/a/1"
	task := agent.Task{RunID: "run-outage", TaskID: "a", DispatchID: dispatchID, Attempt: 1, Agent: "mock"}
	ev, err := taskmsg.Completed(tenant, taskmsg.DispatchEventID(tenant, dispatchID), task, agent.Result{}, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	o.paused(consumer)
	proxy.SetDown(false)
	eventually(t, "the answer recorded once the database is back", func() bool {
		_, err := results.Load(ctx, tenant, dispatchID)
		return err == nil
	})
	if dls := eventstest.DeadLetters(t, bus, contracts.StreamTasks, consumer); len(dls) != 0 {
		t.Errorf("dead letters = %+v, want none", dls)
	}
	if n, err := testutil.GatherAndCount(reg, "praetor_workflow_answers_total"); err != nil || n != 1 {
		t.Errorf("answers counted by outcome: %d series (%v), want one (recorded)", n, err)
	}
}

// Unavailable without Probe is refused at New, naming both.
func TestUnavailableNeedsProbe(t *testing.T) {
	_, err := dispatch.New(dispatch.Config{Bus: (*events.Bus)(nil), Results: sqlstore.NewResults(testdb.SQLite(t)),
		Unavailable: postgres.IsUnavailable})
	if err == nil || !strings.Contains(err.Error(), "Unavailable and Probe") {
		t.Fatalf("New with Unavailable and no Probe: %v, want an error naming both", err)
	}
}

// A dispatch whose answer cannot be committed, PostgreSQL being down, does
// not spend its deliveries on the outage: the agent's consumer pauses,
// probing the database, and once it is back the answer is committed and
// published, once; nothing is dead-lettered. (The attempt ran before the
// commit failed, and runs again: its answer had not been kept.)
func TestWorkerWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := orchtest.Ctx(t)
	o := newOutage(t)
	relay := startRelay(t, o.db, o.bus)
	p, err := worker.New(worker.Config{Bus: o.bus, DB: o.db, Relay: relay, Runtime: router(mock.New(mock.Config{})),
		Agents: []string{"mock"}, Logger: orchtest.Logger(t), Unavailable: postgres.IsUnavailable})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Stop(ctx)
	})

	o.proxy.SetDown(true)
	const dispatchID = "run-outage/a/1"
	task := agent.Task{RunID: "run-outage", TaskID: "a", DispatchID: dispatchID, Attempt: 1, Agent: "mock",
		Kind: agent.KindWork, Timeout: time.Minute}
	now := time.Now()
	ev, err := taskmsg.Dispatched(tenant, task, agent.Context{Instructions: "write a"}, now, now.Add(time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.bus.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	const consumer = "agent-worker-mock"
	o.paused(consumer)
	o.proxy.SetDown(false)
	c := &cluster{t: t}
	eventually(t, "the answer published once the database is back", func() bool { return c.answers(o.bus, dispatchID) > 0 })
	if n := c.answers(o.bus, dispatchID); n != 1 {
		t.Errorf("%d answers on the stream, want one", n)
	}
	if dls := eventstest.DeadLetters(t, o.bus, contracts.StreamTasks, consumer); len(dls) != 0 {
		t.Errorf("dead letters = %+v, want none", dls)
	}
}
