package dispatch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const tenant = "acme"

// cluster is one test's NATS server and database, shared by the
// orchestrator and worker "processes" it starts, each on a connection of
// its own.
type cluster struct {
	t    testing.TB
	nats *orchtest.NATS
	db   store.DB
	// snapshotEvery is the orchestrators' SnapshotEvery; default 8, to
	// exercise loading snapshots with events after them.
	snapshotEvery int
}

func newCluster(t testing.TB, db store.DB) *cluster {
	t.Helper()
	return &cluster{t: t, nats: orchtest.StartNATS(t), db: db, snapshotEvery: 8}
}

func startRelay(t testing.TB, db store.DB, bus delivery.Publisher) *delivery.Relay {
	t.Helper()
	r, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: bus, Logger: orchtest.Logger(t), Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	return r
}

// orchestrator is the orchestrator side: state store, result store and
// JetStream dispatcher.
type orchestrator struct {
	bus     *events.Bus
	store   *sqlstore.Store
	results *sqlstore.Results
	disp    *dispatch.Dispatcher
	reg     *prometheus.Registry
}

func (c *cluster) orchestrator() *orchestrator { return c.orchestratorWith(nil) }

// orchestratorWith is an orchestrator whose dispatcher's configuration
// change alters.
func (c *cluster) orchestratorWith(change func(*dispatch.Config)) *orchestrator {
	t := c.t
	t.Helper()
	bus := c.nats.Bus(t)
	relay := startRelay(t, c.db, bus)
	st, err := sqlstore.New(sqlstore.Config{DB: c.db, TenantID: tenant, Encoder: bus, Relay: relay, SnapshotEvery: c.snapshotEvery})
	if err != nil {
		t.Fatal(err)
	}
	o := &orchestrator{bus: bus, store: st, results: sqlstore.NewResults(c.db), reg: prometheus.NewRegistry()}
	cfg := dispatch.Config{Bus: bus, Results: o.results, PollInterval: 200 * time.Millisecond,
		Logger: orchtest.Logger(t), Registerer: o.reg}
	if change != nil {
		change(&cfg)
	}
	o.disp, err = dispatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.disp.Start(orchtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.disp.Stop(context.Background()) })
	return o
}

func (o *orchestrator) executor(t testing.TB, change func(*executor.Config)) *executor.Executor {
	t.Helper()
	cfg := executor.Config{Dispatcher: o.disp.Tenant(tenant), Store: o.store, Artifacts: o.store, MaxParallel: 4}
	if change != nil {
		change(&cfg)
	}
	x, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// dispatches reads the dispatcher's count of attempts by result.
func (o *orchestrator) dispatches(result string) int {
	mfs, _ := o.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "praetor_workflow_dispatches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// workerProc is an agent-worker process.
type workerProc struct {
	bus  *events.Bus
	pool *worker.Pool
}

func (c *cluster) worker(rt agent.Runtime, agents []string, change func(*worker.Config)) *workerProc {
	t := c.t
	t.Helper()
	bus := c.nats.Bus(t)
	relay := startRelay(t, c.db, bus)
	cfg := worker.Config{Bus: bus, DB: c.db, Relay: relay, Runtime: rt, Agents: agents, Concurrency: 4, Logger: orchtest.Logger(t)}
	if change != nil {
		change(&cfg)
	}
	p, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(orchtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Stop(ctx)
	})
	return &workerProc{bus: bus, pool: p}
}

// eventually polls cond until it holds, or fails the test.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drained waits until the outbox has nothing left to publish.
func (c *cluster) drained() {
	c.t.Helper()
	eventually(c.t, "the outbox to drain", func() bool {
		msgs, err := store.Unsent(context.Background(), c.db, 1)
		return err == nil && len(msgs) == 0
	})
}

// answers counts the task.completed and task.failed events of a dispatch
// on the stream.
func (c *cluster) answers(bus *events.Bus, dispatchID string) int {
	c.t.Helper()
	n := 0
	err := bus.Replay(orchtest.Ctx(c.t), events.ReplayConfig{Stream: contracts.StreamTasks,
		Subjects: []string{contracts.TaskCompletedSpec.FilterSubject(), contracts.TaskFailedSpec.FilterSubject()}},
		func(r events.Record) error {
			if o, err := taskmsg.DecodeOutcome(r.Event); err == nil && o.DispatchID == dispatchID {
				n++
			}
			return nil
		})
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// failingStore fails Save when fail says so.
type failingStore struct {
	*sqlstore.Store
	fail func(evs []engine.Event) bool
}

var errDiskFull = errors.New("no space left on device")

func (f failingStore) Save(ctx context.Context, s engine.State, evs []engine.Event) error {
	if f.fail(evs) {
		return errDiskFull
	}
	return f.Store.Save(ctx, s, evs)
}

// seq records strings from several goroutines in order.
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

// txSignal is a DB whose commits report when they end: its transactions,
// and its queries, each a statement committed on its own (a worker's
// answers on PostgreSQL are one: store.MarkHandledAll), once their rows are
// closed.
type txSignal struct {
	store.DB
	ended chan error
}

func (d txSignal) Tx(ctx context.Context, fn func(tx store.Querier) error) error {
	err := d.DB.Tx(ctx, fn)
	d.signal(err)
	return err
}

func (d txSignal) Query(ctx context.Context, q string, args ...any) (store.Rows, error) {
	rows, err := d.DB.Query(ctx, q, args...)
	if err != nil {
		d.signal(err)
		return nil, err
	}
	return signalRows{Rows: rows, d: d}, nil
}

func (d txSignal) signal(err error) {
	select {
	case d.ended <- err:
	default:
	}
}

type signalRows struct {
	store.Rows
	d txSignal
}

func (r signalRows) Close() {
	r.Rows.Close()
	r.d.signal(r.Rows.Err())
}
