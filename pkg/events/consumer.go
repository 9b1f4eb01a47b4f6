package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ConsumerConfig describes a durable consumer: one per service role, shared by
// every replica of that service, so adding replicas adds workers.
type ConsumerConfig struct {
	// Stream to consume.
	Stream string
	// Name of the durable consumer, the service role (e.g. "extractor").
	Name string
	// Subjects filter the stream. For a keyed consumer each is a pattern of
	// the stream's partitioned form without the partition token, ending in
	// two tokens (tenant, key): "praetor.turn.received.*.*".
	Subjects []string
	// Keyed handles events of the same ordering key one at a time in stream
	// order, and different keys in parallel, across every replica. The stream
	// must be partitioned (see StreamConfig.Partitions).
	Keyed bool
	// Concurrency is how many events an unkeyed consumer handles at once in
	// this process, and the most it holds: it pulls only for free workers.
	// Default: 16. (A keyed consumer handles one event per partition at a
	// time.)
	Concurrency int
	// AckWait is how long the server waits for an acknowledgement before
	// redelivering; handlers running longer send progress. Default: 30s.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one event; after the last failed one
	// the event is dead-lettered. -1 sets no bound: a retryable failure is
	// tried again, BackoffMax apart, for as long as it lasts, and only a
	// permanent one, a handler's panic (a bug, which would panic at every
	// delivery) or an event that cannot be decoded is dead-lettered.
	// Default: 5.
	MaxDeliver int
	// MaxAckPending bounds the events the consumer holds on the server,
	// handled or waiting to be delivered again (see Postpone): at the bound
	// the server delivers no other event until one is settled. -1 sets no
	// bound, for a consumer whose events wait on purpose, each for a time
	// of its own. Default: 8×Concurrency, at least 256. (A keyed
	// consumer's partitions hold one event each.)
	MaxAckPending int
	// BackoffBase and BackoffMax shape the redelivery delay after a retryable
	// failure: BackoffBase doubled per delivery, capped at BackoffMax, with
	// up to 20% jitter. Defaults: 1s and 1m.
	BackoffBase, BackoffMax time.Duration
	// HandlerTimeout bounds one handler run. Default: 2m.
	HandlerTimeout time.Duration
	// Validate, when set, checks each event's contract before the handler;
	// violations are dead-lettered.
	Validate func(event.Event) error
	// Middleware wraps the handler inside the standard chain.
	Middleware []Middleware
	// DeliverNew starts a new consumer at the end of the stream instead of
	// its beginning. It applies when Subscribe creates the consumer: one
	// that exists keeps the start it was created with (the server cannot
	// change it), so a restart, or a replica configured otherwise,
	// subscribes to it as it is.
	DeliverNew bool
	// DeliverFrom, when set, starts a new consumer at the first event the
	// stream stored at or after it instead of its beginning (not with
	// DeliverNew). Like DeliverNew, it applies when Subscribe creates the
	// consumer, and one that exists keeps its start. Default: zero, unset.
	DeliverFrom time.Time
	// InactiveThreshold has the server delete the consumer once no process
	// has pulled from it, nor settled an event of it, for this long: for a
	// consumer of a process that comes and goes, whose backlog would
	// otherwise grow for ever after its last run. A running subscription's
	// pulls keep it. Default: 0, the consumer stays until deleted.
	InactiveThreshold time.Duration
	// BacklogInterval is how often praetor_consumer_backlog is refreshed.
	// Default: 10s.
	BacklogInterval time.Duration
	// NoBacklog leaves the consumer out of praetor_consumer_backlog: its
	// events wait on the stream for a time of their own (put back with
	// RetryAfter until then), so what it holds is timers, not work to scale
	// on.
	NoBacklog bool
	// Unavailable, when set, tells a handler's failure because a
	// dependency is down (the database unreachable) from one of the event:
	// the event is put back with the usual backoff and the consumer pauses,
	// taking no events, until Probe says the dependency is back (probed a
	// quarter of a second after the pause, then twice as far apart each
	// time, up to 5s). The events it still receives meanwhile wait,
	// unhandled, for the pause to end. So an outage, however long, does
	// not use up the events' deliveries; an event whose last delivery
	// fails so all the same is dead-lettered with CauseUnavailable, to be
	// redriven. Unavailable and Probe go together. Default: none, every
	// failure counts.
	Unavailable func(error) bool
	// Probe reports whether the dependency Unavailable recognises the
	// failures of is back (nil) or still down.
	Probe func(context.Context) error
}

