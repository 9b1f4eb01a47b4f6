package dispatch_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

// fanOutFanIn is one root, n-2 tasks after it, and one task after all of
// those.
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
	return orchtest.Bundle(b, w.String(), registry, nil)
}

// latencies collects, per attempt, the dispatch latency — from the
// attempt being ready to go out (dependencies done and a slot free: the
// executor had the answer that made it so) to a worker starting it — and
// its transport part, from the publish of task.dispatched to that start.
type latencies struct {
	mu                          sync.Mutex
	dispatch, transport, answer []time.Duration
	started                     map[string]time.Time
	// obs keeps every observation, for the breakdown (phases).
	obs []worker.Observation
}

func (l *latencies) observe(o worker.Observation) {
	ready := o.ReadyAt
	if ready.IsZero() {
		ready = o.DispatchedAt
	}
	l.mu.Lock()
	l.obs = append(l.obs, o)
	l.dispatch = append(l.dispatch, o.StartedAt.Sub(ready))
	l.transport = append(l.transport, o.StartedAt.Sub(o.DispatchedAt))
	if l.started != nil {
		l.started[o.Task.DispatchID] = o.StartedAt
	}
	l.mu.Unlock()
}

// answered records an attempt's answer reaching the executor, for the
// other half of the cycle: from the worker starting it to then.
func (l *latencies) answered(dispatchID string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if start, ok := l.started[dispatchID]; ok {
		l.answer = append(l.answer, at.Sub(start))
	}
}

// timedDispatcher notes when each answer reaches the executor.
type timedDispatcher struct {
	executor.Dispatcher
	lat *latencies
}

func (d timedDispatcher) Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	res, err := d.Dispatcher.Dispatch(ctx, t, c)
	d.lat.answered(t.DispatchID, time.Now())
	return res, err
}

func (l *latencies) quantile(d []time.Duration, q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// report reports the latencies' p50 and p99 in milliseconds.
func (l *latencies) report(b *testing.B) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(l.quantile(l.dispatch, 0.50)), "p50-dispatch-ms")
	b.ReportMetric(ms(l.quantile(l.dispatch, 0.99)), "p99-dispatch-ms")
	b.ReportMetric(ms(l.quantile(l.transport, 0.50)), "p50-publish-ms")
	b.ReportMetric(ms(l.quantile(l.transport, 0.99)), "p99-publish-ms")
	if len(l.answer) > 0 {
		b.ReportMetric(ms(l.quantile(l.answer, 0.50)), "p50-answer-ms")
	}
}

// BenchmarkFanOutFanInJetStream runs a 1,000-task fan-out/fan-in DAG with
// the mock agent through the JetStream dispatcher and an agent-worker pool,
// with the run's state in each store adapter: every attempt is a
// task.dispatched event, a worker's inbox/outbox transaction, a
// task.completed event recorded by the orchestrator, and two state changes
// published as workflow.* events through the outbox.
//
//	go test -run '^$' -bench 'FanOutFanInJetStream|RawJetStream' -benchtime 10x ./services/orchestrator/dispatch/
//
// It reports tasks/s over whole runs (start to finalization, every state
// change committed), and at p50 and p99 the dispatch latency: from an
// attempt being ready to go out — its dependencies done and a slot free
// among the MaxParallel, so the executor held the answer that made it so
// (for the root, the run's start) — to a worker starting it. That covers
// the executor taking the answer, the commit of the change that records it
// and the dispatch, context assembly, the publish and the delivery. The
// publish-ms figures are the transport part alone: task.dispatched
// published to the worker starting it; wait-ms, commit-ms and launch-ms
// are the parts before it (timedStore.phases). tx/task, db-rt/task (round trips:
// begins, statements, commits, lock attempts), lock/task and lockmiss/task
// (relay passes, and those that found another relay holding the lock)
// count what every process of the cluster asks of the database.
//
// Each adapter runs at two operating points, by the attempts in flight
// (the executor's MaxParallel and the worker pool's concurrency): 12, where
// the commit and transport of one attempt seldom queue behind another's on
// two cores, and 64, which gives the most tasks/s at the cost of queueing
// in the dispatch latency. BENCH_PARALLEL=N runs N alone.
func BenchmarkFanOutFanInJetStream(b *testing.B) {
	const n = 1000
	for _, a := range testdb.Adapters() {
		for _, parallel := range benchParallel {
			b.Run(fmt.Sprintf("%s/inflight%d", a.Name, parallel), func(b *testing.B) {
				db := &countingDB{DB: a.Open(b)}
				benchFan(b, db, n, parallel)
			})
		}
	}
}

