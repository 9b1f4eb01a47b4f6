package orchestrator_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// The node's services on PostgreSQL: a run requested while the database is
// down does not spend its request's deliveries on the outage; the
// orchestrator's consumer pauses, probing the database, and once it is
// back the run starts and completes; nothing is dead-lettered.
func TestServiceWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	n := orchtest.StartNATS(t)
	db, proxy := testdb.PostgresBehindProxy(t)
	metrics, err := events.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(n.Conn(t), events.Config{Subject: contracts.Subject, Metrics: metrics, Logger: orchtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	dir := svcProject(t)
	vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml"),
		orchestrator.EnvLease: "3s"})
	wd, od := nodeDeps(t, n, db), nodeDeps(t, n, db)
	wd.Bus, od.Bus = bus, bus
	startService(t, orchestrator.WorkerFactory(vars), wd)
	startService(t, orchestrator.ServiceFactory(vars), od)
	client := n.Bus(t)

	proxy.SetDown(true)
	request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "svc-outage", Workflow: "flows/chain.yaml"})
	const consumer = "orchestrator"
	paused := func() bool { return testutil.ToFloat64(metrics.PausedOf(consumer)) == 1 }
	eventually(t, "the orchestrator's consumer paused, or the request dead-lettered", func() bool {
		return paused() || len(eventstest.DeadLetters(t, client, contracts.StreamWorkflows, consumer)) > 0
	})
	if !paused() {
		t.Fatalf("the request was dead-lettered while the database was down: %+v",
			eventstest.DeadLetters(t, client, contracts.StreamWorkflows, consumer))
	}
	proxy.SetDown(false)
	st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, st, "svc-outage", engine.RunCompleted)
	if dls := eventstest.DeadLetters(t, client, contracts.StreamWorkflows, consumer); len(dls) != 0 {
		t.Errorf("dead letters = %+v, want none", dls)
	}
}
