package executor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/filestore"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const registry = `agents:
  mock:
    kind: mock
`

// env is a project directory with a workflow, its registry and a state dir.
type env struct {
	dir    string
	bundle *definition.Bundle
	store  *filestore.Store
}

func newEnv(t *testing.T, workflow string, files map[string]string) *env {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("wf.yaml", workflow)
	write("agents.yaml", registry)
	for k, v := range files {
		write(k, v)
	}
	b, err := definition.Load(definition.LoadOptions{Workflow: filepath.Join(dir, "wf.yaml")})
	if err != nil {
		t.Fatalf("load workflow: %v", err)
	}
	return &env{dir: dir, bundle: b, store: newStore(t, dir)}
}

func newStore(t *testing.T, dir string) *filestore.Store {
	t.Helper()
	s, err := filestore.New(filestore.Config{Dir: filepath.Join(dir, ".praetor", "state")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// executor builds an executor over d with the env's store; change adjusts
// the config.
func (e *env) executor(t *testing.T, d executor.Dispatcher, change func(*executor.Config)) *executor.Executor {
	t.Helper()
	cfg := executor.Config{Dispatcher: d, Store: e.store, Artifacts: e.store, MaxParallel: 4}
	if change != nil {
		change(&cfg)
	}
	x, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (e *env) run(t *testing.T, x *executor.Executor, runID string) engine.State {
	t.Helper()
	s, err := x.Run(context.Background(), e.bundle, executor.RunOptions{RunID: runID})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return s
}

// chainABC is A -> B -> C, each reading the previous task's output.
const chainABC = `name: chain
agents: agents.yaml
tasks:
  - id: a
    agent: mock
    inputs: [brief.md]
    outputs: [a.md]
  - id: b
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [b.md]
  - id: c
    agent: mock
    depends_on: [b]
    inputs: ["b:b.md"]
    outputs: [c.md]
`

// diamond is A -> B, C -> D.
const diamond = `name: diamond
agents: agents.yaml
tasks:
  - id: a
    agent: mock
    outputs: [a.md]
  - id: b
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [b.md]
  - id: c
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [c.md]
  - id: d
    agent: mock
    depends_on: [b, c]
    inputs: [b.md, c.md]
    outputs: [d.md]
`

// router routes every agent of the test registry to one runtime.
func router(rt agent.Runtime) *agent.Router {
	return agent.NewRouter(map[string]agent.Runtime{"mock": rt})
}

// answer is the mock's default answer for a task, for Func-based mocks.
func answer(t agent.Task) agent.Result {
	r := agent.Result{Outputs: map[string][]byte{}, Handover: []byte(`{"from":"` + t.TaskID + `"}`)}
	for _, o := range t.Outputs {
		r.Outputs[o] = []byte("content of " + o)
	}
	if t.Kind == agent.KindApproval {
		r.Approval = &agent.Approval{Approved: true}
	}
	return r
}

// failingStore fails Save when fail says so, before touching the files.
type failingStore struct {
	*filestore.Store
	fail func(s engine.State, evs []engine.Event) bool
}

var errDiskFull = errors.New("no space left on device")

func (f failingStore) Save(ctx context.Context, s engine.State, evs []engine.Event) error {
	if f.fail(s, evs) {
		return errDiskFull
	}
	return f.Store.Save(ctx, s, evs)
}

// dedup is a worker-side layer that remembers the result of every dispatch
// id it has answered, so a re-dispatch of the same id is answered from
// memory instead of running the task again.
type dedup struct {
	inner agent.Runtime
	mu    sync.Mutex
	seen  map[string]agent.Result
	// lose, when set, drops the answer of that task's first dispatch after
	// recording it (the orchestrator crashed before it got the answer).
	lose map[string]chan struct{}
}

func (d *dedup) Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	d.mu.Lock()
	if r, ok := d.seen[t.DispatchID]; ok {
		d.mu.Unlock()
		return r, nil
	}
	d.mu.Unlock()
	r, err := d.inner.Dispatch(ctx, t, c)
	if err != nil {
		return r, err
	}
	d.mu.Lock()
	d.seen[t.DispatchID] = r
	lost, lose := d.lose[t.TaskID]
	delete(d.lose, t.TaskID)
	d.mu.Unlock()
	if lose {
		close(lost)
		<-ctx.Done() // the answer never reaches the orchestrator
		return agent.Result{}, ctx.Err()
	}
	return r, nil
}

// seq records events from several goroutines in order.
type seq struct {
	mu   sync.Mutex
	list []string
}

func (s *seq) add(v string) {
	s.mu.Lock()
	s.list = append(s.list, v)
	s.mu.Unlock()
}

func (s *seq) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.list...)
}

// recorder returns a hook that records "<point>:<task>".
func recorder(s *seq) hooks.Func {
	return func(_ context.Context, e hooks.Event) error {
		s.add(string(e.Point) + ":" + e.TaskID)
		return nil
	}
}

// within fails the test when ch is not closed in time: a safety net for
// tests that wait on channels, never a measurement.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func statuses(s engine.State) map[string]engine.TaskStatus {
	out := map[string]engine.TaskStatus{}
	for id, t := range s.Tasks {
		out[id] = t.Status
	}
	return out
}
