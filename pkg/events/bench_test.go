package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// The benchmarks compare our layer with raw nats.go/jetstream in the same
// run, on the embedded server with file storage, 512-byte events, acked:
//
//	go test -run '^$' -bench . -benchtime 20000x ./pkg/events/
//
// BenchmarkThroughput publishes b.N events with a window of outstanding acks
// and reports events/s from the first publish to the last handler call.
// BenchmarkLatency publishes at a fixed 5,000 events/s and reports the
// publish→handler latency percentiles.

const eventSize = 512

type benchPayload struct {
	Sent int64  `json:"sent"`
	Key  string `json:"key"`
	Pad  string `json:"pad"`
}

func payload(key string) []byte {
	p := benchPayload{Sent: time.Now().UnixNano(), Key: key}
	b, _ := json.Marshal(p)
	p.Pad = strings.Repeat("x", eventSize-len(b))
	b, _ = json.Marshal(p)
	return b
}

func sentAt(b []byte) time.Duration {
	var p benchPayload
	if err := json.Unmarshal(b, &p); err != nil {
		panic(err)
	}
	return time.Duration(time.Now().UnixNano() - p.Sent)
}

// recorder collects latencies and counts arrivals.
type recorder struct {
	mu   sync.Mutex
	lat  []time.Duration
	n    atomic.Int64
	done chan struct{}
	want int64
}

func newRecorder(want int) *recorder {
	return &recorder{want: int64(want), done: make(chan struct{}), lat: make([]time.Duration, 0, want)}
}

func (r *recorder) observe(d time.Duration) {
	r.mu.Lock()
	r.lat = append(r.lat, d)
	r.mu.Unlock()
	if r.n.Add(1) == r.want {
		close(r.done)
	}
}

func (r *recorder) wait(b *testing.B) {
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("only %d of %d events handled", r.n.Load(), r.want)
	}
}

func (r *recorder) report(b *testing.B) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.lat)
	pct := func(p float64) float64 {
		return float64(r.lat[int(p*float64(len(r.lat)-1))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// system is one way of moving events: raw JetStream or our layer.
type system interface {
	// start begins consuming, calling rec for each event.
	start(b *testing.B, rec *recorder)
	// publish sends n events, asynchronously, at most window unacked; pace
	// spaces them out when non-zero.
	publish(b *testing.B, n int, pace time.Duration)
}

type rawSystem struct {
	js     jetstream.JetStream
	stream string
	subj   string
	// ceHeaders sends the CloudEvents headers our layer sends, to separate
	// the cost of the wire format from the cost of the layer's code.
	ceHeaders bool
}

func (s *rawSystem) start(b *testing.B, rec *recorder) {
	ctx := context.Background()
	cons, err := s.js.CreateOrUpdateConsumer(ctx, s.stream, jetstream.ConsumerConfig{
		Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024,
	})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		rec.observe(sentAt(m.Data()))
		_ = m.Ack()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
}

func (s *rawSystem) publish(b *testing.B, n int, pace time.Duration) {
	window := make([]jetstream.PubAckFuture, 0, 256)
	begin := time.Now()
	for i := range n {
		if pace > 0 {
			time.Sleep(time.Until(begin.Add(time.Duration(i) * pace)))
		}
		if len(window) == cap(window) {
			<-window[0].Ok()
			window = window[1:]
		}
		m := nats.NewMsg(fmt.Sprintf("%s.t1.k%d", s.subj, i%1000))
		m.Data = payload("k")
		m.Header.Set(events.HeaderMsgID, fmt.Sprint(i))
		if s.ceHeaders {
			for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": fmt.Sprint(i), "ce-source": "/bench",
				"ce-type": "dev.praetor.bench.v1", "ce-time": time.Now().UTC().Format(time.RFC3339Nano), "ce-tenant": "t1",
				"ce-partitionkey": fmt.Sprintf("k%d", i%1000), "Content-Type": "application/json"} {
				m.Header.Set(k, v)
			}
		}
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			b.Fatal(err)
		}
		window = append(window, f)
	}
	for _, f := range window {
		<-f.Ok()
	}
}

type layerSystem struct {
	bus   *events.Bus
	topic eventstest.Topic
	keyed bool
}

func (s *layerSystem) start(b *testing.B, rec *recorder) {
	sub, err := s.bus.Subscribe(context.Background(), events.ConsumerConfig{
		Stream: s.topic.Stream, Name: "layer", Subjects: []string{s.topic.Pattern()}, Keyed: s.keyed,
	}, func(ctx context.Context, ev event.Event) error {
		rec.observe(sentAt(ev.Data()))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Stop(context.Background()) })
}

func (s *layerSystem) publish(b *testing.B, n int, pace time.Duration) {
	ctx := context.Background()
	evs := make([]event.Event, 0, n)
	begin := time.Now()
	for i := range n {
		ev := event.New()
		ev.SetID(fmt.Sprint(i))
		ev.SetType("dev.praetor.bench.v1")
		ev.SetSource("/bench")
		ev.SetTime(time.Now())
		ev.SetExtension("tenant", "t1")
		ev.SetExtension("partitionkey", fmt.Sprintf("k%d", i%1000))
		ev.DataEncoded = payload("k")
		ev.SetDataContentType(event.ApplicationJSON)
		if pace > 0 {
			// Paced: one event per publish, not waiting for its ack.
			time.Sleep(time.Until(begin.Add(time.Duration(i) * pace)))
			msg, err := s.bus.Encode(ctx, ev)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.bus.JetStream().PublishMsgAsync(msg); err != nil {
				b.Fatal(err)
			}
			continue
		}
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		// One batch: the window of outstanding acks stays full, as raw's does.
		if err := s.bus.PublishBatch(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	if pace > 0 {
		<-s.bus.JetStream().PublishAsyncComplete()
	}
}

func newSystem(b *testing.B, kind string) system {
	srv := eventstest.StartServer(b)
	nc := eventstest.Connect(b, srv)
	topic := eventstest.NewTopic()
	switch kind {
	case "raw", "raw-ce-headers":
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
			Name: topic.Stream, Subjects: []string{topic.Pattern()}, Storage: jetstream.FileStorage,
		}); err != nil {
			b.Fatal(err)
		}
		return &rawSystem{js: js, stream: topic.Stream, subj: topic.Prefix, ceHeaders: kind == "raw-ce-headers"}
	default:
		bus, err := events.New(nc, events.Config{Subject: topic.Route})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bus.Close(context.Background()) })
		keyed := kind == "keyed"
		parts := 0
		if keyed {
			parts = 16
		}
		if err := bus.EnsureStream(context.Background(), events.StreamConfig{
			Name: topic.Stream, Subjects: []string{topic.Pattern()}, Partitions: parts,
		}); err != nil {
			b.Fatal(err)
		}
		return &layerSystem{bus: bus, topic: topic, keyed: keyed}
	}
}

var kinds = []string{"raw", "raw-ce-headers", "praetor", "keyed"}

func BenchmarkThroughput(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			sys := newSystem(b, kind)
			rec := newRecorder(b.N)
			sys.start(b, rec)
			b.SetBytes(eventSize)
			b.ResetTimer()
			start := time.Now()
			sys.publish(b, b.N, 0)
			rec.wait(b)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			rec.report(b)
		})
	}
}

func BenchmarkLatency5k(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			sys := newSystem(b, kind)
			rec := newRecorder(b.N)
			sys.start(b, rec)
			b.ResetTimer()
			sys.publish(b, b.N, 200*time.Microsecond)
			rec.wait(b)
			b.StopTimer()
			rec.report(b)
		})
	}
}
