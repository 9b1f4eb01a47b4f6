package events

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
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures a Bus.
type Config struct {
	// Subject routes an event to its NATS subject. Required to publish events;
	// Praetor services pass contracts.Subject.
	Subject func(event.Event) (string, error)
	// Logger receives the layer's logs. Default: slog.Default().
	Logger *slog.Logger
	// Metrics are shared collectors (NewMetrics). Default: unregistered ones.
	Metrics *Metrics
	// PublishTimeout bounds one acknowledged publish. Default: 5s.
	PublishTimeout time.Duration
	// BatchWindow is how many acknowledgements PublishBatch leaves
	// outstanding at once. Default: 256.
	BatchWindow int
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Metrics == nil {
		c.Metrics = unregisteredMetrics()
	}
	c.PublishTimeout = cmp.Or(c.PublishTimeout, 5*time.Second)
	c.BatchWindow = cmp.Or(c.BatchWindow, 256)
	return c
}

func (c Config) validate() error {
	if c.PublishTimeout < 0 {
		return errors.New("events: PublishTimeout must not be negative")
	}
	if c.BatchWindow < 1 {
		return errors.New("events: BatchWindow must be at least 1")
	}
	return nil
}

// Bus publishes and consumes CloudEvents on JetStream.
type Bus struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config

	mu       sync.Mutex
	watcher  *advisoryWatcher
	subs     map[*Subscription]struct{}
	closed   bool
	closeErr error

	// beforeDeadLetter, set by tests, runs before a consumer publishes a
	// dead letter (a slow dead-letter stream).
	beforeDeadLetter func()
}

// New returns a Bus on an open NATS connection; the caller keeps ownership of
// the connection.
func New(nc *nats.Conn, cfg Config) (*Bus, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("events: jetstream: %w", err)
	}
	return &Bus{nc: nc, js: js, cfg: cfg, subs: map[*Subscription]struct{}{}}, nil
}

// JetStream exposes the underlying JetStream context, for tools and tests.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Conn is the NATS connection the bus runs on.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// Publish sends ev and waits for the stream's acknowledgement. The event id is
// the Nats-Msg-Id, so a republished event inside the duplicate window is
// stored once. Under a handler's context the event continues its trace.
func (b *Bus) Publish(ctx context.Context, ev event.Event) error {
	msg, err := b.encode(ctx, ev)
	if err != nil {
		return err
	}
	return b.PublishMsg(ctx, msg)
}

// Ack says where a published event is.
type Ack struct {
	// Stream and Seq locate the stored event.
	Stream string
	Seq    uint64
	// Duplicate: the stream held the event's id already (within its
	// duplicate window) and stored nothing; Seq is the first copy's.
	Duplicate bool
}

// PublishAck is Publish, and says where the event is: where this publish
// stored it, or, for a duplicate, where its first copy is.
func (b *Bus) PublishAck(ctx context.Context, ev event.Event) (Ack, error) {
	msg, err := b.encode(ctx, ev)
	if err != nil {
		return Ack{}, err
	}
	ack, err := b.send(ctx, msg)
	if err != nil {
		return Ack{}, err
	}
	return Ack{Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// Stored reads back the event stored at seq in stream.
func (b *Bus) Stored(ctx context.Context, stream string, seq uint64) (event.Event, error) {
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return event.Event{}, fmt.Errorf("events: read %s #%d: %w", stream, seq, err)
	}
	raw, err := s.GetMsg(ctx, seq)
	if err != nil {
		return event.Event{}, fmt.Errorf("events: read %s #%d: %w", stream, seq, err)
	}
	return Decode(raw.Header, raw.Data)
}

// PublishMsg sends a message already in binary content mode (as the outbox
// relay stores them) and waits for the acknowledgement.
func (b *Bus) PublishMsg(ctx context.Context, msg *nats.Msg) error {
	_, err := b.send(ctx, msg)
	return err
}

// send publishes msg, waits for its acknowledgement and counts it.
func (b *Bus) send(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PublishTimeout)
	defer cancel()
	ack, err := b.js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("events: publish %s: %w", msg.Subject, err)
	}
	b.cfg.Metrics.publishedOf(msgType(msg)).Inc()
	return ack, nil
}

