package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/events"
)

// Publisher publishes messages in order and waits for their
// acknowledgements, and dead-letters those the server refuses for good;
// *events.Bus is one.
type Publisher interface {
	// PublishMsgs fails with an *events.BatchError naming the messages
	// that were not acknowledged, each with its error.
	PublishMsgs(ctx context.Context, msgs []*nats.Msg) error
	// Refused reports whether err, the failure to publish a message on
	// subject, is the server refusing it for good (no stream for its
	// subject, too large), not a failure that may pass.
	Refused(ctx context.Context, subject string, err error) bool
	DeadLetterUnpublishable(ctx context.Context, source string, msg *nats.Msg, reason string, attempts int) error
}

// RelayConfig configures a Relay.
type RelayConfig struct {
	// DB holds the outbox. Required.
	DB store.DB
	// Publisher sends the messages. Required.
	Publisher Publisher
	// Logger. Default: slog.Default().
	Logger *slog.Logger
	// Batch is how many messages one pass publishes. Default: 256.
	Batch int
	// Interval is how often the relay looks for messages nobody kicked it
	// for (from another process, or left by a crash). Default: 1s.
	Interval time.Duration
	// Now is the clock of sent_at. Default: time.Now.
	Now func() time.Time
	// PruneInterval is how often the relay deletes the messages marked sent
	// rather than deleted when published: the one with the highest id at
	// the time (store.MarkSent), and any an operator marked. Default: 1m.
	PruneInterval time.Duration
	// MarkDelay is how long the relay gathers the events handlers have
	// published (PublishCommitted) before it marks them sent, all together:
	// at hundreds of events a second, one write instead of one per event.
	// Until marked, they are skipped by passes and count as published for
	// Published. Default (and zero): 10ms; negative marks each batch at
	// once.
	MarkDelay time.Duration
	// DeadLetterAfter is how long the server may go on refusing a message
	// for good (Publisher.Refused: no stream takes its subject, or it is too
	// large) before the relay moves it from the outbox to the dead-letter
	// stream, with the server's reason. Until then the passes go on past
	// it, trying it again every DeadLetterAfter/6. Other failures
	// (timeouts, a stream that does not answer, the server down) never
	// count. Default: 1m.
	DeadLetterAfter time.Duration
	// Registerer, when set, gets praetor_outbox_unsent{service}: the
	// messages the outbox holds unsent (committed, not yet published),
	// counted every CountInterval. It grows while NATS is out of reach.
	// Default: no gauge.
	Registerer prometheus.Registerer
	// Service labels the gauge: the services of the process. The outbox is
	// the database's, so processes on one database report the same count.
	Service string
	// CountInterval is how often the relay counts the unsent messages for
	// the gauge. Default: 15s.
	CountInterval time.Duration
}

// Relay publishes the outbox. Every process that writes to the outbox runs
// one; a leadership lock taken per pass lets one relay publish at a time,
// in outbox order, so events of one key keep their order — but for a
// message that fails while later ones are stored (it lands after them when
// published again), and one the server refuses for good, which the passes
// go on past and which ends in the dead-letter stream (DeadLetterAfter).
//
// A handler that has just committed events does not wait for a pass to read
// them back: it publishes them itself through PublishCommitted before it
// acknowledges its input, which keeps a key's order too (the key's next
// event is handled only after that acknowledgement), and the relay marks
// them sent in batches. Passes skip the events being published that way.
type Relay struct {
	cfg  RelayConfig
	kick chan struct{}

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	started bool

	catchUp chan struct{} // holds a token while a CatchUp runs: one at a time

	// inflight holds the events PublishCommitted is publishing, or has
	// published (the stream holds them) and not yet marked sent.
	inflightMu sync.Mutex
	inflight   map[string]flight
	// waiting is set when a pass left a message behind an event of its
	// subject in flight: the next settle kicks a pass for it, instead of it
	// waiting for the interval.
	waiting atomic.Bool
	// toMark are published event ids waiting to be marked sent; marking
	// signals the marker.
	toMark  []string
	marking chan struct{}
	marked  chan struct{} // closed when the marker has ended
	pruned  chan struct{} // closed when the pruner has ended
	counted chan struct{} // closed when the counter has ended

	unsent prometheus.Gauge // nil without RelayConfig.Registerer

	// refusals are the messages the server refuses for good, by event id.
	refusalsMu sync.Mutex
	refusals   map[string]refusal
}