// WithDefaults returns c with every unset field at its default.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	c.Concurrency = cmp.Or(c.Concurrency, 16)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, 5)
	if !c.Keyed {
		c.MaxAckPending = cmp.Or(c.MaxAckPending, max(8*c.Concurrency, 256))
	}
	c.BackoffBase = cmp.Or(c.BackoffBase, time.Second)
	c.BackoffMax = cmp.Or(c.BackoffMax, time.Minute)
	c.HandlerTimeout = cmp.Or(c.HandlerTimeout, 2*time.Minute)
	c.BacklogInterval = cmp.Or(c.BacklogInterval, 10*time.Second)
	return c
}

func (c ConsumerConfig) validate() error {
	switch {
	case c.Stream == "":
		return errors.New("events: consumer needs a Stream")
	case c.Name == "" || strings.ContainsAny(c.Name, ".*> \t"):
		return fmt.Errorf("events: consumer name %q must be non-empty without '.', '*', '>' or spaces", c.Name)
	case len(c.Subjects) == 0:
		return fmt.Errorf("events: consumer %s needs at least one subject", c.Name)
	case c.Concurrency < 1:
		return fmt.Errorf("events: consumer %s: concurrency must be at least 1", c.Name)
	case c.MaxDeliver < 1 && c.MaxDeliver != -1:
		return fmt.Errorf("events: consumer %s: MaxDeliver must be at least 1, or -1 for no bound", c.Name)
	case c.Keyed && c.MaxAckPending != 0:
		return fmt.Errorf("events: keyed consumer %s: MaxAckPending must be unset", c.Name)
	case !c.Keyed && c.MaxAckPending < 1 && c.MaxAckPending != -1:
		return fmt.Errorf("events: consumer %s: MaxAckPending must be at least 1, or -1 for no bound", c.Name)
	case c.AckWait < time.Second:
		return fmt.Errorf("events: consumer %s: AckWait must be at least 1s", c.Name)
	case c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("events: consumer %s: need 0 < BackoffBase <= BackoffMax", c.Name)
	case c.HandlerTimeout <= 0:
		return fmt.Errorf("events: consumer %s: HandlerTimeout must be positive", c.Name)
	case c.DeliverNew && !c.DeliverFrom.IsZero():
		return fmt.Errorf("events: consumer %s: set DeliverNew or DeliverFrom, not both", c.Name)
	case c.InactiveThreshold < 0:
		return fmt.Errorf("events: consumer %s: InactiveThreshold must not be negative", c.Name)
	case (c.Unavailable == nil) != (c.Probe == nil):
		return fmt.Errorf("events: consumer %s: set both Unavailable and Probe, or neither: a pause needs a way to see its end", c.Name)
	}
	if c.Keyed {
		for _, s := range c.Subjects {
			if strings.Contains(s, ">") {
				return fmt.Errorf("events: keyed consumer %s: subject %q must not use '>'", c.Name, s)
			}
		}
	}
	return nil
}

// lastDelivery reports whether the server will not deliver an event again
// after its delivery n.
func (c ConsumerConfig) lastDelivery(n uint64) bool {
	return c.MaxDeliver > 0 && n >= uint64(c.MaxDeliver)
}

// backoff returns the redelivery delay after the given delivery failed.
func (c ConsumerConfig) backoff(delivered uint64) time.Duration {
	d := c.BackoffBase
	for i := uint64(1); i < delivered && d < c.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.BackoffMax)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// Subscription is a running consumer. Stop drains it.
type Subscription struct {
	bus     *Bus
	cfg     ConsumerConfig
	handler Handler

	ctx    context.Context // cancelled, with errDrainTimedOut, when a drain runs out of time
	cancel context.CancelCauseFunc
	ccs    []jetstream.ConsumeContext // a keyed consumer's partition subscriptions
	// feed pulls an unkeyed consumer's messages, and jobs hands them to its
	// workers; jobs is closed once the feed has ended.
	feed    *sharedFeed
	jobs    chan jetstream.Msg
	workers sync.WaitGroup
	cons    []jetstream.Consumer
	wants   []jetstream.ConsumerConfig // the settings of each of cons, as this process writes them
	metrics *serviceMetrics
	polled  chan struct{} // closed when the watcher has ended
	// pause is set when the handlers' dependency may be unavailable
	// (ConsumerConfig.Unavailable); stopping is closed when the drain
	// starts, to let go of the events a pause holds.
	pause    *pause
	stopping chan struct{}

	drainOnce sync.Once
	drained   chan struct{} // closed once every received event is handled
	stopOnce  sync.Once
	stopErr   error
}

