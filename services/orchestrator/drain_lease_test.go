package orchestrator_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// Once the node's stop begins (the context Start was given ends; the node
// then drains every consumer before it stops the services), a replica takes
// over no orphaned run: it would carry it only until its Stop, and hold it
// from the replicas that go on. It renews the runs it carries until then.
func TestADrainingReplicaTakesOverNoRun(t *testing.T) {
	dir := orchtest.Project(t, map[string]string{
		"agents.yaml":      "agents:\n  mock:\n    kind: mock\n    mock:\n      tasks:\n        slow: {delay: 60s}\n",
		"flows/chain.yaml": "name: chain\nagents: ../agents.yaml\ntasks:\n  - id: a\n    agent: mock\n  - id: slow\n    agent: mock\n    depends_on: [a]\n",
	})
	db, n, vars := shortLeases(t, dir)
	st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := orchestrator.ServiceFactory(vars)(context.Background(), nodeDeps(t, n, db))
	if err != nil {
		t.Fatal(err)
	}
	a := run.(*orchestrator.Service)
	sigterm, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.Start(sigterm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})
	request(t, n.Bus(t), contracts.WorkflowRequested{TenantID: "acme", RunID: "mine", Workflow: "flows/chain.yaml"})
	eventually(t, "slow to run", func() bool {
		s, err := st.Load(context.Background(), "mine")
		return err == nil && s.Tasks["slow"].Status == engine.TaskRunning
	})

	cancel() // SIGTERM: the node drains its consumers; Stop comes after
	orphan(t, st, filepath.Join(dir, "flows", "chain.yaml"))
	lease := func(run string) (owner string, until time.Time) {
		t.Helper()
		if err := db.QueryRow(context.Background(), `SELECT owner, lease_until FROM workflow_runs WHERE tenant_id = 'acme' AND id = $1`,
			run).Scan(&owner, &until); err != nil {
			t.Fatal(err)
		}
		return owner, until
	}
	// Two renewals of its own run: a round of its lease loop, which looks
	// for orphans after it renews, has passed since the orphan appeared.
	for range 2 {
		_, was := lease("mine")
		eventually(t, "replica A to renew the lease of the run it carries", func() bool {
			owner, until := lease("mine")
			return owner == a.Owner() && until.After(was)
		})
	}
	if owner, _ := lease("orphan"); owner != "dead-replica" {
		t.Errorf("the orphan is held by %s (A: %v) after A's stop began, want it left to the replicas that go on", owner, owner == a.Owner())
	}
}
