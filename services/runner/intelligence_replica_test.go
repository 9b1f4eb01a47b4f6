package runner

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// gatedIntelligence answers with the lines it holds when asked; the first
// call waits for gate after reading them, as a slow read of the memory
// service that started before a write.
type gatedIntelligence struct {
	mu      sync.Mutex
	lines   []string
	calls   int
	started chan struct{}
	gate    chan struct{}
}

func (g *gatedIntelligence) Background(context.Context, string, string) ([]string, error) {
	g.mu.Lock()
	g.calls++
	first, lines := g.calls == 1, slices.Clone(g.lines)
	g.mu.Unlock()
	if first {
		close(g.started)
		<-g.gate
	}
	return lines, nil
}

// Two turns of the project miss the cache together: the first read began
// before the memory service learned v2 and ends after the second read
// returned v2. The cache must not then serve v1 again: a session that merged
// v2 would be sent back to v1 (a task.returned with the older lines).
func TestIntelligenceCacheKeepsTheNewerLines(t *testing.T) {
	v1, v2 := []string{"Decision: use MySQL"}, []string{"Decision: use PostgreSQL"}
	src := &gatedIntelligence{lines: v1, started: make(chan struct{}), gate: make(chan struct{})}
	c := newCachedIntelligence(src, time.Hour)
	ctx := context.Background()

	slow := make(chan []string, 1)
	go func() {
		lines, _ := c.Background(ctx, runnertest.Tenant, "proj")
		slow <- lines
	}()
	<-src.started
	src.mu.Lock()
	src.lines = v2
	src.mu.Unlock()
	if got, _ := c.Background(ctx, runnertest.Tenant, "proj"); !slices.Equal(got, v2) {
		t.Fatalf("second read = %v, want %v", got, v2)
	}
	close(src.gate)
	<-slow
	if got, _ := c.Background(ctx, runnertest.Tenant, "proj"); !slices.Equal(got, v2) {
		t.Errorf("after serving %v the cache serves %v (the slower, older read overwrote it)", v2, got)
	}
}

// Each replica has its own cache. Replica A read v2 fresh and merged it into
// session s1; replica B, whose cache still holds v1 from a turn of another
// session of the project, answers s1's next turn: it must not record a
// task.returned that sets s1 back to v1.
func TestIntelligenceNeverSetsASessionBack(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	v1, v2 := []string{"Decision: use MySQL"}, []string{"Decision: use PostgreSQL"}
	src := &intelligence{lines: v1}
	// A TTL of an hour: the test does not depend on how fast it runs.
	replicaB, _ := newService(t, rig, fixed("What else?"), func(c *Config) { c.Intelligence, c.IntelligenceTTL = src, time.Hour })
	ctx := context.Background()
	at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)

	other := conversation.Session{ID: "s0", TenantID: runnertest.Tenant, ProjectID: "proj"}
	if evs := replicaB.intelligence(ctx, other, nil, "s0-turn-1", at); len(evs) != 1 {
		t.Fatalf("replica B's first read gave %d events, want 1", len(evs))
	}
	src.mu.Lock()
	src.lines = v2 // the memory service learns a decision; replica A merges it into s1
	src.mu.Unlock()

	s1 := conversation.Session{ID: "s1", TenantID: runnertest.Tenant, ProjectID: "proj"}
	evs := replicaB.intelligence(ctx, s1, v2, "s1-turn-2", at)
	for _, ev := range evs {
		tr, err := contracts.DecodeAs[contracts.TaskReturned](ev)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		_ = json.Unmarshal(tr.Output, &lines)
		t.Errorf("replica B records a task.returned setting s1's intelligence from %v back to %v", v2, lines)
	}
}