// Subscribe starts a durable consumer that hands each event to h behind the
// standard middleware chain: recover, logging, metrics, trace, timeout,
// contract validation, then cfg.Middleware. The consumer and its partitions
// are created or updated idempotently; one that exists keeps its start
// (DeliverNew and DeliverFrom apply when it is created).
func (b *Bus) Subscribe(ctx context.Context, cfg ConsumerConfig, h Handler) (*Subscription, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, ErrStopped
	}
	if err := b.startWatcher(ctx); err != nil {
		return nil, err
	}

	m := b.cfg.Metrics
	sctx, cancel := context.WithCancelCause(context.Background())
	s := &Subscription{bus: b, cfg: cfg, handler: standardChain(h, b.cfg.Logger, m, cfg), ctx: sctx, cancel: cancel,
		metrics: m.forService(cfg.Name), stopping: make(chan struct{})}
	if cfg.Unavailable != nil {
		s.pause = newPause(s)
	}

	var err error
	if cfg.Keyed {
		err = s.startKeyed(ctx)
	} else {
		err = s.startShared(ctx)
	}
	if err != nil {
		_ = s.Stop(context.Background())
		return nil, err
	}
	s.polled = make(chan struct{})
	go s.watch(cfg.BacklogInterval)
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s, nil
}

// standardChain wraps h in the middleware every consumer runs. Two of the
// standard behaviours are kept by the consumer itself rather than by
// middleware: the handler timeout, by the per-message watch timer that also
// sends progress (one timer a message, not two), and the handling time, by
// process, which looks the event type's collectors up once for the duration
// and the outcome.
func standardChain(h Handler, log *slog.Logger, m *Metrics, cfg ConsumerConfig) Handler {
	chain := []Middleware{Recover(log, m, cfg.Name), Logging(log, cfg.Name), Trace()}
	if cfg.Validate != nil {
		chain = append(chain, Validate(cfg.Validate))
	}
	return Chain(h, append(chain, cfg.Middleware...)...)
}

