package dispatch_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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
