package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

// failingPublish is a worker's bus (and its relay's publisher) on which the
// first publish of each message fails: the worker's own, straight after
// its commit.
type failingPublish struct {
	worker.Bus
	mu    sync.Mutex
	seen  map[string]bool
	tries atomic.Int64
}

func (f *failingPublish) PublishMsgs(ctx context.Context, msgs []*nats.Msg) error {
	f.mu.Lock()
	again := true
	for _, m := range msgs {
		id := m.Header.Get(nats.MsgIdHdr)
		again = again && f.seen[id]
		f.seen[id] = true
	}
	f.mu.Unlock()
	if !again {
		f.tries.Add(1)
		return errors.New("nats: connection closed")
	}
	return f.Bus.PublishMsgs(ctx, msgs)
}

// A worker publishes its answers itself once they commit; when that fails,
// the outbox still has them and the relay, kicked, delivers them: the run
// completes, each task run once, each answer on the stream once. Both ways
// of publishing are covered: through the worker's relay, and by the worker
// alone when it has none (some relay's pass then delivers them).
func TestAnswersReachTheOrchestratorWhenTheDirectPublishFails(t *testing.T) {
	t.Parallel()
	for _, withRelay := range []bool{true, false} {
		t.Run(fmt.Sprintf("relay=%v", withRelay), func(t *testing.T) {
			t.Parallel()
			answersReachTheOrchestrator(t, withRelay)
		})
	}
}

func answersReachTheOrchestrator(t *testing.T, withRelay bool) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		m := mock.New(mock.Config{})
		var bus *failingPublish
		w := c.worker(router(m), []string{"mock"}, func(cfg *worker.Config) {
			bus = &failingPublish{Bus: cfg.Bus, seen: map[string]bool{}}
			cfg.Bus = bus
			cfg.Relay = nil
			if withRelay {
				cfg.Relay = startRelay(t, c.db, bus)
			}
		})
		o := c.orchestrator()
		b := orchtest.Bundle(t, diamond, registry, nil)
		s, err := o.executor(t, nil).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-relayed"})
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
		if got := strings.Join(m.TaskIDs(), ","); len(m.TaskIDs()) != 4 {
			t.Fatalf("agent calls %s, want each of the 4 tasks once", got)
		}
		if bus.tries.Load() == 0 {
			t.Fatal("the worker never tried to publish its answers itself")
		}
		for _, id := range []string{"a", "b", "c", "d"} {
			if n := c.answers(w.bus, s.Tasks[id].DispatchID); n != 1 {
				t.Fatalf("task %s has %d answers on the stream, want 1", id, n)
			}
		}
	})
}

// An answer the worker published itself goes out again with the relay's
// pass over the outbox, under the same Nats-Msg-Id: the stream keeps one.
func TestAnswerPublishedTwiceIsStoredOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		w := c.worker(router(mock.New(mock.Config{})), []string{"mock"}, nil)
		o := c.orchestrator()
		s, err := o.executor(t, nil).Run(orchtest.Ctx(t), orchtest.Bundle(t, diamond, registry, nil), executor.RunOptions{RunID: "run-twice"})
		if err != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
		}
		c.drained() // the relay has published (again) every answer
		for _, id := range []string{"a", "b", "c", "d"} {
			if n := c.answers(w.bus, s.Tasks[id].DispatchID); n != 1 {
				t.Fatalf("task %s has %d answers on the stream, want 1", id, n)
			}
		}
	})
}
