package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
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
	// this process. Default: 16. (A keyed consumer handles one event per
	// partition at a time.)
	Concurrency int
	// AckWait is how long the server waits for an acknowledgement before
	// redelivering; handlers running longer send progress. Default: 30s.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one event; after the last failed one
	// the event is dead-lettered. Default: 5.
	MaxDeliver int
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
	// its beginning.
	DeliverNew bool
	// BacklogInterval is how often praetor_consumer_backlog is refreshed.
	// Default: 10s.
	BacklogInterval time.Duration
}

// WithDefaults returns c with every unset field at its default.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	c.Concurrency = cmp.Or(c.Concurrency, 16)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, 5)
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
	case c.MaxDeliver < 1:
		return fmt.Errorf("events: consumer %s: MaxDeliver must be at least 1", c.Name)
	case c.AckWait < time.Second:
		return fmt.Errorf("events: consumer %s: AckWait must be at least 1s", c.Name)
	case c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("events: consumer %s: need 0 < BackoffBase <= BackoffMax", c.Name)
	case c.HandlerTimeout <= 0:
		return fmt.Errorf("events: consumer %s: HandlerTimeout must be positive", c.Name)
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

	ctx     context.Context // cancelled when a drain runs out of time
	cancel  context.CancelFunc
	ccs     []jetstream.ConsumeContext
	cons    []jetstream.Consumer
	metrics *serviceMetrics
	polled  chan struct{} // closed when the backlog poller has ended

	stopOnce sync.Once
	stopErr  error
}

// Subscribe starts a durable consumer that hands each event to h behind the
// standard middleware chain: recover, logging, metrics, trace, timeout,
// contract validation, then cfg.Middleware. The consumer and its partitions
// are created or updated idempotently.
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

	m, log := b.cfg.Metrics, b.cfg.Logger
	// The handler timeout is kept by the consumer's per-message timer (see
	// watch), not by a Timeout middleware: one timer a message, not two.
	chain := []Middleware{Recover(log, m, cfg.Name), Logging(log, cfg.Name), Measure(m, cfg.Name), Trace()}
	if cfg.Validate != nil {
		chain = append(chain, Validate(cfg.Validate))
	}
	chain = append(chain, cfg.Middleware...)

	sctx, cancel := context.WithCancel(context.Background())
	s := &Subscription{bus: b, cfg: cfg, handler: Chain(h, chain...), ctx: sctx, cancel: cancel,
		metrics: m.forService(cfg.Name)}

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
	go s.pollBacklog(cfg.BacklogInterval)
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s, nil
}

// pollBacklog keeps praetor_consumer_backlog{service} current: the events
// the service's consumers (every partition) hold, undelivered or unacked.
// Every replica reports the same figure; scale on it with max, not sum.
func (s *Subscription) pollBacklog(every time.Duration) {
	defer close(s.polled)
	gauge := s.bus.cfg.Metrics.backlog.WithLabelValues(s.cfg.Name)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var total uint64
		ok := true
		for _, c := range s.cons {
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			info, err := c.Info(ctx)
			cancel()
			if err != nil {
				ok = false
				break
			}
			total += info.NumPending + uint64(info.NumAckPending)
		}
		if ok {
			gauge.Set(float64(total))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
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
	}
	if len(subjects) == 1 {
		cc.FilterSubject, cc.FilterSubjects = subjects[0], nil
	}
	if s.cfg.DeliverNew {
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	return cc
}

// startShared runs one durable consumer with Concurrency pull
// subscriptions, each handling its messages inline: no hand-off between
// goroutines on the hot path.
func (s *Subscription) startShared(ctx context.Context) error {
	cons, err := s.bus.js.CreateOrUpdateConsumer(ctx, s.cfg.Stream,
		s.consumerConfig(s.cfg.Name, s.cfg.Subjects, max(8*s.cfg.Concurrency, 256)))
	if err != nil {
		return fmt.Errorf("events: consumer %s on %s: %w", s.cfg.Name, s.cfg.Stream, err)
	}
	s.cons = append(s.cons, cons)
	for range s.cfg.Concurrency {
		cc, err := cons.Consume(s.process, jetstream.PullMaxMessages(8), s.consumeErrors())
		if err != nil {
			return fmt.Errorf("events: consume %s: %w", s.cfg.Name, err)
		}
		s.ccs = append(s.ccs, cc)
	}
	return nil
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
		cons, err := s.bus.js.CreateOrUpdateConsumer(ctx, s.cfg.Stream, s.consumerConfig(name, subjects, 1))
		if err != nil {
			return fmt.Errorf("events: consumer %s on %s: %w", name, s.cfg.Stream, err)
		}
		s.cons = append(s.cons, cons)
		cc, err := cons.Consume(s.process, jetstream.PullMaxMessages(64), s.consumeErrors())
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
	return jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
			errors.Is(err, jetstream.ErrServerShutdown) {
			s.bus.cfg.Logger.Warn("consumer interrupted", "service", s.cfg.Name, "error", err)
			return
		}
		s.bus.cfg.Logger.Debug("consumer notice", "service", s.cfg.Name, "error", err)
	})
}

