package events_test

import (
	"context"
	"fmt"
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
	srv := eventstest.StartServer(t)
	nc := eventstest.Connect(t, srv)
	topic := eventstest.NewTopic()
	bus, err := events.New(nc, events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	if err := bus.EnsureStream(t.Context(), events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
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
