package dispatch_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
)

// lockedBuffer is a log sink the dispatcher's goroutines write to while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An attempt of an agent no worker pool serves (no consumer of the task
// stream takes its subject) is warned of once per agent, naming the agent
// and how to serve it, rather than left to wait silently for its timeout.
func TestDispatchWarnsOfAnAgentNoPoolServes(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	c.worker(router(mock.New(mock.Config{})), []string{"mock"}, nil)
	var logs lockedBuffer
	o := c.orchestratorWith(func(cfg *dispatch.Config) {
		cfg.UnservedAfter = 50 * time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	for i, id := range []string{"ghost-1", "ghost-2"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := o.disp.Tenant(tenant).Dispatch(ctx, agent.Task{RunID: "r", TaskID: "t" + id, DispatchID: "r/" + id + "/1", Attempt: 1,
			Agent: "ghost", Kind: "work"}, agent.Context{})
		cancel()
		if err == nil {
			t.Fatalf("dispatch %d of the unserved agent: answered", i)
		}
		if i == 0 {
			eventually(t, "the warning", func() bool { return strings.Contains(logs.String(), "no worker pool serves this agent") })
		}
	}
	if _, err := o.disp.Tenant(tenant).Dispatch(context.Background(), agent.Task{RunID: "r", TaskID: "served", DispatchID: "r/served/1",
		Attempt: 1, Agent: "mock", Kind: "work"}, agent.Context{}); err != nil {
		t.Fatalf("dispatch of the served agent: %v", err)
	}
	out := logs.String()
	if n := strings.Count(out, "no worker pool serves this agent"); n != 1 {
		t.Fatalf("%d warnings, want 1 for the agent:\n%s", n, out)
	}
	for _, want := range []string{"agent=ghost", "--services agent-worker", "PRAETOR_WORKFLOW_AGENTS", "PRAETOR_WORKFLOW_REGISTRY"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning lacks %q:\n%s", want, out)
		}
	}
}

// countingStreams counts the listings of the task stream's consumers, and
// holds each until hold closes or its context ends.
type countingStreams struct {
	js       jetstream.JetStream
	hold     chan struct{} // nil: no hold
	entered  chan struct{} // closed at the first listing
	once     sync.Once
	calls    atomic.Int64
	inflight atomic.Int64
}

func newCountingStreams(js jetstream.JetStream, hold bool) *countingStreams {
	s := &countingStreams{js: js, entered: make(chan struct{})}
	if hold {
		s.hold = make(chan struct{})
	}
	return s
}

func (s *countingStreams) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s.calls.Add(1)
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.once.Do(func() { close(s.entered) })
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.js.Stream(ctx, name)
}

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Many attempts of a served agent that run past UnservedAfter list the
// task stream's consumers once per UnservedAfter between them, not once
// each.
func TestLongAttemptsOfAnAgentLookOncePerInterval(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	c.worker(router(mock.New(mock.Config{Default: mock.Outcome{Delay: time.Hour}})), []string{"mock"}, nil)
	const interval = 20 * time.Millisecond
	var streams *countingStreams
	now := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	o := c.orchestratorWith(func(cfg *dispatch.Config) {
		streams = newCountingStreams(cfg.Bus.(interface{ JetStream() jetstream.JetStream }).JetStream(), false)
		cfg.Streams, cfg.UnservedAfter, cfg.Now = streams, interval, now.Now
	})
	attempts := func(round int) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 50*interval)
				defer cancel()
				id := fmt.Sprintf("r/t%d-%d/1", round, i)
				if _, err := o.disp.Tenant(tenant).Dispatch(ctx, agent.Task{RunID: "r", TaskID: id, DispatchID: id, Attempt: 1,
					Agent: "mock", Kind: "work"}, agent.Context{}); err == nil {
					t.Errorf("attempt %s of an agent that holds it an hour: answered", id)
				}
			})
		}
		wg.Wait()
	}
	attempts(0)
	now.add(interval)
	attempts(1)
	if err := o.disp.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := streams.calls.Load(); got != 2 {
		t.Fatalf("%d listings of the consumers for 8 attempts over two intervals, want 2", got)
	}
}

// The look for a worker pool runs beside the attempt: an answer that comes
// while the consumers are listed is returned at once, and Stop ends the
// listing still running.
func TestAnswerDoesNotWaitForTheLook(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testdb.SQLite(t))
	var streams *countingStreams
	o := c.orchestratorWith(func(cfg *dispatch.Config) {
		streams = newCountingStreams(cfg.Bus.(interface{ JetStream() jetstream.JetStream }).JetStream(), true)
		cfg.Streams, cfg.UnservedAfter = streams, 10*time.Millisecond
	})
	// The worker answers once the listing has begun.
	c.worker(router(mock.New(mock.Config{Func: func(ctx context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
		select {
		case <-streams.entered:
			return answer(task), nil
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
	}})), []string{"mock"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := o.disp.Tenant(tenant).Dispatch(ctx, agent.Task{RunID: "r", TaskID: "a", DispatchID: "r/a/1", Attempt: 1,
		Agent: "mock", Kind: "work"}, agent.Context{}); err != nil {
		t.Fatal(err)
	}
	if n := streams.inflight.Load(); n != 1 {
		t.Fatalf("%d listings running when the answer was returned, want the held one: the answer waited for it", n)
	}
	if err := o.disp.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := streams.inflight.Load(); n != 0 {
		t.Fatalf("%d listings running after Stop, want none", n)
	}
}
