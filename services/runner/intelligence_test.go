package runner

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// A project's lines are read once per TTL, whatever the number of turns
// asking; errors are not remembered; each project has its own.
func TestIntelligenceCache(t *testing.T) {
	src := &intelligence{lines: []string{"Decision: use PostgreSQL"}}
	c := newCachedIntelligence(src, 2*time.Second)
	now := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	ask := func() []string {
		t.Helper()
		lines, err := c.Background(context.Background(), runnertest.Tenant, "proj")
		if err != nil {
			t.Fatal(err)
		}
		return lines
	}
	asked := func() int {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.asked
	}
	for range 3 {
		if got := ask(); !slices.Equal(got, src.lines) {
			t.Fatalf("lines = %v", got)
		}
	}
	if n := asked(); n != 1 {
		t.Fatalf("memory asked %d times within the TTL, want 1", n)
	}
	src.mu.Lock()
	src.lines = []string{"Decision: use MySQL"}
	src.mu.Unlock()
	now = now.Add(2 * time.Second)
	if got := ask(); !slices.Equal(got, []string{"Decision: use MySQL"}) || asked() != 2 {
		t.Fatalf("after the TTL: lines %v, asked %d times", got, asked())
	}
	if _, err := c.Background(context.Background(), runnertest.Tenant, "other"); err == nil {
		t.Fatal("another project was served this project's lines")
	}
	src.mu.Lock()
	src.err = errors.New("memory down")
	src.mu.Unlock()
	now = now.Add(3 * time.Second)
	for range 2 {
		if _, err := c.Background(context.Background(), runnertest.Tenant, "proj"); err == nil {
			t.Fatal("an error was hidden by the cache")
		}
	}
	if n := asked(); n != 5 {
		t.Errorf("memory asked %d times, want 5 (errors are not remembered)", n)
	}
}