// flight is an event of Relay.inflight: its subject, and whether the
// stream holds it already (it awaits its sent mark).
type flight struct {
	subject   string
	published bool
}

// refusal is a run of refusals of one message: the first, the last, and
// how many.
type refusal struct {
	first, last time.Time
	n           int
	// kept: too large to dead-letter, it stays in the outbox; it is tried
	// again refusalGap after its last try (and logged again if refused).
	kept bool
}

// toTry returns the rows a pass or a catch-up publishes now: all but those
// the server refuses that are resting, and, for a pass (inFlight), those
// their handlers are publishing (PublishCommitted) and any other of their
// subjects, which the pass would publish ahead of them. A refused message is
// tried again DeadLetterAfter/6 after its last refusal (six times before it
// is dead-lettered), not at every pass, since each try costs a pass the
// client's wait for an answer that will not come; a kept one refusalGap
// after its last try.
func (r *Relay) toTry(rows []store.OutboxMessage, inFlight bool) []store.OutboxMessage {
	now := r.cfg.Now()
	todo := make([]store.OutboxMessage, 0, len(rows))
	var (
		flying map[string]flight // event ids in flight
		busy   map[string]bool   // subjects with an event in flight
	)
	if inFlight {
		r.inflightMu.Lock()
		if len(r.inflight) > 0 {
			flying, busy = maps.Clone(r.inflight), make(map[string]bool, len(r.inflight))
			for _, f := range r.inflight {
				busy[f.subject] = true
			}
		}
		r.inflightMu.Unlock()
	}
	r.refusalsMu.Lock()
	defer r.refusalsMu.Unlock()
	for _, row := range rows {
		if busy[row.Subject] {
			if _, self := flying[row.EventID]; !self {
				r.waiting.Store(true) // settle kicks a pass for it
			}
			continue
		}
		if f, ok := r.refusals[row.EventID]; ok {
			rest := r.cfg.DeadLetterAfter / 6
			if f.kept {
				rest = r.refusalGap()
			}
			if now.Sub(f.last) < rest {
				continue
			}
		}
		todo = append(todo, row)
	}
	return todo
}

// refusalGap is how long after its last try a message's refusals are
// forgotten, and a kept message is tried again (toTry): tries come
// DeadLetterAfter/6 apart, passes at most a minute.
func (r *Relay) refusalGap() time.Duration { return 2*r.cfg.DeadLetterAfter + 2*time.Minute }

// NewRelay returns a relay; Start runs it.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.DB == nil || cfg.Publisher == nil {
		return nil, errors.New("delivery: relay needs DB and Publisher")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.Batch = cmp.Or(cfg.Batch, 256)
	cfg.Interval = cmp.Or(cfg.Interval, time.Second)
	cfg.PruneInterval = cmp.Or(cfg.PruneInterval, time.Minute)
	cfg.DeadLetterAfter = cmp.Or(cfg.DeadLetterAfter, time.Minute)
	cfg.MarkDelay = cmp.Or(cfg.MarkDelay, 10*time.Millisecond)
	cfg.CountInterval = cmp.Or(cfg.CountInterval, 15*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Batch < 1 || cfg.Interval <= 0 || cfg.PruneInterval <= 0 || cfg.DeadLetterAfter < 1 || cfg.CountInterval <= 0 {
		return nil, errors.New("delivery: relay Batch, Interval, PruneInterval, DeadLetterAfter and CountInterval must be positive")
	}
	r := &Relay{cfg: cfg, kick: make(chan struct{}, 1), inflight: map[string]flight{},
		marking: make(chan struct{}, 1), catchUp: make(chan struct{}, 1), refusals: map[string]refusal{}}
	if cfg.Registerer != nil {
		r.unsent = prometheus.NewGauge(prometheus.GaugeOpts{Name: "praetor_outbox_unsent",
			Help:        "Messages the outbox holds unsent: committed, not yet published (grows while NATS is out of reach).",
			ConstLabels: prometheus.Labels{"service": cfg.Service}})
		if err := cfg.Registerer.Register(r.unsent); err != nil {
			return nil, fmt.Errorf("delivery: register the outbox gauge: %w", err)
		}
	}
	return r, nil
}

// Kick asks the relay to publish now.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Start runs the relay until Stop.
func (r *Relay) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("delivery: relay already started")
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.done = make(chan struct{})
	r.marked = make(chan struct{})
	r.pruned = make(chan struct{})
	r.counted = make(chan struct{})
	go r.run(ctx)
	go r.markLoop(ctx)
	go r.pruneLoop(ctx)
	go r.countLoop(ctx)
	return nil
}

