package node_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// consuming is a service of one consumer.
type consuming struct {
	bus *events.Bus
	cfg events.ConsumerConfig
	h   events.Handler
	sub *events.Subscription
}

func (c *consuming) Start(ctx context.Context) error {
	sub, err := c.bus.Subscribe(ctx, c.cfg, c.h)
	c.sub = sub
	return err
}

func (c *consuming) Stop(ctx context.Context) error { return c.sub.Stop(ctx) }

// On stop, every consumer of every service stops taking events at once:
// one whose service is stopped after a busy one does not go on taking
// events while the busy one drains (they would get only what is left of the
// drain timeout, and be cut short when it runs out).
func TestStopDrainsEveryServiceAtOnce(t *testing.T) {
	topic := eventstest.NewTopic()
	release := make(chan struct{})
	busyEntered := make(chan struct{}, 1)
	idleGot := make(chan string, 4)
	var bus *events.Bus
	service := func(name string, h events.Handler) node.Factory {
		return func(ctx context.Context, d node.Deps) (node.Service, error) {
			bus = d.Bus
			if err := d.Bus.EnsureStream(ctx, events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
				return nil, err
			}
			return &consuming{bus: d.Bus, h: h, cfg: events.ConsumerConfig{Stream: topic.Stream, Name: name,
				Subjects: []string{topic.Pattern()}}}, nil
		}
	}
	available := map[string]node.Factory{
		"idle": service("idle", func(_ context.Context, ev event.Event) error {
			idleGot <- ev.ID()
			return nil
		}),
		"busy": service("busy", func(_ context.Context, ev event.Event) error {
			if ev.ID() == "first" {
				busyEntered <- struct{}{}
				<-release
			}
			return nil
		}),
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- node.Run(ctx, node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0",
			// Started in this order, stopped in the other: busy first.
			Services: []string{"idle", "busy"}, Available: available, DrainTimeout: time.Minute,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(string) { close(ready) }})
	}()
	eventstest.Wait(t, ready, 30*time.Second, "the node to serve")
	// On a failure, let busy finish and the node stop before the test ends.
	var releaseOnce sync.Once
	stopped := false
	defer func() {
		releaseOnce.Do(func() { close(release) })
		if !stopped {
			<-ran
		}
	}()

	publish := func(ev event.Event) {
		t.Helper()
		subject, err := topic.Route(ev)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := events.Encode(subject, ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := bus.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	idleInfo := func() *jetstream.ConsumerInfo {
		t.Helper()
		c, err := bus.JetStream().Consumer(context.Background(), topic.Stream, "idle")
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info
	}

	publish(eventstest.NewEvent("first", "k", 0))
	eventstest.Wait(t, busyEntered, 10*time.Second, "busy to take the first event")
	eventstest.Wait(t, idleGot, 10*time.Second, "idle to take the first event")
	// idle acknowledges after its handler returns: wait for the ack, so the
	// count below is of the second event alone.
	eventstest.Eventually(t, 10*time.Second, "idle to acknowledge the first event", func() bool {
		return idleInfo().NumAckPending == 0
	})

	stop() // SIGTERM
	// idle has nothing in flight: its pull requests go at once, while busy
	// still drains.
	eventstest.Eventually(t, 10*time.Second, "idle to stop pulling while busy drains", func() bool {
		return idleInfo().NumWaiting == 0
	})
	publish(eventstest.NewEvent("second", "k", 1))
	if got := idleInfo(); got.NumPending != 1 || got.NumAckPending != 0 {
		t.Errorf("idle's consumer holds %d pending and %d delivered, want the second event pending for the next process",
			got.NumPending, got.NumAckPending)
	}

	releaseOnce.Do(func() { close(release) })
	err := eventstest.Wait(t, ran, 30*time.Second, "the node to stop")
	stopped = true
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	select {
	case id := <-idleGot:
		t.Errorf("idle handled %s after the stop began", id)
	default:
	}
}
