package retrieval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/scope"
)

// Status is the state of a retrieval (the seed's state diagram).
type Status string

// Retrieval states.
const (
	InProgress Status = "in_progress"
	Succeeded  Status = "succeeded"
	Empty      Status = "empty"
	TimedOut   Status = "timed_out"
	Failed     Status = "failed"
	Conflicted Status = "conflicted"
)

// Reader is the part of the graph port the engine uses.
type Reader interface {
	Read(ctx context.Context, tenant string, fn func(ctx context.Context, tx graph.ReadTx) error) error
}

// Config configures the retrieval engine.
type Config struct {
	// Store is the graph. Required.
	Store Reader
	// Timeout bounds one attempt. Default 5s.
	Timeout time.Duration
	// Attempts is the number of attempts, the first included. Default 3.
	Attempts int
	// Backoff is the wait before the first retry; it doubles after each.
	// Default 100ms.
	Backoff time.Duration
	// FocusLimit, ProjectLimit and GlobalLimit cap the nodes of each level.
	// Defaults 10, 10 and 5.
	FocusLimit, ProjectLimit, GlobalLimit int
	// HygieneEvery is the age of the last hygiene report past which the
	// bundle says hygiene_due. Default 30 days.
	HygieneEvery time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives retries and failures. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives praetor_memory_retrievals_total{status} and
	// praetor_memory_retrieval_seconds. Nil registers nothing.
	Registerer prometheus.Registerer
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Timeout = cmp.Or(c.Timeout, 5*time.Second)
	c.Attempts = cmp.Or(c.Attempts, 3)
	c.Backoff = cmp.Or(c.Backoff, 100*time.Millisecond)
	c.FocusLimit = cmp.Or(c.FocusLimit, 10)
	c.ProjectLimit = cmp.Or(c.ProjectLimit, 10)
	c.GlobalLimit = cmp.Or(c.GlobalLimit, 5)
	c.HygieneEvery = cmp.Or(c.HygieneEvery, 30*24*time.Hour)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("retrieval: Config.Store is required")
	case c.Timeout < 0 || c.Backoff < 0 || c.HygieneEvery < 0:
		return errors.New("retrieval: Timeout, Backoff and HygieneEvery must not be negative")
	case c.Attempts < 1:
		return fmt.Errorf("retrieval: Attempts is %d; it must be at least 1", c.Attempts)
	case c.FocusLimit < 0 || c.ProjectLimit < 0 || c.GlobalLimit < 0:
		return errors.New("retrieval: limits must not be negative")
	}
	return nil
}

// Engine is the retrieval engine. It keeps no state between calls.
type Engine struct {
	cfg      Config
	total    *prometheus.CounterVec
	duration prometheus.Histogram
}

// New returns a retrieval engine.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg: cfg,
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_memory_retrievals_total",
			Help: "Memory retrievals by final status.",
		}, []string{"status"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "praetor_memory_retrieval_seconds",
			Help:    "Time to build a memory context bundle, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{e.total, e.duration} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("retrieval: register metrics: %w", err)
			}
		}
	}
	return e, nil
}

// Conflict is a CONFLICTS_WITH pair among the returned nodes.
type Conflict struct {
	A, B graph.Node
}

// Bundle is the seed's ContextBundle.
type Bundle struct {
	// Status is succeeded, conflicted, empty or failed.
	Status Status
	// Scope is the resolution the read gate applied.
	Scope scope.Resolution
	// Nodes are the live nodes, focus level first, then project, then
	// global, each level the most recently confirmed first (see
	// graph.ReadTx.Live).
	Nodes []graph.Node
	// Conflicts name the CONFLICTS_WITH pairs among Nodes.
	Conflicts []Conflict
	// HygieneDue is set when the project's last hygiene report is missing or
	// older than Config.HygieneEvery (only for an existing project).
	HygieneDue bool
	// Attempts is the state each attempt ended in, in order: succeeded,
	// empty, timed_out or failed.
	Attempts []Status
	// Detail says why the retrieval failed.
	Detail string
}

