package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// errStoreDown stands for a failure of a dependency that is down, not of the
// event: the consumers below are told so by their Unavailable.
var errStoreDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func storeDown(err error) bool { return errors.Is(err, errStoreDown) }

// outage is a dependency that is down until up is called, and counts the
// probes that found it down.
type outage struct {
	isUp   atomic.Bool
	probes atomic.Int64
}

func (o *outage) probe(context.Context) error {
	if o.isUp.Load() {
		return nil
	}
	o.probes.Add(1)
	return errStoreDown
}

// A handler failing because a dependency is down does not use up its
// event's deliveries: the consumer puts the event back and stops taking
// events until the probe says the dependency is back, however long that
// is (here hundreds of backoff periods); then the event is handled, once,
// and nothing is dead-lettered. praetor_consumer_paused says which
// consumers wait.
func TestUnavailableDependencyPausesTheConsumer(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			metrics, err := events.NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			bus, topic := dlqBusWith(t, streamFor(keyed), events.Config{Metrics: metrics})
			t.Cleanup(func() { _ = bus.Close(context.Background()) })
			dep := &outage{}
			var failed atomic.Int64
			handled := make(chan uint64, 8)
			const name = "store-backed"
			sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: name,
				Subjects: []string{topic.Pattern()}, Keyed: keyed,
				MaxDeliver: 5, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
				Unavailable: storeDown, Probe: dep.probe},
				func(ctx context.Context, ev event.Event) error {
					if !dep.isUp.Load() {
						failed.Add(1)
						return fmt.Errorf("load session: %w", errStoreDown)
					}
					d, _ := events.DeliveryFrom(ctx)
					handled <- d.NumDelivered
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if err := bus.Publish(t.Context(), eventstest.NewEvent("turn", "s1", 1)); err != nil {
				t.Fatal(err)
			}
			// Three failed probes: a quarter, a half and a whole second
			// apart, some 350 backoff periods of the consumer.
			eventstest.Eventually(t, 20*time.Second, "three probes of the dependency, or five failures", func() bool {
				return dep.probes.Load() >= 3 || failed.Load() >= 5
			})
			if got := testutil.ToFloat64(metrics.PausedOf(name)); got != 1 {
				t.Errorf("praetor_consumer_paused while the dependency is down = %v, want 1", got)
			}
			if n := failed.Load(); n > 2 {
				t.Errorf("the handler failed %d times while the dependency was down, want at most 2", n)
			}
			dep.isUp.Store(true)
			if n := eventstest.Wait(t, handled, 20*time.Second, "the event handled once the dependency is back"); n > 3 {
				t.Errorf("handled on delivery %d, want at most 3: the outage used up deliveries", n)
			}
			if err := sub.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(handled) != 0 {
				t.Errorf("the event was handled %d more times", len(handled))
			}
			if got := testutil.ToFloat64(metrics.PausedOf(name)); got != 0 {
				t.Errorf("praetor_consumer_paused once resumed = %v, want 0", got)
			}
			if dls := eventstest.DeadLetters(t, bus, topic.Stream, name); len(dls) != 0 {
				t.Errorf("dead letters = %+v, want none", dls)
			}
		})
	}
}

// An event whose last delivery still fails because a dependency is down is
// dead-lettered with the cause unavailable, not max_deliver: the event is
// sound, and a redrive once the dependency is back handles it.
func TestUnavailableOnTheLastDeliveryIsItsOwnCause(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	dep := &outage{}
	sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "once",
		Subjects: []string{topic.Pattern()}, MaxDeliver: 1, Unavailable: storeDown, Probe: dep.probe},
		func(context.Context, event.Event) error { return fmt.Errorf("save: %w", errStoreDown) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	if err := bus.Publish(t.Context(), eventstest.NewEvent("last", "k", 1)); err != nil {
		t.Fatal(err)
	}
	var dls []events.DeadLetter
	eventstest.Eventually(t, 10*time.Second, "the event dead-lettered", func() bool {
		dls = eventstest.DeadLetters(t, bus, topic.Stream, "once")
		return len(dls) > 0
	})
	if dl := dls[0]; dl.EventID != "last" || dl.Cause != events.CauseUnavailable || !strings.Contains(dl.Reason, "connection refused") {
		t.Errorf("dead letter = %+v, want the event's, cause %s, naming the dependency's error", dl, events.CauseUnavailable)
	}
}

// A paused consumer stops at once: the events it holds for the dependency
// to come back go back to the stream, and the probes end.
func TestStopWhilePaused(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			bus, topic := dlqBus(t, streamFor(keyed))
			t.Cleanup(func() { _ = bus.Close(context.Background()) })
			dep := &outage{}
			var calls atomic.Int64
			sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "stopping",
				Subjects: []string{topic.Pattern()}, Keyed: keyed, Concurrency: 2,
				MaxDeliver: 5, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
				Unavailable: storeDown, Probe: dep.probe},
				func(context.Context, event.Event) error {
					calls.Add(1)
					return errStoreDown
				})
			if err != nil {
				t.Fatal(err)
			}
			var evs []event.Event
			for i := range 4 {
				evs = append(evs, eventstest.NewEvent(fmt.Sprintf("e%d", i), fmt.Sprintf("s%d", i), i))
			}
			if err := bus.PublishBatch(t.Context(), evs); err != nil {
				t.Fatal(err)
			}
			eventstest.Eventually(t, 20*time.Second, "two probes of the dependency", func() bool { return dep.probes.Load() >= 2 })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := sub.Stop(ctx); err != nil {
				t.Errorf("Stop while paused = %v, want nil (drained, not cut short)", err)
			}
			probes := dep.probes.Load()
			if dls := eventstest.DeadLetters(t, bus, topic.Stream, "stopping"); len(dls) != 0 {
				t.Errorf("dead letters = %+v, want none", dls)
			}
			if n := dep.probes.Load(); n != probes {
				t.Errorf("%d probes after Stop returned, want none", n-probes)
			}
		})
	}
}

// A consumer told how to recognise an outage must be told how to see its
// end, and the other way round.
func TestUnavailableNeedsAProbe(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	nop := func(context.Context, event.Event) error { return nil }
	for _, cfg := range []events.ConsumerConfig{
		{Unavailable: storeDown},
		{Probe: (&outage{}).probe},
	} {
		cfg.Stream, cfg.Name, cfg.Subjects = topic.Stream, "half", []string{topic.Pattern()}
		if _, err := bus.Subscribe(t.Context(), cfg, nop); err == nil || !strings.Contains(err.Error(), "Probe") {
			t.Errorf("Subscribe with only one of Unavailable and Probe = %v, want an error naming both", err)
		}
	}
}

// streamFor returns the stream settings of a consumer keyed or not: a
// keyed one needs partitions.
func streamFor(keyed bool) events.StreamConfig {
	if keyed {
		return events.StreamConfig{Partitions: 2}
	}
	return events.StreamConfig{}
}
