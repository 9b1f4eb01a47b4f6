package events_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// A subscription that drained before its drain's time ran out stopped
// cleanly, even when Stop is called only after that time (Bus.Close stops
// its subscriptions one after another, under one context, once it has
// started every drain): it reports no drain timeout, which would name a
// consumer that left nothing unfinished.
func TestStopAfterTheDrainFinishedIsClean(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	timedOut, cancel := context.WithCancel(context.Background())
	cancel()
	// Each Stop below had one chance in two to call a drained subscription
	// cut short: sixteen of them leave no doubt.
	for i := range 16 {
		sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: fmt.Sprintf("idle-%d", i),
			Subjects: []string{topic.Pattern()}}, func(context.Context, event.Event) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		eventstest.Wait(t, sub.Drained(), 10*time.Second, "the idle subscription to drain")
		if err := sub.Stop(timedOut); err != nil {
			t.Errorf("Stop of a drained subscription after the drain's time = %v, want nil", err)
		}
	}
}

// When the drain runs out of time, the handlers still running in every
// subscription are interrupted at once: one subscription's handler that is
// slow to end (an agent command given its kill grace) does not keep the
// handlers of the others running on, uninterrupted, until it has.
func TestCloseInterruptsEverySubscriptionAtOnce(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	// Each handler, once interrupted, ends only when the other one has been
	// interrupted too (or when the test gives up on it).
	release := make(chan struct{})
	names := []string{"slow-a", "slow-b"}
	entered := make(chan string, len(names))
	interrupted := map[string]chan struct{}{}
	for _, name := range names {
		interrupted[name] = make(chan struct{})
	}
	for i, name := range names {
		other := names[1-i]
		_, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: name, Subjects: []string{topic.Pattern()}},
			func(ctx context.Context, _ event.Event) error {
				entered <- name
				<-ctx.Done()
				close(interrupted[name])
				select {
				case <-interrupted[other]:
				case <-release:
				}
				return ctx.Err()
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	ev := eventstest.NewEvent("both", "k", 0)
	subject, err := topic.Route(ev)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishMsg(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	for range names {
		eventstest.Wait(t, entered, 10*time.Second, "both handlers to start")
	}

	timedOut, cancel := context.WithCancel(context.Background())
	cancel()
	closed, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		closed <- bus.Close(timedOut)
	}()
	t.Cleanup(func() {
		close(release)
		<-finished
	})
	err = eventstest.Wait(t, closed, 10*time.Second, "Close to interrupt both handlers")
	for _, name := range names {
		if err == nil || !strings.Contains(err.Error(), "drain "+name) {
			t.Errorf("Close = %v, want the drain of %s named as cut short", err, name)
		}
	}
}
