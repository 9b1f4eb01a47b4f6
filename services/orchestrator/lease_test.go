package orchestrator_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// A replica that claims an orphaned run and fails to resume it (here its
// workflow file is briefly unreadable) does not renew its lease, which runs
// out, and a replica resumes the run then. (Renewing every run a replica
// held kept it for ever; found by helper-52.)
func TestAFailedResumeLetsTheLeaseRunOut(t *testing.T) {
	dir := svcProject(t)
	db, n, vars := shortLeases(t, dir)
	st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(dir, "flows", "chain.yaml")
	orphan(t, st, wf)

	// The workflow file is away for a moment (a deploy rewriting it).
	if err := os.Rename(wf, wf+".away"); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	d := nodeDeps(t, n, db)
	d.Logger = slog.New(slog.NewTextHandler(logs, nil))
	a := startService(t, orchestrator.ServiceFactory(vars), d).(*orchestrator.Service)
	eventually(t, "replica A to claim the orphan", func() bool {
		var owner string
		_ = db.QueryRow(context.Background(), `SELECT owner FROM workflow_runs WHERE tenant_id = 'acme' AND id = 'orphan'`).Scan(&owner)
		return owner == a.Owner()
	})
	eventually(t, "replica A to fail to resume the orphan", func() bool {
		return strings.Contains(logs.String(), "an orphaned run cannot be resumed")
	})
	if err := os.Rename(wf+".away", wf); err != nil {
		t.Fatal(err)
	}
	// A second replica is there too. Either should carry the run on once the
	// lease it failed under expires (3s).
	startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		s, err := st.Load(context.Background(), "orphan")
		if err == nil && s.Status == engine.RunCompleted {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	var owner string
	var until time.Time
	_ = db.QueryRow(context.Background(), `SELECT owner, lease_until FROM workflow_runs WHERE tenant_id = 'acme' AND id = 'orphan'`).Scan(&owner, &until)
	s, _ := st.Load(context.Background(), "orphan")
	t.Fatalf("15s (5 leases) after the file came back the run is %s, seq %d; owner %s (A=%v), lease until %s (in %s): "+
		"the replica that failed to resume it renews its lease for ever", s.Status, s.Seq, owner, owner == a.Owner(), until,
		time.Until(until).Round(time.Second))
}

// failOneTx fails the next transaction once armed (a connection reset).
type failOneTx struct {
	store.DB
	armed atomic.Bool
}

func (f *failOneTx) Tx(ctx context.Context, fn func(store.Querier) error) error {
	if f.armed.CompareAndSwap(true, false) {
		return errors.New("connection reset by peer")
	}
	return f.DB.Tx(ctx, fn)
}

// One failed Save stops the run's executor (ErrPersist, by design); the
// replica no longer renews its lease, and a replica resumes the run once it
// runs out. Found by helper-52.
func TestARunStoppedByAFailedSaveIsResumed(t *testing.T) {
	dir := svcProject(t)
	db, n, vars := shortLeases(t, dir)
	fdb := &failOneTx{DB: db}
	d := nodeDeps(t, n, db)
	d.DB = fdb
	startService(t, orchestrator.ServiceFactory(vars), d)
	startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db)) // a healthy second replica
	st, _ := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})

	request(t, n.Bus(t), contracts.WorkflowRequested{TenantID: "acme", RunID: "p1", Workflow: "flows/chain.yaml"})
	eventually(t, "slow to run", func() bool {
		s, err := st.Load(context.Background(), "p1")
		return err == nil && s.Tasks["slow"].Status == engine.TaskRunning
	})
	fdb.armed.Store(true) // the save of slow's answer fails once
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s, err := st.Load(context.Background(), "p1"); err == nil && s.Status == engine.RunCompleted {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s, _ := st.Load(context.Background(), "p1")
	t.Fatalf("20s after one failed save the run is %s at seq %d (slow %s): stranded under a lease its replica renews", s.Status, s.Seq, s.Tasks["slow"].Status)
}

// flakyRenew fails lease renewals while fail is set (a database that does
// not answer them for a while).
type flakyRenew struct {
	store.DB
	fail atomic.Bool
}

func (f *flakyRenew) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	if f.fail.Load() && strings.Contains(q, "SET lease_until = $2 WHERE owner = $1") {
		return 0, context.DeadlineExceeded
	}
	return f.DB.Exec(ctx, q, args...)
}

// When a replica's renewals fail for longer than a lease, it claims its
// own run back without resuming it a second time: one executor, which a
// drain then stops and releases (two, of which s.active kept one, made the
// drain wait for the run to finish). Found by helper-52.
func TestAReplicaDoesNotTakeOverItsOwnRun(t *testing.T) {
	dir := orchtest.Project(t, map[string]string{
		"agents.yaml":      "agents:\n  mock:\n    kind: mock\n    mock:\n      tasks:\n        slow: {delay: 6s}\n        slow2: {delay: 10s}\n",
		"flows/chain.yaml": "name: chain\nagents: ../agents.yaml\ntasks:\n  - id: a\n    agent: mock\n  - id: slow\n    agent: mock\n    depends_on: [a]\n  - id: slow2\n    agent: mock\n    depends_on: [slow]\n",
	})
	db, n, vars := shortLeases(t, dir)
	fdb := &flakyRenew{DB: db}
	d := nodeDeps(t, n, db)
	d.DB = fdb
	a := startService(t, orchestrator.ServiceFactory(vars), d).(*orchestrator.Service)
	st, _ := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})

	request(t, n.Bus(t), contracts.WorkflowRequested{TenantID: "acme", RunID: "self", Workflow: "flows/chain.yaml"})
	eventually(t, "slow to run", func() bool {
		s, err := st.Load(context.Background(), "self")
		return err == nil && s.Tasks["slow"].Status == engine.TaskRunning
	})
	fdb.fail.Store(true) // renewals fail for a little more than a lease
	time.Sleep(4 * time.Second)
	fdb.fail.Store(false)
	eventually(t, "slow2 to run", func() bool {
		s, err := st.Load(context.Background(), "self")
		return err == nil && s.Tasks["slow2"].Status == engine.TaskRunning
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = a.Stop(ctx)
	// Stopped and released, not carried to its end by an executor the
	// drain did not know of.
	if s, _ := st.Load(context.Background(), "self"); s.Status != engine.RunRunning || s.Tasks["slow2"].Status == engine.TaskCompleted {
		t.Fatalf("after the drain the run is %s (slow2 %s); want RUNNING, released", s.Status, s.Tasks["slow2"].Status)
	}
}

// shortLeases starts what the lease tests share: a store, NATS, the
// settings of the project dir with 3s leases, and an agent worker.
func shortLeases(t *testing.T, dir string) (store.DB, *orchtest.NATS, func(string) (string, bool)) {
	t.Helper()
	db := testdb.SQLite(t)
	n := orchtest.StartNATS(t)
	vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml"),
		orchestrator.EnvLease: "3s"})
	startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
	return db, n, vars
}
