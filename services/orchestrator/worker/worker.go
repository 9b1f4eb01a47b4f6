// Package worker is the agent-worker service: a pool of workers that runs
// workflow task attempts for the orchestrator. Each agent has its own
// durable consumer, unkeyed, of its task.dispatched events
// (agent-worker-<agent> on praetor.task.dispatched.*.<agent>), shared by
// every process that serves the agent: a process joins the consumers of the
// agents it serves, so each agent's workers scale apart from the
// orchestrator and from other agents' — more replicas, more attempts at
// once — and two processes serving different sets of agents never receive
// the same attempt twice.
//
// Each attempt runs the agent's runtime (mock, llm or command, built from an
// agent registry) on the task and context the event carries, and answers
// with task.completed (the result, outputs base64 in the JSON, up to a size
// limit) or task.failed. The answer is written through the inbox and outbox
// (store.MarkHandledAll): the inbox row "this pool handled this dispatch"
// and the answer commit together. A worker killed
// mid-attempt has committed nothing, so the event is redelivered (after the
// consumer's AckWait) and another worker runs it; a redelivery of a
// committed attempt is acknowledged without running it again. Either way one
// answer is emitted, and its id, derived from the dispatch's, makes any copy
// a duplicate.
//
// The answers of attempts that finish together commit together: one
// commit (one WAL flush) for all of them — on PostgreSQL one statement, one
// round trip —, each still with its own inbox row, and each event
// acknowledged only once it has committed. Under load that is most of the
// worker's database cost.
//
// An attempt runs within its task's timeout and within the deadline its
// dispatch carries: when the orchestrator stops waiting for its answer and
// retries the task or fails it. One that reaches a worker after that (it
// waited in a backlog) is not started — it would run beside its retry —
// and is answered as timed out; one that starts is stopped by then. The
// deadline is the orchestrator's clock: hosts must keep theirs in step
// (NTP), or a worker ahead of it refuses attempts it could still run.
//
// Once committed, the answers are published at once, by the pool itself,
// with the very bytes (and Nats-Msg-Id) written to the outbox: the
// orchestrator waits on them, and the relay's pass (a lock shared by every
// relay on the database, a read of the outbox, a write to mark it) would
// sit on that path. They go through the pool's relay (PublishCommitted),
// which marks them sent afterwards, so its passes do not publish them a
// second time. The outbox rows stay the durable copy: a publish that fails
// kicks the relay, which then delivers them, and any copy a pass does send
// is dropped by the stream's duplicate window.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

// Bus runs durable consumers, encodes the answers for the outbox and
// publishes them (it is also the publisher of the outbox relay);
// *events.Bus is one.
type Bus interface {
	Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error)
	delivery.Encoder
	delivery.Publisher
}

// DefaultMaxResultBytes bounds an answer's data unless configured: under the
// 1 MiB max_payload of a default NATS server, with room for the headers.
const DefaultMaxResultBytes = 1<<20 - 64<<10

// Observation is one attempt as a worker started it, for measurements.
type Observation struct {
	Task agent.Task
	// ReadyAt is when the orchestrator found the attempt ready to go out
	// (taskmsg.ExtReadyAt); zero when the event does not say.
	ReadyAt time.Time
	// DispatchedAt is when the orchestrator published the attempt.
	DispatchedAt time.Time
	// StartedAt is when this worker began it.
	StartedAt time.Time
}

