// Package dispatch is the executor's Dispatcher over JetStream: each
// attempt is published as a task.dispatched event for the agent's worker
// pool, and its task.completed or task.failed answer is awaited. The
// orchestrator and its workers thus run, and scale, apart.
//
// Answers arrive on a durable consumer of the task stream shared by every
// orchestrator replica: replicas share a store, so an answer one of them
// records is found by the others. Two orchestrators with stores of their own
// (praetor dev's SQLite and a praetor workflow run on PostgreSQL, on the same
// NATS) must each have a consumer of their own (Config.Consumer): on a
// shared one, each answer would reach one of them only, and an attempt of
// the other would wait for it until its timeout. Each then receives every
// answer, and records those of runs it does not know as well: harmless, as
// an answer is kept by dispatch id, and pruned once no run of it is running
// (sqlstore.Results.PruneSettled). Each answer is handed to the attempt waiting for it
// in this process, if any, and recorded in the result store before it is
// acknowledged. So an answer that arrives while its orchestrator is down —
// or after it published and before it died — is not lost: a restarted
// orchestrator re-dispatches the attempt under the same dispatch id, finds
// the answer in the store first, and applies it without publishing again.
// Were it to publish again, the event id (derived from the dispatch id)
// would be dropped by the stream's duplicate window, or past it by the
// worker's inbox (a re-dispatch carries the mark that has the worker read
// it), which acknowledges it without a second run.
//
// An attempt waiting in one replica whose answer reached another (which
// recorded it) finds it by polling the store every PollInterval.
//
// The event carries the attempt's deadline, the end of the executor's wait
// (the context's), so a worker neither starts an attempt the executor has
// given up on nor lets one run past it (see package worker). A re-dispatch
// whose first event the stream still holds is dropped as its duplicate and
// keeps that event's deadline: a worker that reaches it later answers it as
// timed out, and the resumed run retries the task as after any timeout.
package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/taskmsg"
)

// Bus publishes events and runs durable consumers; *events.Bus is one.
type Bus interface {
	Publish(ctx context.Context, ev event.Event) error
	Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error)
}

// Results keeps answers by dispatch; *sqlstore.Results is one.
type Results interface {
	// SaveAll records answers, keeping the first of each dispatch, and
	// reports which were new.
	SaveAll(ctx context.Context, rs []sqlstore.Result) ([]bool, error)
	Load(ctx context.Context, tenantID, dispatchID string) (sqlstore.Result, error)
}

// DefaultMaxEventBytes bounds a task.dispatched event's data unless
// configured: under the 1 MiB max_payload of a default NATS server, with room
// for the headers.
const DefaultMaxEventBytes = 1<<20 - 64<<10