// watch keeps praetor_consumer_backlog{service} current (unless
// NoBacklog): the events the service's consumers (every partition) hold,
// undelivered or unacked. Every replica reports the same figure; scale on
// it with max, not sum. It also puts back the consumers' settings when
// another process wrote tighter ones over them (see settle): during a
// rolling upgrade an older replica that starts writes its own, and without
// this they stayed until a newer one restarted.
func (s *Subscription) watch(every time.Duration) {
	defer close(s.polled)
	var gauge prometheus.Gauge // no series at all for a NoBacklog consumer
	if !s.cfg.NoBacklog {
		gauge = s.bus.cfg.Metrics.backlog.WithLabelValues(s.cfg.Name)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var total uint64
		ok := true
		for i, c := range s.cons {
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			info, err := c.Info(ctx)
			if err != nil {
				cancel()
				ok = false
				break
			}
			s.restore(ctx, info.Config, s.wants[i])
			cancel()
			total += info.NumPending + uint64(info.NumAckPending)
		}
		if ok && gauge != nil {
			gauge.Set(float64(total))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// restore writes want over a consumer's settings when another process made
// those this one sets tighter, and says so. Settings another process made
// looser stay as they are (see settle).
func (s *Subscription) restore(ctx context.Context, have, want jetstream.ConsumerConfig) {
	put, changed := settle(have, want, s.cfg.Keyed)
	if len(changed) == 0 {
		return
	}
	_, err := s.bus.js.UpdateConsumer(ctx, s.cfg.Stream, put)
	s.bus.cfg.Logger.Warn("consumer settings changed by another process (a replica of another version?); put back",
		"service", s.cfg.Name, "consumer", want.Durable, "settings", strings.Join(changed, ", "), "error", err)
}

// settle returns the settings to write over have, and names those in which
// have is tighter than want: a shorter ack wait, fewer deliveries, fewer
// pending events (any other number on a keyed consumer's partition, whose
// one pending event keeps its keys in order), other subjects. A setting
// have holds looser than want is kept: a replica configured otherwise (a
// longer --ack-wait, more workers) wrote it, it serves this process as well,
// and putting want back would have the two write over each other every
// backlog interval for as long as both run, the ack wait flipping under
// the handlers of the one that wants it longer, whose progress then comes
// too late and their events are delivered again while they run.
func settle(have, want jetstream.ConsumerConfig, keyed bool) (jetstream.ConsumerConfig, []string) {
	// looser reports whether bound a lets more through than b; -1 is none.
	looser := func(a, b int) bool { return a == -1 || b != -1 && a > b }
	put := want
	var out []string
	if have.AckWait > want.AckWait {
		put.AckWait = have.AckWait
	} else if have.AckWait < want.AckWait {
		out = append(out, fmt.Sprintf("ack wait %s, want %s", have.AckWait, want.AckWait))
	}
	if looser(have.MaxDeliver, want.MaxDeliver) {
		put.MaxDeliver = have.MaxDeliver
	} else if have.MaxDeliver != want.MaxDeliver {
		out = append(out, fmt.Sprintf("max deliver %d, want %d", have.MaxDeliver, want.MaxDeliver))
	}
	if !keyed && looser(have.MaxAckPending, want.MaxAckPending) {
		put.MaxAckPending = have.MaxAckPending
	} else if have.MaxAckPending != want.MaxAckPending {
		out = append(out, fmt.Sprintf("max ack pending %d, want %d", have.MaxAckPending, want.MaxAckPending))
	}
	filters := func(c jetstream.ConsumerConfig) []string {
		if c.FilterSubject != "" {
			return []string{c.FilterSubject}
		}
		return c.FilterSubjects
	}
	if !slices.Equal(filters(have), filters(want)) {
		out = append(out, fmt.Sprintf("subjects %v, want %v", filters(have), filters(want)))
	}
	return put, out
}

func (s *Subscription) consumerConfig(name string, subjects []string, maxAckPending int) jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Durable:        name,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.cfg.AckWait,
		MaxDeliver:     s.cfg.MaxDeliver,
		MaxAckPending:  maxAckPending,
		FilterSubjects: subjects,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		Metadata:       map[string]string{"praetor_service": s.cfg.Name},
		// Zero keeps the consumer; on an update, zero takes a threshold
		// away.
		InactiveThreshold: s.cfg.InactiveThreshold,
	}
	if len(subjects) == 1 {
		cc.FilterSubject, cc.FilterSubjects = subjects[0], nil
	}
	if s.cfg.DeliverNew {
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	if !s.cfg.DeliverFrom.IsZero() {
		from := s.cfg.DeliverFrom.UTC()
		cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	return cc
}

// ensureConsumer creates the durable consumer of want, or updates the one
// that exists to want's settings but its start: the server refuses to
// change a consumer's deliver policy or start time ("deliver policy can not
// be updated", "start time can not be updated"), so
// want's start applies to a new consumer only. It returns want as written.
func (s *Subscription) ensureConsumer(ctx context.Context, want jetstream.ConsumerConfig) (jetstream.Consumer, jetstream.ConsumerConfig, error) {
	stream, created := s.cfg.Stream, want
	// Another process may create the consumer between the look-up and the
	// creation, or the server delete it (InactiveThreshold) between the
	// look-up and the update: look again, once.
	for try := 0; ; try++ {
		want = created
		cons, err := s.bus.js.Consumer(ctx, stream, want.Durable)
		switch {
		case err == nil:
			have := cons.CachedInfo().Config
			want.DeliverPolicy, want.OptStartTime, want.OptStartSeq = have.DeliverPolicy, have.OptStartTime, have.OptStartSeq
			cons, err = s.bus.js.UpdateConsumer(ctx, stream, want)
			if (errors.Is(err, jetstream.ErrConsumerDoesNotExist) || errors.Is(err, jetstream.ErrConsumerNotFound)) && try == 0 {
				continue
			}
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			cons, err = s.bus.js.CreateConsumer(ctx, stream, want)
			if errors.Is(err, jetstream.ErrConsumerExists) && try == 0 {
				continue
			}
		}
		return cons, want, err
	}
}

// Pull requests are lost now and then under load (nats.go issue 1622,
// reproduced here with raw jetstream and small batches): the client counts
// messages as requested that the server will never send, and the pull sits
// idle until it misses the server's heartbeats and pulls afresh.
// pullHeartbeat bounds that pause to twice its value, instead of the 30s of
// nats.go's default; the cost is one heartbeat from the server per waiting
// pull every pullHeartbeat while idle.
const (
	pullHeartbeat = 5 * time.Second
	pullExpiry    = 4 * pullHeartbeat
	// pullRetry is the pause before pulling again after a pull that failed
	// without a message (the consumer deleted, JetStream unavailable), so a
	// lasting failure does not spin.
	pullRetry = time.Second
)

// pullOpts are the options of a keyed consumer's partition subscriptions.
func (s *Subscription) pullOpts(maxMessages int) []jetstream.PullConsumeOpt {
	return []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(maxMessages),
		jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat), s.consumeErrors()}
}

// startShared runs one durable consumer whose messages go to a pool of
// Concurrency workers, each taking the next message as soon as it is free.
// The process pulls only for free workers (see sharedFeed): a message it
// receives starts at once, and the events its busy workers cannot take stay
// on the server for whichever replica frees a worker first.
//
// The hand-off through a channel costs a goroutine switch; in exchange one
// pull serves many workers, so the client sends a pull request for every few
// messages under load, not one per message and worker.
func (s *Subscription) startShared(ctx context.Context) error {
	cons, want, err := s.ensureConsumer(ctx, s.consumerConfig(s.cfg.Name, s.cfg.Subjects, s.cfg.MaxAckPending))
	if err != nil {
		return fmt.Errorf("events: consumer %s on %s: %w", s.cfg.Name, s.cfg.Stream, err)
	}
	s.cons, s.wants = append(s.cons, cons), append(s.wants, want)
	s.jobs = make(chan jetstream.Msg)
	f := &sharedFeed{s: s, cons: cons, batch: (s.cfg.Concurrency + 1) / 2, fed: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(s.ctx)
	s.feed = f
	for range s.cfg.Concurrency {
		s.workers.Add(1)
		w := s.newWorker()
		go func() {
			defer s.workers.Done()
			for msg := range s.jobs {
				w.process(msg)
				f.release(1, false)
			}
		}()
	}
	f.release(s.cfg.Concurrency, false)
	return nil
}

// sharedFeed pulls an unkeyed consumer's messages for its workers, never
// more than the workers free to start them. Each worker is a slot: free,
// requested by a pull, or holding a message. A free worker's slot is
// requested; it comes back when the worker's handler has returned and the
// message is settled, or, for the part of a pull the server did not fill,
// when the pull ends.
//
// So a message waits in this process only for a worker already on its way
// back to the pool, and its AckWait is extended by progress (see
// worker.start) from the moment a handler starts. Pulling ahead of the
// workers would leave messages waiting here behind long handlers with
// nothing extending their AckWait (their jetstream.Msg sits in the client's
// queue, out of reach): the server would deliver them again, to this
// process or another, and both copies would be handled. Keeping them alive
// with progress instead would hold them in a busy process for as long as
// its handlers run, while another replica stands idle; on the server they
// go to the first free worker of any replica, on their first delivery.
type sharedFeed struct {
	s    *Subscription
	cons jetstream.Consumer
	// batch is the most one pull asks for: half the workers, so a lost pull
	// request (see pullHeartbeat) holds up half of them, not all.
	batch int
	// ctx ends the pulls; cancelled when the drain starts.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	free     int // slots neither requested nor holding a message
	pulls    int // pulls not yet ended, counting those waiting for a retry
	draining bool
	fed      chan struct{} // closed once draining and no pull is left
}

// release gives back n slots, from a worker whose handler has returned or
// from a pull that ended (ended) with n messages fewer than it asked for,
// and pulls for the free slots once a batch of them is free, or at once when
// no pull is out. Under load a pull fills while the workers run the
// messages of the one before, and each asks for about a batch, as nats.go's
// Consume re-pulls at half its buffer.
func (f *sharedFeed) release(n int, ended bool) {
	var pulls []int
	f.mu.Lock()
	f.free += n
	if ended {
		f.pulls--
	}
	switch {
	case f.draining:
		if ended && f.pulls == 0 {
			close(f.fed)
		}
	case f.s.pause != nil && f.s.pause.paused():
		// The free slots wait for the pause to end (pause.resume).
	default:
		for f.free > 0 && (f.pulls == 0 || f.free >= f.batch) {
			k := min(f.free, f.batch)
			f.free -= k
			f.pulls++
			pulls = append(pulls, k)
		}
	}
	f.mu.Unlock()
	for _, k := range pulls {
		f.pull(k)
	}
}

// pull asks the server for k messages, delivered to the workers as they
// come; the pull waits up to pullExpiry for them.
func (f *sharedFeed) pull(k int) {
	if f.ctx.Err() != nil {
		f.release(k, true)
		return
	}
	ctx, cancel := context.WithTimeout(f.ctx, pullExpiry)
	batch, err := f.cons.Fetch(k, jetstream.FetchContext(ctx), jetstream.FetchHeartbeat(pullHeartbeat))
	if err != nil {
		cancel()
		f.s.pullFailed(err)
		go f.retry(k)
		return
	}
	go func() {
		defer cancel()
		got := 0
		for msg := range batch.Messages() {
			got++
			f.s.jobs <- msg
		}
		if err := batch.Error(); err != nil && f.ctx.Err() == nil {
			f.s.pullFailed(err)
			if got == 0 {
				f.retry(k)
				return
			}
		}
		f.release(k-got, true)
	}()
}

// retry gives back the slots of a failed pull after pullRetry, or at once
// when the drain starts. A closed connection never opens again: its pulls
// wait for the drain, as a keyed consumer's subscriptions stop.
func (f *sharedFeed) retry(k int) {
	var after <-chan time.Time
	if !f.s.bus.nc.IsClosed() {
		t := time.NewTimer(pullRetry)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
	case <-f.ctx.Done():
	}
	f.release(k, true)
}

// stop ends the pulls: those waiting on the server are abandoned, and fed is
// closed once every pull has handed its messages to the workers.
func (f *sharedFeed) stop() {
	f.mu.Lock()
	f.draining = true
	if f.pulls == 0 {
		close(f.fed)
	}
	f.mu.Unlock()
	f.cancel()
}

// startKeyed runs one durable consumer per partition, each with at most one
// unacknowledged event: the server hands a partition's next event to any
// replica only after the previous one is acknowledged or terminated, so a key
// (always in the same partition) is handled one event at a time, in order,
// whichever process holds it.
func (s *Subscription) startKeyed(ctx context.Context) error {
	n, err := s.bus.Partitions(ctx, s.cfg.Stream)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("events: keyed consumer %s needs a partitioned stream; %s has no partitions", s.cfg.Name, s.cfg.Stream)
	}
	for p := range n {
		subjects := make([]string, len(s.cfg.Subjects))
		for i, subj := range s.cfg.Subjects {
			subjects[i] = fmt.Sprintf("%s.%d", subj, p)
		}
		name := PartitionConsumer(s.cfg.Name, p)
		cons, want, err := s.ensureConsumer(ctx, s.consumerConfig(name, subjects, 1))
		if err != nil {
			return fmt.Errorf("events: consumer %s on %s: %w", name, s.cfg.Stream, err)
		}
		s.cons, s.wants = append(s.cons, cons), append(s.wants, want)
		cc, err := cons.Consume(s.newWorker().process, s.pullOpts(64)...)
		if err != nil {
			return fmt.Errorf("events: consume %s: %w", name, err)
		}
		s.ccs = append(s.ccs, cc)
	}
	return nil
}

// PartitionConsumer names the durable consumer of one partition of a keyed
// consumer.
func PartitionConsumer(name string, partition int) string {
	return fmt.Sprintf("%s-p%03d", name, partition)
}

// serviceOf maps a durable consumer name back to its service role.
func serviceOf(consumer string) string {
	if i := strings.LastIndex(consumer, "-p"); i > 0 && len(consumer)-i == 5 &&
		strings.Trim(consumer[i+2:], "0123456789") == "" {
		return consumer[:i]
	}
	return consumer
}

func (s *Subscription) consumeErrors() jetstream.PullConsumeOpt {
	return jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { s.pullFailed(err) })
}

