package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

// killProject is a project whose tasks a -> slow -> c run a command agent
// that appends one line per run to an effects file — after a pause, for
// slow — so a task run twice shows twice.
func killProject(t *testing.T) (dir, effects, started string) {
	t.Helper()
	dir = t.TempDir()
	effects = filepath.Join(dir, "effects.log")
	started = filepath.Join(dir, "slow.started")
	files := map[string]string{
		"step.sh": `#!/bin/sh
set -e
if [ "$PRAETOR_TASK_ID" = slow ]; then
  : > "$STARTED"
  sleep "$PAUSE"
fi
echo "$PRAETOR_DISPATCH_ID" >> "$EFFECTS"
for out in $PRAETOR_OUTPUTS; do echo "# $out by $PRAETOR_TASK_ID" > "$out"; done
`,
		"agents.yaml": "agents:\n  step:\n    kind: command\n    command:\n      path: ./step.sh\n      env:\n" +
			"        EFFECTS: " + effects + "\n        STARTED: " + started + "\n        PAUSE: \"3\"\n",
		"wf.yaml": `name: kill-me
agents: agents.yaml
tasks:
  - id: a
    agent: step
    outputs: [a.md]
  - id: slow
    agent: step
    depends_on: [a]
    inputs: [a.md]
    outputs: [slow.md]
  - id: c
    agent: step
    depends_on: [slow]
    inputs: [slow.md]
    outputs: [c.md]
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, effects, started
}

func waitFile(t *testing.T, path string, within time.Duration, p *testenv.Process) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", path, within)
		}
		select {
		case <-p.Exited():
			t.Fatalf("praetor exited (%v) before %s appeared", p.Err(), path)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// A real praetor workflow run, SIGKILLed while a command agent runs, is
// carried on by praetor workflow resume: the task finished before the kill
// is not run again, and the in-flight task's effect happens once — whether
// its agent is still running when the run resumes (the resumed run waits for
// it) or has finished meanwhile (the resumed run collects what it left).
func TestWorkflowSIGKILLThenResume(t *testing.T) {
	for _, tc := range []struct {
		name string
		// finishFirst waits for the orphaned agent to finish before resuming.
		finishFirst bool
	}{{"agent still running", false}, {"agent finished meanwhile", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, effects, started := killProject(t)
			state := filepath.Join(dir, "state")
			p := start(t, nil, "workflow", "run", filepath.Join(dir, "wf.yaml"), "--state-dir", state, "--run-id", "kill-1")
			waitFile(t, started, 30*time.Second, p)
			p.Kill(t) // SIGKILL: no cleanup, no last write

			raw, err := os.ReadFile(filepath.Join(state, "workflow-state.json"))
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Status string `json:"status"`
				Tasks  map[string]struct {
					Status string `json:"status"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			if st.Status != "RUNNING" || st.Tasks["a"].Status != "COMPLETED" || st.Tasks["slow"].Status != "RUNNING" || st.Tasks["c"].Status != "PENDING" {
				t.Fatalf("state after the kill = %+v", st)
			}
			if tc.finishFirst {
				deadline := time.Now().Add(30 * time.Second)
				for len(readLines(t, effects)) < 2 {
					if time.Now().After(deadline) {
						t.Fatal("the orphaned agent never finished")
					}
					time.Sleep(50 * time.Millisecond) // polling a file written by a process we no longer own
				}
			}

			out, err := exec.Command(binary, "workflow", "resume", "--state-dir", state).CombinedOutput()
			if err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			for _, want := range []string{"resuming run kill-1", "slow", "COMPLETED", "run COMPLETED"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("resume output lacks %q:\n%s", want, out)
				}
			}
			got := readLines(t, effects)
			if want := []string{"kill-1/a/1", "kill-1/slow/1", "kill-1/c/1"}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("effects = %v, want %v (each task once)", got, want)
			}

			out, err = exec.Command(binary, "workflow", "status", "kill-1", "--state-dir", state).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "COMPLETED") || !strings.Contains(string(out), "events fold to the stored state") {
				t.Fatalf("status: %v\n%s", err, out)
			}
		})
	}
}