// countLoop sets the unsent gauge every CountInterval, from a count of the
// outbox: one query an interval, whatever the events' rate. A failed count
// leaves the last figure (the database's own failure shows elsewhere).
func (r *Relay) countLoop(ctx context.Context) {
	defer close(r.counted)
	if r.unsent == nil {
		return
	}
	t := time.NewTicker(r.cfg.CountInterval)
	defer t.Stop()
	for {
		r.count(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Relay) count(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CountInterval)
	defer cancel()
	n, err := store.CountUnsent(cctx, r.cfg.DB)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Debug("outbox: counting the unsent messages failed", "error", err)
		}
		return
	}
	r.unsent.Set(float64(n))
}

// Prune deletes the messages marked sent (but the one with the highest id,
// see store.MarkSent) and returns how many went; the relay calls it every
// PruneInterval. Unsent messages are never deleted, however old.
func (r *Relay) Prune(ctx context.Context) (int64, error) {
	return store.PruneSent(ctx, r.cfg.DB, r.cfg.Now())
}

func (r *Relay) pruneLoop(ctx context.Context) {
	defer close(r.pruned)
	t := time.NewTicker(r.cfg.PruneInterval)
	defer t.Stop()
	// A first round at once: an outbox from a version that kept what it
	// sent holds an hour of it, which every pass would read until pruned.
	r.pruneRound(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.pruneRound(ctx)
	}
}

// pruneRound prunes, unless another process is at it: the others' deletes
// would only wait on the same rows. A failure is logged; the next round
// tries again.
func (r *Relay) pruneRound(ctx context.Context) {
	unlock, ok, err := r.cfg.DB.TryLock(ctx, pruneLock)
	if err == nil && ok {
		var n int64
		n, err = r.Prune(ctx)
		unlock()
		if n > 0 {
			r.cfg.Logger.Debug("outbox: pruned messages marked sent", "messages", n)
		}
	}
	if err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("outbox: pruning sent messages failed; the next round tries again", "error", err)
	}
}

