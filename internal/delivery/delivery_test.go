package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// prepare adds the table of effects the test handlers write.
func prepare(t *testing.T, db store.DB) store.DB {
	t.Helper()
	if _, err := db.Exec(context.Background(), `CREATE TABLE effects (event_id TEXT NOT NULL, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func effects(t *testing.T, db store.DB, eventID string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT COUNT(*) FROM effects WHERE event_id = $1`, eventID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

type rig struct {
	db    store.DB
	bus   *events.Bus
	topic eventstest.Topic
}

func newRig(t *testing.T, open func(*testing.T) store.DB) *rig {
	t.Helper()
	srv := eventstest.StartServer(t)
	r := &rig{db: open(t), topic: eventstest.NewTopic()}
	r.bus = r.newBus(t, srv)
	ctx := context.Background()
	if err := r.bus.EnsureStream(ctx, events.StreamConfig{Name: r.topic.Stream, Subjects: []string{r.topic.Pattern()}, Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) newBus(t *testing.T, srv *events.Server) *events.Bus {
	bus, err := events.New(eventstest.Connect(t, srv), events.Config{Subject: r.topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	return bus
}

func (r *rig) inbox(t *testing.T, relay *delivery.Relay) *delivery.Inbox {
	in, err := delivery.NewInbox(delivery.InboxConfig{DB: r.db, Encoder: r.bus, Consumer: "worker", Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (r *rig) relay(t *testing.T) *delivery.Relay {
	rl, err := delivery.NewRelay(delivery.RelayConfig{DB: r.db, Publisher: r.bus, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

func (r *rig) streamMsgs(t *testing.T) []string {
	t.Helper()
	var ids []string
	if err := r.bus.Replay(context.Background(), events.ReplayConfig{Stream: r.topic.Stream}, func(rec events.Record) error {
		if rec.Err != nil {
			return rec.Err
		}
		ids = append(ids, rec.Event.ID())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// effect is a handler that records one effect and emits one derived event.
func effect(ctx context.Context, tx store.Querier, ev event.Event) ([]event.Event, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO effects (event_id, n) VALUES ($1, 1)`, ev.ID()); err != nil {
		return nil, err
	}
	out := eventstest.NewEvent(events.DeriveID(ev.ID(), "out"), "out", 1)
	return []event.Event{out}, nil
}

func forEachAdapter(t *testing.T, fn func(t *testing.T, open func(*testing.T) store.DB)) {
	for _, a := range testdb.Adapters() {
		t.Run(a.Name, func(t *testing.T) {
			fn(t, func(t *testing.T) store.DB { return prepare(t, a.Open(t)) })
		})
	}
}

func TestRedeliveryHasNoSecondEffect(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		r := newRig(t, open)
		h := r.inbox(t, nil).TxHandler(effect)
		ev := eventstest.NewEvent("in-1", "k", 0)
		for range 3 {
			if err := h(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
		}
		if n := effects(t, r.db, "in-1"); n != 1 {
			t.Fatalf("%d effects after 3 deliveries, want 1", n)
		}
		unsent, err := store.Unsent(context.Background(), r.db, 10)
		if err != nil || len(unsent) != 1 {
			t.Fatalf("outbox = %d rows (%v), want 1", len(unsent), err)
		}
		if unsent[0].EventID != events.DeriveID("in-1", "out") {
			t.Errorf("outbox event id %s is not derived from the input", unsent[0].EventID)
		}
	})
}

func TestFailedStepCommitsNothing(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		r := newRig(t, open)
		calls := 0
		h := r.inbox(t, nil).TxHandler(func(ctx context.Context, tx store.Querier, ev event.Event) ([]event.Event, error) {
			out, err := effect(ctx, tx, ev)
			if calls++; calls == 1 {
				return nil, errors.New("fails after writing")
			}
			return out, err
		})
		ev := eventstest.NewEvent("in-2", "k", 0)
		if err := h(context.Background(), ev); err == nil {
			t.Fatal("the failing step reported success")
		}
		if n := effects(t, r.db, "in-2"); n != 0 {
			t.Fatalf("a failed step left %d effects, want 0 (rolled back)", n)
		}
		if err := h(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if n := effects(t, r.db, "in-2"); n != 1 {
			t.Fatalf("%d effects after the retry, want 1", n)
		}
	})
}

// TestRelayAfterCrashBetweenCommitAndPublish: the handler commits, the
// process dies before any publish; a relay started later publishes every
// event once, and running it again publishes nothing twice.
func TestRelayAfterCrashBetweenCommitAndPublish(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		r := newRig(t, open)
		h := r.inbox(t, nil).TxHandler(effect) // no relay: the crash
		for i := range 5 {
			if err := h(context.Background(), eventstest.NewEvent(fmt.Sprintf("c%d", i), "k", i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := r.streamMsgs(t); len(got) != 0 {
			t.Fatalf("events reached the stream before any relay ran: %v", got)
		}
		rl := r.relay(t)
		n, leader, err := rl.Flush(context.Background())
		if err != nil || !leader || n != 5 {
			t.Fatalf("flush = %d, leader %v, %v; want 5 published", n, leader, err)
		}
		// A crash between publish and marking sent: publish again.
		if _, err := r.db.Exec(context.Background(), `UPDATE outbox SET sent_at = NULL`); err != nil {
			t.Fatal(err)
		}
		if n, _, err := rl.Flush(context.Background()); err != nil || n != 5 {
			t.Fatalf("second flush = %d, %v", n, err)
		}
		got := r.streamMsgs(t)
		if len(got) != 5 {
			t.Fatalf("stream holds %d events, want 5 (the republish is dropped as a duplicate): %v", len(got), got)
		}
		for i, id := range got {
			if want := events.DeriveID(fmt.Sprintf("c%d", i), "out"); id != want {
				t.Errorf("event %d = %s, want %s (outbox order)", i, id, want)
			}
		}
		if n, _, _ := rl.Flush(context.Background()); n != 0 {
			t.Errorf("a third flush published %d, want 0", n)
		}
	})
}

// TestEndToEndExactlyOnce runs a consumer whose acknowledgement is lost after
// the commit (the handler errors once after committing): the event is
// redelivered, the inbox drops it, and the emitted event is published once
// by a running relay.
func TestEndToEndExactlyOnce(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		r := newRig(t, open)
		rl := r.relay(t)
		if err := rl.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rl.Stop(context.Background()) })
		inner := r.inbox(t, rl).TxHandler(effect)
		var deliveries atomic.Int64
		sub, err := r.bus.Subscribe(context.Background(), events.ConsumerConfig{
			Stream: r.topic.Stream, Name: "worker", Subjects: []string{r.topic.Prefix + ".t1.k"}, Keyed: true,
			BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		}, func(ctx context.Context, ev event.Event) error {
			err := inner(ctx, ev)
			if deliveries.Add(1) == 1 && err == nil {
				return errors.New("the ack was lost")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Stop(context.Background()) })
		if err := r.bus.Publish(context.Background(), eventstest.NewEvent("e2e", "k", 0)); err != nil {
			t.Fatal(err)
		}
		eventstest.Eventually(t, 10*time.Second, "the emitted event in the stream", func() bool {
			for _, id := range r.streamMsgs(t) {
				if id == events.DeriveID("e2e", "out") {
					return true
				}
			}
			return false
		})
		eventstest.Eventually(t, 5*time.Second, "the redelivery", func() bool { return deliveries.Load() >= 2 })
		if n := effects(t, r.db, "e2e"); n != 1 {
			t.Fatalf("%d effects, want 1", n)
		}
		count := 0
		for _, id := range r.streamMsgs(t) {
			if id == events.DeriveID("e2e", "out") {
				count++
			}
		}
		if count != 1 {
			t.Fatalf("the emitted event is in the stream %d times, want 1", count)
		}
	})
}

// TestRelaysKeepOrder runs two relays on one outbox (two processes) while
// commits keep coming: the stream must hold every event once, in commit
// order.
func TestRelaysKeepOrder(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		r := newRig(t, open)
		var relays []*delivery.Relay
		for range 2 {
			rl := r.relay(t)
			if err := rl.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rl.Stop(context.Background()) })
			relays = append(relays, rl)
		}
		const n = 300
		for i := range n {
			ev := eventstest.NewEvent(fmt.Sprintf("o%03d", i), "k", i)
			if err := r.db.Tx(context.Background(), func(tx store.Querier) error {
				return delivery.Emit(context.Background(), tx, r.bus, ev)
			}); err != nil {
				t.Fatal(err)
			}
			relays[i%2].Kick()
		}
		eventstest.Eventually(t, 20*time.Second, "all events published", func() bool { return len(r.streamMsgs(t)) == n })
		for i, id := range r.streamMsgs(t) {
			if want := fmt.Sprintf("o%03d", i); id != want {
				t.Fatalf("position %d holds %s, want %s: relays broke the order", i, id, want)
			}
		}
	})
}