// Config configures a Dispatcher.
type Config struct {
	// Bus publishes dispatches and consumes answers. Required.
	Bus Bus
	// Results keeps answers. Required.
	Results Results
	// Consumer names the durable consumer of answers, shared by the
	// orchestrator's replicas, which share its store; an orchestrator with
	// another store needs another name. Default "orchestrator-results".
	Consumer string
	// DeliverNew starts a consumer that does not exist yet at the answers
	// published from then on rather than at the stream's first: for an
	// orchestrator whose consumer is created before its first dispatch (the
	// CLI's), which has no use for the answers of before. Default false.
	DeliverNew bool
	// DeliverFrom starts a consumer that does not exist yet at the answers
	// published from that time (zero: as DeliverNew says), and
	// InactiveThreshold has the server delete the consumer once no process
	// has pulled from it for that long (zero: never): for a consumer of a
	// process that comes and goes (the CLI's). An existing consumer keeps
	// its start.
	DeliverFrom       time.Time
	InactiveThreshold time.Duration
	// MaxEventBytes bounds a dispatch's data (the assembled context). An
	// attempt over it fails at once, permanently, saying so. Default
	// DefaultMaxEventBytes; set it from the server's max_payload.
	MaxEventBytes int
	// PollInterval is how often a waiting attempt looks in the store for an
	// answer another replica received. Default 1s.
	PollInterval time.Duration
	// Concurrency is how many answers this process takes at once. Each
	// holds its slot until it is recorded (answers that wait together are
	// recorded in one statement), so it bounds the answers per commit: at
	// 10 ms a commit on a busy database, 16 would cap a process at 1,600
	// answers a second. Default 64.
	Concurrency int
	// AckWait of the answers' consumer. Default 30s.
	AckWait time.Duration
	// Unavailable, when set, tells the failures of Results that mean its
	// database is down (postgres.IsUnavailable): an answer failing so
	// pauses the consumer until Probe answers, rather than spend its
	// deliveries on the outage (events.ConsumerConfig.Unavailable). Set
	// both or neither. Default: none, every failure counts.
	Unavailable func(error) bool
	// Probe checks that the database of Results answers again (its
	// DB.Ping).
	Probe func(context.Context) error
	// Now stamps dispatches and dates the looks for worker pools (one per
	// agent every UnservedAfter). Default time.Now.
	Now func() time.Time
	// Logger. Default: discard.
	Logger *slog.Logger
	// Registerer receives the metrics. Default: none registered.
	Registerer prometheus.Registerer
	// Streams lists the task stream's consumers, to warn when an attempt
	// has waited UnservedAfter and no worker pool serves its agent.
	// Default: the Bus's JetStream when it gives one (*events.Bus).
	Streams Streams
	// UnservedAfter is how long an attempt waits before that look, and how
	// long a look serves the attempts of its agent: attempts of one agent
	// list the consumers once per UnservedAfter, and none waits for the
	// listing. Default 30s.
	UnservedAfter time.Duration
}

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	c.Consumer = cmp.Or(c.Consumer, "orchestrator-results")
	c.MaxEventBytes = cmp.Or(c.MaxEventBytes, DefaultMaxEventBytes)
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, 64)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.UnservedAfter = cmp.Or(c.UnservedAfter, defaultUnservedAfter)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Bus == nil:
		return errors.New("dispatch: Bus is required")
	case c.Results == nil:
		return errors.New("dispatch: Results is required")
	case c.MaxEventBytes < 1 || c.PollInterval <= 0 || c.Concurrency < 1:
		return errors.New("dispatch: MaxEventBytes, PollInterval and Concurrency must be positive")
	case (c.Unavailable == nil) != (c.Probe == nil):
		return errors.New("dispatch: set both Unavailable and Probe, or neither: a pause needs a way to see its end")
	}
	return nil
}

// Dispatcher publishes attempts and hands answers to the attempts waiting
// for them. Tenant gives the executor.Dispatcher of one tenant.
type Dispatcher struct {
	cfg     Config
	metrics *metrics

	mu      sync.Mutex
	waiters map[string][]chan taskmsg.Outcome
	sub     *events.Subscription
	// unserved holds the agents warned of as served by no worker pool.
	unserved sync.Map
	looks    *looks

	// saves carries answers to the writer, which records those that arrive
	// together in one statement: one commit for many answers.
	saves      chan saveRequest
	stopWriter context.CancelFunc
	writerDone chan struct{}
}

type saveRequest struct {
	res   sqlstore.Result
	reply chan saveReply
}

type saveReply struct {
	fresh bool
	err   error
}

// New returns a dispatcher; Start subscribes it to answers.
func New(cfg Config) (*Dispatcher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The bus gives its JetStream once it is known to be one: a valid
	// config's, not a nil *events.Bus of a config refused above.
	if js, ok := cfg.Bus.(jetStreamer); ok && cfg.Streams == nil {
		cfg.Streams = js.JetStream()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Dispatcher{cfg: cfg, metrics: m, waiters: map[string][]chan taskmsg.Outcome{},
		saves: make(chan saveRequest), looks: newLooks()}, nil
}

// Start subscribes to the answers of every tenant's workflow attempts.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sub != nil || d.stopWriter != nil {
		return errors.New("dispatch: already started")
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	d.stopWriter, d.writerDone = stop, make(chan struct{})
	go d.write(wctx)
	sub, err := d.cfg.Bus.Subscribe(ctx, events.ConsumerConfig{
		Stream:            contracts.StreamTasks,
		Name:              d.cfg.Consumer,
		Subjects:          []string{contracts.TaskCompletedSpec.FilterSubject(), contracts.TaskFailedSpec.FilterSubject()},
		Concurrency:       d.cfg.Concurrency,
		AckWait:           d.cfg.AckWait,
		MaxDeliver:        20,
		BackoffBase:       100 * time.Millisecond,
		BackoffMax:        10 * time.Second,
		DeliverNew:        d.cfg.DeliverNew,
		DeliverFrom:       d.cfg.DeliverFrom,
		Unavailable:       d.cfg.Unavailable,
		InactiveThreshold: d.cfg.InactiveThreshold,
		Probe:             d.cfg.Probe,
	}, d.onAnswer)
	if err != nil {
		stop()
		<-d.writerDone
		return fmt.Errorf("dispatch: subscribe to answers: %w", err)
	}
	d.sub = sub
	return nil
}