// pullFailed logs what interrupted a pull.
func (s *Subscription) pullFailed(err error) {
	if errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrServerShutdown) || errors.Is(err, nats.ErrConnectionClosed) {
		s.bus.cfg.Logger.Warn("consumer interrupted", "service", s.cfg.Name, "error", err)
		return
	}
	s.bus.cfg.Logger.Debug("consumer notice", "service", s.cfg.Name, "error", err)
}

// worker handles one message at a time: as one goroutine of an unkeyed
// consumer's pool, or as the handler of a keyed consumer's partition
// subscription (nats.go calls a subscription's handler from one goroutine).
// So its state, the watch timer above all, is reused from one message to the
// next instead of being made for each.
type worker struct {
	s *Subscription

	mu       sync.Mutex
	timer    *time.Timer // fires watch; stopped while no message is handled
	msg      jetstream.Msg
	cancel   context.CancelCauseFunc
	deadline time.Time
}

func (s *Subscription) newWorker() *worker {
	w := &worker{s: s}
	w.timer = time.AfterFunc(time.Hour, w.watch)
	w.timer.Stop()
	return w
}

// process handles one message and settles it: ack, nak with backoff, or
// dead-letter and terminate.
func (w *worker) process(msg jetstream.Msg) {
	s := w.s
	meta, err := msg.Metadata()
	if err != nil {
		// Not a JetStream message; nothing to settle.
		s.bus.cfg.Logger.Error("message without jetstream metadata", "service", s.cfg.Name, "error", err)
		return
	}
	d := Delivery{
		Stream: meta.Stream, Consumer: s.cfg.Name, Subject: msg.Subject(),
		StreamSeq: meta.Sequence.Stream, NumDelivered: meta.NumDelivered, Timestamp: meta.Timestamp,
		Redriven: len(msg.Headers()[HeaderRedriven]) > 0,
	}
	ev, err := Decode(msg.Headers(), msg.Data())
	if err != nil {
		s.deadLetter(msg, d, "", CauseDecode, err)
		return
	}
	if cause := context.Cause(s.ctx); cause != nil {
		// The drain ran out of time before the handler started: an unkeyed
		// consumer's pull had brought it for a worker just freed.
		s.interrupted(msg, d, ev.Type(), CauseMaxDeliver, fmt.Errorf("not started: %w", cause))
		return
	}
	if s.pause != nil && !s.pause.hold(msg) {
		// Received while paused, and the drain started before the
		// dependency came back.
		s.interrupted(msg, d, ev.Type(), CauseUnavailable, errStoppedPaused)
		return
	}
	hctx, cancel := context.WithCancelCause(withDelivery(s.ctx, d))
	start := time.Now()
	w.start(msg, cancel, start)
	// The progress reports go on until the message is settled: a dead
	// letter's publish may take longer than what is left of the ack wait,
	// and the server would deliver the event again meanwhile.
	defer w.stop()
	err = s.handler(hctx, ev)
	tm := s.metrics.of(ev.Type())
	tm.seconds.Observe(time.Since(start).Seconds())
	if err != nil && errors.Is(context.Cause(hctx), errHandlerTimeout) {
		err = fmt.Errorf("%w after %s: %w", errHandlerTimeout, s.cfg.HandlerTimeout, err)
	}
	cancel(nil)

	switch {
	case err == nil:
		if aerr := msg.Ack(); aerr != nil {
			s.bus.cfg.Logger.Warn("ack failed; the event will be redelivered", "service", s.cfg.Name,
				"event_id", ev.ID(), "error", aerr)
		}
		tm.ok.Inc()
	case IsPermanent(err):
		s.deadLetter(msg, d, ev.Type(), CausePermanent, err)
	case errors.Is(context.Cause(hctx), errDrainTimedOut):
		s.interrupted(msg, d, ev.Type(), CauseMaxDeliver, fmt.Errorf("%w: %w", errDrainTimedOut, err))
	case s.pause != nil && s.cfg.Unavailable(err):
		s.pause.enter(err)
		if s.cfg.lastDelivery(meta.NumDelivered) {
			s.deadLetter(msg, d, ev.Type(), CauseUnavailable, err)
			return
		}
		s.retryLater(msg, meta.NumDelivered, err, tm)
	case s.cfg.lastDelivery(meta.NumDelivered):
		s.deadLetter(msg, d, ev.Type(), CauseMaxDeliver, err)
	case s.cfg.MaxDeliver < 0 && errors.Is(err, errPanic):
		// Nothing would stop it panicking again, at every delivery.
		s.deadLetter(msg, d, ev.Type(), CausePermanent, err)
	default:
		s.retryLater(msg, meta.NumDelivered, err, tm)
	}
}