// Invalid definitions are refused before anything runs, naming file and
// field, with exit status 2.
func TestWorkflowRejectsInvalidDefinition(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte("agents:\n  mock: {kind: mock}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "wf.yaml"), []byte("name: bad\nagents: agents.yaml\ntasks:\n  - id: a\n    agent: mock\n    depends_on: [b]\n  - id: b\n    agent: ghost\n    depends_on: [a]\n"), 0o644)
	for _, args := range [][]string{{"workflow", "run", filepath.Join(dir, "wf.yaml"), "--state-dir", filepath.Join(dir, "state")},
		{"workflow", "validate", filepath.Join(dir, "wf.yaml")}} {
		cmd := exec.Command(binary, args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%v: exit %v, want status 2\n%s", args, err, out)
		}
		for _, want := range []string{"wf.yaml:", "tasks[1].agent", "ghost", "cycle"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v output lacks %q:\n%s", args[1], want, out)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "workflow-state.json")); !os.IsNotExist(err) {
		t.Fatalf("an invalid workflow left a state file (%v)", err)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	if ok {
		*target = ee
	}
	return ok
}

// With --nats-url and --database-url, a run dispatches its attempts over
// JetStream to the agent workers it runs, keeps its state in PostgreSQL,
// and publishes every change: praetor replay --workflow rebuilds the run
// from the stream with the hash the run ended with.
func TestWorkflowOverJetStreamAndReplay(t *testing.T) {
	dbURL := testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	natsURL := srv.ClientURL()
	wf := filepath.Join("..", "..", "examples", "workflows", "diamond.yaml")

	out, err := exec.Command(binary, "workflow", "run", wf, "--nats-url", natsURL, "--database-url", dbURL, "--migrate",
		"--run-id", "js-1", "--tenant", "acme").CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	live := hashLine(t, string(out))

	out, err = exec.Command(binary, "replay", "--workflow", "js-1", "--tenant", "acme", "--nats-url", natsURL).CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if got := hashLine(t, string(out)); got != live {
		t.Fatalf("replayed hash %s, the run ended with %s\n%s", got, live, out)
	}
	if !strings.Contains(string(out), `"status": "COMPLETED"`) || !strings.Contains(string(out), "10 events folded") {
		t.Fatalf("replay output:\n%s", out)
	}
	// Asked for the run without its tenant, the replay names the tenant
	// that has it.
	out, err = exec.Command(binary, "replay", "--workflow", "js-1", "--nats-url", natsURL).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "js-1 of tenant default") || !strings.Contains(string(out), "it has events of tenant acme (--tenant)") {
		t.Fatalf("replay of another tenant's run: %v\n%s", err, out)
	}

	out, err = exec.Command(binary, "workflow", "status", "js-1", "--database-url", dbURL, "--tenant", "acme").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "events fold to the stored state (hash "+live+")") {
		t.Fatalf("status: %v\n%s", err, out)
	}
}

// hashLine finds "state hash H" in a command's output.
func hashLine(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "state hash "); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no state hash in:\n%s", out)
	return ""
}

func TestWorkflowHelp(t *testing.T) {
	// praetor workflow alone: TestCommandOfCommandsAloneIsAUsageError.
	for _, sub := range [][]string{{"workflow", "--help"}, {"workflow", "run", "--help"}, {"workflow", "resume", "--help"},
		{"workflow", "status", "--help"}, {"workflow", "validate", "--help"}} {
		out, err := exec.Command(binary, sub...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "USAGE") {
			t.Errorf("praetor %s: %v\n%s", strings.Join(sub, " "), err, out)
		}
	}
	out, _ := exec.Command(binary, "workflow", "run", "--help").CombinedOutput()
	for _, flag := range []string{"--registry", "--state-dir", "--seed", "--nats-url", "--database-url", "--workers"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("workflow run --help lacks %s", flag)
		}
	}
	// The consumer of answers a run leaves on the server, and when it goes.
	for _, want := range []string{"workflow-cli-", fmt.Sprintf("no CLI has pulled from it for %dh", int(answersInactiveThreshold.Hours())), "creates it again"} {
		if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), want) {
			t.Errorf("workflow run --help lacks %q", want)
		}
	}
}