// Retrieve builds the context bundle of (projectID, focus) for tenant.
func (e *Engine) Retrieve(ctx context.Context, tenant, projectID, focus string) (Bundle, error) {
	if !graph.ValidToken(tenant) {
		return Bundle{}, fmt.Errorf("%w: tenant id %q must be 1-128 characters of [A-Za-z0-9_-]", graph.ErrInvalid, tenant)
	}
	if err := scope.Validate(projectID, focus); err != nil {
		return Bundle{}, err
	}
	start := time.Now()
	b := e.retrieve(ctx, tenant, projectID, focus)
	e.total.WithLabelValues(string(b.Status)).Inc()
	e.duration.Observe(time.Since(start).Seconds())
	return b, nil
}

func (e *Engine) retrieve(ctx context.Context, tenant, projectID, focus string) Bundle {
	if projectID == "" {
		// Read gate: unresolved reads nothing, without asking the graph.
		return Bundle{Status: Empty, Scope: scope.Resolve("", focus, graph.ScopeInfo{})}
	}
	var attempts []Status
	wait := e.cfg.Backoff
	for i := 0; ; i++ {
		b, st, err := e.attempt(ctx, tenant, projectID, focus)
		attempts = append(attempts, st)
		if err == nil {
			b.Attempts = attempts
			return b
		}
		retryable := st == TimedOut || graph.IsTransient(err)
		last := i+1 >= e.cfg.Attempts || ctx.Err() != nil || !retryable
		e.cfg.Logger.Warn("memory retrieval attempt failed", "tenant", tenant, "project", projectID,
			"attempt", i+1, "state", st, "retry", !last, "err", err)
		if last {
			detail := err.Error()
			if retryable && ctx.Err() == nil {
				detail = fmt.Sprintf("retry exhausted after %d attempts: %v", len(attempts), err)
			}
			return Bundle{Status: Failed, Attempts: attempts, Detail: detail}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Bundle{Status: Failed, Attempts: attempts, Detail: ctx.Err().Error()}
		case <-t.C:
		}
		wait *= 2
	}
}

// attempt runs one read transaction under the attempt timeout. The state it
// returns is the one the attempt ended in.
func (e *Engine) attempt(ctx context.Context, tenant, projectID, focus string) (Bundle, Status, error) {
	actx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	var b Bundle
	err := e.cfg.Store.Read(actx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
		b = Bundle{} // the transaction function may run more than once
		info, err := tx.Scope(ctx, projectID, focus)
		if err != nil {
			return err
		}
		b.Scope = scope.Resolve(projectID, focus, info)
		for _, sc := range b.Scope.ReadScopes() {
			nodes, err := tx.Live(ctx, sc, e.limit(sc.Level))
			if err != nil {
				return err
			}
			b.Nodes = append(b.Nodes, nodes...)
		}
		if len(b.Nodes) < 2 {
			return nil
		}
		ids := make([]string, len(b.Nodes))
		for i, n := range b.Nodes {
			ids[i] = n.ID
		}
		pairs, err := tx.Conflicts(ctx, ids)
		if err != nil {
			return err
		}
		byID := make(map[string]graph.Node, len(b.Nodes))
		for _, n := range b.Nodes {
			byID[n.ID] = n
		}
		for _, p := range pairs {
			b.Conflicts = append(b.Conflicts, Conflict{A: byID[p.A], B: byID[p.B]})
		}
		return nil
	})
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return Bundle{}, TimedOut, fmt.Errorf("timed out after %s: %w", e.cfg.Timeout, err)
		}
		return Bundle{}, Failed, err
	}
	if b.Scope.State == scope.ResolvedProject || b.Scope.State == scope.ResolvedFocus {
		last := b.Scope.LastHygieneAt
		b.HygieneDue = last.IsZero() || e.cfg.Now().Sub(last) > e.cfg.HygieneEvery
	}
	switch {
	case len(b.Conflicts) > 0:
		b.Status = Conflicted
	case len(b.Nodes) == 0:
		b.Status = Empty
	default:
		b.Status = Succeeded
	}
	st := Succeeded
	if b.Status == Empty {
		st = Empty
	}
	return b, st, nil
}

func (e *Engine) limit(l graph.Level) int {
	switch l {
	case graph.LevelFocus:
		return e.cfg.FocusLimit
	case graph.LevelProject:
		return e.cfg.ProjectLimit
	default:
		return e.cfg.GlobalLimit
	}
}
