package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const registry = "agents:\n  mock: {kind: mock}\n"

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
    outputs: [b.json]
  - id: c
    agent: mock
    depends_on: [a]
    inputs: [a.md]
    outputs: [c.md]
  - id: d
    agent: mock
    depends_on: [b, c]
    inputs: [b.json, c.md]
    outputs: [d.md]
`

func newStore(t *testing.T, db store.DB, tenant string, every int) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: tenant, Encoder: orchtest.Encoder{}, SnapshotEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A run kept in the store loads back as the live state — snapshot plus the
// events after it — hash for hash, with numbers and keys that a JSONB
// column would have rewritten; every change is in the outbox as its
// workflow.* event, in order.
func TestRunRoundTrip(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := orchtest.Ctx(t)
		b := orchtest.Bundle(t, diamond, registry, nil)
		st := newStore(t, db, "acme", 3)
		m := mock.New(mock.Config{Default: mock.Outcome{
			Outputs:  map[string]string{"b.json": `{"z": 1, "a": 1.5e300}`},
			Handover: map[string]any{"zeta": 1, "alpha": "<&>", "big": 12345678901234567890.0},
		}})
		h := hooks.New()
		h.OnLoopExit("*", func(_ context.Context, e hooks.Event) error { return e.Annotate("done-"+e.TaskID, e.Iterations) })
		x, err := executor.New(executor.Config{Dispatcher: agent.NewRouter(map[string]agent.Runtime{"mock": m}),
			Store: st, Artifacts: st, Hooks: h})
		if err != nil {
			t.Fatal(err)
		}
		st.SetSource("run-1", []byte(`{"workflow":"/w.yaml"}`))
		live, err := x.Run(ctx, b, executor.RunOptions{RunID: "run-1"})
		if err != nil || live.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s", err, live.Status)
		}
		// A fresh store (another process) loads it.
		loaded, err := newStore(t, db, "acme", 3).Load(ctx, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := hash(t, loaded), hash(t, live); got != want {
			t.Fatalf("loaded hash %s, live %s", got, want)
		}
		evs, err := st.Events(ctx, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(evs)) != live.Seq {
			t.Fatalf("%d events stored, the state is at %d", len(evs), live.Seq)
		}
		folded, err := engine.Fold(evs)
		if err != nil || hash(t, folded) != hash(t, live) {
			t.Fatalf("fold of stored events: %v", err)
		}
		if src, err := st.Source(ctx, "run-1"); err != nil || string(src) != `{"workflow":"/w.yaml"}` {
			t.Fatalf("source = %s, %v", src, err)
		}
		if _, err := st.Source(ctx, "no-run"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("source of no run = %v", err)
		}
		runs, err := st.Runs(ctx, 10)
		if err != nil || len(runs) != 1 || runs[0].Status != engine.RunCompleted || runs[0].StateHash != hash(t, live) || runs[0].FinishedAt == nil {
			t.Fatalf("runs = %+v, %v", runs, err)
		}

		msgs, err := store.Unsent(ctx, db, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != len(evs) {
			t.Fatalf("%d outbox messages for %d events", len(msgs), len(evs))
		}
		for i, msg := range msgs {
			if want := runevents.EventID("acme", "run-1", int64(i+1)); msg.EventID != want || msg.TenantID != "acme" ||
				!strings.HasPrefix(msg.Subject, "praetor.workflow.") || !strings.HasSuffix(msg.Subject, ".acme.run-1") {
				t.Fatalf("outbox message %d = %s %s %s", i, msg.EventID, msg.TenantID, msg.Subject)
			}
		}

		// Outputs are stored and checked against their hash.
		art := live.Artifacts["b:b.json"]
		ref := engine.OutputRef{Name: art.Name, Path: art.Path, SHA256: art.SHA256, Size: art.Size}
		content, err := st.Get(ctx, ref)
		if err != nil || string(content) != `{"z": 1, "a": 1.5e300}` {
			t.Fatalf("output = %q, %v", content, err)
		}
		if _, err := db.Exec(ctx, `UPDATE workflow_artifacts SET content = $1 WHERE tenant_id = $2 AND path = $3`, []byte("tampered"), "acme", art.Path); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(ctx, ref); !errors.Is(err, sqlstore.ErrCorrupt) {
			t.Fatalf("tampered output = %v, want ErrCorrupt", err)
		}
	})
}

func hash(t *testing.T, s engine.State) string {
	t.Helper()
	h, err := engine.Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// startState opens a run by hand, to drive the store directly.
func startState(t *testing.T, runID string) (engine.State, engine.Event) {
	t.Helper()
	b := orchtest.Bundle(t, diamond, registry, nil)
	s, ev, err := engine.Start(engine.StartInfo{RunID: runID, Workflow: "diamond", Project: b.ProjectDir, Seed: 7, Plan: b.Plan()},
		engine.NewCtx(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 7, 1))
	if err != nil {
		t.Fatal(err)
	}
	return s, ev
}

// A change that does not follow the stored one is refused: a second start
// of the same run, a change on an old state, a run of another tenant.
func TestConflictsAndTenants(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := orchtest.Ctx(t)
		st := newStore(t, db, "acme", 256)
		s1, ev1 := startState(t, "run-c")
		if err := st.Save(ctx, s1, []engine.Event{ev1}); err != nil {
			t.Fatal(err)
		}
		if err := st.Save(ctx, s1, []engine.Event{ev1}); !errors.Is(err, sqlstore.ErrConflict) || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second start = %v, want ErrConflict", err)
		}
		s2, ev2, err := engine.ApplyAction(s1, engine.Action{Type: engine.RequestWork, TaskID: "a"}, engine.Next(s1, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Save(ctx, s2, []engine.Event{ev2}); err != nil {
			t.Fatal(err)
		}
		// Another orchestrator still at s1 makes its own changes 2 and 3.
		other, ev2b, err := engine.ApplyAction(s1, engine.Action{Type: engine.RequestWork, TaskID: "a"}, engine.Next(s1, time.Now().Add(time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		other, ev3b, err := engine.ApplyAction(other, engine.Action{Type: engine.Annotate, TaskID: "a", Key: "k", Value: []byte(`1`)},
			engine.Next(other, time.Now().Add(time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		outbox := func() int {
			t.Helper()
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := outbox()
		err = newStore(t, db, "acme", 256).Save(ctx, other, []engine.Event{ev2b, ev3b})
		if !errors.Is(err, sqlstore.ErrConflict) || !strings.Contains(err.Error(), "is at event 2") {
			t.Fatalf("interleaved change = %v, want ErrConflict naming the stored event", err)
		}
		if after := outbox(); after != before {
			t.Fatalf("the refused change left %d messages in the outbox", after-before)
		}
		loaded, err := st.Load(ctx, "run-c")
		if err != nil || loaded.Seq != 2 || hash(t, loaded) != hash(t, s2) {
			t.Fatalf("after the refused change: seq %d, %v", loaded.Seq, err)
		}
		// Tenants are apart: the same run id in another tenant is another run.
		if _, err := newStore(t, db, "globex", 256).Load(ctx, "run-c"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other tenant's load = %v, want ErrNotFound", err)
		}
		if err := newStore(t, db, "globex", 256).Save(ctx, s1, []engine.Event{ev1}); err != nil {
			t.Fatalf("same run id in another tenant: %v", err)
		}
		if _, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "bad tenant"}); err == nil {
			t.Fatal("a tenant id that is not a subject token was accepted")
		}
	})
}

// Results are kept by dispatch: the first one wins, and another tenant
// does not see it.
func TestResults(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := orchtest.Ctx(t)
		r := sqlstore.NewResults(db)
		res := sqlstore.Result{TenantID: "acme", DispatchID: "run-r/a/1", RunID: "run-r", EventID: "e1", OK: true,
			JSON: []byte(`{"outputs":{"a.md":"aGk="}}`), ReceivedAt: time.Now()}
		if fresh, err := r.Save(ctx, res); err != nil || !fresh {
			t.Fatalf("save = %v, %v", fresh, err)
		}
		dup := res
		dup.EventID, dup.OK, dup.JSON = "e2", false, []byte(`{}`)
		if fresh, err := r.Save(ctx, dup); err != nil || fresh {
			t.Fatalf("second save = %v, %v; want kept first", fresh, err)
		}
		got, err := r.Load(ctx, "acme", "run-r/a/1")
		if err != nil || got.EventID != "e1" || !got.OK || string(got.JSON) != string(res.JSON) {
			t.Fatalf("load = %+v, %v", got, err)
		}
		if _, err := r.Load(ctx, "globex", "run-r/a/1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other tenant = %v", err)
		}
		if err := r.PruneRun(ctx, "acme", "run-r"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Load(ctx, "acme", "run-r/a/1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after prune = %v", err)
		}

		// Answers that came after their run's end are pruned later, with
		// those of runs gone; a running run's are kept, as are recent ones.
		b := orchtest.Bundle(t, diamond, registry, nil)
		running, ev, err := engine.Start(engine.StartInfo{RunID: "run-live", Workflow: b.Workflow.Name, Seed: 1, Limits: b.Limits(),
			Plan: b.Plan()}, engine.NewCtx(time.Now(), 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := newStore(t, db, "acme", 8).Save(ctx, running, []engine.Event{ev}); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * time.Hour)
		for _, res := range []sqlstore.Result{
			{TenantID: "acme", DispatchID: "run-live/a/1", RunID: "run-live", EventID: "l1", ReceivedAt: old},
			{TenantID: "acme", DispatchID: "run-gone/a/1", RunID: "run-gone", EventID: "g1", ReceivedAt: old},
			{TenantID: "acme", DispatchID: "run-gone/b/1", RunID: "run-gone", EventID: "g2", ReceivedAt: time.Now()},
		} {
			res.JSON = []byte(`{}`)
			if _, err := r.Save(ctx, res); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := r.PruneSettled(ctx, time.Now().Add(-time.Hour)); err != nil || n != 1 {
			t.Fatalf("PruneSettled = %d, %v; want the old answer of the run gone", n, err)
		}
		for id, want := range map[string]bool{"run-live/a/1": true, "run-gone/a/1": false, "run-gone/b/1": true} {
			if _, err := r.Load(ctx, "acme", id); (err == nil) != want {
				t.Errorf("%s after PruneSettled: %v, want kept %t", id, err, want)
			}
		}
	})
}

// By default the interval between snapshots grows with the plan: a run of
// 300 tasks is snapshotted after 300 events, not every 256 (a snapshot is
// the whole state, O(tasks)); either way it loads back whole.
func TestDefaultSnapshotIntervalFollowsThePlan(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := orchtest.Ctx(t)
		st := newStore(t, db, "acme", 0)
		const n = 300
		p := engine.Plan{}
		for i := range n {
			p.Tasks = append(p.Tasks, engine.PlanTask{ID: fmt.Sprintf("t%03d", i), Agent: "mock", Kind: engine.KindWork,
				Timeout: engine.Duration(time.Minute)})
		}
		now := time.Now()
		s, ev, err := engine.Start(engine.StartInfo{RunID: "big", Workflow: "w", Plan: p, Seed: 1}, engine.NewCtx(now, 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Save(ctx, s, []engine.Event{ev}); err != nil {
			t.Fatal(err)
		}
		snapshotAt := func() int64 {
			t.Helper()
			var seq int64
			if err := db.QueryRow(ctx, `SELECT snapshot_seq FROM workflow_runs WHERE tenant_id = $1 AND id = $2`, "acme", "big").Scan(&seq); err != nil {
				t.Fatal(err)
			}
			return seq
		}
		for i := range n {
			s, ev, err = engine.ApplyAction(s, engine.Action{Type: engine.RequestWork, TaskID: p.Tasks[i].ID}, engine.Next(s, now))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Save(ctx, s, []engine.Event{ev}); err != nil {
				t.Fatal(err)
			}
			if i == n-2 {
				if got := snapshotAt(); got != 1 {
					t.Fatalf("after %d events the snapshot is at event %d, want still 1 (the interval is the plan's %d tasks)", s.Seq-1, got, n)
				}
			}
		}
		if got := snapshotAt(); got != s.Seq {
			t.Fatalf("after %d events the snapshot is at event %d, want %d", s.Seq-1, got, s.Seq)
		}
		loaded, err := st.Load(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		h1, err1 := engine.Hash(loaded)
		h2, err2 := engine.Hash(s)
		if err1 != nil || err2 != nil || h1 != h2 {
			t.Fatalf("the loaded run differs from the saved one (%v, %v)", err1, err2)
		}
	})
}

// kicks counts the relay kicks.
type kicks struct{ c chan struct{} }

func (k kicks) Kick() { k.c <- struct{}{} }

// Changes saved within RelayDelay of each other kick the relay once, after
// the delay; a negative delay kicks it at every change.
func TestRelayKicksGather(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	ctx := orchtest.Ctx(t)
	run := func(t *testing.T, delay time.Duration, runID string) (kicks, func()) {
		t.Helper()
		k := kicks{c: make(chan struct{}, 100)}
		st, err := sqlstore.New(sqlstore.Config{DB: db, TenantID: "acme", Encoder: orchtest.Encoder{}, Relay: k, RelayDelay: delay})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		p := engine.Plan{Tasks: []engine.PlanTask{
			{ID: "a", Agent: "mock", Kind: engine.KindWork, Timeout: engine.Duration(time.Minute)},
			{ID: "b", Agent: "mock", Kind: engine.KindWork, Timeout: engine.Duration(time.Minute)},
		}}
		s, ev, err := engine.Start(engine.StartInfo{RunID: runID, Workflow: "w", Plan: p, Seed: 1}, engine.NewCtx(now, 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Save(ctx, s, []engine.Event{ev}); err != nil {
			t.Fatal(err)
		}
		return k, func() {
			for _, id := range []string{"a", "b"} {
				next, ev, err := engine.ApplyAction(s, engine.Action{Type: engine.RequestWork, TaskID: id}, engine.Next(s, now))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Save(ctx, next, []engine.Event{ev}); err != nil {
					t.Fatal(err)
				}
				s = next
			}
		}
	}
	t.Run("gathered", func(t *testing.T) {
		k, more := run(t, time.Hour, "gathered")
		more()
		if n := len(k.c); n != 0 {
			t.Fatalf("%d kicks before the delay passed", n)
		}
	})
	t.Run("after the delay", func(t *testing.T) {
		k, more := run(t, 20*time.Millisecond, "delayed")
		select {
		case <-k.c:
		case <-time.After(10 * time.Second):
			t.Fatal("no kick after the delay")
		}
		more()
		select {
		case <-k.c:
		case <-time.After(10 * time.Second):
			t.Fatal("no kick for the later changes")
		}
	})
	t.Run("at once", func(t *testing.T) {
		k, more := run(t, -1, "at-once")
		more()
		if n := len(k.c); n != 3 {
			t.Fatalf("%d kicks for 3 changes, want one each", n)
		}
	})
}

// sqlStateError is a database error with a SQLSTATE, as PostgreSQL's are.
type sqlStateError string

func (e sqlStateError) Error() string {
	return "ERROR: could not serialize access (SQLSTATE " + string(e) + ")"
}
func (e sqlStateError) SQLState() string { return string(e) }

// failOnce fails the first queries of a save's statement with err.
type failOnce struct {
	store.DB
	times int
	err   error
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (f *failOnce) QueryRow(ctx context.Context, q string, args ...any) store.Row {
	if strings.HasPrefix(q, "WITH run AS") && f.times > 0 {
		f.times--
		return errRow{f.err}
	}
	return f.DB.QueryRow(ctx, q, args...)
}

// On PostgreSQL a change is one statement outside a transaction; when it
// fails for a concurrent transaction (a serialization failure, under a
// serializable default isolation) it runs again, as a transaction would;
// any other failure is the save's.
func TestSaveStatementRetriesSerializationFailures(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		if db.Dialect() != store.Postgres {
			t.Skip("PostgreSQL only")
		}
		ctx := orchtest.Ctx(t)
		flaky := &failOnce{DB: db, times: 2, err: sqlStateError("40001")}
		st := newStore(t, flaky, "acme", 256)
		s1, ev1 := startState(t, "run-retry")
		if err := st.Save(ctx, s1, []engine.Event{ev1}); err != nil {
			t.Fatal(err)
		}
		s2, ev2, err := engine.ApplyAction(s1, engine.Action{Type: engine.RequestWork, TaskID: "a"}, engine.Next(s1, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Save(ctx, s2, []engine.Event{ev2}); err != nil || flaky.times != 0 {
			t.Fatalf("save after two serialization failures = %v (failures left %d), want it saved", err, flaky.times)
		}
		if loaded, err := st.Load(ctx, "run-retry"); err != nil || hash(t, loaded) != hash(t, s2) {
			t.Fatalf("load = %v", err)
		}
		flaky.times, flaky.err = 1, sqlStateError("23505")
		s3, ev3, err := engine.ApplyAction(s2, engine.Action{Type: engine.Annotate, TaskID: "a", Key: "k", Value: []byte(`1`)}, engine.Next(s2, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Save(ctx, s3, []engine.Event{ev3}); err == nil || !strings.Contains(err.Error(), "23505") {
			t.Fatalf("save with another failure = %v, want that failure", err)
		}
	})
}
