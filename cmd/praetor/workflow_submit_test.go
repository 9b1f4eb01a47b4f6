package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator"
)

// serveOrchestrator starts what praetor serve --services
// orchestrator,agent-worker runs, on a NATS of its own and a PostgreSQL
// schema with the tenant acme, over the workflow directory dir; it returns
// the NATS URL.
func serveOrchestrator(t *testing.T, dir string) string {
	t.Helper()
	dbURL := testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx := context.Background()
	db, err := node.OpenStore(ctx, false, "", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTenant(ctx, db, store.Tenant{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	if err := provisionMissing(ctx, bus); err != nil {
		t.Fatal(err)
	}
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: bus, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	d := node.Deps{Bus: bus, DB: db, Relay: relay, Registerer: prometheus.NewRegistry(), AckWait: 2 * time.Second}
	vars := map[string]string{orchestrator.EnvWorkflowDir: dir, orchestrator.EnvRegistry: filepath.Join(dir, "agents.yaml")}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	var started []node.Service
	for _, f := range []node.Factory{orchestrator.WorkerFactory(lookup), orchestrator.ServiceFactory(lookup)} {
		s, err := f(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		started = append(started, s)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := len(started) - 1; i >= 0; i-- {
			_ = started[i].Stop(sctx)
		}
		_ = relay.Stop(sctx)
		_ = bus.Close(sctx)
		nc.Close()
	})
	return srv.ClientURL()
}

// submit runs praetor workflow submit; it returns stdout, stderr and the
// exit status.
func submit(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"workflow", "submit"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatal(err)
	return "", "", -1
}

// praetor workflow submit starts a run on the orchestrators of a serve
// node: with --wait it prints the run's transitions and exits 0 when it
// completes; a request the orchestrator refuses (an invalid file, an
// unknown tenant, a run id taken by another workflow) exits 1 with the dead
// letter's reason.
func TestWorkflowSubmitToServeOrchestrators(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"agents.yaml":       "agents:\n  mock:\n    kind: mock\n",
		"flows/chain.yaml":  "name: chain\nagents: ../agents.yaml\ntasks:\n  - id: a\n    agent: mock\n    outputs: [a.md]\n  - id: b\n    agent: mock\n    depends_on: [a]\n    inputs: [a.md]\n",
		"flows/other.yaml":  "name: other\nagents: ../agents.yaml\ntasks:\n  - id: x\n    agent: mock\n",
		"flows/broken.yaml": "name: broken\nagents: ../agents.yaml\ntasks:\n  - id: a\n    agent: ghost\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url := serveOrchestrator(t, dir)

	stdout, stderr, code := submit(t, "flows/chain.yaml", "--nats-url", url, "--tenant", "acme", "--run-id", "sub-1", "--wait", "--timeout", "1m")
	if code != 0 || stdout != "sub-1\n" {
		t.Fatalf("submit --wait of a valid workflow: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"a                        RUNNING", "a                        COMPLETED", "b                        COMPLETED", "run COMPLETED"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("submit --wait's lines lack %q:\n%s", want, stderr)
		}
	}

	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"invalid", []string{"flows/broken.yaml", "--tenant", "acme"}, []string{"broken.yaml:5:12: tasks[0].agent", "ghost"}},
		{"unknown tenant", []string{"flows/chain.yaml", "--tenant", "nobody"}, []string{"tenant nobody does not exist", "praetor tenant add --tenant nobody"}},
		{"reused run id", []string{"flows/other.yaml", "--tenant", "acme", "--run-id", "sub-1"}, []string{"run sub-1 of tenant acme already exists, a run of workflow flows/chain.yaml"}},
	} {
		_, stderr, code := submit(t, append(c.args, "--nats-url", url, "--wait", "--timeout", "1m")...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", c.name, code, stderr)
		}
		for _, w := range append(c.want, "was refused (dead letter") {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, stderr)
			}
		}
	}

	// The same workflow again under the run's id is the run: its end.
	_, stderr, code = submit(t, "flows/chain.yaml", "--nats-url", url, "--tenant", "acme", "--run-id", "sub-1", "--wait", "--timeout", "1m")
	if code != 0 || !strings.Contains(stderr, "existed before this request") || !strings.Contains(stderr, "run COMPLETED") {
		t.Fatalf("submit --wait of the run's own workflow again: exit %d\n%s", code, stderr)
	}

	// Without --wait, it prints the run id and returns.
	stdout, stderr, code = submit(t, "flows/other.yaml", "--nats-url", url, "--tenant", "acme")
	if code != 0 || len(strings.TrimSpace(stdout)) != 36 {
		t.Fatalf("submit: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
}

// Bad command lines are usage errors (exit 2) that say what is wrong.
func TestWorkflowSubmitRefusesBadCommandLines(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "submit takes one workflow file"},
		{[]string{"a.yaml", "b.yaml"}, "submit takes one workflow file"},
		{[]string{"a.yaml", "--run-id", "no spaces"}, "--run-id"},
		{[]string{"a.yaml", "--wait", "--timeout", "0s"}, "--timeout"},
	} {
		_, stderr, code := submit(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("submit %q: exit %d, want a failure naming %q:\n%s", c.args, code, c.want, stderr)
		}
	}
}
