// Package delivery makes at-least-once event delivery exactly once in effect,
// with an inbox and an outbox in the relational store (ARCHITECTURE.md,
// "Delivery").
//
// A handler built with Inbox.Handler first prepares its work outside any
// transaction (reads, model calls), then commits in ONE transaction: the
// state change, an inbox row "this consumer handled this event", and the
// events to emit, written to the outbox. A redelivered event finds its inbox
// row and is acknowledged with no second effect. The Relay publishes outbox
// rows in order with Nats-Msg-Id = event id and marks them sent, which
// deletes them: the outbox holds what is still to publish, the stream the
// rest. A crash between commit and publish loses nothing (the rows wait for
// the relay) and a crash between publish and mark publishes twice, which the
// stream's duplicate window and the consumers' inboxes drop.
package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/events"
)

// Step commits one event's effect inside the handler's transaction and
// returns the events to emit with it. Emitted events should carry ids derived
// from the input (events.DeriveID), so a re-run emits the same ids.
type Step func(ctx context.Context, tx store.Querier) ([]event.Event, error)

// Work prepares the handling of an event outside any transaction and returns
// the Step that commits it. Returning an error retries the event (or
// dead-letters it, when permanent) with nothing committed.
type Work func(ctx context.Context, ev event.Event) (Step, error)

// Encoder routes and encodes events as the bus publishes them; *events.Bus
// is one.
type Encoder interface {
	Encode(ctx context.Context, ev event.Event) (*nats.Msg, error)
}

// InboxConfig configures an Inbox.
type InboxConfig struct {
	// DB holds the inbox and outbox tables. Required.
	DB store.DB
	// Encoder turns emitted events into outbox messages. Required.
	Encoder Encoder
	// Consumer names the inbox: the service role handling the events. Required.
	Consumer string
	// Relay, when set, publishes the events a commit emitted right after
	// the commit (Relay.PublishCommitted), before the handler returns;
	// without one they wait in the outbox for a relay's pass.
	Relay *Relay
	// Now is the clock of inbox rows. Default: time.Now.
	Now func() time.Time
	// CheckInWork says that the Work looks the event up in the inbox
	// itself, folded into its first read (conversation.GetSessionForEvent),
	// and returns ErrHandled when it was handled: the Inbox then does not
	// look it up first, which saves a round trip per event. Exactly once
	// does not rest on the look-up either way (the inbox row written with
	// the effects does); it spares a redelivery the work and its model
	// calls.
	CheckInWork bool
}

// ErrHandled is returned by a Work that found the event handled already
// (InboxConfig.CheckInWork): the event is acknowledged with no effect.
var ErrHandled = errors.New("delivery: event handled already")

// errHandledMeanwhile rolls back a handler's transaction that found its
// event's inbox row written by another delivery.
var errHandledMeanwhile = errors.New("delivery: event handled meanwhile by another delivery")

// Inbox wraps handlers so their effects commit exactly once.
type Inbox struct{ cfg InboxConfig }

