package dispatch_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/command"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

// outcomes reads the answers of a dispatch on the stream.
func (c *cluster) outcomes(bus *events.Bus, dispatchID string) []taskmsg.Outcome {
	c.t.Helper()
	var out []taskmsg.Outcome
	err := bus.Replay(orchtest.Ctx(c.t), events.ReplayConfig{Stream: contracts.StreamTasks,
		Subjects: []string{contracts.TaskCompletedSpec.FilterSubject(), contracts.TaskFailedSpec.FilterSubject()}},
		func(r events.Record) error {
			if o, err := taskmsg.DecodeOutcome(r.Event); err == nil && o.DispatchID == dispatchID {
				out = append(out, o)
			}
			return nil
		})
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// A worker does not start an attempt that reaches it after its deadline —
// the orchestrator stopped waiting for it — and answers it as timed out;
// an attempt it starts is stopped at its deadline when that comes before
// the task's timeout.
func TestWorkerKeepsToTheDispatchDeadline(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		var mu sync.Mutex
		deadlines := map[string]time.Time{}
		m := mock.New(mock.Config{Func: func(ctx context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
			d, _ := ctx.Deadline()
			mu.Lock()
			deadlines[task.DispatchID] = d
			mu.Unlock()
			return answer(task), nil
		}})
		c.worker(router(m), []string{"mock"}, nil)
		bus := c.nats.Bus(t)
		publish := func(task agent.Task, deadline time.Time) {
			t.Helper()
			ev, err := taskmsg.Dispatched(tenant, task, agent.Context{Definition: "id: " + task.TaskID + "\n"}, time.Now(), deadline, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := bus.Publish(orchtest.Ctx(t), ev); err != nil {
				t.Fatal(err)
			}
		}
		late := agent.Task{RunID: "run-d", TaskID: "a", DispatchID: "run-d/a/1", Attempt: 1, Agent: "mock", Kind: agent.KindWork,
			Outputs: []string{"a.md"}, Timeout: time.Hour}
		publish(late, time.Now().Add(-time.Second))
		soon := late
		soon.TaskID, soon.DispatchID = "b", "run-d/b/1"
		soonDeadline := time.Now().Add(time.Minute).Truncate(time.Millisecond)
		publish(soon, soonDeadline)

		eventually(t, "both answers", func() bool {
			c.drained()
			return c.answers(bus, late.DispatchID) == 1 && c.answers(bus, soon.DispatchID) == 1
		})
		if n := len(m.CallsFor("a")); n != 0 {
			t.Errorf("the attempt past its deadline ran %d times, want never", n)
		}
		if o := c.outcomes(bus, late.DispatchID)[0]; o.OK || o.Class != taskmsg.ClassTimeout || !errors.Is(o.Err(), context.DeadlineExceeded) {
			t.Errorf("its answer = %+v, want a timeout", o)
		}
		if o := c.outcomes(bus, soon.DispatchID)[0]; !o.OK {
			t.Errorf("the attempt within its deadline: %+v", o)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := deadlines[soon.DispatchID]; !got.Equal(soonDeadline) {
			t.Errorf("the attempt ran until %v, want the dispatch's deadline %v (its timeout is an hour)", got, soonDeadline)
		}
	})
}

// An attempt that waited in a backlog until the orchestrator gave up on it
// and dispatched a retry is not run beside the retry: the task runs once.
func TestBackloggedAttemptDoesNotRunBesideItsRetry(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		c := newCluster(t, db)
		o := c.orchestrator()
		b := orchtest.Bundle(t, `name: backlog
agents: agents.yaml
defaults:
  retries: 3
  timeout: 3s
  retry_backoff: 10ms
tasks:
  - id: a
    agent: mock
    outputs: [a.md]
`, registry, nil)
		done := make(chan struct{})
		var s engine.State
		var runErr error
		go func() {
			defer close(done)
			s, runErr = o.executor(t, nil).Run(orchtest.Ctx(t), b, executor.RunOptions{RunID: "run-backlog"})
		}()
		// No worker yet: the first attempt waits until the orchestrator
		// gives up on it and dispatches the second.
		eventually(t, "a second attempt", func() bool {
			st, err := o.store.Load(context.Background(), "run-backlog")
			return err == nil && st.Tasks["a"].Iterations >= 2
		})
		m := mock.New(mock.Config{})
		c.worker(router(m), []string{"mock"}, nil)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("the run did not finish")
		}
		if runErr != nil || s.Status != engine.RunCompleted {
			t.Fatalf("run: %v %s %s", runErr, s.Status, s.Error)
		}
		calls := m.CallsFor("a")
		if len(calls) != 1 {
			ids := make([]string, len(calls))
			for i, call := range calls {
				ids[i] = call.Task.DispatchID
			}
			t.Fatalf("the agent ran a %d times (%v), want once: an attempt the orchestrator gave up on ran beside its retry", len(calls), ids)
		}
		// The worker answers the first attempt beside the retry: that answer
		// may reach the stream after the retry's has ended the run.
		var first []taskmsg.Outcome
		eventually(t, "the first attempt's answer", func() bool {
			c.drained()
			first = c.outcomes(o.bus, "run-backlog/a/1")
			return len(first) > 0
		})
		if len(first) != 1 || first[0].Class != taskmsg.ClassTimeout {
			t.Errorf("the first attempt's answers = %+v, want one timeout", first)
		}
	})
}

// A durable attempt whose worker died leaves its command running; when the
// attempt reaches another worker only after its deadline, that worker stops
// the command instead of leaving it to run beside the retry.
func TestExpiredAttemptStopsWhatItLeftRunning(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	dir := t.TempDir()
	rt, err := command.New(command.Config{Path: "/bin/true", AttemptsDir: dir, KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	task := agent.Task{RunID: "run-o", TaskID: "a", DispatchID: "run-o/a/1", Attempt: 1, Agent: "mock", Kind: agent.KindWork,
		Outputs: []string{"a.md"}, Timeout: time.Hour}
	// What the dead worker left: the attempt's supervisor, in a process
	// group of its own, and the pid file that names it.
	left := exec.Command("/bin/sh", "-c", "sleep 60")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = left.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-left.Process.Pid, syscall.SIGKILL) })
	base := command.AttemptDir(dir, task.DispatchID)
	orchtest.Write(t, base, "context.md", "context")
	orchtest.Write(t, base, "pid", strconv.Itoa(left.Process.Pid)+"\n")
	if err := os.MkdirAll(filepath.Join(base, "work"), 0o700); err != nil {
		t.Fatal(err)
	}

	c.worker(router(rt), []string{"mock"}, nil)
	bus := c.nats.Bus(t)
	ev, err := taskmsg.Dispatched(tenant, task, agent.Context{Definition: "id: a\n"}, time.Now(), time.Now().Add(-time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(orchtest.Ctx(t), ev); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the timed-out answer", func() bool { c.drained(); return c.answers(bus, task.DispatchID) == 1 })
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the command the dead worker left is still running")
	}
}
