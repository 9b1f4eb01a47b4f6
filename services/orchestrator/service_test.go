package orchestrator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/agent/command"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// svcProject is a workflow directory: a chain whose middle task takes a
// while, and a mock registry.
func svcProject(t *testing.T) string {
	t.Helper()
	return orchtest.Project(t, map[string]string{
		"agents.yaml": "agents:\n  mock:\n    kind: mock\n    mock:\n      tasks:\n        slow: {delay: 600ms}\n",
		"flows/chain.yaml": `name: chain
agents: ../agents.yaml
tasks:
  - id: a
    agent: mock
    outputs: [a.md]
  - id: slow
    agent: mock
    depends_on: [a]
    inputs: [a.md]
  - id: c
    agent: mock
    depends_on: [slow]
`,
	})
}

// nodeDeps are what a node gives its services: here one process's bus,
// relay and the shared database, which has the tenant acme of the tests'
// runs (a node on PostgreSQL refuses the requests of unknown tenants).
func nodeDeps(t *testing.T, n *orchtest.NATS, db store.DB) node.Deps {
	t.Helper()
	if err := store.CreateTenant(context.Background(), db, store.Tenant{ID: "acme", Name: "acme"}); err != nil && !errors.Is(err, store.ErrConflict) {
		t.Fatal(err)
	}
	bus := n.Bus(t)
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: bus, Logger: orchtest.Logger(t), Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Stop(context.Background()) })
	return node.Deps{Bus: bus, DB: db, Relay: relay, Logger: orchtest.Logger(t), Registerer: prometheus.NewRegistry(), AckWait: 2 * time.Second}
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func startService(t *testing.T, f node.Factory, d node.Deps) node.Service {
	t.Helper()
	s, err := f(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return s
}

func waitRun(t *testing.T, st *sqlstore.Store, runID string, status engine.RunStatus) engine.State {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := st.Load(context.Background(), runID)
		if err == nil && s.Status == status {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s (%v), want %s", runID, s.Status, err, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func request(t *testing.T, bus *events.Bus, req contracts.WorkflowRequested) {
	t.Helper()
	req.RequestedAt = time.Now()
	if err := bus.Publish(context.Background(), contracts.MustEvent(contracts.Meta{}, req)); err != nil {
		t.Fatal(err)
	}
}

// The orchestrator service starts requested runs and carries them to their
// end with an agent-worker service; a repeated request starts nothing; a
// request for a file outside the workflow directory, or an invalid one, is
// dead-lettered with the reason.
func TestServiceRunsRequestedWorkflows(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		n := orchtest.StartNATS(t)
		dir := svcProject(t)
		vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml"),
			orchestrator.EnvLease: "3s"})
		startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
		startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db))
		client := n.Bus(t)

		request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "svc-1", Workflow: "flows/chain.yaml", Seed: 9})
		st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		s := waitRun(t, st, "svc-1", engine.RunCompleted)
		if s.Seed != 9 || s.Tasks["c"].Iterations != 1 {
			t.Fatalf("run = seed %d, c %+v", s.Seed, s.Tasks["c"])
		}
		request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "svc-1", Workflow: "flows/chain.yaml"})
		request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "svc-bad", Workflow: "../outside.yaml"})
		orchtest.Write(t, dir, "flows/broken.yaml", "name: broken\nagents: ../agents.yaml\ntasks:\n  - id: a\n    agent: ghost\n")
		request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "svc-broken", Workflow: "flows/broken.yaml"})

		var letters []events.DeadLetter
		eventually(t, "two dead letters", func() bool {
			letters = eventstest.DeadLetters(t, client, contracts.StreamWorkflows, "orchestrator")
			return len(letters) >= 2
		})
		reasons := letters[0].Reason + "\n" + letters[1].Reason
		for _, want := range []string{`"../outside.yaml" leaves ` + orchestrator.EnvWorkflowDir, "broken.yaml:5:12: tasks[0].agent", "ghost"} {
			if !strings.Contains(reasons, want) {
				t.Errorf("dead letters lack %q:\n%s", want, reasons)
			}
		}
		evs, err := st.Events(context.Background(), "svc-1")
		if err != nil || int64(len(evs)) != s.Seq {
			t.Fatalf("the repeated request changed the run: %d events, seq %d, %v", len(evs), s.Seq, err)
		}
		if _, err := st.Load(context.Background(), "svc-bad"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused request left a run: %v", err)
		}
	})
}

