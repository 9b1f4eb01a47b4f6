// Package executor runs workflow runs: it drives the pure engine (decide,
// apply, finalize) and does the I/O around it — dispatching attempts to
// agents, storing outputs, persisting every state change, calling hooks.
//
// One coordinator goroutine per run owns the state; attempts run in their
// own goroutines, at most MaxParallel at a time, and report back on a
// channel. Every change is persisted through the StateStore before anything
// depends on it: in particular an attempt is recorded as RUNNING, with its
// dispatch id, before it is dispatched, so a restarted orchestrator
// re-dispatches it under the same id (a worker that deduplicates by id runs
// it once) rather than starting a new attempt. A Save that fails is
// critical: the run stops at once and Run returns the error.
//
// The answers that arrive together are applied together, and saved in one
// change with the dispatches they make ready (or with the run's end): one
// Save, one transaction, between an answer and the next attempt, and the
// engine's task map copied once per change rather than once per transition
// (engine.Change). On-failure and on-loop-exit hooks need the end of their
// task durable first, so a batch with such hooks to run is saved before
// them, on its own.
//
// The three ports are small consumer-side interfaces: Dispatcher (in process
// an agent.Router; across NATS a JetStream task.dispatched publisher that
// waits for task.completed), StateStore (filestore for CLI mode; PostgreSQL
// in production) and ArtifactStore (where outputs live).
package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
)

// Dispatcher runs one attempt of a task on its agent and returns the result.
// It must honour ctx (the attempt's deadline, the run stopping).
type Dispatcher interface {
	Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error)
}

// StateStore persists runs.
type StateStore interface {
	// Save persists s, the state after events (the events of this change, in
	// order; possibly none). It returns only once both are durable.
	Save(ctx context.Context, s engine.State, events []engine.Event) error
	// Load returns a run's last saved state; an error wrapping
	// store.ErrNotFound when there is none.
	Load(ctx context.Context, runID string) (engine.State, error)
}

// ArtifactStore keeps task outputs.
type ArtifactStore interface {
	// Put stores one output and returns its reference.
	Put(ctx context.Context, runID, taskID, name string, content []byte) (engine.OutputRef, error)
	// Get returns an output's content, checked against its hash.
	Get(ctx context.Context, ref engine.OutputRef) ([]byte, error)
}

// Errors.
var (
	// ErrPersist is wrapped by the error of a run stopped because its state
	// could not be saved.
	ErrPersist = errors.New("executor: state could not be saved; the run is stopped")
	// ErrRunFinished is returned by Resume for a COMPLETED or FAILED run.
	ErrRunFinished = errors.New("executor: run already finished")
	// ErrRunNotFound is returned by Resume for a run the store does not have.
	ErrRunNotFound = errors.New("executor: no such run")
	// ErrRunExists is returned by Run for a run id already in the store.
	ErrRunExists = errors.New("executor: run already exists")
	// ErrPlanChanged is returned by Resume when the workflow's tasks differ
	// from the ones the run started with.
	ErrPlanChanged = errors.New("executor: the workflow changed since the run started")
	// ErrInterrupted is wrapped with the context's error when Run or Resume
	// stops because its context ended; the run stays RUNNING, to resume.
	ErrInterrupted = errors.New("executor: run interrupted")
)

// Config configures an Executor.
type Config struct {
	// Dispatcher runs attempts. Required.
	Dispatcher Dispatcher
	// Store persists states and events. Required.
	Store StateStore
	// Artifacts keeps outputs. Required.
	Artifacts ArtifactStore
	// Hooks are called at the hook points; nil calls none.
	Hooks *hooks.Registry
	// Clock is the time source of the transitions. Default time.Now.
	Clock func() time.Time
	// MaxParallel bounds the attempts in flight per run. Default 4.
	MaxParallel int
	// MaxOutputBytes bounds each output and input file. Default
	// agent.DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// PersistTimeout bounds one Save, which runs even while the run's
	// context is ending (a stop must still record what finished). Default 30s.
	PersistTimeout time.Duration
	// AbandonGrace is how long after an attempt's deadline the executor
	// waits for a Dispatcher that ignores its context before failing the
	// attempt anyway. Default 5s.
	AbandonGrace time.Duration
	// Observe, when set, is called after each change is saved, from the
	// run's coordinator goroutine (live progress in the CLI). It must not
	// block for long.
	Observe func(s engine.State, events []engine.Event)
	// Logger receives the run's log. Default: discard.
	Logger *slog.Logger
	// Registerer receives the metrics. Default: none registered.
	Registerer prometheus.Registerer
}

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.MaxParallel = cmp.Or(c.MaxParallel, 4)
	c.MaxOutputBytes = cmp.Or(c.MaxOutputBytes, int64(agent.DefaultMaxOutputBytes))
	c.PersistTimeout = cmp.Or(c.PersistTimeout, 30*time.Second)
	c.AbandonGrace = cmp.Or(c.AbandonGrace, 5*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Dispatcher == nil:
		return errors.New("executor: Dispatcher is required")
	case c.Store == nil:
		return errors.New("executor: Store is required")
	case c.Artifacts == nil:
		return errors.New("executor: Artifacts is required")
	case c.MaxParallel < 1:
		return errors.New("executor: MaxParallel must be at least 1")
	}
	return nil
}

