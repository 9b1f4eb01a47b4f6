package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

// An answer received while PostgreSQL is down does not spend its
// deliveries on the outage: the answers' consumer pauses, probing the
// database, and once it is back the answer is recorded, once; nothing is
// dead-lettered.
func TestAnswerWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := orchtest.Ctx(t)
	db, proxy := testdb.PostgresBehindProxy(t)
	metrics, err := events.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	nats := orchtest.StartNATS(t)
	bus, err := events.New(nats.Conn(t), events.Config{Subject: contracts.Subject, Metrics: metrics, Logger: orchtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
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
	paused := func() bool { return testutil.ToFloat64(metrics.PausedOf(consumer)) == 1 }
	eventstest.Eventually(t, 30*time.Second, "the answers' consumer paused, or the answer dead-lettered", func() bool {
		return paused() || len(eventstest.DeadLetters(t, bus, contracts.StreamTasks, consumer)) > 0
	})
	if !paused() {
		t.Fatalf("the answer was dead-lettered while the database was down: %+v",
			eventstest.DeadLetters(t, bus, contracts.StreamTasks, consumer))
	}
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
