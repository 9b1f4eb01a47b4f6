package runevents_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
)

// recorder keeps a run's states and events in memory.
type recorder struct {
	mu      sync.Mutex
	state   engine.State
	events  []engine.Event
	outputs map[string][]byte
}

func (r *recorder) Save(_ context.Context, s engine.State, evs []engine.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = s
	r.events = append(r.events, evs...)
	return nil
}

func (r *recorder) Load(_ context.Context, runID string) (engine.State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.RunID != runID {
		return engine.State{}, store.ErrNotFound
	}
	return r.state, nil
}

func (r *recorder) Put(_ context.Context, runID, taskID, name string, content []byte) (engine.OutputRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := runID + "/" + taskID + "/" + name
	r.outputs[p] = content
	sum := sha256.Sum256(content)
	return engine.OutputRef{Name: name, Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}, nil
}

func (r *recorder) Get(_ context.Context, ref engine.OutputRef) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outputs[ref.Path], nil
}

// A run that exercises every transition: outputs, handover with characters
// JSON encoders like to escape, a retried failure, an approval, annotations
// from hooks, and a final failure.
const workflow = `name: every-transition
agents: agents.yaml
defaults:
  retry_backoff: 1ms
tasks:
  - id: draft
    agent: writer
    outputs: [draft.md, facts.json]
  - id: flaky
    agent: flaky
    depends_on: [draft]
    retries: 2
    outputs: [flaky.md]
  - id: review
    agent: writer
    kind: approval
    depends_on: [flaky]
  - id: ship
    agent: broken
    depends_on: [review]
`

const registry = `agents:
  writer: {kind: mock}
  flaky: {kind: mock}
  broken: {kind: mock}
`

func runEveryTransition(t *testing.T) *recorder {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"wf.yaml": workflow, "agents.yaml": registry} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := definition.Load(definition.LoadOptions{Workflow: filepath.Join(dir, "wf.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	rt := map[string]agent.Runtime{
		"writer": mock.New(mock.Config{Default: mock.Outcome{
			Outputs:  map[string]string{"facts.json": `{"a": 1}`},
			Handover: map[string]any{"note": "<b>bold</b> & \"quoted\" é \u2028", "n": 1.5e300},
		}}),
		"flaky":  mock.New(mock.Config{Default: mock.Outcome{FailAttempts: 1}}),
		"broken": mock.New(mock.Config{Default: mock.Outcome{Fail: "no route to <prod>"}}),
	}
	h := hooks.New()
	h.OnPostTask("*", func(_ context.Context, e hooks.Event) error {
		return e.Annotate("checked-"+e.TaskID, map[string]any{"attempt": e.Task.Attempt, "html": "<ok>"})
	})
	h.OnFailure("*", func(_ context.Context, e hooks.Event) error { return e.Annotate("failure-seen", e.Error.Message) })
	rec := &recorder{outputs: map[string][]byte{}}
	x, err := executor.New(executor.Config{Dispatcher: agent.NewRouter(rt), Store: rec, Artifacts: rec, Hooks: h})
	if err != nil {
		t.Fatal(err)
	}
	s, err := x.Run(context.Background(), b, executor.RunOptions{RunID: "run-every"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != engine.RunFailed || s.Tasks["flaky"].Iterations != 2 || s.Tasks["review"].Status != engine.TaskCompleted {
		t.Fatalf("the run did not go through every transition: %s, %+v", s.Status, s.Tasks)
	}
	return rec
}

// Folding the events decoded back from their contracts — through the
// binary content mode a NATS message carries — rebuilds the live state,
// hash for hash.
func TestFoldOfContractsRebuildsTheLiveState(t *testing.T) {
	t.Parallel()
	rec := runEveryTransition(t)
	types := map[engine.EventType]bool{}
	var back []engine.Event
	for _, e := range rec.events {
		types[e.Type] = true
		ce, err := runevents.CloudEvent("acme", e)
		if err != nil {
			t.Fatalf("event %d: %v", e.Seq, err)
		}
		subject, err := contracts.Subject(ce)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := events.Encode(subject, ce)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := events.Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := runevents.FromCloudEvent(decoded)
		if err != nil {
			t.Fatalf("event %d: %v", e.Seq, err)
		}
		back = append(back, got)
	}
	for _, typ := range []engine.EventType{engine.EventRunStarted, engine.EventWorkRequested, engine.EventApprovalRequested,
		engine.EventAnnotated, engine.EventAgentResponded, engine.EventRunFinalized} {
		if !types[typ] {
			t.Errorf("the run emitted no %s event", typ)
		}
	}
	folded, err := engine.Fold(back)
	if err != nil {
		t.Fatalf("fold: %v", err)
	}
	want, _ := engine.Hash(rec.state)
	got, _ := engine.Hash(folded)
	if got != want {
		a, _ := engine.CanonicalJSON(folded)
		b, _ := engine.CanonicalJSON(rec.state)
		t.Fatalf("hash of the fold %s, live %s\nfold %s\nlive %s", got, want, a, b)
	}
}

// A contract that was changed in flight does not fold: the engine re-applies
// each transition and checks it emits the recorded event.
func TestTamperedContractDiverges(t *testing.T) {
	t.Parallel()
	rec := runEveryTransition(t)
	var back []engine.Event
	for _, e := range rec.events {
		p, err := runevents.Payload("acme", e)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := p.(contracts.WorkflowTaskUpdated); ok && w.TaskID == "flaky" && w.Status == "FAILED" {
			t.Fatal("flaky must not end FAILED in this run")
		}
		if w, ok := p.(contracts.WorkflowTaskUpdated); ok && w.TaskID == "draft" && w.Status == "COMPLETED" {
			w.Artifacts[0].SHA256 = "0000"
			p = w
		}
		got, err := runevents.FromPayload(p)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, got)
	}
	folded, err := engine.Fold(back)
	if err != nil {
		t.Fatalf("fold of a tampered artifact hash must still apply (the hash is data): %v", err)
	}
	if h1, h2 := mustHash(t, folded), mustHash(t, rec.state); h1 == h2 {
		t.Fatal("a tampered event folded to the live hash")
	}
	back[1].TaskID = "flaky" // a dispatch of a task whose dependency is not done
	if _, err := engine.Fold(back); err == nil || !errors.Is(err, engine.ErrInvalidAction) {
		t.Fatalf("fold of an impossible transition = %v, want ErrInvalidAction", err)
	}
}

func mustHash(t *testing.T, s engine.State) string {
	t.Helper()
	h, err := engine.Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Every event id is derived from tenant, run and seq.
func TestEventIDsAreStable(t *testing.T) {
	t.Parallel()
	a := runevents.EventID("acme", "r1", 3)
	if a != runevents.EventID("acme", "r1", 3) || a == runevents.EventID("acme", "r1", 4) || a == runevents.EventID("other", "r1", 3) {
		t.Fatal("event ids are not a function of tenant, run and seq")
	}
	if _, err := runevents.FromCloudEvent(contracts.MustEvent(contracts.Meta{ID: "x"},
		contracts.WorkflowRequested{TenantID: "acme", RunID: "r", Workflow: "w.yaml"})); !errors.Is(err, runevents.ErrNotRunEvent) {
		t.Fatalf("workflow.requested = %v, want ErrNotRunEvent", err)
	}
}