// process handles one message and settles it: ack, nak with backoff, or
// dead-letter and terminate.
func (s *Subscription) process(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		// Not a JetStream message; nothing to settle.
		s.bus.cfg.Logger.Error("message without jetstream metadata", "service", s.cfg.Name, "error", err)
		return
	}
	d := Delivery{
		Stream: meta.Stream, Consumer: s.cfg.Name, Subject: msg.Subject(),
		StreamSeq: meta.Sequence.Stream, NumDelivered: meta.NumDelivered, Timestamp: meta.Timestamp,
	}
	ev, err := Decode(msg.Headers(), msg.Data())
	if err != nil {
		s.deadLetter(msg, d, "", causeDecode, err)
		return
	}
	hctx, cancel := context.WithCancelCause(withDelivery(s.ctx, d))
	stop := s.watch(msg, cancel)
	err = s.handler(hctx, ev)
	stop()
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
		s.metrics.of(ev.Type()).ok.Inc()
	case IsPermanent(err):
		s.deadLetter(msg, d, ev.Type(), causePermanent, err)
	case meta.NumDelivered >= uint64(s.cfg.MaxDeliver):
		s.deadLetter(msg, d, ev.Type(), causeMaxDeliver, err)
	default:
		delay := s.cfg.backoff(meta.NumDelivered)
		var re *RetryError
		if errors.As(err, &re) && re.After > 0 {
			delay = re.After
		}
		_ = msg.NakWithDelay(delay)
		s.metrics.of(ev.Type()).retry.Inc()
	}
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
		Header: msg.Headers(), Data: msg.Data(), At: time.Now().UTC(),
	}
	if err := s.bus.publishDeadLetter(ctx, dl); err != nil {
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

// watch keeps one timer for a message being handled: every half AckWait it
// tells the server the message is still being worked on, so a handler may run
// longer than AckWait without a redelivery, and at HandlerTimeout it cancels
// the handler's context.
func (s *Subscription) watch(msg jetstream.Msg, cancel context.CancelCauseFunc) (stop func()) {
	interval := s.cfg.AckWait / 2
	deadline := time.Now().Add(s.cfg.HandlerTimeout)
	next := func(now time.Time) time.Duration { return max(min(interval, deadline.Sub(now)), 0) }
	var mu sync.Mutex
	stopped := false
	mu.Lock()
	defer mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(next(time.Now()), func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		now := time.Now()
		if !now.Before(deadline) {
			cancel(errHandlerTimeout)
			return
		}
		_ = msg.InProgress()
		t.Reset(next(now))
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// Stop drains the subscription: it stops pulling, lets the events already
// received finish, and returns when they have. If ctx ends first, the
// handlers still running see their context cancelled, their events are
// redelivered later, and Stop returns ctx's error. Calling Stop twice is
// harmless.
func (s *Subscription) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		for _, cc := range s.ccs {
			cc.Drain()
		}
		done := make(chan struct{})
		go func() {
			for _, cc := range s.ccs {
				<-cc.Closed()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			s.cancel()
			<-done
			s.stopErr = fmt.Errorf("events: drain %s: %w", s.cfg.Name, ctx.Err())
		}
		s.cancel()
		if s.polled != nil {
			<-s.polled
		}
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
	})
	return s.stopErr
}
