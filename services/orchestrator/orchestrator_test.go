package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/filestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var examples = filepath.Join("..", "..", "examples")

// countingLLM counts calls and answers every task with its outputs.
type countingLLM struct{ calls atomic.Int64 }

func (c *countingLLM) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	c.calls.Add(1)
	return &llm.Response{Content: `{"outputs": {}, "approved": true, "reason": "fine"}`, Provider: "counting"}, nil
}

// run loads a workflow (with an optional registry override), builds its
// runtimes and runs it to the end in a temporary state directory.
func run(t *testing.T, workflow, registry string, deps orchestrator.RuntimeDeps) (engine.State, *agent.Router, *filestore.Store) {
	t.Helper()
	b, err := definition.Load(definition.LoadOptions{Workflow: workflow, Registry: registry})
	if err != nil {
		t.Fatalf("load %s: %v", workflow, err)
	}
	deps.RegistryDir = b.RegistryDir()
	router, err := orchestrator.BuildRuntimes(b.Registry, deps)
	if err != nil {
		t.Fatalf("build runtimes: %v", err)
	}
	fs, err := filestore.New(filestore.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	x, err := executor.New(executor.Config{Dispatcher: router, Store: fs, Artifacts: fs})
	if err != nil {
		t.Fatal(err)
	}
	s, err := x.Run(context.Background(), b, executor.RunOptions{RunID: "example"})
	if err != nil {
		t.Fatalf("run %s: %v", workflow, err)
	}
	return s, router, fs
}

func mockOf(t *testing.T, r *agent.Router, name string) *mock.Runtime {
	t.Helper()
	rt, ok := r.Runtime(name)
	if !ok {
		t.Fatalf("no runtime for %s", name)
	}
	m, ok := rt.(*mock.Runtime)
	if !ok {
		t.Fatalf("%s is a %T, not a mock", name, rt)
	}
	return m
}

// The shipped examples load, and run to the status they are meant to end in.
func TestExamplesRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file   string
		status engine.RunStatus
		check  func(t *testing.T, s engine.State, r *agent.Router)
	}{
		{"requirements-to-design.yaml", engine.RunCompleted, func(t *testing.T, s engine.State, r *agent.Router) {
			arch := mockOf(t, r, "architect").CallsFor("design-l1")
			if len(arch) != 1 || !strings.Contains(arch[0].Context.Inputs[0].Content, "R4. Facilities staff") {
				t.Fatalf("design-l1 did not receive the requirements: %+v", arch)
			}
			c := arch[0].Context.Constitution
			for _, want := range []string{"use the glossary's terms", "C4 levels", "_Source: task — ../constitutions/design.md:8; overrides project — ../constitutions/project.md:3_"} {
				if !strings.Contains(c, want) {
					t.Errorf("design-l1 constitution lacks %q:\n%s", want, c)
				}
			}
			if h := arch[0].Context.Handover; len(h) != 1 || !strings.Contains(string(h[0].State), `"requirements":["R1","R2","R3","R4"]`) {
				t.Fatalf("design-l1 handover = %+v", h)
			}
		}},
		{"diamond.yaml", engine.RunCompleted, func(t *testing.T, s engine.State, r *agent.Router) {
			if n := len(mockOf(t, r, "writer").CallsFor("assemble-report")[0].Context.Inputs); n != 3 {
				t.Fatalf("assemble-report got %d inputs, want 3", n)
			}
		}},
		{"failing.yaml", engine.RunFailed, func(t *testing.T, s engine.State, r *agent.Router) {
			if m := s.Tasks["migrate"]; m.Status != engine.TaskFailed || m.Iterations != 3 {
				t.Fatalf("migrate = %+v, want FAILED after 3 attempts", m)
			}
			if v, a := s.Tasks["verify"], s.Tasks["announce"]; v.Iterations+a.Iterations != 0 {
				t.Fatal("tasks after the failure ran")
			}
			if !strings.Contains(s.Error, "task migrate failed: mock: configured failure: simulated agent crash") {
				t.Fatalf("run error = %q", s.Error)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			s, r, _ := run(t, filepath.Join(examples, "workflows", tc.file), "", orchestrator.RuntimeDeps{})
			if s.Status != tc.status {
				t.Fatalf("status = %s (%s), want %s", s.Status, s.Error, tc.status)
			}
			tc.check(t, s, r)
		})
	}
}