// Stop ends the relay after its current pass, marking sent the events
// published that await their mark; messages it has not published stay in
// the outbox for the next relay. Calling it twice is harmless.
func (r *Relay) Stop(ctx context.Context) error {
	r.mu.Lock()
	cancel, done, marked, pruned, counted := r.cancel, r.done, r.marked, r.pruned, r.counted
	r.cancel = nil
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	for _, ch := range []chan struct{}{done, marked, pruned, counted} {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// PublishCommitted publishes events a transaction has just committed to the
// outbox (encoded as the outbox holds them), in the order given, and
// returns once the stream has stored them; they are marked sent soon after.
// Call it after the commit and before acknowledging the input: the key's
// next event then finds them published. When it fails, nothing is lost: the
// rows stay unsent for the relay's passes (it is kicked), and the caller
// should not acknowledge its input yet.
func (r *Relay) PublishCommitted(ctx context.Context, msgs []store.OutboxMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.EventID
	}
	r.inflightMu.Lock()
	for _, m := range msgs {
		r.inflight[m.EventID] = flight{subject: m.Subject}
	}
	r.inflightMu.Unlock()
	if err := r.cfg.Publisher.PublishMsgs(ctx, OutboxMsgs(msgs)); err != nil {
		r.settle(ids)
		r.Kick()
		return err
	}
	// Under r.mu, so that a Stop under way either sees these ids in its
	// marker's last batch or leaves them to be marked here.
	r.mu.Lock()
	running := r.cancel != nil
	if running {
		r.inflightMu.Lock()
		r.toMark = append(r.toMark, ids...)
		for _, m := range msgs {
			r.inflight[m.EventID] = flight{subject: m.Subject, published: true}
		}
		r.inflightMu.Unlock()
	}
	r.mu.Unlock()
	if !running {
		// No marker: mark them now (the caller waits, as a pass would).
		defer r.settle(ids)
		return store.MarkSentEvents(ctx, r.cfg.DB, ids, r.cfg.Now())
	}
	select {
	case r.marking <- struct{}{}:
	default:
	}
	return nil
}

// settle ends the in-flight state of events.
func (r *Relay) settle(ids []string) {
	r.inflightMu.Lock()
	for _, id := range ids {
		delete(r.inflight, id)
	}
	r.inflightMu.Unlock()
	if r.waiting.Swap(false) {
		r.Kick()
	}
}

// Published reports whether the event eventID has been published by
// PublishCommitted (the stream holds it) and awaits its mark: the outbox
// still has it unsent, for about MarkDelay and the mark's statement (a
// failed mark leaves it to a pass). False for events published by other
// processes, or already marked.
func (r *Relay) Published(eventID string) bool {
	r.inflightMu.Lock()
	defer r.inflightMu.Unlock()
	return r.inflight[eventID].published
}

// markLoop marks the events PublishCommitted published, in batches: those
// that wait when a batch starts and those published in the MarkDelay
// after. A failed mark is logged; those rows are published again by a
// pass, and the stream drops the copies.
func (r *Relay) markLoop(ctx context.Context) {
	defer close(r.marked)
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	for {
		var stop bool
		select {
		case <-ctx.Done():
			stop = true
		case <-r.marking:
			if d := r.cfg.MarkDelay; d > 0 {
				gather.Reset(d)
				select {
				case <-gather.C:
				case <-ctx.Done():
					gather.Stop()
					stop = true
				}
			}
		}
		r.inflightMu.Lock()
		ids := r.toMark
		r.toMark = nil
		r.inflightMu.Unlock()
		if len(ids) > 0 {
			// The caller's context may be gone: marking is bookkeeping
			// that should still happen.
			mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := store.MarkSentEvents(mctx, r.cfg.DB, ids, r.cfg.Now()); err != nil {
				r.cfg.Logger.Warn("outbox: marking published events failed; a relay pass publishes them again",
					"events", len(ids), "error", err)
			}
			cancel()
			r.settle(ids)
		}
		if stop {
			return
		}
	}
}

func (r *Relay) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-tick.C:
		}
		err := r.drain(ctx)
		switch {
		case err == nil, errors.Is(err, errRefused):
			// Refused messages are logged by send and retried on their
			// own schedule (resting): no reason to slow the others.
			failures = 0
		case ctx.Err() != nil:
			return
		default:
			failures++
			wait := min(r.cfg.Interval*time.Duration(1<<min(failures, 6)), time.Minute)
			r.cfg.Logger.Warn("outbox relay failed; retrying", "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			r.Kick()
		}
	}
}

// CatchUp publishes every message committed to the outbox before it was
// called and still unsent, in outbox order, and marks them sent, but for
// those the server refuses for good (see send), which it leaves to the
// relay's passes: if the server takes one later after all (its stream
// created, max_payload raised), it lands after later events of its key. It
// takes
// no lock and skips nothing, not even the messages this process's handlers
// are publishing: a message published twice is dropped by the stream as a
// duplicate, while one skipped could reach the stream after the next event
// of its key. A redelivery of a committed event is acknowledged only after
// it (Inbox); it is rare, and costs at most a copy of the backlog.
//
// The catch-ups of one process run one at a time: after a crash many
// redeliveries arrive together, and each would otherwise publish the whole
// backlog; in turn, each finds only what is still unsent.
func (r *Relay) CatchUp(ctx context.Context) error {
	select {
	case r.catchUp <- struct{}{}:
		defer func() { <-r.catchUp }()
	case <-ctx.Done():
		return ctx.Err()
	}
	head, err := store.OutboxHead(ctx, r.cfg.DB)
	if err != nil {
		return err
	}
	var after int64
	for {
		rows, err := store.UnsentAfter(ctx, r.cfg.DB, after, r.cfg.Batch)
		if err != nil {
			return err
		}
		// Rows come in id order; those past head were committed after the
		// call.
		n := 0
		for n < len(rows) && rows[n].ID <= head {
			n++
		}
		if n == 0 {
			return nil
		}
		after = rows[n-1].ID
		// A message the server refuses for good is left to the relay's
		// passes (resting, and sent that way if it is tried here): it
		// cannot be in the stream before the input is acknowledged.
		todo := r.toTry(rows[:n], false)
		if len(todo) == 0 {
			continue
		}
		if _, err := r.send(ctx, todo); err != nil && !errors.Is(err, errRefused) {
			return err
		}
	}
}

// errRefused is wrapped by send's error when the server refused messages
// for good that are not dead-lettered yet (the others are published).
var errRefused = errors.New("outbox: the server refuses messages")