// On a node with tenants (PostgreSQL), a request of a tenant never added is
// dead-lettered naming praetor tenant add, and a request reusing a run's id
// with another workflow is dead-lettered naming the run's workflow, where
// it was dropped as a redelivery; dev's SQLite serves any tenant.
func TestServiceRefusesUnknownTenantsAndReusedRunIDs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		n := orchtest.StartNATS(t)
		dir := svcProject(t)
		orchtest.Write(t, dir, "flows/other.yaml", "name: other\nagents: ../agents.yaml\ntasks:\n  - id: a\n    agent: mock\n")
		vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml"),
			orchestrator.EnvLease: "3s"})
		startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
		startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db))
		client := n.Bus(t)
		acme, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		ghost, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "ghost"})
		if err != nil {
			t.Fatal(err)
		}

		request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "reused", Workflow: "flows/other.yaml"})
		waitRun(t, acme, "reused", engine.RunCompleted)
		request(t, client, contracts.WorkflowRequested{TenantID: "acme", RunID: "reused", Workflow: "flows/chain.yaml"})
		request(t, client, contracts.WorkflowRequested{TenantID: "ghost", RunID: "g1", Workflow: "flows/other.yaml"})

		want := []string{`run reused of tenant acme already exists, a run of workflow flows/other.yaml: the request for workflow flows/chain.yaml reuses its id`}
		letters := 1
		if db.Dialect() == store.Postgres {
			want = append(want, "tenant ghost does not exist in the node's database: add it with praetor tenant add --tenant ghost")
			letters = 2
		} else {
			waitRun(t, ghost, "g1", engine.RunCompleted)
		}
		var got []events.DeadLetter
		eventually(t, "the dead letters", func() bool {
			got = eventstest.DeadLetters(t, client, contracts.StreamWorkflows, "orchestrator")
			return len(got) >= letters
		})
		var reasons []string
		for _, dl := range got {
			reasons = append(reasons, dl.Reason)
		}
		all := strings.Join(reasons, "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("dead letters lack %q:\n%s", w, all)
			}
		}
		if len(got) != letters {
			t.Errorf("%d dead letters, want %d:\n%s", len(got), letters, all)
		}
		if db.Dialect() == store.Postgres {
			if _, err := ghost.Load(context.Background(), "g1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the unknown tenant's run: %v, want none", err)
			}
		}
	})
}

// A request redelivered for a run whose source was never recorded (a run
// started before sources were, NULL) is a redelivery: with nothing to
// compare it with, it is dropped, not dead-lettered as a reused run id.
func TestServiceTakesARedeliveryOfARunWithoutSource(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	n := orchtest.StartNATS(t)
	dir := svcProject(t)
	vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml")})
	startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
	startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db))
	client := n.Bus(t)
	acme, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	req := contracts.WorkflowRequested{TenantID: "acme", RunID: "legacy", Workflow: "flows/chain.yaml"}
	request(t, client, req)
	waitRun(t, acme, "legacy", engine.RunCompleted)
	if _, err := db.Exec(context.Background(), `UPDATE workflow_runs SET source = NULL WHERE tenant_id = 'acme' AND id = 'legacy'`); err != nil {
		t.Fatal(err)
	}
	request(t, client, req)
	ctx := context.Background()
	stream, err := client.JetStream().Stream(ctx, contracts.StreamWorkflows)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the orchestrator to settle both requests", func() bool {
		var delivered uint64
		busy := false
		list := stream.ListConsumers(ctx)
		for info := range list.Info() { // read to the end: the lister's goroutine ends with it
			if strings.HasPrefix(info.Name, "orchestrator") {
				busy = busy || info.NumPending != 0 || info.NumAckPending != 0
				delivered += info.Delivered.Consumer
			}
		}
		return list.Err() == nil && !busy && delivered >= 2
	})
	if got := eventstest.DeadLetters(t, client, contracts.StreamWorkflows, "orchestrator"); len(got) != 0 {
		t.Fatalf("dead letters = %+v, want none: the redelivery was refused", got)
	}
}