// Every example also loads against the real-runtime registry.
func TestExamplesLoadWithRealRegistry(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(examples, "workflows", "*.yaml"))
	if len(files) < 3 {
		t.Fatalf("found %d example workflows", len(files))
	}
	for _, f := range files {
		b, err := definition.Load(definition.LoadOptions{Workflow: f, Registry: filepath.Join(examples, "agents", "registry.yaml")})
		if err != nil {
			t.Fatalf("%s with registry.yaml: %v", f, err)
		}
		if _, err := orchestrator.BuildRuntimes(b.Registry, orchestrator.RuntimeDeps{LLM: &countingLLM{}, RegistryDir: b.RegistryDir()}); err != nil {
			t.Fatalf("build runtimes: %v", err)
		}
	}
	if _, err := orchestrator.BuildRuntimes(mustRegistry(t, filepath.Join(examples, "agents", "registry.yaml")), orchestrator.RuntimeDeps{}); err == nil ||
		!strings.Contains(err.Error(), "no LLM client") {
		t.Fatalf("llm agents without a client: %v", err)
	}
}

func mustRegistry(t *testing.T, path string) *definition.Registry {
	t.Helper()
	r, err := definition.LoadRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Scenario: Runtime adapter decoupling.
//
//	Given the engine is initialized with a MockRuntimeAdapter
//	When any task is dispatched
//	Then the mock adapter records the call
//	And no real LLM calls are made
//
// The registry has an llm agent too, backed by a client that counts; the
// workflow's tasks use mock agents, so the count stays zero. The control run
// routes one task to the llm agent and the count moves.
func TestScenarioMockAdapterMakesNoLLMCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "agents.yaml", "agents:\n  worker:\n    kind: mock\n  thinker:\n    kind: llm\n")
	wf := "name: decoupled\nagents: agents.yaml\ntasks:\n  - id: a\n    agent: worker\n  - id: b\n    agent: %s\n    depends_on: [a]\n"
	writeFile(t, dir, "mock-only.yaml", strings.ReplaceAll(wf, "%s", "worker"))
	writeFile(t, dir, "with-llm.yaml", strings.ReplaceAll(wf, "%s", "thinker"))

	client := &countingLLM{}
	s, r, _ := run(t, filepath.Join(dir, "mock-only.yaml"), "", orchestrator.RuntimeDeps{LLM: client})
	if s.Status != engine.RunCompleted {
		t.Fatalf("run = %s %s", s.Status, s.Error)
	}
	if got := strings.Join(mockOf(t, r, "worker").TaskIDs(), ","); got != "a,b" {
		t.Fatalf("mock recorded %s, want a,b", got)
	}
	if n := client.calls.Load(); n != 0 {
		t.Fatalf("%d LLM calls with mock agents only", n)
	}
	s, _, _ = run(t, filepath.Join(dir, "with-llm.yaml"), "", orchestrator.RuntimeDeps{LLM: client})
	if s.Status != engine.RunCompleted || client.calls.Load() != 1 {
		t.Fatalf("control: run %s, %d LLM calls, want COMPLETED and 1", s.Status, client.calls.Load())
	}
}

// The diamond on the shipped shell-script command agent, end to end.
func TestDiamondOnCommandAgent(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join(examples, "agents", "scripts", "assemble.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "shell.yaml", "agents:\n  analyst:\n    kind: command\n    command:\n      path: "+script+
		"\n  writer:\n    kind: command\n    command:\n      path: "+script+"\n")
	s, _, fs := run(t, filepath.Join(examples, "workflows", "diamond.yaml"), filepath.Join(dir, "shell.yaml"), orchestrator.RuntimeDeps{})
	if s.Status != engine.RunCompleted {
		t.Fatalf("run = %s %s", s.Status, s.Error)
	}
	art := s.Artifacts["assemble-report:report.md"]
	report, err := fs.Get(context.Background(), engine.OutputRef{Path: art.Path, SHA256: art.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Assembled by writer for task assemble-report", "# market.md", "Assembled by analyst for task research-costs"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if h := string(s.Tasks["assemble-report"].Handover); !strings.Contains(h, `"assembled_by":"writer"`) {
		t.Fatalf("handover = %s", h)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
