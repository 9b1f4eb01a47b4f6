package eventstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/pkg/events"
)

// Run runs the conformance suite of package events.
func Run(t *testing.T, h Harness) {
	cases := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"BinaryContentMode", testBinaryContentMode},
		{"StreamProvisioningIsIdempotent", testProvisioning},
		{"KeyedOrderAcrossConsumers", testKeyedOrder},
		{"UnkeyedConcurrency", testUnkeyedConcurrency},
		{"UnkeyedEventBehindBusyWorkersIsHandledOnce", testUnkeyedBehindBusyWorkers},
		{"RedeliveryAfterRetryableError", testRetry},
		{"RedeliveryAfterHandlerCrash", testCrashRedelivery},
		{"RepublishedIDIsDeduplicated", testDedup},
		{"PermanentErrorGoesToDLQ", testPermanentDLQ},
		{"UndecodableEventGoesToDLQ", testDecodeDLQ},
		{"ContractViolationGoesToDLQ", testContractDLQ},
		{"PanicIsRecoveredAndRetried", testPanic},
		{"MaxDeliverFromHandlerGoesToDLQ", testMaxDeliverHandler},
		{"MaxDeliverFromAdvisoryGoesToDLQ", testMaxDeliverAdvisory},
		{"ReplayFromSequenceAndTime", testReplay},
		{"DrainFinishesInFlight", testDrain},
		{"DrainTimeoutInterruptsWithAReason", testDrainTimeout},
		{"PublishBatch", testBatch},
		{"HandlerTimeoutRedelivers", testHandlerTimeout},
		{"BacklogGauge", testBacklog},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

type fixture struct {
	t     *testing.T
	topic Topic
	bus   *events.Bus
}

func newFixture(t *testing.T, h Harness, partitions int) *fixture {
	t.Helper()
	f := &fixture{t: t, topic: NewTopic()}
	f.bus = f.newBus(h.Connect(t))
	ctx := context.Background()
	if err := f.bus.EnsureDeadLetterStreams(ctx, events.StreamConfig{}); err != nil {
		t.Fatalf("dead-letter streams: %v", err)
	}
	if err := f.bus.EnsureStream(ctx, events.StreamConfig{
		Name: f.topic.Stream, Subjects: []string{f.topic.Pattern()}, Partitions: partitions,
	}); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return f
}

// newBus is another process's bus on the same topic.
func (f *fixture) newBus(nc *nats.Conn) *events.Bus {
	f.t.Helper()
	bus, err := events.New(nc, events.Config{Subject: f.topic.Route})
	if err != nil {
		f.t.Fatalf("bus: %v", err)
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = bus.Close(ctx)
	})
	return bus
}

func (f *fixture) consumer(name string, keyed bool) events.ConsumerConfig {
	subject := f.topic.Pattern()
	return events.ConsumerConfig{
		Stream: f.topic.Stream, Name: name, Subjects: []string{subject}, Keyed: keyed,
		AckWait: time.Second, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
	}
}

func (f *fixture) subscribe(bus *events.Bus, cfg events.ConsumerConfig, h events.Handler) *events.Subscription {
	f.t.Helper()
	sub, err := bus.Subscribe(context.Background(), cfg, h)
	if err != nil {
		f.t.Fatalf("subscribe %s: %v", cfg.Name, err)
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sub.Stop(ctx)
	})
	return sub
}

func (f *fixture) publish(evs ...event.Event) {
	f.t.Helper()
	for _, ev := range evs {
		if err := f.bus.Publish(context.Background(), ev); err != nil {
			f.t.Fatalf("publish %s: %v", ev.ID(), err)
		}
	}
}