// timedStore times the executor's saves: each commits one change of a run
// (its events, the run row, the outbox), and the run waits on it. It
// notes, per dispatch, when the save that records it began and ended.
type timedStore struct {
	*sqlstore.Store
	mu    sync.Mutex
	d     []time.Duration
	ev    int
	saved map[string][2]time.Time
}

func (t *timedStore) Save(ctx context.Context, s engine.State, evs []engine.Event) error {
	start := time.Now()
	err := t.Store.Save(ctx, s, evs)
	end := time.Now()
	t.mu.Lock()
	t.d = append(t.d, end.Sub(start))
	t.ev += len(evs)
	for _, e := range evs {
		if e.Type == engine.EventWorkRequested {
			t.saved[e.DispatchID] = [2]time.Time{start, end}
		}
	}
	t.mu.Unlock()
	return err
}

// phases splits each attempt's dispatch latency in four, reported at p50
// and p99: wait, from ready to the start of the save that records its
// dispatch (the save in progress, the answers taken, the decision); commit,
// that save; launch, from its end to the publish (the attempt goroutine,
// context assembly, encoding); and publish-ms, the transport, as above.
// The sum of the parts' p99s is not the p99 of the whole.
func (t *timedStore) phases(b *testing.B, obs []worker.Observation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait, commit, launch []time.Duration
	for _, o := range obs {
		s, ok := t.saved[o.Task.DispatchID]
		if !ok || o.ReadyAt.IsZero() {
			continue
		}
		wait = append(wait, s[0].Sub(o.ReadyAt))
		commit = append(commit, s[1].Sub(s[0]))
		launch = append(launch, o.DispatchedAt.Sub(s[1]))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, p := range []struct {
		name string
		d    []time.Duration
	}{{"wait", wait}, {"commit", commit}, {"launch", launch}} {
		if len(p.d) == 0 {
			continue
		}
		slices.Sort(p.d)
		b.ReportMetric(ms(p.d[len(p.d)/2]), "p50-"+p.name+"-ms")
		b.ReportMetric(ms(p.d[min(len(p.d)-1, len(p.d)*99/100)]), "p99-"+p.name+"-ms")
	}
}

func (t *timedStore) report(b *testing.B) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.d) == 0 {
		return
	}
	s := slices.Clone(t.d)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(s[len(s)/2]), "p50-save-ms")
	b.ReportMetric(ms(s[min(len(s)-1, len(s)*99/100)]), "p99-save-ms")
	b.ReportMetric(float64(t.ev)/float64(len(t.d)), "events/save")
}

// benchParallel are the attempts in flight of each run: the executor's
// MaxParallel and the worker pool's concurrency, so attempts do not queue
// in the worker.
var benchParallel = []int{12, 64}

func init() {
	if v, err := strconv.Atoi(os.Getenv("BENCH_PARALLEL")); err == nil && v > 0 {
		benchParallel = []int{v}
	}
}

