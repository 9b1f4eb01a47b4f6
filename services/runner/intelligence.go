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
// lines change rarely. Cached lines only ever confirm that nothing changed:
// lines that differ from a session's are read afresh (Fresh) before they are
// recorded, so a replica whose cache is older than a session never sets it
// back. New lines reach a session at most the TTL late; where they do is
// recorded (task.returned), so a replay sees them where the live run did.
// Errors are not remembered.
type cachedIntelligence struct {
	src Intelligence
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[[2]string]cachedLines
}

type cachedLines struct {
	lines []string
	read  time.Time // when the read that gave them began
	until time.Time
}

func newCachedIntelligence(src Intelligence, ttl time.Duration) *cachedIntelligence {
	return &cachedIntelligence{src: src, ttl: ttl, now: time.Now, m: map[[2]string]cachedLines{}}
}

// Background implements Intelligence. The lines it returns are shared:
// callers must not change them.
func (c *cachedIntelligence) Background(ctx context.Context, tenantID, projectID string) ([]string, error) {
	lines, _, err := c.lines(ctx, tenantID, projectID)
	return lines, err
}

// lines is Background that also says whether the lines were remembered
// rather than read now.
func (c *cachedIntelligence) lines(ctx context.Context, tenantID, projectID string) (lines []string, remembered bool, err error) {
	c.mu.Lock()
	e, ok := c.m[[2]string{tenantID, projectID}]
	c.mu.Unlock()
	if ok && c.now().Before(e.until) {
		return e.lines, true, nil
	}
	lines, err = c.Fresh(ctx, tenantID, projectID)
	return lines, false, err
}

// Fresh reads the project's lines from the source and remembers them,
// unless a read that began later has already given newer ones, which it
// returns instead.
func (c *cachedIntelligence) Fresh(ctx context.Context, tenantID, projectID string) ([]string, error) {
	key := [2]string{tenantID, projectID}
	start := c.now()
	lines, err := c.src.Background(ctx, tenantID, projectID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && e.read.After(start) {
		return e.lines, nil
	}
	if len(c.m) >= maxCachedProjects {
		clear(c.m)
	}
	c.m[key] = cachedLines{lines: lines, read: start, until: start.Add(c.ttl)}
	return lines, nil
}