// Config configures a Pool.
type Config struct {
	// Bus consumes dispatches and encodes answers. Required.
	Bus Bus
	// DB holds the inbox and outbox. Required.
	DB store.DB
	// Relay, when set, publishes the answers straight after their commit
	// and marks them sent (or, when that fails, delivers them from the
	// outbox). Without one the pool publishes them itself, and some relay's
	// pass publishes them again, as duplicates the stream drops.
	Relay *delivery.Relay
	// Runtime runs attempts, by agent (an agent.Router). Required.
	Runtime agent.Runtime
	// Agents are the agents this pool serves. Required.
	Agents []string
	// Name prefixes the durable consumer (and inbox) of each agent:
	// <Name>-<agent>. Default "agent-worker".
	Name string
	// Concurrency is how many attempts of each agent this process runs at
	// once. Default 8.
	Concurrency int
	// MaxResultBytes bounds an answer's data; a result over it fails the
	// attempt, permanently, saying so. Default DefaultMaxResultBytes; set it
	// from the server's max_payload.
	MaxResultBytes int
	// MaxTaskTimeout bounds every attempt, whatever its task's timeout.
	// Default 1h.
	MaxTaskTimeout time.Duration
	// AckWait is how long the server waits before it redelivers an attempt
	// whose worker went silent (the worker confirms progress twice per
	// AckWait while it runs). Default 30s.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one dispatch before it is
	// dead-lettered. Default 5.
	MaxDeliver int
	// Unavailable, when set, tells the failures of DB that mean the
	// database is down (postgres.IsUnavailable): a dispatch failing so
	// (its answer could not be committed, or its inbox row not read)
	// pauses the agent's consumer, probing DB.Ping, rather than spend its
	// deliveries on the outage (events.ConsumerConfig.Unavailable).
	// Default: none, every failure counts.
	Unavailable func(error) bool
	// Observe, when set, is called as each attempt starts.
	Observe func(Observation)
	// Now stamps answers. Default time.Now.
	Now func() time.Time
	// Logger. Default: discard.
	Logger *slog.Logger
	// Registerer receives the metrics. Default: none registered.
	Registerer prometheus.Registerer
}

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	c.Name = cmp.Or(c.Name, "agent-worker")
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, DefaultMaxResultBytes)
	c.MaxTaskTimeout = cmp.Or(c.MaxTaskTimeout, time.Hour)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, 5)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Bus == nil || c.DB == nil || c.Runtime == nil:
		return errors.New("worker: Bus, DB and Runtime are required")
	case len(c.Agents) == 0:
		return errors.New("worker: Agents is empty: name the agents this pool serves")
	case c.Concurrency < 1 || c.MaxResultBytes < 1 || c.MaxTaskTimeout <= 0:
		return errors.New("worker: Concurrency, MaxResultBytes and MaxTaskTimeout must be positive")
	}
	for _, a := range c.Agents {
		if !contracts.ValidToken(a) {
			return fmt.Errorf("worker: agent %q is not a subject token", a)
		}
	}
	return nil
}

// Pool is the agent-worker service.
type Pool struct {
	cfg     Config
	metrics *metrics

	mu   sync.Mutex
	subs []*events.Subscription

	// commits carries answers to the committer.
	commits      chan commit
	stopCommits  context.CancelFunc
	commitsEnded chan struct{}
}

// commit is an answer waiting for its transaction.
type commit struct {
	tenant   string
	consumer string
	eventID  string
	answer   event.Event
	// msg is answer encoded, for the outbox and the stream.
	msg  *nats.Msg
	done chan error
}

// New returns a pool; Start runs it.
func New(cfg Config) (*Pool, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Pool{cfg: cfg, metrics: m, commits: make(chan commit)}, nil
}

// Consumers returns the durable consumer of each of the pool's agents, by
// agent, and its subject.
func (p *Pool) Consumers() map[string]string {
	out := make(map[string]string, len(p.cfg.Agents))
	for _, a := range p.cfg.Agents {
		out[p.consumer(a)] = contracts.TaskDispatchedSpec.SubjectPrefix() + ".*." + a
	}
	return out
}

func (p *Pool) consumer(agent string) string { return p.cfg.Name + "-" + agent }

// Start joins the consumers of the pool's agents.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subs != nil || p.stopCommits != nil {
		return errors.New("worker: already started")
	}
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stopCommits, p.commitsEnded = stop, make(chan struct{})
	go p.committer(cctx)
	agents := slices.Clone(p.cfg.Agents)
	slices.Sort(agents)
	var probe func(context.Context) error
	if p.cfg.Unavailable != nil {
		probe = p.cfg.DB.Ping
	}
	for _, a := range slices.Compact(agents) {
		name := p.consumer(a)
		sub, err := p.cfg.Bus.Subscribe(ctx, events.ConsumerConfig{
			Stream:         contracts.StreamTasks,
			Name:           name,
			Subjects:       []string{contracts.TaskDispatchedSpec.SubjectPrefix() + ".*." + a},
			Concurrency:    p.cfg.Concurrency,
			AckWait:        p.cfg.AckWait,
			MaxDeliver:     p.cfg.MaxDeliver,
			HandlerTimeout: p.cfg.MaxTaskTimeout + time.Minute,
			Unavailable:    p.cfg.Unavailable,
			Probe:          probe,
		}, func(ctx context.Context, ev event.Event) error { return p.handle(ctx, name, ev) })
		if err != nil {
			for _, s := range p.subs {
				_ = s.Stop(context.Background())
			}
			p.subs = nil
			stop()
			<-p.commitsEnded
			return fmt.Errorf("worker %s: %w", name, err)
		}
		p.subs = append(p.subs, sub)
	}
	p.cfg.Logger.Info("agent worker pool started", "pool", p.cfg.Name, "agents", agents, "concurrency", p.cfg.Concurrency)
	return nil
}