// maxSaveBatch bounds the answers recorded in one statement.
const maxSaveBatch = 256

// write records answers until stopped, in batches of those waiting.
func (d *Dispatcher) write(ctx context.Context) {
	defer close(d.writerDone)
	for {
		var first saveRequest
		select {
		case <-ctx.Done():
			return
		case first = <-d.saves:
		}
		batch := []saveRequest{first}
		for more := true; more && len(batch) < maxSaveBatch; {
			select {
			case r := <-d.saves:
				batch = append(batch, r)
			default:
				more = false
			}
		}
		rs := make([]sqlstore.Result, len(batch))
		for i, r := range batch {
			rs[i] = r.res
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fresh, err := d.cfg.Results.SaveAll(sctx, rs)
		cancel()
		for i, r := range batch {
			rep := saveReply{err: err}
			if err == nil {
				rep.fresh = fresh[i]
			}
			r.reply <- rep
		}
	}
}

// save hands an answer to the writer and waits until it is recorded.
func (d *Dispatcher) save(ctx context.Context, res sqlstore.Result) (bool, error) {
	req := saveRequest{res: res, reply: make(chan saveReply, 1)}
	select {
	case d.saves <- req:
	case <-ctx.Done():
		return false, ctx.Err()
	case <-d.writerDone:
		return false, errors.New("dispatch: stopped")
	}
	select {
	case rep := <-req.reply:
		return rep.fresh, rep.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// Stop stops consuming answers and ends the looks for worker pools;
// attempts still waiting keep polling the store until their context ends.
// Calling it twice is harmless.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	sub, stop, done := d.sub, d.stopWriter, d.writerDone
	d.mu.Unlock()
	d.looks.close()
	var err error
	if sub != nil {
		err = sub.Stop(ctx)
	}
	if stop != nil {
		stop()
		<-done
	}
	return err
}

// onAnswer hands an answer to its waiter, then records it. A failure to
// record naks the event, so it comes back; handing it again is harmless.
func (d *Dispatcher) onAnswer(ctx context.Context, ev event.Event) error {
	o, err := taskmsg.DecodeOutcome(ev)
	if errors.Is(err, taskmsg.ErrNotWorkflow) {
		d.metrics.answers.WithLabelValues("ignored").Inc()
		return nil // another owner's task (the runner's background tasks)
	}
	if err != nil {
		return err // permanent: dead-lettered with the reason
	}
	d.hand(o)
	raw, err := json.Marshal(o)
	if err != nil {
		return events.Permanent(fmt.Errorf("dispatch: encode answer %s: %w", o.DispatchID, err))
	}
	fresh, err := d.save(ctx, sqlstore.Result{TenantID: o.TenantID, DispatchID: o.DispatchID, RunID: o.RunID,
		EventID: o.EventID, OK: o.OK, JSON: raw, ReceivedAt: d.cfg.Now()})
	if err != nil {
		return err
	}
	if fresh {
		d.metrics.answers.WithLabelValues("recorded").Inc()
	} else {
		d.metrics.answers.WithLabelValues("duplicate").Inc()
	}
	return nil
}

func waitKey(tenant, dispatchID string) string { return tenant + "\x00" + dispatchID }

func (d *Dispatcher) hand(o taskmsg.Outcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ch := range d.waiters[waitKey(o.TenantID, o.DispatchID)] {
		select {
		case ch <- o:
		default: // it has one already
		}
	}
}

func (d *Dispatcher) wait(key string) (chan taskmsg.Outcome, func()) {
	ch := make(chan taskmsg.Outcome, 1)
	d.mu.Lock()
	d.waiters[key] = append(d.waiters[key], ch)
	d.mu.Unlock()
	return ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		list := d.waiters[key]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(d.waiters, key)
		} else {
			d.waiters[key] = list
		}
	}
}

// Tenant returns the executor.Dispatcher of a tenant's runs.
func (d *Dispatcher) Tenant(id string) *TenantDispatcher {
	return &TenantDispatcher{d: d, tenant: id}
}

// TenantDispatcher dispatches one tenant's attempts.
type TenantDispatcher struct {
	d      *Dispatcher
	tenant string
}

