package background

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Consumer is the durable consumer (service role) of the background workers.
const Consumer = "background"

const source = "/praetor/background"

// Subscriber starts consumers and encodes events; *events.Bus is one.
type Subscriber interface {
	Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error)
	delivery.Encoder
}

// Config configures the background service.
type Config struct {
	// DB holds the worker's inbox and outbox. Required.
	DB store.DB
	// Bus consumes the dispatches and encodes the answers. Required.
	Bus   Subscriber
	Relay *delivery.Relay
	// Handlers run the tasks. Required.
	Handlers *Handlers
	// Engines, when set, are checked at New: every handler their background
	// tasks name must be in Handlers.
	Engines *engine.Catalog
	// Kind is the task kind the workers take (default
	// contracts.TaskKindBackground).
	Kind string
	// Concurrency is how many tasks one process runs at once (default 8).
	Concurrency int
	// AckWait is how long a dispatch waits for its worker before another
	// worker gets it, when the first died (default 30s).
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one dispatch (default 10); a
	// dispatch waiting for its not_before uses one.
	MaxDeliver int
	// DefaultTimeout bounds an attempt that names no timeout (default 2m);
	// MaxTimeout bounds every attempt (default engine.TaskAttemptCap, 10m,
	// above which engine validation warns of a task's estimate).
	DefaultTimeout, MaxTimeout time.Duration
	// Unavailable, when set, tells the store's failures that mean the
	// database is down (postgres.IsUnavailable): a dispatch failing so
	// pauses the consumer, probing DB.Ping, rather than spend its
	// deliveries on the outage (events.ConsumerConfig.Unavailable).
	// Default: none, every failure counts.
	Unavailable func(error) bool
	Logger      *slog.Logger
	Registerer  prometheus.Registerer
	// Now is the clock of not_before and the inbox rows (default time.Now).
	Now func() time.Time
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	c.Kind = cmp.Or(c.Kind, contracts.TaskKindBackground)
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, 10)
	c.DefaultTimeout = cmp.Or(c.DefaultTimeout, 2*time.Minute)
	c.MaxTimeout = cmp.Or(c.MaxTimeout, engine.TaskAttemptCap)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ConfigError is a background service configured wrongly: it names what to
// fix.
type ConfigError struct{ Problems []string }

func (e *ConfigError) Error() string {
	return "background: " + strings.Join(e.Problems, "; ")
}

func (c Config) validate() error {
	if c.DB == nil || c.Bus == nil || c.Handlers == nil {
		return &ConfigError{Problems: []string{"DB, Bus and Handlers are required"}}
	}
	var problems []string
	if !contracts.ValidToken(c.Kind) {
		problems = append(problems, fmt.Sprintf("kind %q must be 1-128 characters of [A-Za-z0-9_-]", c.Kind))
	}
	if c.Concurrency < 1 || c.MaxDeliver < 1 || c.DefaultTimeout <= 0 || c.MaxTimeout < c.DefaultTimeout {
		problems = append(problems, "Concurrency and MaxDeliver must be positive, and 0 < DefaultTimeout <= MaxTimeout")
	}
	if c.Engines != nil {
		for _, d := range c.Engines.All() {
			for i, t := range d.BackgroundTasks {
				if _, ok := c.Handlers.Lookup(t.Handler); !ok {
					problems = append(problems, fmt.Sprintf("%s: background_tasks[%d].handler: engine %s names task handler %q, "+
						"which this background service does not run (it runs %s)", d.File(), i, d.EngineID, t.Handler,
						strings.Join(c.Handlers.Names(), ", ")))
				}
			}
		}
	}
	if len(problems) > 0 {
		return &ConfigError{Problems: problems}
	}
	return nil
}

// Service is the background worker pool.
type Service struct {
	cfg   Config
	inbox *delivery.Inbox
	h     events.Handler
	m     metrics

	mu  sync.Mutex
	sub *events.Subscription
}

type metrics struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	running  prometheus.Gauge
}