// Stop drains the pool: no new attempts, the running ones finish (or, when
// ctx ends first, are cut short and redelivered to another worker).
// Calling it twice is harmless.
func (p *Pool) Stop(ctx context.Context) error {
	p.mu.Lock()
	subs, stop, ended := p.subs, p.stopCommits, p.commitsEnded
	p.mu.Unlock()
	var errs []error
	for _, s := range subs {
		errs = append(errs, s.Stop(ctx))
	}
	if stop != nil {
		stop()
		<-ended
	}
	return errors.Join(errs...)
}

// handle runs one dispatch exactly once in effect: a dispatch this pool
// has committed already is acknowledged at once; otherwise the attempt
// runs, and its answer commits with its inbox row before the ack.
func (p *Pool) handle(ctx context.Context, consumer string, ev event.Event) error {
	// Only a redelivery, a dispatch published again after its orchestrator
	// restarted, or a redriven dead letter can be one this pool has
	// committed: look those up before running anything. A first delivery of
	// a first dispatch skips the read (the commit's inbox row still guards
	// it).
	if d, _ := events.DeliveryFrom(ctx); d.NumDelivered != 1 || d.Redriven || taskmsg.Redispatch(ev) {
		done, err := store.Handled(ctx, p.cfg.DB, consumer, ev.ID())
		if err != nil {
			return err
		}
		if done {
			p.metrics.tasks.WithLabelValues("duplicate").Inc()
			return nil // committed already: acknowledge, run nothing
		}
	}
	tenant, answer, err := p.work(ctx, ev)
	if errors.Is(err, taskmsg.ErrNotWorkflow) {
		// Another service's task of the same kind: its own consumer has it.
		p.metrics.tasks.WithLabelValues("ignored").Inc()
		return nil
	}
	if err != nil {
		return err
	}
	c := commit{tenant: tenant, consumer: consumer, eventID: ev.ID(), answer: answer, done: make(chan error, 1)}
	select {
	case p.commits <- c:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.commitsEnded:
		return errors.New("worker: stopped before the answer was committed")
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxCommitBatch bounds the answers of one transaction.
const maxCommitBatch = 128

// committer commits the answers waiting, together, until stopped.
func (p *Pool) committer(ctx context.Context) {
	defer close(p.commitsEnded)
	for {
		var first commit
		select {
		case <-ctx.Done():
			return
		case first = <-p.commits:
		}
		batch := []commit{first}
		for more := true; more && len(batch) < maxCommitBatch; {
			select {
			case c := <-p.commits:
				batch = append(batch, c)
			default:
				more = false
			}
		}
		batch = p.encode(ctx, batch)
		if len(batch) == 0 {
			continue
		}
		msgs, err := p.commitBatch(ctx, batch)
		for _, c := range batch {
			c.done <- err
		}
		if len(msgs) > 0 {
			p.publish(ctx, msgs)
		}
	}
}

// encode encodes the answers of a batch, as the outbox keeps them and the
// stream gets them, and returns the commits whose answer encoded; the
// others fail at once, alone (a permanent error: the answer cannot be
// routed).
func (p *Pool) encode(ctx context.Context, batch []commit) []commit {
	ok := batch[:0]
	for _, c := range batch {
		m, err := p.cfg.Bus.Encode(ctx, c.answer)
		if err != nil {
			c.done <- events.Permanent(fmt.Errorf("worker: encode answer %s: %w", c.answer.ID(), err))
			continue
		}
		c.msg = m
		ok = append(ok, c)
	}
	return ok
}

// commitBatch writes the inbox rows of a batch and the answers of those
// not handled before, in one commit (on PostgreSQL one statement), and
// returns those answers, to publish.
func (p *Pool) commitBatch(ctx context.Context, batch []commit) ([]store.OutboxMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	hs := make([]store.Handling, len(batch))
	for i, c := range batch {
		hs[i] = store.Handling{TenantID: c.tenant, Consumer: c.consumer, EventID: c.eventID,
			Emit: &store.OutboxMessage{TenantID: c.tenant, EventID: c.answer.ID(), Subject: c.msg.Subject,
				Header: c.msg.Header, Data: c.msg.Data}}
	}
	first, err := store.MarkHandledAll(ctx, p.cfg.DB, p.cfg.Now(), hs)
	p.metrics.batch.Observe(float64(len(batch)))
	if err != nil {
		return nil, err
	}
	var out []store.OutboxMessage
	for i, h := range hs {
		if first[i] { // otherwise another delivery of it committed meanwhile
			out = append(out, *h.Emit)
		}
	}
	return out, nil
}

// publish sends committed answers straight to the stream: through the
// relay when there is one, which then marks them sent (its passes skip
// them, rather than read them back and publish them a second time for the
// stream to drop), or on failure is kicked to deliver them from the outbox.
func (p *Pool) publish(ctx context.Context, rows []store.OutboxMessage) {
	var err error
	if p.cfg.Relay != nil {
		err = p.cfg.Relay.PublishCommitted(ctx, rows)
	} else {
		err = p.cfg.Bus.PublishMsgs(ctx, delivery.OutboxMsgs(rows))
	}
	if err != nil {
		p.cfg.Logger.Warn("publishing answers failed; the outbox relay will deliver them", "answers", len(rows), "error", err)
	}
}

// work runs one attempt, outside any transaction, and returns its answer.
func (p *Pool) work(ctx context.Context, ev event.Event) (string, event.Event, error) {
	d, err := taskmsg.DecodeDispatched(ev)
	if err != nil {
		p.metrics.tasks.WithLabelValues("rejected").Inc()
		return "", event.Event{}, err
	}
	tenant, req, t := d.Tenant, d.Request, d.Request.Task
	start := time.Now()
	p.metrics.latency.Observe(max(start.Sub(ev.Time()), 0).Seconds())
	if p.cfg.Observe != nil {
		p.cfg.Observe(Observation{Task: t, ReadyAt: taskmsg.ReadyAt(ev), DispatchedAt: ev.Time(), StartedAt: start})
	}
	log := p.cfg.Logger.With("run", t.RunID, "task", t.TaskID, "dispatch", t.DispatchID, "agent", t.Agent)

	timeout := p.cfg.MaxTaskTimeout
	if t.Timeout > 0 {
		timeout = min(t.Timeout, timeout)
	}
	if late := start.Sub(d.Deadline); !d.Deadline.IsZero() && late >= 0 {
		// The orchestrator stopped waiting for this attempt (it waited in a
		// backlog) and has retried or failed the task: running it now would
		// run the task twice. Its answer says it timed out, which an
		// orchestrator still waiting for it — one that resumed the run
		// meanwhile — treats as the timeout it is.
		p.metrics.tasks.WithLabelValues("expired").Inc()
		log.Warn("attempt not started: it reached the worker after its deadline (a backlog, or this host's clock ahead of the orchestrator's)",
			"late", late)
		// A worker that died running it may have left it running (a
		// durable command): it is not waited for any more.
		if a, ok := p.cfg.Runtime.(agent.Abandoner); ok {
			if err := a.Abandon(ctx, t); err != nil {
				log.Warn("stopping what the attempt left running failed", "error", err)
			}
		}
		answer, err := taskmsg.Failed(tenant, ev.ID(), t, fmt.Errorf("worker: attempt %s reached a worker %s after its deadline and was not started "+
			"(the orchestrator had stopped waiting for it; if this happens without a backlog, check the hosts' clocks): %w",
			t.DispatchID, late.Round(time.Millisecond), context.DeadlineExceeded), p.cfg.Now())
		if err != nil {
			return "", event.Event{}, events.Permanent(err)
		}
		return tenant, answer, nil
	}
	deadline := start.Add(timeout)
	if !d.Deadline.IsZero() && d.Deadline.Before(deadline) {
		deadline = d.Deadline // no running on once the orchestrator stopped waiting
	}
	rctx, cancel := context.WithDeadline(ctx, deadline)
	res, runErr := p.cfg.Runtime.Dispatch(rctx, t, req.Context)
	cancel()
	if runErr != nil && ctx.Err() != nil {
		// The pool is stopping (or the handler ran out of time): commit
		// nothing, so the attempt is redelivered to another worker.
		p.metrics.tasks.WithLabelValues("interrupted").Inc()
		return "", event.Event{}, fmt.Errorf("worker: attempt %s interrupted: %w", t.DispatchID, ctx.Err())
	}
	now := p.cfg.Now()
	var answer event.Event
	if runErr == nil {
		answer, err = taskmsg.Completed(tenant, ev.ID(), t, res, now, p.cfg.MaxResultBytes)
		if errors.Is(err, taskmsg.ErrTooLarge) {
			runErr = err
		} else if err != nil {
			return "", event.Event{}, events.Permanent(err)
		}
	}
	if runErr != nil {
		if answer, err = taskmsg.Failed(tenant, ev.ID(), t, runErr, now); err != nil {
			return "", event.Event{}, events.Permanent(err)
		}
		p.metrics.tasks.WithLabelValues("failed").Inc()
		log.Info("attempt failed", "error", runErr, "elapsed", time.Since(start))
	} else {
		p.metrics.tasks.WithLabelValues("completed").Inc()
		log.Debug("attempt completed", "elapsed", time.Since(start))
	}
	p.metrics.duration.WithLabelValues(t.Agent).Observe(time.Since(start).Seconds())
	return tenant, answer, nil
}