// send publishes outbox rows in order, marks those the server took as sent,
// and returns how many it took. When it took all, the error is nil. A
// message the server refuses for good (Publisher.Refused) is published again
// by later sends until it has been refused for DeadLetterAfter, then moved to
// the dead-letter stream; meanwhile the error wraps errRefused, and only
// then: any other failure is returned as it is, and counts for nothing.
func (r *Relay) send(ctx context.Context, rows []store.OutboxMessage) (int, error) {
	msgs := OutboxMsgs(rows)
	err := r.cfg.Publisher.PublishMsgs(ctx, msgs)
	var berr *events.BatchError
	if err != nil && !errors.As(err, &berr) {
		return 0, err
	}
	var failed map[int]error // by row index; nil when all were taken
	if berr != nil {
		failed = make(map[int]error, len(berr.Failed))
		for k, i := range berr.Failed {
			failed[i] = berr.Err
			if k < len(berr.Errs) {
				failed[i] = berr.Errs[k]
			}
		}
	}
	sent := make([]int64, 0, len(rows))
	for i, row := range rows {
		if _, ok := failed[i]; !ok {
			sent = append(sent, row.ID)
		}
	}
	if err := store.MarkSent(ctx, r.cfg.DB, sent, r.cfg.Now()); err != nil {
		return 0, err
	}
	r.forget(rows, failed)
	if berr == nil {
		return len(sent), nil
	}
	now := r.cfg.Now()
	refused := 0
	var other error
	verdicts := map[string]bool{} // subject and error → Refused, asked once a send
	for _, i := range berr.Failed {
		row, ferr := rows[i], failed[i]
		key := row.Subject + "\x00" + ferr.Error()
		isRefused, ok := verdicts[key]
		if !ok {
			isRefused = r.cfg.Publisher.Refused(ctx, row.Subject, ferr)
			verdicts[key] = isRefused
		}
		if !isRefused {
			other = cmp.Or(other, ferr)
			continue
		}
		f := r.refuse(row.EventID, now)
		if now.Sub(f.first) < r.cfg.DeadLetterAfter {
			refused++
			r.cfg.Logger.Warn("outbox: the server refuses a message; trying it again later: refused for dead_letter_after, it goes to the dead-letter stream (or stays in the outbox if too large for a dead letter)",
				"event_id", row.EventID, "subject", row.Subject, "refused_since", f.first, "refusals", f.n,
				"dead_letter_after", r.cfg.DeadLetterAfter, "error", ferr)
			continue
		}
		if err := r.deadLetter(ctx, row, msgs[i], f, ferr); err != nil {
			if !errors.Is(err, events.ErrTooLarge) {
				return len(sent), err
			}
			// Nothing but the outbox can keep it: it stays there, refused,
			// and this process leaves it alone.
			refused++
			r.keep(row.EventID)
			r.cfg.Logger.Error("outbox: a message the server refuses is too large to dead-letter; it stays in the outbox: mark its row sent (UPDATE outbox SET sent_at = CURRENT_TIMESTAMP WHERE id = outbox_id; deleting the newest row would let a new message take its id), or let the server take it (max_payload)",
				"event_id", row.EventID, "outbox_id", row.ID, "subject", row.Subject, "bytes", len(row.Data), "error", ferr)
		}
	}
	switch {
	case other != nil:
		return len(sent), fmt.Errorf("outbox: %d of %d messages not published: %w", len(berr.Failed), len(rows), other)
	case refused > 0:
		return len(sent), fmt.Errorf("%w: %d of %d messages refused", errRefused, refused, len(rows))
	}
	return len(sent), nil
}

// refuse records that the server refused a message now, and returns when
// it began refusing it: the first refusal of a run, where a run ends when
// no pass has tried the message for a while (another process's relay may
// have published it meanwhile). Runs that ended are forgotten here too.
func (r *Relay) refuse(eventID string, now time.Time) refusal {
	gap := r.refusalGap()
	r.refusalsMu.Lock()
	defer r.refusalsMu.Unlock()
	for id, f := range r.refusals {
		if now.Sub(f.last) > gap {
			delete(r.refusals, id)
		}
	}
	f, ok := r.refusals[eventID]
	if !ok {
		f.first = now
	}
	f.last = now
	f.n++
	r.refusals[eventID] = f
	return f
}

// keep marks a refused message that stays in the outbox.
func (r *Relay) keep(eventID string) {
	r.refusalsMu.Lock()
	defer r.refusalsMu.Unlock()
	f := r.refusals[eventID]
	f.kept = true
	r.refusals[eventID] = f
}