// retryLater puts back an event whose delivery n failed with err, to come
// again after the backoff, or after the delay err asks for (RetryAfter).
func (s *Subscription) retryLater(msg jetstream.Msg, n uint64, err error, tm *typeMetrics) {
	delay := s.cfg.backoff(n)
	var re *RetryError
	if errors.As(err, &re) && re.After > 0 {
		delay = re.After
	}
	_ = msg.NakWithDelay(delay)
	tm.retry.Inc()
}

// errStoppedPaused is why an event received while its consumer was paused
// is put back unhandled when the consumer stops.
var errStoppedPaused = errors.New("not started: the consumer stopped while paused, a dependency of its handler unavailable (the event may well be sound)")

// interrupted settles an event the shutdown kept from finishing: it goes
// back to the stream at once, for another process; on its last delivery,
// when the server would not deliver it again, it is dead-lettered with
// cause and reason, which say so.
func (s *Subscription) interrupted(msg jetstream.Msg, d Delivery, ceType, cause string, reason error) {
	if s.cfg.lastDelivery(d.NumDelivered) {
		s.deadLetter(msg, d, ceType, cause, reason)
		return
	}
	_ = msg.Nak()
	s.metrics.of(ceType).retry.Inc()
}

// deadLetter copies the message to the dead-letter stream, then terminates
// it. If the copy fails the message is naked instead, so it comes back and
// nothing is lost.
func (s *Subscription) deadLetter(msg jetstream.Msg, d Delivery, ceType, cause string, reason error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.bus.cfg.PublishTimeout)
	defer cancel()
	dl := DeadLetter{
		Reason: reason.Error(), Cause: cause, Stream: d.Stream, Consumer: s.cfg.Name,
		StreamSeq: d.StreamSeq, Deliveries: d.NumDelivered, Subject: d.Subject,
		Header: msg.Headers(), Data: msg.Data(), EventID: eventIDOf(msg.Headers()), At: time.Now().UTC(),
	}
	if dl.EventID == "" {
		dl.Reason += noEventID
	}
	if s.bus.beforeDeadLetter != nil {
		s.bus.beforeDeadLetter()
	}
	if err := s.bus.publishDeadLetterOf(ctx, dl); err != nil {
		s.bus.cfg.Logger.Error("dead-letter publish failed; redelivering", "service", s.cfg.Name,
			"stream_seq", d.StreamSeq, "error", err)
		_ = msg.NakWithDelay(s.cfg.backoff(1))
		s.metrics.of(ceType).retry.Inc()
		return
	}
	_ = msg.TermWithReason(cause)
	s.metrics.of(ceType).dead.Inc()
}