// NewInbox returns an Inbox.
func NewInbox(cfg InboxConfig) (*Inbox, error) {
	if cfg.DB == nil || cfg.Encoder == nil || cfg.Consumer == "" {
		return nil, errors.New("delivery: inbox needs DB, Encoder and Consumer")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Inbox{cfg: cfg}, nil
}

// TenantExtension is the CloudEvents extension the inbox reads the tenant from.
const TenantExtension = "tenant"

// systemTenant owns inbox rows of events that carry no tenant.
const systemTenant = "system"

// Handler returns an events.Handler running w exactly once in effect.
func (in *Inbox) Handler(w Work) events.Handler {
	return func(ctx context.Context, ev event.Event) error {
		if !in.cfg.CheckInWork {
			done, err := store.Handled(ctx, in.cfg.DB, in.cfg.Consumer, ev.ID())
			if err != nil {
				return err
			}
			if done {
				return in.redelivered(ctx)
			}
		}
		step, err := w(ctx, ev)
		if errors.Is(err, ErrHandled) {
			return in.redelivered(ctx)
		}
		if err != nil {
			return err
		}
		return in.commit(ctx, ev, step)
	}
}

// TxHandler is Handler for handlers that do all their work in the transaction.
func (in *Inbox) TxHandler(h func(ctx context.Context, tx store.Querier, ev event.Event) ([]event.Event, error)) events.Handler {
	return in.Handler(func(_ context.Context, ev event.Event) (Step, error) {
		return func(ctx context.Context, tx store.Querier) ([]event.Event, error) { return h(ctx, tx, ev) }, nil
	})
}

// redelivered settles a redelivery of an event committed before. The
// delivery that committed it may have died, or failed to publish, before
// its events went out, or may still be publishing them: the relay first
// catches up with everything committed so far (Relay.CatchUp), so those
// events are in the stream before anything this acknowledgement lets
// through, the key's next event above all.
func (in *Inbox) redelivered(ctx context.Context) error {
	if in.cfg.Relay == nil {
		return nil
	}
	return in.catchUp(ctx)
}

// catchUp has the relay publish what is committed and unsent, its events
// among them, trying again (every catchUpBackoff, doubling up to
// catchUpBackoffMax) until it succeeds or ctx ends (the handler's timeout,
// two minutes by default, or a shutdown). The event's effect is committed:
// a failure to publish is not its failure, and should not use up its
// deliveries (at the last one it would be dead-lettered, though handled,
// and its key's next event would go ahead and be published first).
// Meanwhile the event stays unacknowledged, so nothing of its key goes
// before its events. Only an outage longer than MaxDeliver handler timeouts
// (ten minutes with the defaults) uses them up: the handled event is then
// dead-lettered, and a redrive finds it handled and publishes its events.
func (in *Inbox) catchUp(ctx context.Context) error {
	wait := catchUpBackoff
	for tries := 1; ; tries++ {
		err := in.cfg.Relay.CatchUp(ctx)
		if err == nil {
			return nil
		}
		if tries == catchUpWarnAfter {
			in.cfg.Relay.cfg.Logger.Warn("delivery: the events of a handled event still cannot be published; trying again",
				"consumer", in.cfg.Consumer, "tries", tries, "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delivery: publish the events of a handled event (tried %d times): %w", tries, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, catchUpBackoffMax)
	}
}

// The waits between an inbox's catch-ups, and after how many failed tries
// it says so.
const (
	catchUpBackoff    = 50 * time.Millisecond
	catchUpBackoffMax = 5 * time.Second
	catchUpWarnAfter  = 5
)

// handledLookupTimeout bounds the inbox look-up after a failed
// transaction, which outlives the handler's context.
const handledLookupTimeout = 5 * time.Second

func (in *Inbox) commit(ctx context.Context, ev event.Event, step Step) error {
	tenant := events.ExtensionString(ev, TenantExtension)
	tenant = cmp.Or(tenant, systemTenant)
	var emitted []store.OutboxMessage
	err := in.cfg.DB.Tx(ctx, func(tx store.Querier) error {
		emitted = nil // a store may run fn again; only the committed run counts
		out, err := step(ctx, tx)
		if err != nil {
			return err
		}
		msgs, err := in.outbox(ctx, out)
		if err != nil {
			return events.Permanent(err)
		}
		// The inbox row last, with the events (one round trip on
		// PostgreSQL).
		first, err := store.MarkHandledWith(ctx, tx, in.cfg.DB.Dialect(), tenant, in.cfg.Consumer, ev.ID(), in.cfg.Now(), msgs)
		if err != nil {
			return err
		}
		if !first {
			return errHandledMeanwhile // another delivery committed it meanwhile: undo this one
		}
		emitted = msgs
		return nil
	})
	if errors.Is(err, errHandledMeanwhile) {
		return in.redelivered(ctx)
	}
	if err != nil {
		// The work may have failed on the writes of another delivery of
		// the event that committed meanwhile (a unique key): then the
		// event is handled, and this delivery is acknowledged. The
		// look-up runs even when ctx has ended (the transaction may have
		// waited on that delivery's rows until the handler's timeout),
		// within a bound of its own: on a database gone silent it would
		// otherwise wait on a dead connection, its worker with it, for
		// as long as the kernel keeps the connection.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handledLookupTimeout)
		done, herr := store.Handled(lctx, in.cfg.DB, in.cfg.Consumer, ev.ID())
		cancel()
		if herr == nil && done {
			return in.redelivered(ctx)
		}
		return err
	}
	if len(emitted) > 0 && in.cfg.Relay != nil {
		if err := in.cfg.Relay.PublishCommitted(ctx, emitted); err != nil {
			// Committed, not yet published: the relay publishes them, in
			// order with anything else unsent, before the event is
			// acknowledged.
			return in.catchUp(ctx)
		}
	}
	return nil
}

func (in *Inbox) outbox(ctx context.Context, evs []event.Event) ([]store.OutboxMessage, error) {
	msgs := make([]store.OutboxMessage, 0, len(evs))
	for _, ev := range evs {
		m, err := in.cfg.Encoder.Encode(ctx, ev)
		if err != nil {
			return nil, fmt.Errorf("emit %s: %w", ev.Type(), err)
		}
		tenant := events.ExtensionString(ev, TenantExtension)
		msgs = append(msgs, store.OutboxMessage{
			TenantID: cmp.Or(tenant, systemTenant), EventID: ev.ID(), Subject: m.Subject, Header: m.Header, Data: m.Data,
		})
	}
	return msgs, nil
}

// Emit writes events to the outbox inside a transaction the caller runs (a
// gateway creating a session and its first event, say), and returns the
// messages it wrote. After the commit, hand them to Relay.PublishCommitted,
// which publishes them at once, or kick the relay; a store may run the
// transaction more than once, and only the committed run's messages count.
func Emit(ctx context.Context, tx store.Querier, enc Encoder, evs ...event.Event) ([]store.OutboxMessage, error) {
	in := &Inbox{cfg: InboxConfig{Encoder: enc}}
	msgs, err := in.outbox(ctx, evs)
	if err != nil {
		return nil, err
	}
	return msgs, store.Enqueue(ctx, tx, msgs...)
}