// forget ends the refusals of the rows that were published.
func (r *Relay) forget(rows []store.OutboxMessage, failed map[int]error) {
	r.refusalsMu.Lock()
	defer r.refusalsMu.Unlock()
	if len(r.refusals) == 0 {
		return
	}
	for i, row := range rows {
		if _, ok := failed[i]; !ok {
			delete(r.refusals, row.EventID)
		}
	}
}

// deadLetter moves an outbox row the server keeps refusing to the
// dead-letter stream: copied there first, deleted from the outbox after,
// so that a crash in between leaves a copy (stored once: its id is fixed)
// and the row.
func (r *Relay) deadLetter(ctx context.Context, row store.OutboxMessage, msg *nats.Msg, f refusal, cause error) error {
	reason := fmt.Sprintf("the server refused it %d times since %s: %v", f.n, f.first.UTC().Format(time.RFC3339), cause)
	if err := r.cfg.Publisher.DeadLetterUnpublishable(ctx, "outbox", msg, reason, f.n); err != nil {
		return fmt.Errorf("outbox: dead-letter event %s: %w", row.EventID, err)
	}
	if err := store.DeleteOutbox(ctx, r.cfg.DB, row.ID, r.cfg.Now()); err != nil {
		return fmt.Errorf("outbox: delete dead-lettered event %s: %w", row.EventID, err)
	}
	r.refusalsMu.Lock()
	delete(r.refusals, row.EventID)
	r.refusalsMu.Unlock()
	r.cfg.Logger.Error("outbox: message moved to the dead-letter stream", "event_id", row.EventID,
		"subject", row.Subject, "reason", reason)
	return nil
}

// OutboxMsgs returns the messages outbox rows hold, as they are published.
func OutboxMsgs(rows []store.OutboxMessage) []*nats.Msg {
	msgs := make([]*nats.Msg, len(rows))
	for i, row := range rows {
		msgs[i] = &nats.Msg{Subject: row.Subject, Header: nats.Header(row.Header), Data: row.Data}
	}
	return msgs
}

// relayLock is the store lock that makes one relay the publisher, and
// pruneLock the one that makes one relay the pruner.
const (
	relayLock = "outbox-relay"
	pruneLock = "outbox-prune"
)

// drain publishes until the outbox has nothing unsent. When another relay
// holds the lock it tries again shortly, since that relay may have read the
// outbox before this process's last commit.
func (r *Relay) drain(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		_, leader, err := r.run1(ctx, true)
		if err != nil || leader {
			return err
		}
		if attempt > 50 {
			return nil // the leader will get to it; the poll catches the rest
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Flush runs one pass: holding the relay lock, it publishes up to Batch
// unsent messages in outbox order and marks them sent. leader is false when
// another relay holds the lock.
func (r *Relay) Flush(ctx context.Context) (published int, leader bool, err error) {
	return r.run1(ctx, false)
}

// run1 takes the relay lock and publishes one batch, or every batch when
// all is set. The lock is held outside any transaction: publishing waits on
// the network, and a transaction held meanwhile would stall every writer
// (SQLite's single writer; PostgreSQL's serializable readers). The messages
// the server took are marked sent; those it did not stay unsent for the next
// pass, which publishes them again (the stream drops copies of any that did
// get through). A pass goes on past messages the server refuses for good
// (send) and past those being published by their handlers, and returns the
// refusals' error at its end.
func (r *Relay) run1(ctx context.Context, all bool) (published int, leader bool, err error) {
	unlock, ok, err := r.cfg.DB.TryLock(ctx, relayLock)
	if err != nil || !ok {
		return 0, false, err
	}
	defer unlock()
	var (
		refused error
		after   int64
	)
	for {
		rows, err := store.UnsentAfter(ctx, r.cfg.DB, after, r.cfg.Batch)
		if err != nil || len(rows) == 0 {
			return published, true, cmp.Or(err, refused)
		}
		after = rows[len(rows)-1].ID
		if todo := r.toTry(rows, true); len(todo) > 0 {
			sent, err := r.send(ctx, todo)
			published += sent
			if err != nil && !errors.Is(err, errRefused) {
				return published, true, err
			}
			refused = cmp.Or(refused, err)
		}
		if !all || len(rows) < r.cfg.Batch {
			return published, true, refused
		}
	}
}