func benchFan(b *testing.B, db *countingDB, n, parallel int) {
	bundle := fanOutFanIn(b, n)
	c := newCluster(b, db)
	c.snapshotEvery = 0 // the store's default
	lat := &latencies{started: map[string]time.Time{}}
	c.worker(router(mock.New(mock.Config{})), []string{"mock"}, func(cfg *worker.Config) {
		cfg.Concurrency = parallel
		cfg.Observe = lat.observe
	})
	o := c.orchestrator()
	saves := &timedStore{Store: o.store, saved: map[string][2]time.Time{}}
	x := o.executor(b, func(cfg *executor.Config) {
		cfg.MaxParallel = parallel
		cfg.Store = saves
		cfg.Dispatcher = timedDispatcher{cfg.Dispatcher, lat}
	})
	ctx := context.Background()
	db.reset()
	for i := 0; b.Loop(); i++ {
		s, err := x.Run(ctx, bundle, executor.RunOptions{RunID: fmt.Sprintf("bench-%d", i)})
		if err != nil || s.Status != engine.RunCompleted {
			b.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	lat.report(b)
	saves.report(b)
	lat.mu.Lock()
	saves.phases(b, lat.obs)
	lat.mu.Unlock()
	tasks := float64(n * b.N)
	b.ReportMetric(float64(db.txs.Load())/tasks, "tx/task")
	b.ReportMetric(float64(db.txBodies.Load()-db.txs.Load())/tasks, "txretry/task")
	// Round trips: begin, each statement, commit; a lock attempt is one
	// statement outside a transaction (and its release another).
	b.ReportMetric(float64(2*db.txBodies.Load()+db.txStmts.Load()+db.stmts.Load()+db.locks.Load())/tasks, "db-rt/task")
	b.ReportMetric(float64(db.locks.Load())/tasks, "lock/task")
	b.ReportMetric(float64(db.lockMisses.Load())/tasks, "lockmiss/task")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRawJetStreamRoundTrip is the transport alone, in the same
// conditions: 1,000 request messages published with acknowledgement (as
// many in flight as the workflow benchmark's operating points), each consumed by a durable
// pull consumer that publishes a reply, consumed by another. No store, no
// CloudEvents, no engine: the ceiling the workflow path is measured
// against.
func BenchmarkRawJetStreamRoundTrip(b *testing.B) {
	for _, parallel := range benchParallel {
		b.Run(fmt.Sprintf("inflight%d", parallel), func(b *testing.B) { benchRaw(b, parallel) })
	}
}

func benchRaw(b *testing.B, parallel int) {
	const n = 1000
	srv := orchtest.StartNATS(b)
	reqJS := orchtest.NewJetStream(b, srv.Conn(b))
	workJS := orchtest.NewJetStream(b, srv.Conn(b))
	ctx := context.Background()
	lat := &latencies{}
	payload := make([]byte, 512)

	work, err := workJS.CreateOrUpdateConsumer(ctx, "PRAETOR_TASKS", jetstream.ConsumerConfig{Durable: "raw-worker",
		FilterSubject: "praetor.task.dispatched.raw.*", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4096})
	if err != nil {
		b.Fatal(err)
	}
	wcc, err := work.Consume(func(m jetstream.Msg) {
		sent, _ := time.Parse(time.RFC3339Nano, m.Headers().Get("sent"))
		lat.observe(worker.Observation{DispatchedAt: sent, StartedAt: time.Now()})
		if _, err := workJS.Publish(ctx, "praetor.task.completed.raw."+m.Headers().Get("run"), m.Data()); err != nil {
			b.Error(err)
		}
		_ = m.Ack()
	}, jetstream.PullMaxMessages(parallel))
	if err != nil {
		b.Fatal(err)
	}
	defer wcc.Stop()

	for i := 0; b.Loop(); i++ {
		run := fmt.Sprintf("r%d", i)
		done := make(chan struct{}, n)
		replies, err := reqJS.CreateOrUpdateConsumer(ctx, "PRAETOR_TASKS", jetstream.ConsumerConfig{Durable: "raw-" + run,
			FilterSubject: "praetor.task.completed.raw." + run, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4096})
		if err != nil {
			b.Fatal(err)
		}
		rcc, err := replies.Consume(func(m jetstream.Msg) { _ = m.Ack(); done <- struct{}{} })
		if err != nil {
			b.Fatal(err)
		}
		slots := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for k := range n {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg := &nats.Msg{Subject: fmt.Sprintf("praetor.task.dispatched.raw.%d", k%8), Header: nats.Header{}, Data: payload}
				msg.Header.Set("sent", time.Now().Format(time.RFC3339Nano))
				msg.Header.Set("run", run)
				if _, err := reqJS.PublishMsg(ctx, msg); err != nil {
					b.Error(err)
				}
			}()
			go func() { <-done; <-slots }()
		}
		wg.Wait()
		for range parallel {
			slots <- struct{}{}
		}
		rcc.Stop()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	lat.report(b)
	b.ReportMetric(0, "ns/op")
}
