package dispatch_test

import (
	"context"
	"fmt"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
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

// latencies collects dispatch latencies (task.dispatched published to a
// worker starting the attempt).
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) observe(o worker.Observation) {
	l.mu.Lock()
	l.d = append(l.d, o.StartedAt.Sub(o.DispatchedAt))
	l.mu.Unlock()
}

func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkFanOutFanInJetStream runs a 1,000-task fan-out/fan-in DAG with
// the mock agent through the JetStream dispatcher and an agent-worker pool,
// with the run's state in each store adapter: every attempt is a
// task.dispatched event, a worker's inbox/outbox transaction, a
// task.completed event recorded by the orchestrator, and two state changes
// published as workflow.* events through the outbox.
//
//	go test -run '^$' -bench FanOutFanInJetStream -benchtime 5x ./services/orchestrator/dispatch/
//
// It reports tasks/s and the dispatch latency (publish of task.dispatched to
// the worker starting the attempt) at p50 and p99.
func BenchmarkFanOutFanInJetStream(b *testing.B) {
	const n = 1000
	for _, a := range testdb.Adapters() {
		b.Run(a.Name, func(b *testing.B) {
			db := a.Open(b)
			benchFan(b, db, n)
		})
	}
}

// benchParallel is the attempts in flight: the executor's MaxParallel and
// the worker pool's concurrency, so attempts do not queue in the worker and
// the dispatch latency is the transport's.
var benchParallel = 64

func init() {
	if v, err := strconv.Atoi(os.Getenv("BENCH_PARALLEL")); err == nil && v > 0 {
		benchParallel = v
	}
}

func benchFan(b *testing.B, db store.DB, n int) {
	bundle := fanOutFanIn(b, n)
	c := newCluster(b, db)
	c.snapshotEvery = 0 // the store's default
	lat := &latencies{}
	c.worker(router(mock.New(mock.Config{})), []string{"mock"}, func(cfg *worker.Config) {
		cfg.Concurrency = benchParallel
		cfg.Observe = lat.observe
	})
	o := c.orchestrator()
	x := o.executor(b, func(cfg *executor.Config) { cfg.MaxParallel = benchParallel })
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s, err := x.Run(ctx, bundle, executor.RunOptions{RunID: fmt.Sprintf("bench-%d", i)})
		if err != nil || s.Status != engine.RunCompleted {
			b.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(float64(lat.quantile(0.50).Microseconds())/1000, "p50-dispatch-ms")
	b.ReportMetric(float64(lat.quantile(0.99).Microseconds())/1000, "p99-dispatch-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRawJetStreamRoundTrip is the transport alone, in the same
// conditions: 1,000 request messages published with acknowledgement (as
// many in flight as the workflow benchmark), each consumed by a durable
// pull consumer that publishes a reply, consumed by another. No store, no
// CloudEvents, no engine: the ceiling the workflow path is measured
// against.
func BenchmarkRawJetStreamRoundTrip(b *testing.B) {
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
	}, jetstream.PullMaxMessages(benchParallel))
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
		slots := make(chan struct{}, benchParallel)
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
		for range benchParallel {
			slots <- struct{}{}
		}
		rcc.Stop()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(float64(lat.quantile(0.50).Microseconds())/1000, "p50-dispatch-ms")
	b.ReportMetric(float64(lat.quantile(0.99).Microseconds())/1000, "p99-dispatch-ms")
	b.ReportMetric(0, "ns/op")
}
