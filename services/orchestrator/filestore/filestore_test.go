package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

var t0 = time.Date(2026, 2, 27, 10, 0, 0, 0, time.UTC)

// history builds a run of one task through the engine: the states after
// each event, and the events.
func history(t *testing.T, runID string) ([]engine.State, []engine.Event) {
	t.Helper()
	plan := engine.Plan{Tasks: []engine.PlanTask{{ID: "a", Agent: "m", Kind: engine.KindWork, Outputs: []string{"a.md"}, Timeout: engine.Duration(time.Minute)}}}
	s, ev, err := engine.Start(engine.StartInfo{RunID: runID, Workflow: "wf", Seed: 3, Plan: plan}, engine.NewCtx(t0, 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	states, events := []engine.State{s}, []engine.Event{ev}
	step := func(fn func(engine.State, engine.Ctx) (engine.State, engine.Event, error)) {
		s, ev, err = fn(s, engine.Next(s, t0.Add(time.Duration(len(events))*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		states, events = append(states, s), append(events, ev)
	}
	step(func(s engine.State, c engine.Ctx) (engine.State, engine.Event, error) {
		return engine.ApplyAction(s, engine.Action{Type: engine.RequestWork, TaskID: "a"}, c)
	})
	step(func(s engine.State, c engine.Ctx) (engine.State, engine.Event, error) {
		return engine.ApplyResponse(s, engine.Response{TaskID: "a", Attempt: 1, DispatchID: runID + "/a/1", OK: true,
			Outputs: []engine.OutputRef{{Name: "a.md", Path: "p", SHA256: "h", Size: 1}}}, c)
	})
	step(func(s engine.State, c engine.Ctx) (engine.State, engine.Event, error) {
		return engine.Finalize(s, engine.Finalization{}, c)
	})
	return states, events
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(Config{Dir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hash(t *testing.T, s engine.State) string {
	t.Helper()
	h, err := engine.Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSaveLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := newStore(t)
	states, events := history(t, "r1")
	for i := range states {
		if err := fs.Save(ctx, states[i], events[i:i+1]); err != nil {
			t.Fatalf("Save %d: %v", i, err)
		}
	}
	got, err := fs.Load(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if hash(t, got) != hash(t, states[3]) {
		t.Fatal("loaded state differs from the saved one")
	}
	cur, err := fs.Current(ctx)
	if err != nil || cur.RunID != "r1" {
		t.Fatalf("Current = %s %v", cur.RunID, err)
	}
	evs, err := fs.Events(ctx, "r1")
	if err != nil || len(evs) != 4 {
		t.Fatalf("Events = %d %v", len(evs), err)
	}
	if _, err := fs.Load(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Load of an unknown run = %v", err)
	}
	if err := fs.Save(ctx, states[3], events[1:2]); err == nil || !strings.Contains(err.Error(), "does not follow") {
		t.Fatalf("Save of an old event = %v", err)
	}
	// The state file is pretty JSON of the state, with the seed's fields.
	raw, _ := os.ReadFile(fs.StatePath())
	for _, want := range []string{`"version": "1"`, `"workflow": "wf"`, `"started_at": "2026-02-27T10:00:00Z"`, `"iterations": 1`, `"outputs": [`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("state file lacks %s", want)
		}
	}
}

// A failed write leaves the previous state intact, no temporary files, and
// an error for the executor to stop on.
func TestAtomicWriteFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states, events := history(t, "r1")
	cases := map[string]func(*Store){
		"rename fails": func(s *Store) { s.rename = func(string, string) error { return errors.New("EIO on rename") } },
		"fsync fails":  func(s *Store) { s.sync = func(*os.File) error { return errors.New("EIO on fsync") } },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fs := newStore(t)
			if err := fs.Save(ctx, states[0], events[:1]); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(fs.StatePath())
			breakIt(fs)
			if err := fs.Save(ctx, states[1], events[1:2]); err == nil || !strings.Contains(err.Error(), "EIO") {
				t.Fatalf("Save = %v, want the write error", err)
			}
			after, _ := os.ReadFile(fs.StatePath())
			if string(after) != string(before) {
				t.Fatal("a failed write changed the state file")
			}
			entries, _ := os.ReadDir(fs.Dir())
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Fatalf("temporary file left behind: %s", e.Name())
				}
			}
		})
	}
}

// Events are written before the state; a state write that failed after
// them is caught up on Load.
func TestLoadCatchesUpFromEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := newStore(t)
	states, events := history(t, "r1")
	if err := fs.Save(ctx, states[0], events[:1]); err != nil {
		t.Fatal(err)
	}
	fs.rename = func(string, string) error { return errors.New("crash") }
	if err := fs.Save(ctx, states[1], events[1:2]); err == nil {
		t.Fatal("expected failure")
	}
	// A new process.
	fresh, err := New(Config{Dir: fs.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fresh.Load(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 2 || hash(t, got) != hash(t, states[1]) {
		t.Fatalf("caught-up state seq %d differs from the state after event 2", got.Seq)
	}
}

func TestEventLogDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states, events := history(t, "r1")
	fs := newStore(t)
	for i := range states {
		if err := fs.Save(ctx, states[i], events[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	path := fs.eventsPath("r1")
	// A torn last line (no newline) is dropped.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":5,"ty`)
	f.Close()
	if evs, err := fs.Events(ctx, "r1"); err != nil || len(evs) != 4 {
		t.Fatalf("torn line: %d events, %v", len(evs), err)
	}
	// A damaged line inside the log is corruption.
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = "garbage\n"
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
	if _, err := fs.Events(ctx, "r1"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("damaged line = %v", err)
	}
}

func TestRunInProgressIsNotReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := newStore(t)
	r1, e1 := history(t, "r1")
	r2, e2 := history(t, "r2")
	if err := fs.Save(ctx, r1[1], e1[:2]); err != nil {
		t.Fatal(err)
	}
	if err := fs.Save(ctx, r2[0], e2[:1]); !errors.Is(err, ErrRunInProgress) || !strings.Contains(err.Error(), "run r1") {
		t.Fatalf("second run over a RUNNING one = %v", err)
	}
	if err := fs.Save(ctx, r1[3], e1[2:]); err != nil {
		t.Fatal(err)
	}
	if err := fs.Save(ctx, r2[0], e2[:1]); err != nil {
		t.Fatalf("a new run after the first finished: %v", err)
	}
	// The older run stays loadable from its events.
	old, err := fs.Load(ctx, "r1")
	if err != nil || old.Status != engine.RunCompleted {
		t.Fatalf("old run = %s %v", old.Status, err)
	}
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := newStore(t)
	ref, err := fs.Put(ctx, "r1", "design", "docs/api.json", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if ref.Path != "runs/r1/outputs/design/docs/api.json" || ref.Size != 7 || len(ref.SHA256) != 64 {
		t.Fatalf("ref = %+v", ref)
	}
	got, err := fs.Get(ctx, ref)
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("Get = %q %v", got, err)
	}
	os.WriteFile(filepath.Join(fs.Dir(), filepath.FromSlash(ref.Path)), []byte("tampered"), 0o644)
	if _, err := fs.Get(ctx, ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("tampered output = %v", err)
	}
	for _, bad := range [][3]string{{"r1", "t", "../../x"}, {"r1", "a/b", "x"}, {"..", "t", "x"}, {"r1", "t", "/etc/x"}} {
		if _, err := fs.Put(ctx, bad[0], bad[1], bad[2], []byte("x")); err == nil {
			t.Errorf("Put(%q) accepted", bad)
		}
	}
	if _, err := fs.Get(ctx, engine.OutputRef{Path: "../../../etc/passwd"}); err == nil {
		t.Fatal("Get outside the store succeeded")
	}
}

func TestSource(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Source("run-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no source = %v", err)
	}
	if err := s.SaveSource("run-1", []byte(`{"workflow":"/w.yaml"}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Source("run-1"); err != nil || string(b) != `{"workflow":"/w.yaml"}` {
		t.Fatalf("source = %s, %v", b, err)
	}
	if err := s.SaveSource("../x", nil); err == nil {
		t.Fatal("a run id with a path was accepted")
	}
}