// New returns the service; Start runs it.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	in, err := delivery.NewInbox(delivery.InboxConfig{DB: cfg.DB, Encoder: cfg.Bus, Consumer: Consumer, Relay: cfg.Relay, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, inbox: in, m: metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "praetor_background_task_attempts_total",
			Help: "Background task attempts, by handler and outcome (completed, failed, timed_out, panicked, unknown_handler; expired: not run, past the deadline its session gave up at)."},
			[]string{"handler", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "praetor_background_task_duration_seconds",
			Help: "How long background task attempts ran, by handler.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)},
			[]string{"handler"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "praetor_background_tasks_running",
			Help: "Background task attempts running in this process."}),
	}}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.m.attempts, s.m.duration, s.m.running} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	s.h = in.Handler(s.work)
	return s, nil
}

// Start joins the pool's durable consumer.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sub != nil {
		return errors.New("background: already started")
	}
	cfg := events.ConsumerConfig{
		Stream: contracts.StreamTasks, Name: Consumer,
		Subjects:    []string{contracts.TaskDispatchedSpec.SubjectPrefix() + ".*." + s.cfg.Kind},
		Concurrency: s.cfg.Concurrency, AckWait: s.cfg.AckWait, MaxDeliver: s.cfg.MaxDeliver,
		// A dispatch waiting for its not_before stays pending on the
		// server; however many wait, a due one is delivered at once. The
		// workers pull only as many as they are free for.
		MaxAckPending:  -1,
		HandlerTimeout: s.cfg.MaxTimeout + time.Minute,
		Unavailable:    s.cfg.Unavailable,
	}
	if cfg.Unavailable != nil {
		cfg.Probe = s.cfg.DB.Ping
	}
	sub, err := s.cfg.Bus.Subscribe(ctx, cfg, s.handle)
	if err != nil {
		return fmt.Errorf("background: %w", err)
	}
	s.sub = sub
	s.cfg.Logger.Info("background workers started", "kind", s.cfg.Kind, "handlers", s.cfg.Handlers.Names(),
		"concurrency", s.cfg.Concurrency)
	return nil
}

// Stop drains the pool: no new attempts; the running ones finish, or, when
// ctx ends first, are cut short and go to another worker. Calling it twice
// is harmless.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	sub := s.sub
	s.sub = nil
	s.mu.Unlock()
	if sub == nil {
		return nil
	}
	return sub.Stop(ctx)
}

// errNotDue is why a dispatch whose not_before lies ahead goes back.
var errNotDue = errors.New("background: the attempt is not due yet")

// handle takes one dispatch: one not yet due goes back until its
// not_before (a retry's backoff); the others run exactly once in effect.
func (s *Service) handle(ctx context.Context, ev event.Event) error {
	td, err := contracts.DecodeAs[contracts.TaskDispatched](ev)
	if err != nil {
		return err
	}
	if td.Kind != s.cfg.Kind {
		return nil
	}
	now := s.cfg.Now()
	if wait := td.NotBefore.Sub(now); wait > 0 {
		return events.Postpone(errNotDue, wait)
	}
	if !td.Deadline.IsZero() && !now.Before(td.Deadline) {
		// A copy of an attempt the workers handled (a redrive, a
		// redelivery whose acknowledgement was lost) nearly always comes
		// after its deadline: it is a duplicate, which the inbox settles,
		// not an attempt expired.
		done, err := store.Handled(ctx, s.cfg.DB, Consumer, ev.ID())
		if err != nil {
			return err
		}
		if done {
			return s.h(ctx, ev)
		}
		// The session has given up on the attempt (it waited in a
		// backlog, or its workers were down): its answer would be of no
		// use, and running it would spend what a research call costs.
		s.m.attempts.WithLabelValues(s.label(td.Handler), "expired").Inc()
		s.cfg.Logger.Warn("background: task attempt past its deadline, not run", "task_id", td.TaskID,
			"attempt", td.Attempt, "owner_id", td.OwnerID, "deadline", td.Deadline)
		return nil
	}
	return s.h(ctx, ev)
}