// Executor runs workflow runs. One Executor may run many runs at once.
type Executor struct {
	cfg     Config
	metrics *metrics
}

// New returns an Executor.
func New(cfg Config) (*Executor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Executor{cfg: cfg, metrics: m}, nil
}

// RunOptions start a run.
type RunOptions struct {
	// RunID names the run. Default: a new time-ordered UUID.
	RunID string
	// Seed seeds the run's random draws. Default: derived from the run id,
	// so a run id always means the same seed.
	Seed int64
	// Project is recorded in the state. Default: the bundle's project dir.
	Project string
	// Limits, when set, replace the workflow's limits.
	Limits *engine.Limits
}

// Run starts a run of the bundle's workflow and carries it to its end. A
// run that ends FAILED is a result, not an error: the returned state says
// so. Run returns an error when the run could not be carried on: its
// context ended (ErrInterrupted; resume it later), or a state could not be
// saved (ErrPersist).
func (x *Executor) Run(ctx context.Context, b *definition.Bundle, opts RunOptions) (engine.State, error) {
	if opts.RunID == "" {
		opts.RunID = uuid.Must(uuid.NewV7()).String()
	}
	if opts.Seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(opts.RunID))
		opts.Seed = int64(h.Sum64() >> 1)
	}
	if _, err := x.cfg.Store.Load(ctx, opts.RunID); err == nil {
		return engine.State{}, fmt.Errorf("%w: %s", ErrRunExists, opts.RunID)
	} else if !errors.Is(err, store.ErrNotFound) {
		return engine.State{}, fmt.Errorf("executor: look up run %s: %w", opts.RunID, err)
	}
	limits := b.Limits()
	if opts.Limits != nil {
		limits = *opts.Limits
	}
	info := engine.StartInfo{RunID: opts.RunID, Workflow: b.Workflow.Name, Project: cmp.Or(opts.Project, b.ProjectDir),
		Seed: opts.Seed, Limits: limits, Plan: b.Plan()}
	s, ev, err := engine.Start(info, engine.NewCtx(x.cfg.Clock(), opts.Seed, 1))
	if err != nil {
		return engine.State{}, fmt.Errorf("executor: start run: %w", err)
	}
	r := x.newRun(b, s)
	if err := r.persist(ctx, s, []engine.Event{ev}); err != nil {
		return engine.State{}, err
	}
	r.log.Info("workflow run started", "tasks", len(s.Plan.Tasks), "seed", s.Seed)
	return r.loop(ctx, nil)
}

// Resume carries on a run from its saved state: COMPLETED tasks are not run
// again, attempts that were in flight are dispatched again under their
// dispatch ids, and the rest proceeds as in Run. b must be the run's
// workflow (its plan is compared with the one the run started with).
func (x *Executor) Resume(ctx context.Context, b *definition.Bundle, runID string) (engine.State, error) {
	s, err := x.cfg.Store.Load(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return engine.State{}, fmt.Errorf("%w: %s: %v", ErrRunNotFound, runID, err)
	}
	if err != nil {
		return engine.State{}, fmt.Errorf("executor: load run %s: %w", runID, err)
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("executor: run %s: %w", runID, err)
	}
	if s.Status != engine.RunRunning {
		return s, fmt.Errorf("%w: run %s is %s", ErrRunFinished, runID, s.Status)
	}
	if err := samePlan(s.Plan, b.Plan()); err != nil {
		return s, err
	}
	r := x.newRun(b, s)
	inflight := engine.Running(s)
	r.log.Info("workflow run resumed", "seq", s.Seq, "redispatch", inflight)
	return r.loop(ctx, inflight)
}

func samePlan(was, now engine.Plan) error {
	wasJSON, _ := engine.CanonicalJSON(was)
	nowJSON, _ := engine.CanonicalJSON(now)
	if string(wasJSON) == string(nowJSON) {
		return nil
	}
	if len(was.Tasks) != len(now.Tasks) {
		return fmt.Errorf("%w: it had %d tasks, it has %d", ErrPlanChanged, len(was.Tasks), len(now.Tasks))
	}
	for i := range was.Tasks {
		a, _ := engine.CanonicalJSON(was.Tasks[i])
		b, _ := engine.CanonicalJSON(now.Tasks[i])
		if string(a) != string(b) {
			return fmt.Errorf("%w: task %d was %s, is %s", ErrPlanChanged, i, a, b)
		}
	}
	return ErrPlanChanged
}