// PublishBatch sends events asynchronously with at most Config.BatchWindow
// acknowledgements outstanding, and returns when every one is acknowledged.
// Events are stored in the order given. An event that cannot be routed or
// lacks a required attribute fails the batch before anything is sent. On a
// later failure it returns a *BatchError naming the events that were not
// acknowledged; republishing them all is safe.
func (b *Bus) PublishBatch(ctx context.Context, evs []event.Event) error {
	// Check everything first, encode each event only as it goes out: the
	// first is on the wire at once, and the server stores while the rest
	// are encoded.
	subjects := make([]string, len(evs))
	for i, ev := range evs {
		subject, err := b.route(ev)
		if err != nil {
			return err
		}
		if err := checkRequired(ev.SpecVersion(), ev.ID(), ev.Source(), ev.Type()); err != nil {
			return fmt.Errorf("events: batch event %d: %w", i, err)
		}
		subjects[i] = subject
	}
	return b.publishAll(ctx, len(evs), func(i int) (*nats.Msg, error) {
		ev := evs[i]
		propagateTrace(ctx, &ev)
		return Encode(subjects[i], ev)
	})
}

// BatchError reports the messages of a batch that were not acknowledged.
type BatchError struct {
	// Failed holds the indexes of the failed messages in the batch, in
	// order.
	Failed []int
	// Errs holds the error of each failed message: Errs[k] is Failed[k]'s.
	Errs []error
	// Err is the first failure.
	Err error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("events: %d of the batch not acknowledged: %v", len(e.Failed), e.Err)
}
func (e *BatchError) Unwrap() error { return e.Err }

// PublishMsgs is PublishBatch for messages already in binary content mode.
func (b *Bus) PublishMsgs(ctx context.Context, msgs []*nats.Msg) error {
	return b.publishAll(ctx, len(msgs), func(i int) (*nats.Msg, error) { return msgs[i], nil })
}

// publishAll publishes the messages msg(0) … msg(n-1) in order, keeping at
// most Config.BatchWindow acknowledgements outstanding in a ring.
func (b *Bus) publishAll(ctx context.Context, n int, msg func(i int) (*nats.Msg, error)) error {
	type pending struct {
		i   int
		msg *nats.Msg
		f   jetstream.PubAckFuture
	}
	var berr BatchError
	fail := func(i int, err error) {
		berr.Failed = append(berr.Failed, i)
		berr.Errs = append(berr.Errs, err)
		if berr.Err == nil {
			berr.Err = err
		}
	}
	timer := time.NewTimer(b.cfg.PublishTimeout)
	defer timer.Stop()
	wait := func(p pending) {
		// With the window full, the oldest acknowledgement has usually
		// arrived: take it without arming the timer.
		select {
		case <-p.f.Ok():
			b.cfg.Metrics.publishedOf(msgType(p.msg)).Inc()
			return
		default:
		}
		timer.Reset(b.cfg.PublishTimeout)
		select {
		case <-p.f.Ok():
			b.cfg.Metrics.publishedOf(msgType(p.msg)).Inc()
		case err := <-p.f.Err():
			fail(p.i, err)
		case <-timer.C:
			fail(p.i, fmt.Errorf("no acknowledgement within %s", b.cfg.PublishTimeout))
		case <-ctx.Done():
			fail(p.i, ctx.Err())
		}
	}
	ring := make([]pending, min(b.cfg.BatchWindow, n))
	head, count := 0, 0
	for i := range n {
		if count == len(ring) {
			wait(ring[head])
			head, count = (head+1)%len(ring), count-1
		}
		m, err := msg(i)
		if err != nil {
			fail(i, err)
			continue
		}
		f, err := b.js.PublishMsgAsync(m)
		if err != nil {
			fail(i, err)
			continue
		}
		ring[(head+count)%len(ring)] = pending{i, m, f}
		count++
	}
	for ; count > 0; count-- {
		wait(ring[head])
		head = (head + 1) % len(ring)
	}
	if berr.Err != nil {
		// Failures arrive out of order (a publish error before an older
		// acknowledgement's timeout): put them in batch order.
		type failure struct {
			i   int
			err error
		}
		fs := make([]failure, len(berr.Failed))
		for k := range fs {
			fs[k] = failure{berr.Failed[k], berr.Errs[k]}
		}
		slices.SortFunc(fs, func(a, b failure) int { return a.i - b.i })
		for k, f := range fs {
			berr.Failed[k], berr.Errs[k] = f.i, f.err
		}
		return &berr
	}
	return nil
}