// work runs the attempt outside any transaction, and returns the step that
// commits its answer with the inbox row.
func (s *Service) work(ctx context.Context, ev event.Event) (delivery.Step, error) {
	td, err := contracts.DecodeAs[contracts.TaskDispatched](ev)
	if err != nil {
		return nil, err
	}
	t := Task{TenantID: td.TenantID, TaskID: td.TaskID, OwnerID: td.OwnerID, Attempt: td.Attempt, Handler: td.Handler, Input: td.Input}
	timeout := min(cmp.Or(td.Timeout, s.cfg.DefaultTimeout), s.cfg.MaxTimeout)
	out, outcome, err := s.run(ctx, t, timeout)
	if err != nil && ctx.Err() != nil {
		// The worker is stopping (or its delivery timed out), not the task
		// failing: no answer; the dispatch goes to another worker.
		return nil, fmt.Errorf("background: task %s attempt %d cut short: %w", t.TaskID, t.Attempt, ctx.Err())
	}
	s.m.attempts.WithLabelValues(s.label(t.Handler), outcome).Inc()
	var answer contracts.Payload
	if err == nil {
		answer = contracts.TaskCompleted{TenantID: t.TenantID, TaskID: t.TaskID, Kind: td.Kind, OwnerID: t.OwnerID,
			Attempt: t.Attempt, Output: out}
	} else {
		permanent := outcome == outcomePanicked || outcome == outcomeUnknown || errors.Is(err, ErrPermanent)
		answer = contracts.TaskFailed{TenantID: t.TenantID, TaskID: t.TaskID, Kind: td.Kind, OwnerID: t.OwnerID,
			Attempt: t.Attempt, Error: err.Error(), Permanent: permanent}
		s.cfg.Logger.Warn("background task attempt failed", "task_id", t.TaskID, "owner_id", t.OwnerID,
			"attempt", t.Attempt, "handler", t.Handler, "outcome", outcome, "permanent", permanent, "error", err)
	}
	reply, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(ev.ID(), outcomeEvent(answer)), Source: source,
		Time: s.cfg.Now()}, answer)
	if err != nil {
		return nil, events.Permanent(err)
	}
	return func(context.Context, store.Querier) ([]event.Event, error) { return []event.Event{reply}, nil }, nil
}

func outcomeEvent(p contracts.Payload) string {
	if _, ok := p.(contracts.TaskCompleted); ok {
		return "completed"
	}
	return "failed"
}

// Outcomes of an attempt, for metrics.
const (
	outcomeCompleted = "completed"
	outcomeFailed    = "failed"
	outcomeTimedOut  = "timed_out"
	outcomePanicked  = "panicked"
	outcomeUnknown   = "unknown_handler"
)

// run runs the attempt's handler within timeout. A panic is recovered into
// a permanent failure; an unknown handler is one too.
func (s *Service) run(ctx context.Context, t Task, timeout time.Duration) (out json.RawMessage, outcome string, err error) {
	fn, ok := s.cfg.Handlers.Lookup(t.Handler)
	if !ok {
		return nil, outcomeUnknown, fmt.Errorf("no task handler %q in this background service (it runs %s): %w",
			t.Handler, strings.Join(s.cfg.Handlers.Names(), ", "), ErrPermanent)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.m.running.Inc()
	start := time.Now()
	defer func() {
		s.m.running.Dec()
		s.m.duration.WithLabelValues(t.Handler).Observe(time.Since(start).Seconds())
		if r := recover(); r != nil {
			s.cfg.Logger.Error("background task handler panicked", "task_id", t.TaskID, "handler", t.Handler,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out, outcome, err = nil, outcomePanicked, fmt.Errorf("task handler %s panicked: %v: %w", t.Handler, r, ErrPermanent)
		}
	}()
	out, err = fn(tctx, t)
	switch {
	case err == nil && !json.Valid(out):
		return nil, outcomeFailed, fmt.Errorf("task handler %s returned a result that is not JSON: %w", t.Handler, ErrPermanent)
	case err == nil:
		return out, outcomeCompleted, nil
	case ctx.Err() == nil && tctx.Err() != nil:
		return nil, outcomeTimedOut, fmt.Errorf("task %s timed out after %s (its estimated duration allows no more): %w",
			t.TaskID, timeout, err)
	}
	return nil, outcomeFailed, err
}

// label is a handler's metric label: registered names only, so the label
// set stays bounded.
func (s *Service) label(handler string) string {
	if _, ok := s.cfg.Handlers.Lookup(handler); ok {
		return handler
	}
	return "unknown"
}
