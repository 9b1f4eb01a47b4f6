package delivery_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// A handler commits e1 and fails to publish its event x1; while the relay of
// another process is in the middle of a pass (it holds the relay lock), e1
// is redelivered. The redelivery must not be acknowledged before x1 is in
// the stream: acknowledging it lets the key's next event through, whose
// handler publishes x2 at once (PublishCommitted), and x1 reaches the
// stream after x2 when a later pass gets to it.
func TestRedeliveryWaitsForItsEventsWhileAnotherRelayLeads(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		ctx := context.Background()
		r := newRig(t, open)
		pubA := &publisher{bus: r.bus, sent: map[string]int{}}
		relayA := r.relayWith(t, pubA) // this process: it handles the key's events
		h := r.inbox(t, relayA).TxHandler(effect)

		// Another process's relay runs a pass over an unrelated row and is
		// slow to publish it: it holds the relay lock meanwhile.
		if err := r.db.Tx(ctx, func(tx store.Querier) error {
			_, err := delivery.Emit(ctx, tx, r.bus, eventstest.NewEvent("other", "o", 0))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		pubB := &publisher{bus: r.bus, sent: map[string]int{}, hold: make(chan struct{}), entered: make(chan struct{}, 4)}
		relayB, err := delivery.NewRelay(delivery.RelayConfig{DB: r.db, Publisher: pubB, Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		flushedB := make(chan error, 1)
		go func() {
			_, _, err := relayB.Flush(ctx)
			flushedB <- err
		}()
		<-pubB.entered
		released := false
		release := func() {
			if !released {
				released = true
				close(pubB.hold)
				if err := <-flushedB; err != nil {
					t.Error(err)
				}
			}
		}
		defer release()

		e1, e2 := eventstest.NewEvent("e1", "k", 1), eventstest.NewEvent("e2", "k", 2)
		x1, x2 := events.DeriveID("e1", "out"), events.DeriveID("e2", "out")
		pubA.fail.Store(true)
		brief, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := h(brief, e1); err == nil {
			t.Fatal("the handler succeeded though its events were not published")
		}
		pubA.fail.Store(false)

		err = h(ctx, e1) // the redelivery, while the other relay leads
		if err == nil && !slices.Contains(r.streamMsgs(t), x1) {
			t.Errorf("the redelivery of e1 was acknowledged while its event %s is not in the stream (%v)", x1, r.streamMsgs(t))
		}
		release()
		if err != nil {
			// Refused while the other relay led: the consumer redelivers
			// it later.
			if err := h(ctx, e1); err != nil {
				t.Fatal(err)
			}
		}
		if err := h(ctx, e2); err != nil { // the key's next event
			t.Fatal(err)
		}
		eventstest.Eventually(t, 10*time.Second, "the outbox published", func() bool {
			_, _, _ = relayA.Flush(ctx)
			return unsent(t, r.db) == 0
		})
		got := r.streamMsgs(t)
		if i1, i2 := slices.Index(got, x1), slices.Index(got, x2); i1 < 0 || i2 < 0 || i1 > i2 {
			t.Errorf("stream %v: want e1's event %s before e2's %s (per-key order)", got, x1, x2)
		}
	})
}

// A redelivery that finds the event handled must also wait for the event's
// rows that the first delivery, in this process, is still publishing: the
// pass run by the redelivery skips them (they are in flight), returns, and
// the redelivery is acknowledged; if that publish then fails, the rows wait
// for a later pass while the key's next event goes ahead.
func TestRedeliveryWaitsForItsEventsInFlight(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		ctx := context.Background()
		r := newRig(t, open)
		pub := &publisher{bus: r.bus, sent: map[string]int{}, hold: make(chan struct{}), entered: make(chan struct{}, 4)}
		rl := r.relayWith(t, pub)
		h := r.inbox(t, rl).TxHandler(effect)
		e1 := eventstest.NewEvent("d1", "k", 1)
		x1 := events.DeriveID("d1", "out")

		first := make(chan error, 1)
		go func() {
			// It tries to publish again until its context ends.
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			first <- h(ctx, e1)
		}()
		<-pub.entered // committed; its publish is under way (and will fail)
		pub.fail.Store(true)

		// The server redelivers e1 (the first delivery outlived its ack
		// wait) and this process handles the copy.
		second := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			second <- h(ctx, e1)
		}()
		// A fix may make the copy wait for the first delivery's publish;
		// give it a while to answer, and go on if it waits.
		select {
		case err := <-second:
			if err == nil && !slices.Contains(r.streamMsgs(t), x1) {
				t.Errorf("the second delivery of d1 was acknowledged while its event %s is not in the stream", x1)
			}
		case <-time.After(5 * time.Second):
			defer func() { <-second }()
		}
		close(pub.hold)
		if err := <-first; err == nil {
			t.Fatal("the first delivery succeeded though publishing failed")
		}
	})
}

// The relay lock is one per PostgreSQL schema, not per database: a relay
// working on one schema must not keep the relay of another schema (another
// test package's, in `go test ./...`) from publishing.
func TestRelayLockIsPerSchema(t *testing.T) {
	ctx := context.Background()
	a, b := testdb.Postgres(t), testdb.Postgres(t)
	srv := eventstest.StartServer(t)
	rg := &rig{db: b, topic: eventstest.NewTopic()}
	rg.bus = rg.newBus(t, srv)
	if err := rg.bus.EnsureStream(ctx, events.StreamConfig{Name: rg.topic.Stream, Subjects: []string{rg.topic.Pattern()}, Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	if err := b.Tx(ctx, func(tx store.Querier) error {
		_, err := delivery.Emit(ctx, tx, rg.bus, []event.Event{eventstest.NewEvent("s1", "k", 0)}...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := a.TryLock(ctx, "outbox-relay") // schema a's relay, mid-pass
	if err != nil || !ok {
		t.Skipf("could not take schema a's relay lock (%v, %v): another test's relay holds it", ok, err)
	}
	defer unlock()
	rl := rg.relay(t)
	n, leader, err := rl.Flush(ctx)
	if err != nil || !leader || n != 1 {
		t.Errorf("schema b's relay: published %d, leader %v, %v; want 1 published (schema a's lock is not b's)", n, leader, err)
	}
}