// /metrics has the runs an orchestrator carries (a gauge), the runs
// finished by status and the tasks failed by agent.
func TestServiceMetricsCountRuns(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	n := orchtest.StartNATS(t)
	dir := svcProject(t)
	orchtest.Write(t, dir, "flows/fails.yaml", "name: fails\nagents: ../agents.yaml\ntasks:\n  - id: doomed\n    agent: broken\n")
	orchtest.Write(t, dir, "agents.yaml", "agents:\n  mock:\n    kind: mock\n    mock:\n      tasks:\n        slow: {delay: 600ms}\n"+
		"  broken:\n    kind: mock\n    mock:\n      fail: always\n")
	vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml")})
	startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
	d := nodeDeps(t, n, db)
	reg := d.Registerer.(*prometheus.Registry)
	startService(t, orchestrator.ServiceFactory(vars), d)
	st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	metric := func(name, label string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				if label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label) {
					continue
				}
				switch {
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				}
			}
		}
		return -1
	}

	request(t, n.Bus(t), contracts.WorkflowRequested{TenantID: "acme", RunID: "m1", Workflow: "flows/chain.yaml"})
	eventually(t, "a run in flight", func() bool { return metric("praetor_workflow_runs_in_flight", "") == 1 })
	waitRun(t, st, "m1", engine.RunCompleted)
	request(t, n.Bus(t), contracts.WorkflowRequested{TenantID: "acme", RunID: "m2", Workflow: "flows/fails.yaml"})
	waitRun(t, st, "m2", engine.RunFailed)
	eventually(t, "no run in flight", func() bool { return metric("praetor_workflow_runs_in_flight", "") == 0 })
	for _, c := range []struct {
		name, label string
		want        float64
	}{
		{"praetor_workflow_runs_finished_total", string(engine.RunCompleted), 1},
		{"praetor_workflow_runs_finished_total", string(engine.RunFailed), 1},
		{"praetor_workflow_tasks_failed_total", "broken", 1},
	} {
		if got := metric(c.name, c.label); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.label, got, c.want)
		}
	}
}