// A workflow command provisions the streams it lacks, compressed as praetor
// serve would, and leaves the ones that exist as an operator set them: the
// dead-letter streams above all, which it used to reset to defaults.
func TestProvisionMissingKeepsExistingStreams(t *testing.T) {
	nc := eventstest.Connect(t, eventstest.StartServer(t))
	bus, err := events.New(nc, events.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := bus.EnsureDeadLetterStreams(ctx, events.StreamConfig{Duplicates: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := provisionMissing(ctx, bus); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{events.DeadLetterStream, events.AdvisoryStream} {
		s, err := bus.JetStream().Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Duplicates; got != 5*time.Minute {
			t.Errorf("%s: duplicate window %v after provisioning, want the operator's 5m", name, got)
		}
	}
	s, err := bus.JetStream().Stream(ctx, "PRAETOR_TURNS")
	if err != nil {
		t.Fatalf("the turns stream was not created: %v", err)
	}
	if got := s.CachedInfo().Config.Compression; got != jetstream.S2Compression {
		t.Errorf("a created stream's compression is %v, want s2", got)
	}
}

// A stream the workflow command provisions takes the partitions of the
// ordered streams that exist (praetor dev makes 4), not serve's 16.
func TestProvisionMissingTakesTheStreamsPartitions(t *testing.T) {
	nc := eventstest.Connect(t, eventstest.StartServer(t))
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := node.Provision(ctx, bus, node.StreamSettings{Partitions: node.DevPartitions, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	var ordered []string
	for _, d := range contracts.Streams() {
		if d.Ordered {
			ordered = append(ordered, d.Name)
		}
	}
	if len(ordered) < 2 {
		t.Fatalf("ordered streams %v: the test needs two", ordered)
	}
	// The first one ResolvePartitions would look at goes.
	if err := bus.JetStream().DeleteStream(ctx, ordered[0]); err != nil {
		t.Fatal(err)
	}
	if err := provisionMissing(ctx, bus); err != nil {
		t.Fatal(err)
	}
	n, err := bus.Partitions(ctx, ordered[0])
	if err != nil {
		t.Fatal(err)
	}
	if n != node.DevPartitions {
		t.Fatalf("%s recreated with %d partitions, want the others' %d", ordered[0], n, node.DevPartitions)
	}
}

// Command agents run whatever directory praetor is started in and however
// the registry and state directory are named: with the default (relative)
// --state-dir every attempt failed "read exit status: ... no such file or
// directory"; "./step.sh" beside a registry given as agents.yaml was
// looked up in $PATH; and the shipped example, run from the repository
// root, failed "examples/agents/scripts/assemble.sh: not found".
func TestWorkflowCommandAgentRelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	step := filepath.Join(dir, "step.sh")
	files := map[string]string{
		step: "#!/bin/sh\nfor out in $PRAETOR_OUTPUTS; do echo \"# $out\" > \"$out\"; done\n",
		filepath.Join(dir, "somedir", "agents.yaml"): "agents:\n  step:\n    kind: command\n    command:\n      path: " + step + "\n",
		filepath.Join(dir, "agents.yaml"):            "agents:\n  step:\n    kind: command\n    command:\n      path: ./step.sh\n",
	}
	wf := "name: w\ntasks:\n  - id: a\n    agent: step\n    outputs: [a.md]\n  - id: b\n    agent: step\n    depends_on: [a]\n    inputs: [a.md]\n    outputs: [b.md]\n"
	files[filepath.Join(dir, "somedir", "wf.yaml")], files[filepath.Join(dir, "wf.yaml")] = wf, wf
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, dir string
		args      []string
		want      string
	}{
		{"the default --state-dir", filepath.Join(dir, "somedir"), []string{"--registry", "agents.yaml", "wf.yaml"}, "b.md"},
		{"./ beside the registry", dir, []string{"--state-dir", t.TempDir(), "--registry", "agents.yaml", "wf.yaml"}, "b.md"},
		{"the example from the repository root", filepath.Join("..", ".."), []string{"--state-dir", t.TempDir(),
			"--agents", "examples/agents/registry.yaml", "examples/workflows/diamond.yaml"}, "report.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin, err := filepath.Abs(binary)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append([]string{"workflow", "run"}, tc.args...)...)
			cmd.Dir = tc.dir
			cmd.Env = append(os.Environ(), "PRAETOR_LLM_PROVIDER=offline")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "run COMPLETED") || !strings.Contains(string(out), tc.want) {
				t.Fatalf("run: %v\n%s", err, out)
			}
		})
	}
}

// validate reports a command agent whose executable is missing or cannot
// run, with the file, the field and the path it resolved — for the agents
// the workflow uses.
func TestWorkflowValidateChecksCommandPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"ok.sh":    "#!/bin/sh\n",
		"plain.sh": "#!/bin/sh\n",
		"agents.yaml": "agents:\n" +
			"  ok: {kind: command, command: {path: ./ok.sh}}\n" +
			"  shell: {kind: command, command: {path: sh}}\n" +
			"  missing:\n    kind: command\n    command:\n      path: ./nope.sh\n" +
			"  plain: {kind: command, command: {path: ./plain.sh}}\n" +
			"  unlisted: {kind: command, command: {path: praetor-no-such-agent-cli}}\n" +
			"  folder: {kind: command, command: {path: ./bin/}}\n" +
			"  unused: {kind: command, command: {path: ./also-missing.sh}}\n",
		"wf.yaml": "name: w\nagents: agents.yaml\ntasks:\n" +
			"  - {id: a, agent: ok}\n  - {id: b, agent: shell}\n  - {id: c, agent: missing}\n" +
			"  - {id: d, agent: plain}\n  - {id: e, agent: unlisted}\n  - {id: f, agent: folder}\n",
		"good.yaml": "name: g\nagents: agents.yaml\ntasks:\n  - {id: a, agent: ok}\n  - {id: b, agent: shell}\n",
	}
	for name, content := range files {
		mode := os.FileMode(0o644)
		if name == "ok.sh" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "workflow", "validate", filepath.Join(dir, "good.yaml")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "valid") {
		t.Fatalf("validate of a good workflow: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "workflow", "validate", filepath.Join(dir, "wf.yaml")).CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2\n%s", err, out)
	}
	reg := filepath.Join(dir, "agents.yaml")
	for _, want := range []string{
		"4 problems",
		reg + ":7:13: agents.missing.command.path: not found: agent missing: ./nope.sh resolves to " + filepath.Join(dir, "nope.sh"),
		reg + ":8:42: agents.plain.command.path: not executable: agent plain: ./plain.sh resolves to " + filepath.Join(dir, "plain.sh"),
		reg + ":9:45: agents.unlisted.command.path: not found: agent unlisted: \"praetor-no-such-agent-cli\" is on no directory of $PATH",
		reg + ":10:43: agents.folder.command.path: not executable: agent folder: ./bin/ resolves to " + filepath.Join(dir, "bin"),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(string(out), ":7:13:"), strings.Index(string(out), ":10:43:"); i > j {
		t.Errorf("problems are not in line order:\n%s", out)
	}
	if strings.Contains(string(out), "also-missing") {
		t.Errorf("validate reported an agent no task uses:\n%s", out)
	}
}