// Refused reports whether err, the failure to publish a message on subject,
// says the message can never be stored as it is: it is larger than the
// server or the stream accepts, or no stream is configured for its subject
// (asked of the JetStream API, which answers even when the servers of an
// existing stream do not). Timeouts, disconnections, full streams and a
// stream that exists but does not answer are not refusals: trying again may
// work.
func (b *Bus) Refused(ctx context.Context, subject string, err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return true
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		_, serr := b.js.StreamNameBySubject(ctx, subject)
		return errors.Is(serr, jetstream.ErrStreamNotFound)
	}
	return false
}

// ErrTooLarge is returned by Encode for an event whose message the server
// would refuse.
var ErrTooLarge = errors.New("events: event larger than the server accepts")

// Encode routes ev to its subject and writes it in binary content mode,
// continuing the trace found in ctx. The outbox stores what it returns, to
// publish after its transaction commits; so it refuses here (ErrTooLarge)
// an event the server would refuse then, which would sit in the outbox
// unpublishable, holding up the relay behind it.
func (b *Bus) Encode(ctx context.Context, ev event.Event) (*nats.Msg, error) {
	m, err := b.encode(ctx, ev)
	if err != nil {
		return nil, err
	}
	if size, most := msgSize(m), b.nc.MaxPayload(); most > 0 && int64(size) > most {
		return nil, fmt.Errorf("%w: %s %s is %d bytes with its headers; the server's max_payload is %d",
			ErrTooLarge, ev.Type(), ev.ID(), size, most)
	}
	return m, nil
}

// msgSize is the size of m as the server counts it against max_payload:
// its data and its header block.
func msgSize(m *nats.Msg) int {
	n := len(m.Data)
	if len(m.Header) > 0 {
		n += len("NATS/1.0\r\n\r\n")
		for k, vs := range m.Header {
			for _, v := range vs {
				n += len(k) + len(": \r\n") + len(v)
			}
		}
	}
	return n
}

func (b *Bus) encode(ctx context.Context, ev event.Event) (*nats.Msg, error) {
	subject, err := b.route(ev)
	if err != nil {
		return nil, err
	}
	propagateTrace(ctx, &ev)
	return Encode(subject, ev)
}

// route returns the subject of ev.
func (b *Bus) route(ev event.Event) (string, error) {
	if b.cfg.Subject == nil {
		return "", errors.New("events: Config.Subject is required to publish events")
	}
	subject, err := b.cfg.Subject(ev)
	if err != nil {
		return "", fmt.Errorf("events: route %s: %w", ev.Type(), err)
	}
	return subject, nil
}

func msgType(m *nats.Msg) string {
	if v := m.Header[headerPrefix+"type"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Close stops every subscription still running and the dead-letter
// watcher: every subscription stops taking events at once, then the
// in-flight handlers of all of them finish within ctx, and those still
// running when it ends are interrupted together. It does not close the
// connection. Calling it twice is harmless.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.closeErr
	}
	b.closed = true
	subs := make([]*Subscription, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	w := b.watcher
	b.mu.Unlock()

	// Every consumer stops taking events now; then each waits for its own,
	// all at once, so that when ctx ends the handlers still running in
	// every one are interrupted together: waited for one after another, a
	// subscription whose handlers were slow to end would keep the others'
	// running on, uninterrupted.
	for _, s := range subs {
		s.drain()
	}
	errs := make([]error, len(subs), len(subs)+1)
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Go(func() { errs[i] = s.Stop(ctx) })
	}
	wg.Wait()
	if w != nil {
		errs = append(errs, w.stop(ctx))
	}
	b.mu.Lock()
	b.closeErr = errors.Join(errs...)
	b.mu.Unlock()
	return b.closeErr
}