func (f *fixture) streamMsgs() uint64 {
	f.t.Helper()
	s, err := f.bus.JetStream().Stream(context.Background(), f.topic.Stream)
	if err != nil {
		f.t.Fatalf("stream: %v", err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		f.t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs
}

func testBinaryContentMode(t *testing.T, h Harness) {
	f := newFixture(t, h, 0)
	ev := NewEvent("id-1", "k1", 1)
	ev.SetSubject(`100% "quoted" é`)
	ev.SetExtension("note", "a b")
	f.publish(ev)

	var got *nats.Msg
	err := f.bus.Replay(context.Background(), events.ReplayConfig{Stream: f.topic.Stream}, func(r events.Record) error {
		got = &nats.Msg{Subject: r.Subject, Header: r.Header, Data: r.Data}
		return r.Err
	})
	if err != nil || got == nil {
		t.Fatalf("replay: %v (message %v)", err, got)
	}
	want := map[string]string{
		"ce-specversion": "1.0", "ce-id": "id-1", "ce-type": "dev.praetor.test.v1", "ce-source": "/eventstest",
		"ce-time": "2026-01-02T03:04:05Z", "ce-tenant": "t1", "ce-partitionkey": "k1",
		"ce-subject": "100%25%20%22quoted%22%20%C3%A9", "ce-note": "a%20b",
		"Content-Type": "application/json", "Nats-Msg-Id": "id-1",
	}
	for k, v := range want {
		if g := got.Header.Get(k); g != v {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
	if got.Subject != f.topic.Prefix+".t1.k1" {
		t.Errorf("subject = %q, want %q", got.Subject, f.topic.Prefix+".t1.k1")
	}
	back, err := events.Decode(got.Header, got.Data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if back.Subject() != ev.Subject() || back.Extensions()["note"] != "a b" || string(back.Data()) != string(ev.Data()) {
		t.Errorf("round trip changed the event: got %v, want %v", back, ev)
	}
}

func testProvisioning(t *testing.T, h Harness) {
	f := newFixture(t, h, 4)
	ctx := context.Background()
	cfg := events.StreamConfig{Name: f.topic.Stream, Subjects: []string{f.topic.Pattern()}, Partitions: 4}
	for range 2 {
		if err := f.bus.EnsureStream(ctx, cfg); err != nil {
			t.Fatalf("ensure again: %v", err)
		}
	}
	cfg.Partitions = 8
	if err := f.bus.EnsureStream(ctx, cfg); err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Fatalf("changing partitions: err = %v, want a refusal naming partitions", err)
	}
	bad := events.StreamConfig{Name: f.topic.Stream + "X", Subjects: []string{"a.>"}, Partitions: 2}
	if err := f.bus.EnsureStream(ctx, bad); err == nil {
		t.Fatal("a partitioned stream on a '>' subject was accepted")
	}
	n, err := f.bus.Partitions(ctx, f.topic.Stream)
	if err != nil || n != 4 {
		t.Fatalf("partitions = %d, %v; want 4", n, err)
	}
}

// testKeyedOrder publishes interleaved events of many keys and consumes them
// with three "processes" on one keyed consumer: each key's events must be
// handled in order, never two at once, and different keys must run in
// parallel.
func testKeyedOrder(t *testing.T, h Harness) {
	const keys, perKey, procs = 24, 25, 3
	f := newFixture(t, h, 8)

	var (
		mu       sync.Mutex
		next     = map[string]int{}
		inFlight = map[string]bool{}
		active   int
		overlap  = make(chan struct{})
		once     sync.Once
		done     atomic.Int64
		failures []string
	)
	handler := func(ctx context.Context, ev event.Event) error {
		p := PayloadOf(t, ev)
		mu.Lock()
		if inFlight[p.Key] {
			failures = append(failures, fmt.Sprintf("key %s handled twice at once", p.Key))
		}
		if p.N != next[p.Key] {
			failures = append(failures, fmt.Sprintf("key %s: got event %d, want %d", p.Key, p.N, next[p.Key]))
		}
		inFlight[p.Key] = true
		active++
		if active > 1 {
			once.Do(func() { close(overlap) })
		}
		mu.Unlock()

		if p.N == 0 {
			// The first event of each key waits (briefly) for another key
			// to be in flight at the same time: parallelism across keys.
			select {
			case <-overlap:
			case <-time.After(2 * time.Second):
			}
		}

		mu.Lock()
		inFlight[p.Key] = false
		active--
		next[p.Key] = p.N + 1
		mu.Unlock()
		done.Add(1)
		return nil
	}
	for i := range procs {
		bus := f.bus
		if i > 0 {
			bus = f.newBus(h.Connect(t))
		}
		f.subscribe(bus, f.consumer("ordered", true), handler)
	}
	batch := make([]event.Event, 0, keys*perKey)
	for n := range perKey {
		for k := range keys {
			key := fmt.Sprintf("key%02d", k)
			batch = append(batch, NewEvent(fmt.Sprintf("%s-%d", key, n), key, n))
		}
	}
	if err := f.bus.PublishBatch(context.Background(), batch); err != nil {
		t.Fatalf("publish: %v", err)
	}
	// At least: an event handled twice (a redelivery) must end the wait too,
	// for the failures below to say what went wrong.
	Eventually(t, 30*time.Second, "all events handled", func() bool { return done.Load() >= keys*perKey })
	select {
	case <-overlap:
	default:
		t.Error("no two keys were ever handled at the same time")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	for k := range keys {
		if got := next[fmt.Sprintf("key%02d", k)]; got != perKey {
			t.Errorf("key%02d: handled %d events, want %d", k, got, perKey)
		}
	}
}

func testUnkeyedConcurrency(t *testing.T, h Harness) {
	f := newFixture(t, h, 0)
	cfg := f.consumer("pool", false)
	cfg.Concurrency = 4
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	var handled atomic.Int64
	f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error {
		started <- struct{}{}
		<-release
		handled.Add(1)
		return nil
	})
	for i := range 4 {
		f.publish(NewEvent(fmt.Sprintf("u%d", i), "same", i))
	}
	for range 4 {
		Wait(t, started, 30*time.Second, "four handlers running at once")
	}
	close(release)
	Eventually(t, 30*time.Second, "4 handled", func() bool { return handled.Load() == 4 })
}

// testUnkeyedBehindBusyWorkers: the one worker of a process runs a handler
// longer than AckWait while more events arrive. Those events must not wait
// in that process, unprotected by progress, until the server gives them to
// another process too: each event is handled once, on its first delivery,
// whichever process handles it.
func testUnkeyedBehindBusyWorkers(t *testing.T, h Harness) {
	f := newFixture(t, h, 0)
	cfg := f.consumer("busy", false)
	cfg.Concurrency = 1
	var (
		mu      sync.Mutex
		handled = map[string][]uint64{} // event id: the delivery count of each run
	)
	record := func(ctx context.Context, ev event.Event) {
		d, _ := events.DeliveryFrom(ctx)
		mu.Lock()
		handled[ev.ID()] = append(handled[ev.ID()], d.NumDelivered)
		mu.Unlock()
	}
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	busy := f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error {
		record(ctx, ev)
		if ev.ID() == "long" {
			started <- struct{}{}
			<-release
		}
		return nil
	})
	f.publish(NewEvent("long", "k", 0))
	Wait(t, started, 30*time.Second, "the long handler")
	f.publish(NewEvent("next-1", "k", 1), NewEvent("next-2", "k", 2))

	// Another replica of the service, with a free worker.
	f.subscribe(f.newBus(h.Connect(t)), cfg, func(ctx context.Context, ev event.Event) error {
		record(ctx, ev)
		return nil
	})
	Eventually(t, 10*time.Second, "the events behind the long one handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled["next-1"]) > 0 && len(handled["next-2"]) > 0
	})
	free()
	// The drain handles whatever the busy process still holds.
	if err := busy.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"long", "next-1", "next-2"} {
		if got := handled[id]; len(got) != 1 || got[0] != 1 {
			t.Errorf("%s: handled on deliveries %v, want once, on delivery 1", id, got)
		}
	}
}

func testRetry(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	var calls atomic.Int64
	done := make(chan uint64, 1)
	f.subscribe(f.bus, f.consumer("retry", true), func(ctx context.Context, ev event.Event) error {
		d, _ := events.DeliveryFrom(ctx)
		if calls.Add(1) < 3 {
			return errors.New("transient")
		}
		done <- d.NumDelivered
		return nil
	})
	f.publish(NewEvent("r1", "k", 0))
	if n := Wait(t, done, 10*time.Second, "third delivery"); n != 3 {
		t.Fatalf("succeeded on delivery %d, want 3", n)
	}
}

// testCrashRedelivery: a process dies while handling an event; another
// process of the same service gets it after AckWait.
func testCrashRedelivery(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	nc1 := h.Connect(t)
	bus1 := f.newBus(nc1)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	f.subscribe(bus1, f.consumer("crash", true), func(ctx context.Context, ev event.Event) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	f.publish(NewEvent("c1", "k", 0), NewEvent("c2", "k", 1))
	Wait(t, entered, 30*time.Second, "first process to take the event")
	nc1.Close() // the process dies: no ack, no nak, no progress

	got := make(chan int, 2)
	f.subscribe(f.bus, f.consumer("crash", true), func(ctx context.Context, ev event.Event) error {
		got <- PayloadOf(t, ev).N
		return nil
	})
	if n := Wait(t, got, 10*time.Second, "redelivery to the second process"); n != 0 {
		t.Fatalf("second process got event %d first, want 0 (order kept across the crash)", n)
	}
	if n := Wait(t, got, 30*time.Second, "the next event"); n != 1 {
		t.Fatalf("then got %d, want 1", n)
	}
}

func testDedup(t *testing.T, h Harness) {
	f := newFixture(t, h, 0)
	ev := NewEvent("dup-1", "k", 0)
	f.publish(ev, ev)
	if err := f.bus.PublishBatch(context.Background(), []event.Event{ev, ev}); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if n := f.streamMsgs(); n != 1 {
		t.Fatalf("stream holds %d messages after 4 publishes of one id, want 1", n)
	}
}

func testPermanentDLQ(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	var calls atomic.Int64
	next := make(chan int, 1)
	f.subscribe(f.bus, f.consumer("perm", true), func(ctx context.Context, ev event.Event) error {
		calls.Add(1)
		if PayloadOf(t, ev).N == 0 {
			return events.Permanent(errors.New("unknown engine x"))
		}
		next <- 1
		return nil
	})
	f.publish(NewEvent("p0", "k", 0), NewEvent("p1", "k", 1))
	Wait(t, next, 30*time.Second, "the event after the dead letter")
	dls := DeadLetters(t, f.bus, f.topic.Stream, "perm")
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	dl := dls[0]
	if dl.Cause != "permanent" || !strings.Contains(dl.Reason, "unknown engine x") || dl.Header.Get("ce-id") != "p0" {
		t.Errorf("dead letter = %+v, want cause permanent, the reason and the original headers", dl)
	}
	if calls.Load() != 2 {
		t.Errorf("handler called %d times, want 2 (no retry of a permanent error)", calls.Load())
	}
}

func testDecodeDLQ(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	handled := make(chan string, 1)
	f.subscribe(f.bus, f.consumer("dec", true), func(ctx context.Context, ev event.Event) error {
		handled <- ev.ID()
		return nil
	})
	bad := nats.NewMsg(f.topic.Prefix + ".t1.k")
	bad.Header.Set("ce-specversion", "1.0")
	bad.Header.Set("ce-id", "bad-1")
	bad.Header.Set("Nats-Msg-Id", "bad-1")
	bad.Data = []byte("no type, no source")
	if _, err := f.bus.JetStream().PublishMsg(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	f.publish(NewEvent("good-1", "k", 1))
	if id := Wait(t, handled, 30*time.Second, "the good event"); id != "good-1" {
		t.Fatalf("handled %q, want good-1", id)
	}
	dls := DeadLetters(t, f.bus, f.topic.Stream, "dec")
	if len(dls) != 1 || dls[0].Cause != "decode" || string(dls[0].Data) != "no type, no source" {
		t.Fatalf("dead letters = %+v, want one decode dead letter with the original body", dls)
	}
}

func testContractDLQ(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	cfg := f.consumer("contract", true)
	cfg.Validate = func(ev event.Event) error {
		if PayloadOf(t, ev).N < 0 {
			return errors.New("n must not be negative")
		}
		return nil
	}
	handled := make(chan int, 2)
	f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error {
		handled <- PayloadOf(t, ev).N
		return nil
	})
	f.publish(NewEvent("neg", "k", -1), NewEvent("pos", "k", 1))
	if n := Wait(t, handled, 30*time.Second, "the valid event"); n != 1 {
		t.Fatalf("handler saw %d, want only the valid event 1", n)
	}
	dls := DeadLetters(t, f.bus, f.topic.Stream, "contract")
	if len(dls) != 1 || !strings.Contains(dls[0].Reason, "n must not be negative") {
		t.Fatalf("dead letters = %+v, want the contract violation", dls)
	}
}

func testPanic(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	var calls atomic.Int64
	ok := make(chan struct{}, 1)
	f.subscribe(f.bus, f.consumer("panic", true), func(ctx context.Context, ev event.Event) error {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		ok <- struct{}{}
		return nil
	})
	f.publish(NewEvent("pa", "k", 0))
	Wait(t, ok, 30*time.Second, "redelivery after the panic")
	if len(DeadLetters(t, f.bus, f.topic.Stream, "panic")) != 0 {
		t.Fatal("a recovered panic was dead-lettered; it must be retried")
	}
}

func testMaxDeliverHandler(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	cfg := f.consumer("maxd", true)
	cfg.MaxDeliver = 3
	var calls atomic.Int64
	f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error {
		calls.Add(1)
		return errors.New("still failing")
	})
	f.publish(NewEvent("m1", "k", 0))
	Eventually(t, 10*time.Second, "a dead letter", func() bool {
		return len(DeadLetters(t, f.bus, f.topic.Stream, "maxd")) == 1
	})
	dl := DeadLetters(t, f.bus, f.topic.Stream, "maxd")[0]
	if dl.Cause != "max_deliver" || dl.Deliveries != 3 || !strings.Contains(dl.Reason, "still failing") {
		t.Errorf("dead letter = %+v, want max_deliver after 3 deliveries with the last error", dl)
	}
	if c := calls.Load(); c != 3 {
		t.Errorf("handler called %d times, want 3", c)
	}
}

// testMaxDeliverAdvisory: the process dies during the last delivery, so no
// handler ever settles it; the server's advisory, handled by another process,
// dead-letters the original.
func testMaxDeliverAdvisory(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	cfg := f.consumer("maxadv", true)
	cfg.MaxDeliver = 1
	nc1 := h.Connect(t)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	f.subscribe(f.newBus(nc1), cfg, func(ctx context.Context, ev event.Event) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	// The surviving process runs the advisory watcher.
	f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error { return nil })
	f.publish(NewEvent("adv-1", "k", 0))
	Wait(t, entered, 30*time.Second, "the doomed delivery")
	nc1.Close()
	Eventually(t, 15*time.Second, "the advisory's dead letter", func() bool {
		return len(DeadLetters(t, f.bus, f.topic.Stream, "maxadv")) == 1
	})
	dl := DeadLetters(t, f.bus, f.topic.Stream, "maxadv")[0]
	if dl.Cause != "max_deliver" || dl.Header.Get("ce-id") != "adv-1" || len(dl.Data) == 0 {
		t.Errorf("dead letter = %+v, want the original fetched by sequence", dl)
	}
}

func testReplay(t *testing.T, h Harness) {
	f := newFixture(t, h, 4)
	for i := range 10 {
		f.publish(NewEvent(fmt.Sprintf("rp%d", i), fmt.Sprintf("k%d", i%3), i))
	}
	read := func(cfg events.ReplayConfig) []int {
		t.Helper()
		cfg.Stream = f.topic.Stream
		var ns []int
		if err := f.bus.Replay(context.Background(), cfg, func(r events.Record) error {
			if r.Err != nil {
				return r.Err
			}
			ns = append(ns, PayloadOf(t, r.Event).N)
			return nil
		}); err != nil {
			t.Fatalf("replay: %v", err)
		}
		return ns
	}
	if got := read(events.ReplayConfig{}); fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Errorf("full replay = %v", got)
	}
	if got := read(events.ReplayConfig{FromSeq: 8}); fmt.Sprint(got) != "[7 8 9]" {
		t.Errorf("replay from seq 8 = %v, want [7 8 9]", got)
	}
	if got := read(events.ReplayConfig{Subjects: []string{f.topic.Prefix + ".t1.k1.*"}}); fmt.Sprint(got) != "[1 4 7]" {
		t.Errorf("replay of key k1 = %v, want [1 4 7]", got)
	}
	if got := read(events.ReplayConfig{FromSeq: 11}); len(got) != 0 {
		t.Errorf("replay past the end = %v, want nothing", got)
	}
	// From a time: everything stored at or after the sixth event.
	var at time.Time
	_ = f.bus.Replay(context.Background(), events.ReplayConfig{Stream: f.topic.Stream, FromSeq: 6}, func(r events.Record) error {
		if at.IsZero() {
			at = r.Timestamp
		}
		return nil
	})
	got := read(events.ReplayConfig{Since: at})
	if len(got) < 5 || got[len(got)-1] != 9 || got[0] > 5 {
		t.Errorf("replay since the 6th event's time = %v, want it to start at 5 or before and end at 9", got)
	}
	if got := read(events.ReplayConfig{Subjects: []string{f.topic.Prefix + ".t1.nokey.*"}}); len(got) != 0 {
		t.Errorf("replay of a subject without events = %v", got)
	}
}

