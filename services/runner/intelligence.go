package runner

import (
	"context"
	"sync"
	"time"
)

// DefaultIntelligenceTTL is how long the lines read for a project serve
// later turns of its sessions, unless Config.IntelligenceTTL says otherwise.
const DefaultIntelligenceTTL = 2 * time.Second

// maxCachedProjects bounds the projects whose lines are remembered; past
// it the cache starts afresh.
const maxCachedProjects = 4096

// cachedIntelligence remembers each project's lines of background
// intelligence for a while: every turn asks for them, and reading a
// project's memory costs more than the rest of the turn's reads, while its
// lines change rarely. Lines that change reach the session a little later,
// at most the TTL; where they do is recorded (task.returned), so a replay
// still sees them where the live run did. Errors are not remembered.
type cachedIntelligence struct {
	src Intelligence
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[[2]string]cachedLines
}

type cachedLines struct {
	lines []string
	until time.Time
}

func newCachedIntelligence(src Intelligence, ttl time.Duration) *cachedIntelligence {
	return &cachedIntelligence{src: src, ttl: ttl, now: time.Now, m: map[[2]string]cachedLines{}}
}

// Background implements Intelligence. The lines it returns are shared:
// callers must not change them.
func (c *cachedIntelligence) Background(ctx context.Context, tenantID, projectID string) ([]string, error) {
	key := [2]string{tenantID, projectID}
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.lines, nil
	}
	lines, err := c.src.Background(ctx, tenantID, projectID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedProjects {
		clear(c.m)
	}
	c.m[key] = cachedLines{lines: lines, until: now.Add(c.ttl)}
	c.mu.Unlock()
	return lines, nil
}