// A run with --nats-url beside another orchestrator on the same NATS, with
// a store of its own (praetor dev's, consuming answers on
// orchestrator-results): the run takes its answers on a consumer named
// after its database, so it completes, and the other orchestrator receives
// every answer as well and keeps them, though it knows no run of theirs.
// On the shared consumer the two took the answers in turns, and the run
// waited for those the other took until the tasks' timeout.
func TestWorkflowRunBesideAnotherOrchestrator(t *testing.T) {
	dbURL, devURL := testenv.Postgres(t), testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()); nc.Close() })
	if err := provisionMissing(ctx, bus); err != nil {
		t.Fatal(err)
	}
	devDB, err := node.OpenStore(ctx, false, "", devURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = devDB.Close() })
	if _, err := store.Migrate(ctx, devDB); err != nil {
		t.Fatal(err)
	}
	devResults := sqlstore.NewResults(devDB)
	dev, err := dispatch.New(dispatch.Config{Bus: bus, Results: devResults})
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Stop(context.Background()) })

	// Short timeouts: a task whose answer the other orchestrator took
	// fails in seconds rather than ten minutes.
	mockAgents, err := filepath.Abs(filepath.Join("..", "..", "examples", "agents", "mock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "workflows", "diamond.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(t.TempDir(), "diamond.yaml")
	short := strings.Replace(string(src), "agents: ../agents/mock.yaml", "agents: "+mockAgents+"\ndefaults:\n  timeout: 10s\n  retries: 0", 1)
	if err := os.WriteFile(wf, []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "workflow", "run", wf, "--nats-url", srv.ClientURL(), "--database-url", dbURL, "--migrate",
		"--run-id", "beside-dev", "--state-dir", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}

	db, err := node.OpenStore(ctx, false, "", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Load(ctx, "beside-dev")
	if err != nil {
		t.Fatal(err)
	}
	for id, task := range s.Tasks {
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := devResults.Load(ctx, "default", task.DispatchID)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the other orchestrator never recorded the answer of task %s: %v", id, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	consumer, err := answersConsumer(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.JetStream().Consumer(ctx, contracts.StreamTasks, consumer); err != nil || !strings.HasPrefix(consumer, "workflow-cli-") {
		t.Fatalf("the run's consumer %s on %s: %v", consumer, contracts.StreamTasks, err)
	}
}

// The run's consumer is named after the database, never its credentials:
// the same database reached as another user shares it, another database
// or search_path does not.
func TestAnswersConsumerNamesTheDatabase(t *testing.T) {
	name := func(url string) string {
		t.Helper()
		c, err := answersConsumer(url)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := name("postgres://praetor:secret@db.example:5432/praetor?sslmode=disable")
	if got := name("postgres://other:password@db.example:5432/praetor?sslmode=disable"); got != base {
		t.Errorf("another user of the same database: %s, want %s", got, base)
	}
	for _, url := range []string{"postgres://praetor:secret@db.example:5432/h175", "postgres://praetor:secret@db2.example:5432/praetor",
		"postgres://praetor:secret@db.example:5433/praetor", "postgres://praetor:secret@db.example:5432/praetor?search_path=t_1"} {
		if got := name(url); got == base {
			t.Errorf("%s shares the consumer %s of another database", url, got)
		}
	}
	if _, err := answersConsumer("postgres://[bad"); err == nil {
		t.Error("a database URL that does not parse gave a consumer name")
	}
}

// praetor replay --workflow checks its fold against the live run when it
// is given the run's store: ok when they agree; DIVERGED naming the first
// field that differs, exit 1, once a store row is changed; without a store
// it says only the fold was done; a dev store without the run says so.
func TestReplayWorkflowChecksTheLiveRun(t *testing.T) {
	dbURL := testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	natsURL := srv.ClientURL()
	wf := filepath.Join("..", "..", "examples", "workflows", "diamond.yaml")
	if out, err := exec.Command(binary, "workflow", "run", wf, "--nats-url", natsURL, "--database-url", dbURL, "--migrate",
		"--run-id", "checked", "--state-dir", t.TempDir()).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	replay := func(args ...string) (string, error) {
		t.Helper()
		out, err := exec.Command(binary, append([]string{"replay", "--workflow", "checked", "--nats-url", natsURL}, args...)...).CombinedOutput()
		return string(out), err
	}

	out, err := replay("--database-url", dbURL)
	if err != nil || !strings.Contains(out, "ok: the live run in tenant default in the database has the same state (hash "+hashLine(t, out)+")") {
		t.Fatalf("replay against the store: %v\n%s", err, out)
	}
	out, err = replay()
	if err != nil || !strings.Contains(out, "only the fold was done") || strings.Contains(out, "ok:") {
		t.Fatalf("replay without a store: %v\n%s", err, out)
	}
	devDir := t.TempDir()
	devDB, err := node.OpenStore(context.Background(), true, devDir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(context.Background(), devDB); err != nil {
		t.Fatal(err)
	}
	_ = devDB.Close()
	out, err = replay("--data-dir", devDir)
	if err == nil || !strings.Contains(out, "no run checked of tenant default in the praetor dev store "+filepath.Join(devDir, "praetor.db")) {
		t.Fatalf("replay against a dev store without the run: %v\n%s", err, out)
	}

	db, err := node.OpenStore(context.Background(), false, "", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(context.Background(), `UPDATE workflow_runs SET state_json = replace(state_json, '"workflow":"diamond"', '"workflow":"forged"')
		WHERE id = 'checked'`); err != nil {
		t.Fatal(err)
	}
	out, err = replay("--database-url", dbURL)
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 ||
		!strings.Contains(out, `DIVERGED from the live run in tenant default in the database`) ||
		!strings.Contains(out, `: workflow is "diamond" replayed, "forged" live`) {
		t.Fatalf("replay against an altered store: %v\n%s", err, out)
	}
}

// The CLI's consumer of answers goes away once no CLI has pulled from it
// for its inactive threshold. A run resumed within the threshold receives
// the answers published while no CLI ran, which the consumer held; one
// resumed after it, its run unfinished in the database, receives those
// published while no consumer existed, from the stream.
func TestAnswersConsumerGoesAwayAndResumeKeepsTheAnswers(t *testing.T) {
	dbURL := testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()); nc.Close() })
	if err := provisionMissing(ctx, bus); err != nil {
		t.Fatal(err)
	}
	db, err := node.OpenStore(ctx, false, "", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	consumer, err := answersConsumer(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	const threshold = 4 * time.Second
	results := sqlstore.NewResults(db)
	// run starts the dispatcher of a CLI run, as openBackend does, and
	// stops it at the run's end.
	run := func() func() {
		t.Helper()
		from, err := answersFrom(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		d, err := dispatch.New(dispatch.Config{Bus: bus, Results: results, Consumer: consumer,
			DeliverNew: from.IsZero(), DeliverFrom: from, InactiveThreshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	answer := func(dispatchID string) {
		t.Helper()
		task := agent.Task{RunID: "paused", TaskID: "a", DispatchID: dispatchID, Attempt: 1, Agent: "mock"}
		ev, err := taskmsg.Completed("default", taskmsg.DispatchEventID("default", dispatchID), task, agent.Result{}, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := bus.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	recorded := func(dispatchID string) {
		t.Helper()
		eventstest.Eventually(t, 30*time.Second, "the answer of "+dispatchID+" recorded", func() bool {
			_, err := results.Load(ctx, "default", dispatchID)
			return err == nil
		})
	}

	stop := run()
	info, err := bus.JetStream().Consumer(ctx, contracts.StreamTasks, consumer)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.InactiveThreshold; got != threshold {
		t.Fatalf("the answers consumer's inactive threshold = %s, want %s", got, threshold)
	}
	stop()
	// Answered while no CLI runs; resumed within the threshold.
	answer("paused/a/1")
	stop = run()
	recorded("paused/a/1")
	stop()

	// The run is still unfinished when the consumer goes away.
	if _, err := db.Exec(ctx, `INSERT INTO workflow_runs (tenant_id, id, workflow, project, status, seq, snapshot_seq, state_json,
		state_hash, started_at, updated_at) VALUES ('default', 'paused', 'w', 'p', 'RUNNING', 1, 1, '{}', '', $1, $1)`, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, 30*time.Second, "the consumer no CLI reads deleted", func() bool {
		_, err := bus.JetStream().Consumer(ctx, contracts.StreamTasks, consumer)
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	answer("paused/b/1")
	stop = run()
	defer stop()
	recorded("paused/b/1")
}