func testDrain(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var acked atomic.Bool
	sub := f.subscribe(f.bus, f.consumer("drain", true), func(ctx context.Context, ev event.Event) error {
		entered <- struct{}{}
		<-release
		acked.Store(true)
		return nil
	})
	f.publish(NewEvent("d1", "k", 0))
	Wait(t, entered, 30*time.Second, "handler start")
	stopped := make(chan error, 1)
	go func() { stopped <- sub.Stop(context.Background()) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := Wait(t, stopped, 30*time.Second, "Stop after the handler"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !acked.Load() {
		t.Fatal("handler did not finish before Stop returned")
	}
	// The event was acknowledged: a new subscriber gets nothing.
	again := make(chan struct{}, 1)
	f.subscribe(f.bus, f.consumer("drain", true), func(ctx context.Context, ev event.Event) error {
		again <- struct{}{}
		return nil
	})
	f.publish(NewEvent("d2", "k", 1))
	Wait(t, again, 30*time.Second, "the next event")
	select {
	case <-again:
		t.Fatal("the drained event was delivered again")
	case <-time.After(1500 * time.Millisecond):
	}
	if err := sub.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// testDrainTimeout: a drain that runs out of time interrupts the handler
// still running; on its last delivery the event is dead-lettered saying why
// (the shutdown, not the event), so an operator can tell it from failures and
// redrive it. The event behind it, for which the process had no free worker,
// was never delivered to it: it goes to the next process, on its first
// delivery.
func testDrainTimeout(t *testing.T, h Harness) {
	f := newFixture(t, h, 0)
	cfg := f.consumer("drainout", false)
	cfg.Concurrency, cfg.MaxDeliver = 1, 1
	var calls atomic.Int64
	entered := make(chan struct{}, 2)
	sub := f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error {
		calls.Add(1)
		entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	f.publish(NewEvent("out-1", "k", 0), NewEvent("out-2", "k", 1))
	Wait(t, entered, 30*time.Second, "the first handler")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time left to drain
	if err := sub.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop = %v, want the drain's context error", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	Eventually(t, 30*time.Second, "a dead letter", func() bool {
		return len(DeadLetters(t, f.bus, f.topic.Stream, "drainout")) == 1
	})
	next := make(chan uint64, 2)
	f.subscribe(f.newBus(h.Connect(t)), cfg, func(ctx context.Context, ev event.Event) error {
		d, _ := events.DeliveryFrom(ctx)
		if ev.ID() != "out-2" {
			t.Errorf("the next process got %s, want out-2", ev.ID())
		}
		next <- d.NumDelivered
		return nil
	})
	if n := Wait(t, next, 30*time.Second, "the waiting event in the next process"); n != 1 {
		t.Errorf("the waiting event came on delivery %d, want 1: it was never the stopped process's", n)
	}
	dls := DeadLetters(t, f.bus, f.topic.Stream, "drainout")
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	if dl := dls[0]; dl.EventID != "out-1" || dl.Cause != events.CauseMaxDeliver || !strings.Contains(dl.Reason, "shutdown") {
		t.Errorf("dead letter of %s: cause %s, reason %q; want out-1, max_deliver, saying the shutdown interrupted it",
			dl.EventID, dl.Cause, dl.Reason)
	}
}

func testBatch(t *testing.T, h Harness) {
	f := newFixture(t, h, 0)
	evs := make([]event.Event, 1000)
	for i := range evs {
		evs[i] = NewEvent(fmt.Sprintf("b%d", i), "k", i)
	}
	if err := f.bus.PublishBatch(context.Background(), evs); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if n := f.streamMsgs(); n != 1000 {
		t.Fatalf("stream holds %d, want 1000", n)
	}
	var ns []int
	_ = f.bus.Replay(context.Background(), events.ReplayConfig{Stream: f.topic.Stream}, func(r events.Record) error {
		ns = append(ns, PayloadOf(t, r.Event).N)
		return nil
	})
	for i, n := range ns {
		if n != i {
			t.Fatalf("event %d stored at position %d: batch order not kept", n, i)
		}
	}
	bad := NewEvent("nokey", "k", 0)
	bad.SetExtension("partitionkey", "")
	var be *events.BatchError
	if err := f.bus.PublishBatch(context.Background(), []event.Event{bad}); err == nil || errors.As(err, &be) {
		t.Fatalf("unroutable event: err = %v, want a routing error before sending", err)
	}
}

func testHandlerTimeout(t *testing.T, h Harness) {
	f := newFixture(t, h, 2)
	cfg := f.consumer("slow", true)
	cfg.HandlerTimeout = 100 * time.Millisecond
	var calls atomic.Int64
	done := make(chan error, 2)
	f.subscribe(f.bus, cfg, func(ctx context.Context, ev event.Event) error {
		if calls.Add(1) == 1 {
			<-ctx.Done() // hangs until the consumer gives up on it
			done <- ctx.Err()
			return ctx.Err()
		}
		done <- nil
		return nil
	})
	f.publish(NewEvent("slow-1", "k", 0))
	if err := Wait(t, done, 30*time.Second, "the timeout"); err == nil {
		t.Fatal("the hanging handler's context was not cancelled")
	}
	if err := Wait(t, done, 30*time.Second, "the redelivery"); err != nil {
		t.Fatal(err)
	}
}

func testBacklog(t *testing.T, h Harness) {
	f := newFixture(t, h, 4)
	reg := prometheus.NewRegistry()
	m, err := events.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(h.Connect(t), events.Config{Subject: f.topic.Route, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	cfg := f.consumer("backlogged", true)
	cfg.BacklogInterval = 20 * time.Millisecond
	f.subscribe(bus, cfg, func(ctx context.Context, ev event.Event) error {
		<-release
		return nil
	})
	t.Cleanup(free) // runs before the subscription's Stop, which waits for the handler
	for i := range 6 {
		f.publish(NewEvent(fmt.Sprintf("b%d", i), "k", i)) // one key: one partition, one at a time
	}
	gauge := func() float64 {
		return testutil.ToFloat64(m.BacklogOf("backlogged"))
	}
	Eventually(t, 30*time.Second, "a backlog of 6", func() bool { return gauge() == 6 })
	free()
	Eventually(t, 30*time.Second, "the backlog drained", func() bool { return gauge() == 0 })
}