// errHandlerTimeout is the cause of a handler's context ending at
// HandlerTimeout; the event is redelivered.
var errHandlerTimeout = errors.New("handler timed out")

// start arms the worker's timer for a message whose handler starts now:
// every half AckWait the timer tells the server the message is still being
// worked on, so a handler may run longer than AckWait without a redelivery,
// and at HandlerTimeout it cancels the handler's context.
func (w *worker) start(msg jetstream.Msg, cancel context.CancelCauseFunc, now time.Time) {
	w.mu.Lock()
	w.msg, w.cancel, w.deadline = msg, cancel, now.Add(w.s.cfg.HandlerTimeout)
	w.timer.Reset(w.next(now))
	w.mu.Unlock()
}

// stop disarms the timer once the handler has returned.
func (w *worker) stop() {
	w.mu.Lock()
	w.timer.Stop()
	w.msg, w.cancel = nil, nil
	w.mu.Unlock()
}

func (w *worker) next(now time.Time) time.Duration {
	return max(min(w.s.cfg.AckWait/2, w.deadline.Sub(now)), 0)
}

// watch runs when the timer fires. A firing that raced with stop finds no
// message and does nothing; one that raced with stop and the next start acts
// for the next message, which is harmless: its deadline is checked, and an
// early progress report only extends its AckWait.
func (w *worker) watch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.msg == nil {
		return
	}
	now := time.Now()
	if !now.Before(w.deadline) {
		w.cancel(errHandlerTimeout)
		return
	}
	_ = w.msg.InProgress()
	w.timer.Reset(w.next(now))
}

