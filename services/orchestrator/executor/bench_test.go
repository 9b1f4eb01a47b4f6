package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
)

// memStore keeps runs and outputs in memory: the executor's cost without
// storage I/O.
type memStore struct {
	mu      sync.Mutex
	states  map[string]engine.State
	events  map[string]int
	outputs map[string][]byte
}

func newMemStore() *memStore {
	return &memStore{states: map[string]engine.State{}, events: map[string]int{}, outputs: map[string][]byte{}}
}

func (m *memStore) Save(_ context.Context, s engine.State, evs []engine.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states[s.RunID] = s
	m.events[s.RunID] += len(evs)
	return nil
}

func (m *memStore) Load(_ context.Context, runID string) (engine.State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[runID]
	if !ok {
		return engine.State{}, store.ErrNotFound
	}
	return s, nil
}

func (m *memStore) Put(_ context.Context, runID, taskID, name string, content []byte) (engine.OutputRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := runID + "/" + taskID + "/" + name
	m.outputs[p] = content
	sum := sha256.Sum256(content)
	return engine.OutputRef{Name: name, Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}, nil
}

func (m *memStore) Get(_ context.Context, ref engine.OutputRef) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outputs[ref.Path], nil
}

// fanOutFanIn writes a workflow of one root, n-2 tasks after it, and one
// task after all of those.
func fanOutFanIn(b *testing.B, n int) *definition.Bundle {
	b.Helper()
	var w strings.Builder
	w.WriteString("name: fan\nagents: agents.yaml\ntasks:\n  - id: root\n    agent: mock\n    outputs: [root.md]\n")
	deps := make([]string, 0, n-2)
	for i := range n - 2 {
		id := fmt.Sprintf("t%04d", i)
		deps = append(deps, id)
		fmt.Fprintf(&w, "  - id: %s\n    agent: mock\n    depends_on: [root]\n", id)
	}
	fmt.Fprintf(&w, "  - id: sink\n    agent: mock\n    depends_on: [%s]\n", strings.Join(deps, ", "))
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "wf.yaml"), []byte(w.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte(registry), 0o644)
	bundle, err := definition.Load(definition.LoadOptions{Workflow: filepath.Join(dir, "wf.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	return bundle
}

// BenchmarkFanOutFanIn runs a 1,000-task DAG in process with the mock agent:
// the engine and executor alone (memory), and with the CLI file store
// (every change fsynced, the whole state file rewritten each time).
func BenchmarkFanOutFanIn(b *testing.B) {
	const n = 1000
	bundle := fanOutFanIn(b, n)
	for _, tc := range []struct {
		name     string
		parallel int
		file     bool
	}{{"memory/parallel-16", 16, false}, {"memory/parallel-64", 64, false}, {"filestore/parallel-16", 16, true}} {
		b.Run(tc.name, func(b *testing.B) {
			m := mock.New(mock.Config{})
			for i := 0; b.Loop(); i++ {
				var st executor.StateStore
				var arts executor.ArtifactStore
				if tc.file {
					fs := newStore(&testing.T{}, b.TempDir())
					st, arts = fs, fs
				} else {
					ms := newMemStore()
					st, arts = ms, ms
				}
				x, err := executor.New(executor.Config{Dispatcher: router(m), Store: st, Artifacts: arts, MaxParallel: tc.parallel})
				if err != nil {
					b.Fatal(err)
				}
				s, err := x.Run(context.Background(), bundle, executor.RunOptions{RunID: fmt.Sprintf("bench-%d", i)})
				if err != nil || s.Status != engine.RunCompleted {
					b.Fatalf("run: %v %s", err, s.Status)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}
