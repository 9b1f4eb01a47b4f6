package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// workflow status of a RUNNING run that no live lease holds — started by a
// praetor workflow run (no lease) or by an orchestrator whose lease ran out
// — says nothing may carry it on and names praetor workflow resume; a run
// whose lease is held says nothing of the kind. It showed RUNNING alone,
// for ever once the process carrying the run died.
func TestWorkflowStatusOfARunNobodyHolds(t *testing.T) {
	dbURL := testenv.Postgres(t)
	ctx := context.Background()
	db, err := node.OpenStore(ctx, false, "", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	opts := definition.LoadOptions{Workflow: filepath.Join("..", "..", "examples", "workflows", "diamond.yaml")}
	b, err := definition.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	src, err := orchestrator.SourceOf(opts)
	if err != nil {
		t.Fatal(err)
	}
	started := func(runID, owner string, until time.Time) {
		t.Helper()
		s, ev, err := engine.Start(engine.StartInfo{RunID: runID, Workflow: b.Workflow.Name, Project: b.ProjectDir, Seed: 1,
			Limits: b.Limits(), Plan: b.Plan()}, engine.NewCtx(time.Now(), 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		st.SetSource(runID, src.Encode())
		if owner != "" {
			st.SetLease(runID, owner, until)
		}
		if err := st.Save(ctx, s, []engine.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	started("cli-died", "", time.Time{})
	started("lease-ran-out", "replica-1", time.Now().Add(-time.Minute))
	started("held", "replica-2", time.Now().Add(time.Hour))

	for _, c := range []struct {
		run  string
		want []string
	}{
		{"cli-died", []string{"no orchestrator holds this run (it has no lease)", "praetor workflow resume cli-died --database-url URL --tenant acme"}},
		{"lease-ran-out", []string{"no live lease holds this run: the lease of replica-1 ran out", "praetor workflow resume lease-ran-out"}},
		{"held", nil},
	} {
		out, err := exec.Command(binary, "workflow", "status", "--database-url", dbURL, "--tenant", "acme", c.run).CombinedOutput()
		if err != nil {
			t.Fatalf("status %s: %v\n%s", c.run, err, out)
		}
		if !strings.Contains(string(out), "RUNNING") {
			t.Fatalf("status %s:\n%s", c.run, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("status %s lacks %q:\n%s", c.run, w, out)
			}
		}
		if c.want == nil && strings.Contains(string(out), "workflow resume") {
			t.Errorf("status of a held run names resume:\n%s", out)
		}
	}
}