// Dispatch runs an attempt on a worker: for an attempt redispatched after a
// restart (executor.Redispatched), the answer recorded for its dispatch id
// if there is one; otherwise a task.dispatched event and the wait for its
// answer. It honours ctx (the attempt's timeout).
func (t *TenantDispatcher) Dispatch(ctx context.Context, task agent.Task, c agent.Context) (agent.Result, error) {
	d := t.d
	ch, done := d.wait(waitKey(t.tenant, task.DispatchID))
	defer done()

	// Only an attempt dispatched before (in flight when its run last
	// stopped) can have an answer already; a new one skips the look-up.
	if executor.Redispatched(ctx) {
		if o, ok, err := t.recorded(ctx, task.DispatchID); err != nil {
			return agent.Result{}, err
		} else if ok {
			d.metrics.dispatches.WithLabelValues("recorded").Inc()
			return answer(o)
		}
	}
	start := d.cfg.Now()
	// The worker is told when this wait ends, so that it neither starts
	// the attempt after it nor lets it run on past it.
	deadline, _ := ctx.Deadline()
	ev, err := taskmsg.Dispatched(t.tenant, task, c, start, deadline, d.cfg.MaxEventBytes)
	if err != nil {
		d.metrics.dispatches.WithLabelValues("rejected").Inc()
		return agent.Result{}, err
	}
	if executor.Redispatched(ctx) {
		ev.SetExtension(taskmsg.ExtRedispatch, "true")
	}
	if at, ok := executor.ReadyAt(ctx); ok {
		taskmsg.SetReadyAt(&ev, at)
	}
	if err := d.cfg.Bus.Publish(ctx, ev); err != nil {
		d.metrics.dispatches.WithLabelValues("publish_failed").Inc()
		return agent.Result{}, fmt.Errorf("dispatch %s: %w", task.DispatchID, err)
	}
	d.metrics.dispatches.WithLabelValues("published").Inc()

	poll := time.NewTicker(d.cfg.PollInterval)
	defer poll.Stop()
	unserved := time.NewTimer(d.cfg.UnservedAfter)
	defer unserved.Stop()
	for {
		select {
		case <-unserved.C:
			d.lookServed(t.tenant, task)
		case o := <-ch:
			d.metrics.wait.Observe(time.Since(start).Seconds())
			return answer(o)
		case <-poll.C:
			if o, ok, err := t.recorded(ctx, task.DispatchID); err == nil && ok {
				d.metrics.wait.Observe(time.Since(start).Seconds())
				return answer(o)
			} else if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("look up an answer failed; waiting on", "dispatch", task.DispatchID, "error", err)
			}
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return agent.Result{}, t.unanswered(task, ctx.Err())
			}
			return agent.Result{}, ctx.Err()
		}
	}
}

// unanswered is the error of an attempt whose wait for its answer reached
// its deadline: it names the task, the dispatch and what was waited on, as
// an answer taken by an orchestrator of another store on the same consumer
// looks just like a worker that never answered. (How long it waited is the
// executor's to say: a duration here would differ between runs.)
func (t *TenantDispatcher) unanswered(task agent.Task, err error) error {
	return fmt.Errorf("task %s (agent %s, dispatch %s): no %s or %s answer came on %s (consumer %s) before the attempt's deadline: "+
		"no worker of agent %s answered, or an orchestrator with another store took the answer on the same consumer: %w",
		task.TaskID, task.Agent, task.DispatchID, contracts.TaskCompletedSpec.Name, contracts.TaskFailedSpec.Name,
		contracts.StreamTasks, t.d.cfg.Consumer, task.Agent, err)
}

// recorded looks for the answer of a dispatch in the store.
func (t *TenantDispatcher) recorded(ctx context.Context, dispatchID string) (taskmsg.Outcome, bool, error) {
	r, err := t.d.cfg.Results.Load(ctx, t.tenant, dispatchID)
	if errors.Is(err, store.ErrNotFound) {
		return taskmsg.Outcome{}, false, nil
	}
	if err != nil {
		return taskmsg.Outcome{}, false, fmt.Errorf("dispatch %s: look up its answer: %w", dispatchID, err)
	}
	var o taskmsg.Outcome
	if err := json.Unmarshal(r.JSON, &o); err != nil {
		return taskmsg.Outcome{}, false, events.Permanent(fmt.Errorf("dispatch %s: recorded answer: %w", dispatchID, err))
	}
	return o, true, nil
}

func answer(o taskmsg.Outcome) (agent.Result, error) {
	if !o.OK {
		return agent.Result{}, o.Err()
	}
	return o.Result, nil
}
