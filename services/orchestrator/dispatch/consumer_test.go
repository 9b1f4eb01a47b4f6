package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

// Two orchestrators with stores of their own on one NATS — praetor dev's
// and a praetor workflow run's — each on a consumer of its own: the run
// completes, and the other orchestrator, which received every answer too,
// records them without a failure (nothing dead-lettered), though it knows
// no run of theirs.
func TestOrchestratorsOfTwoStoresEachOnItsConsumer(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	dev := (&cluster{t: t, nats: c.nats, db: testdb.SQLite(t), snapshotEvery: 8}).orchestrator()
	c.worker(router(mock.New(mock.Config{})), []string{"mock"}, nil)
	cli := c.orchestratorWith(func(cfg *dispatch.Config) {
		cfg.Consumer, cfg.DeliverNew = "workflow-cli-test", true
	})
	b := orchtest.Bundle(t, diamond, registry, nil)
	s, err := cli.executor(t, nil).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-cli"})
	if err != nil || s.Status != engine.RunCompleted {
		t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		dispatchID := s.Tasks[id].DispatchID
		eventually(t, "the other orchestrator to record the answer of "+id, func() bool {
			_, err := dev.results.Load(context.Background(), tenant, dispatchID)
			return err == nil
		})
	}
	if _, err := dev.store.Load(orchtest.Ctx(t), "run-cli"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the other orchestrator's store has the run: %v", err)
	}
	if n := deadLetters(t, c); n != 0 {
		t.Fatalf("%d answers dead-lettered, want none", n)
	}
}

func deadLetters(t *testing.T, c *cluster) int {
	t.Helper()
	n := 0
	err := c.nats.Bus(t).Replay(orchtest.Ctx(t), events.ReplayConfig{Stream: events.DeadLetterStream}, func(events.Record) error {
		n++
		return nil
	})
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	return n
}

// An attempt whose answer never comes ends at its timeout, its error naming
// the task, its dispatch and what it waited on.
func TestUnansweredAttemptSaysWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	o := c.orchestratorWith(func(cfg *dispatch.Config) { cfg.Consumer = "workflow-cli-lonely" })
	wf := "name: lonely\nagents: agents.yaml\ntasks:\n  - id: a\n    agent: mock\n    timeout: 1s\n    retries: 0\n    outputs: [a.md]\n"
	b := orchtest.Bundle(t, wf, registry, nil)
	s, err := o.executor(t, nil).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-lonely"})
	if err != nil || s.Status != engine.RunFailed {
		t.Fatalf("run: %v %s %s", err, s.Status, s.Error)
	}
	te := s.Tasks["a"].Error
	if te == nil || te.Kind != engine.ErrorTimeout {
		t.Fatalf("task a error = %+v, want a timeout", te)
	}
	for _, want := range []string{"attempt timed out after 1s", "task a (agent mock, dispatch " + s.Tasks["a"].DispatchID + ")",
		"no task.completed or task.failed answer came on PRAETOR_TASKS (consumer workflow-cli-lonely)", "context deadline exceeded"} {
		if !strings.Contains(te.Message, want) {
			t.Errorf("task a error %q lacks %q", te.Message, want)
		}
	}
}

// A consumer created with DeliverNew takes the answers published after it,
// not those the stream held before.
func TestDeliverNewSkipsEarlierAnswers(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	pub := c.nats.Bus(t)
	publish := func(dispatchID string) {
		t.Helper()
		task := agent.Task{RunID: "run-new", TaskID: "a", DispatchID: dispatchID, Attempt: 1, Agent: "mock"}
		// A workflow dispatch id: run/task/attempt.
		ev, err := taskmsg.Completed(tenant, taskmsg.DispatchEventID(tenant, dispatchID), task, agent.Result{}, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Publish(orchtest.Ctx(t), ev); err != nil {
			t.Fatal(err)
		}
	}
	publish("run-new/before/1")
	o := c.orchestratorWith(func(cfg *dispatch.Config) {
		cfg.Consumer, cfg.DeliverNew, cfg.Concurrency = "workflow-cli-new", true, 1
	})
	publish("run-new/after/1")
	eventually(t, "the answer published after the start to be recorded", func() bool {
		_, err := o.results.Load(context.Background(), tenant, "run-new/after/1")
		return err == nil
	})
	// One at a time, in stream order: the earlier answer, were it
	// delivered, would be recorded by now.
	if _, err := o.results.Load(orchtest.Ctx(t), tenant, "run-new/before/1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the answer published before the consumer was recorded: %v", err)
	}
}