// A run whose orchestrator died — its lease expired — is claimed and
// resumed by another replica; a replica that drains releases its runs, and
// the other carries them on at once.
func TestServiceTakesOverRuns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		n := orchtest.StartNATS(t)
		dir := svcProject(t)
		vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml"),
			orchestrator.EnvLease: "3s"})
		startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
		st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
		if err != nil {
			t.Fatal(err)
		}

		orphan(t, st, filepath.Join(dir, "flows", "chain.yaml"))

		a := startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db)).(*orchestrator.Service)
		waitRun(t, st, "orphan", engine.RunCompleted)

		// A run in progress when its replica drains goes to the other.
		request(t, n.Bus(t), contracts.WorkflowRequested{TenantID: "acme", RunID: "handed-over", Workflow: "flows/chain.yaml"})
		eventually(t, "the slow task to run", func() bool {
			s, err := st.Load(context.Background(), "handed-over")
			return err == nil && s.Tasks["slow"].Status == engine.TaskRunning
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if s, _ := st.Load(context.Background(), "handed-over"); s.Status != engine.RunRunning {
			t.Fatalf("after the drain the run is %s, want RUNNING (to be carried on)", s.Status)
		}
		bsvc := startService(t, orchestrator.ServiceFactory(vars), nodeDeps(t, n, db)).(*orchestrator.Service)
		s := waitRun(t, st, "handed-over", engine.RunCompleted)
		if s.Tasks["a"].Iterations != 1 {
			t.Fatalf("a ran %d times", s.Tasks["a"].Iterations)
		}
		var owner string
		if err := db.QueryRow(context.Background(), `SELECT owner FROM workflow_runs WHERE tenant_id = $1 AND id = $2`, "acme", "handed-over").Scan(&owner); err != nil {
			t.Fatal(err)
		}
		if owner != bsvc.Owner() {
			t.Fatalf("the run's owner is %s, want the second replica %s", owner, bsvc.Owner())
		}
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSettingsFromEnv(t *testing.T) {
	t.Parallel()
	s, err := orchestrator.SettingsFromEnv(env(map[string]string{orchestrator.EnvAgents: "writer, analyst", orchestrator.EnvWorkers: "3"}))
	if err != nil || s.Workers != 3 || s.MaxParallel != 8 || s.Pool != "agent-worker" || s.Lease != 30*time.Second ||
		s.AttemptsKeep != 7*24*time.Hour ||
		strings.Join(s.Agents, ",") != "writer,analyst" || s.WorkflowDir != "." {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	_, err = orchestrator.SettingsFromEnv(env(map[string]string{orchestrator.EnvWorkers: "many", orchestrator.EnvLease: "1s",
		orchestrator.EnvAttemptsKeep: "10m"}))
	for _, k := range []string{orchestrator.EnvWorkers, orchestrator.EnvLease, orchestrator.EnvAttemptsKeep} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("bad settings = %v, want %s named", err, k)
		}
	}
}

// An agent-worker with durable attempts removes those that ended longer
// ago than PRAETOR_WORKFLOW_ATTEMPTS_KEEP, and keeps the others: nothing
// else would, as only the orchestrator knows when a run is over.
func TestWorkerServicePrunesOldAttempts(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		n := orchtest.StartNATS(t)
		dir := svcProject(t)
		attempts := t.TempDir()
		ended := func(dispatchID string, ago time.Duration) string {
			t.Helper()
			base := command.AttemptDir(attempts, dispatchID)
			orchtest.Write(t, base, "status", "0\n")
			at := time.Now().Add(-ago)
			if err := os.Chtimes(filepath.Join(base, "status"), at, at); err != nil {
				t.Fatal(err)
			}
			return base
		}
		old, recent := ended("run-old/a/1", 3*time.Hour), ended("run-new/a/1", 10*time.Minute)
		vars := env(map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml"),
			orchestrator.EnvAttemptsDir: attempts, orchestrator.EnvAttemptsKeep: "2h"})
		startService(t, orchestrator.WorkerFactory(vars), nodeDeps(t, n, db))
		eventually(t, "the old attempt to be pruned", func() bool {
			_, err := os.Stat(old)
			return errors.Is(err, os.ErrNotExist)
		})
		if _, err := os.Stat(recent); err != nil {
			t.Fatalf("the recent attempt: %v", err)
		}
	})
}

// orphan stores what a replica that died after starting a run of workflow
// leaves: the run "orphan", RUNNING, its lease expired.
func orphan(t *testing.T, st *sqlstore.Store, workflow string) {
	t.Helper()
	opts := definition.LoadOptions{Workflow: workflow}
	b, err := definition.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := orchestrator.SourceOf(opts)
	start, ev, err := engine.Start(engine.StartInfo{RunID: "orphan", Workflow: b.Workflow.Name, Project: b.ProjectDir, Seed: 1,
		Limits: b.Limits(), Plan: b.Plan()}, engine.NewCtx(time.Now(), 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	st.SetSource("orphan", src.Encode())
	st.SetLease("orphan", "dead-replica", time.Now().Add(-time.Second))
	if err := st.Save(context.Background(), start, []engine.Event{ev}); err != nil {
		t.Fatal(err)
	}
}