// drain stops the pulls and returns a channel closed once every event
// already received has been handled. Bus.Close starts every subscription's
// drain before it waits for any, so no consumer takes new events while
// another one finishes its own.
func (s *Subscription) drain() <-chan struct{} {
	s.drainOnce.Do(func() {
		close(s.stopping)
		for _, cc := range s.ccs {
			cc.Drain()
		}
		if s.feed != nil {
			s.feed.stop()
		}
		s.drained = make(chan struct{})
		go func() {
			for _, cc := range s.ccs {
				<-cc.Closed()
			}
			// Every received message has been handed to a worker: let
			// them finish.
			if s.feed != nil {
				<-s.feed.fed
				close(s.jobs)
				s.workers.Wait()
			}
			close(s.drained)
		}()
	})
	return s.drained
}

// errDrainTimedOut is why the handlers still running when a drain runs out
// of time are interrupted, and the events received but not yet started are
// not started: the process is stopping, and nothing says the event is at
// fault.
var errDrainTimedOut = errors.New("interrupted by shutdown: the drain ran out of time (the event may well be sound)")

// Stop drains the subscription: it stops pulling, lets the events already
// received finish, and returns when they have. If ctx ends first, the
// handlers still running see their context cancelled, the events received
// but not yet started are not started, both go back to the stream at once
// (on their last delivery, to the dead-letter stream, the reason naming the
// shutdown), and Stop returns ctx's error. Calling Stop twice is harmless.
func (s *Subscription) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		done := s.drain()
		select {
		case <-done:
		case <-ctx.Done():
			select {
			case <-done:
				// Drained before Stop was called (Bus.Close stops one
				// subscription after another, every drain started at
				// once): nothing was cut short.
			default:
				s.cancel(errDrainTimedOut)
				<-done
				s.stopErr = fmt.Errorf("events: drain %s: %w", s.cfg.Name, ctx.Err())
			}
		}
		s.cancel(nil)
		if s.polled != nil {
			<-s.polled
		}
		if s.pause != nil {
			s.pause.probing.Wait()
		}
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
	})
	return s.stopErr
}
