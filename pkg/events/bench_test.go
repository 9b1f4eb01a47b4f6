package events_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/gctune"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// The benchmarks compare our layer with raw nats.go/jetstream in the same
// run, each on its own embedded server with file storage, 512-byte events,
// acknowledged publishes and explicitly acknowledged deliveries:
//
//	go test -run '^$' -bench 'Throughput|Latency5k' -benchtime 20000x -benchmem ./pkg/events/
//
// BenchmarkThroughput publishes b.N events with 256 acknowledgements
// outstanding and reports events/s from the first publish to the last
// handler call. It reports no latency: with the publisher unthrottled, a
// latency is the depth of the queue, not the cost of a message.
//
// It also reports the CPU time the whole process (server included) spent per
// event, which varies much less than the rate when other work shares the
// machine.
//
// BenchmarkLatency5k publishes at 5,000 events/s and reports the
// publish→handler latency percentiles, measured from the moment the
// publisher starts encoding the event.
//
// Both run with the garbage collector settings of the praetor binary
// (internal/gctune: GOGC 400 unless GOGC is set) and report GOGC as "gogc":
// GOGC=100 measures Go's defaults instead. The collector is most of every
// system's p99, raw's included.
//
// Both report each system's figure as a multiple of raw's in the same run
// (x-raw, p99-x-raw); on a shared machine that ratio, from measurements
// taken seconds apart, is the figure to trust, not the absolute ones. Use
// -count to repeat the rounds.
//
// Kinds: raw is bare JetStream with a payload and a Nats-Msg-Id; raw-ce
// adds, by hand, the CloudEvents headers our layer sends, to separate the
// cost of the wire format from the cost of our code; praetor is the layer
// with an unkeyed consumer; keyed is the layer with a keyed consumer over 16
// partitions (one event in flight per partition).

const eventSize = 512

var kinds = []string{"raw", "raw-ce", "praetor", "keyed"}

// keys are the 1,000 ordering keys the events cycle through, made once so
// formatting them is not part of either system's cost.
var keys = func() []string {
	k := make([]string, 1000)
	for i := range k {
		k[i] = "k" + strconv.Itoa(i)
	}
	return k
}()

// The payload is 512 bytes of JSON whose "sent" field is a fixed-width
// Unix-nanosecond time, stamped when the event is published and read back
// by the handler without a JSON decoder, so the benchmark's own work stays
// small next to what it measures.
const (
	payloadHead = `{"sent":"`
	stampDigits = 19
)

var payloadTemplate = func() []byte {
	head := payloadHead + strings.Repeat("0", stampDigits) + `","pad":"`
	tail := `"}`
	return []byte(head + strings.Repeat("x", eventSize-len(head)-len(tail)) + tail)
}()

func newPayload(sent time.Time) []byte {
	b := slices.Clone(payloadTemplate)
	n := sent.UnixNano()
	for i := len(payloadHead) + stampDigits - 1; i >= len(payloadHead); i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

func sentAt(b []byte) time.Duration {
	var n int64
	for _, c := range b[len(payloadHead) : len(payloadHead)+stampDigits] {
		n = n*10 + int64(c-'0')
	}
	return time.Duration(time.Now().UnixNano() - n)
}

// recorder counts arrivals and, when latency is on, collects latencies.
type recorder struct {
	latency bool
	mu      sync.Mutex
	lat     []time.Duration
	n       atomic.Int64
	done    chan struct{}
	want    int64
}

func newRecorder(want int, latency bool) *recorder {
	r := &recorder{want: int64(want), done: make(chan struct{}), latency: latency}
	if latency {
		r.lat = make([]time.Duration, 0, want)
	}
	return r
}

func (r *recorder) observe(data []byte) {
	if r.latency {
		d := sentAt(data)
		r.mu.Lock()
		r.lat = append(r.lat, d)
		r.mu.Unlock()
	}
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

// percentile returns the p-th latency (0 < p < 1) by the nearest-rank rule.
func (r *recorder) percentile(p float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.IsSorted(r.lat) {
		slices.Sort(r.lat)
	}
	i := min(int(p*float64(len(r.lat))+0.5), len(r.lat)) - 1
	return r.lat[max(i, 0)]
}

// system is one way of moving events: raw JetStream or our layer.
type system interface {
	// start begins consuming, calling rec for each event.
	start(b *testing.B, rec *recorder)
	// publish sends n events with acknowledgements; with a non-zero pace it
	// sends one every pace, without it as fast as the window allows.
	publish(b *testing.B, n int, pace time.Duration)
}

// window is raw's bounded set of outstanding acknowledgements, the same
// size as the layer's Config.BatchWindow default.
const window = 256

type rawSystem struct {
	js     jetstream.JetStream
	stream string
	prefix string
	// ce sends the CloudEvents headers our layer sends.
	ce bool
}

func (s *rawSystem) start(b *testing.B, rec *recorder) {
	ctx := context.Background()
	// Filtered as the layer's consumer is (it requires subjects): a filter
	// makes the server match subjects when it looks for the next message.
	cons, err := s.js.CreateOrUpdateConsumer(ctx, s.stream, jetstream.ConsumerConfig{
		Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024,
		FilterSubject: s.prefix + ".*.*",
	})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		rec.observe(m.Data())
		_ = m.Ack()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
}

func (s *rawSystem) msg(i int, now time.Time) *nats.Msg {
	key, id := keys[i%len(keys)], strconv.Itoa(i)
	m := &nats.Msg{Subject: s.prefix + ".t1." + key, Data: newPayload(now)}
	if s.ce {
		m.Header = nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {id}, "ce-source": {"/bench"}, "ce-type": {"dev.praetor.bench.v1"},
			"ce-time": {now.UTC().Format(time.RFC3339Nano)}, "ce-tenant": {"t1"}, "ce-partitionkey": {key},
			"Content-Type": {event.ApplicationJSON}, events.HeaderMsgID: {id},
		}
	} else {
		m.Header = nats.Header{events.HeaderMsgID: {id}}
	}
	return m
}

func (s *rawSystem) publish(b *testing.B, n int, pace time.Duration) {
	p := newPacer(pace)
	defer p.stop()
	// A ring: re-slicing a slice from the front and appending to it would
	// grow the window past its bound.
	var ring [window]jetstream.PubAckFuture
	for i := range n {
		now := p.wait(i)
		if i >= window {
			<-ring[i%window].Ok()
		}
		f, err := s.js.PublishMsgAsync(s.msg(i, now))
		if err != nil {
			b.Fatal(err)
		}
		ring[i%window] = f
	}
	for i := max(n-window, 0); i < n; i++ {
		<-ring[i%window].Ok()
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
		rec.observe(ev.Data())
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Stop(context.Background()) })
}

func (s *layerSystem) event(i int, now time.Time) event.Event {
	ev := event.New()
	ev.SetID(strconv.Itoa(i))
	ev.SetType("dev.praetor.bench.v1")
	ev.SetSource("/bench")
	ev.SetTime(now)
	ev.SetExtension("tenant", "t1")
	ev.SetExtension("partitionkey", keys[i%len(keys)])
	ev.SetDataContentType(event.ApplicationJSON)
	ev.DataEncoded = newPayload(now)
	return ev
}

// batchChunk is how many events the unpaced layer publisher builds and hands
// to one PublishBatch call. PublishBatch takes its events built, so one batch
// of all b.N events would build them all before the first is sent, leaving
// the server and the consumer idle meanwhile. Between chunks the publisher
// waits for the last acknowledgements and builds the next chunk: small
// stalls raw does not have.
const batchChunk = 4 * window

func (s *layerSystem) publish(b *testing.B, n int, pace time.Duration) {
	ctx := context.Background()
	if pace == 0 {
		evs := make([]event.Event, 0, batchChunk)
		for i := 0; i < n; {
			evs = evs[:0]
			for ; i < n && len(evs) < batchChunk; i++ {
				evs = append(evs, s.event(i, time.Now()))
			}
			if err := s.bus.PublishBatch(ctx, evs); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	// Paced, each event goes out without waiting for the one before to be
	// acknowledged, as raw's do: the layer's Encode, then an asynchronous
	// publish (the layer has no single-event asynchronous publish).
	p := newPacer(pace)
	defer p.stop()
	js := s.bus.JetStream()
	for i := range n {
		now := p.wait(i)
		msg, err := s.bus.Encode(ctx, s.event(i, now))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("acknowledgements still pending after a minute")
	}
}

func newSystem(b *testing.B, kind string) system {
	srv := eventstest.StartServer(b)
	nc := eventstest.Connect(b, srv)
	topic := eventstest.NewTopic()
	switch kind {
	case "raw", "raw-ce":
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
			Name: topic.Stream, Subjects: []string{topic.Pattern()}, Storage: jetstream.FileStorage,
		}); err != nil {
			b.Fatal(err)
		}
		return &rawSystem{js: js, stream: topic.Stream, prefix: topic.Prefix, ce: kind == "raw-ce"}
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

// tuneGC gives the benchmark the praetor binary's collector settings and
// returns GOGC, to report (after ResetTimer, which drops metrics).
func tuneGC(b *testing.B) float64 {
	s, err := gctune.Apply(os.Getenv)
	if err != nil {
		b.Log(err)
	}
	return float64(s.Percent)
}

// relative reports v as a multiple of raw's figure of the same run, so
// that the comparison is between measurements taken seconds apart, under
// the same load.
func relative(b *testing.B, kind string, v float64, raw *float64, unit string) {
	if kind == "raw" {
		*raw = v
		return
	}
	if *raw > 0 {
		b.ReportMetric(v / *raw, unit)
	}
}

func BenchmarkThroughput(b *testing.B) {
	var raw float64
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			gc := tuneGC(b)
			sys := newSystem(b, kind)
			rec := newRecorder(b.N, false)
			sys.start(b, rec)
			b.SetBytes(eventSize)
			b.ResetTimer()
			cpu0, start := cpuTime(), time.Now()
			sys.publish(b, b.N, 0)
			rec.wait(b)
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
			}
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "events/s")
			relative(b, kind, rate, &raw, "x-raw")
			b.ReportMetric(gc, "gogc")
		})
	}
}

func BenchmarkLatency5k(b *testing.B) {
	var raw float64
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			gc := tuneGC(b)
			sys := newSystem(b, kind)
			rec := newRecorder(b.N, true)
			sys.start(b, rec)
			b.ResetTimer()
			sys.publish(b, b.N, 200*time.Microsecond)
			rec.wait(b)
			b.StopTimer()
			b.ReportMetric(float64(rec.percentile(0.50).Microseconds()), "p50-µs")
			p99 := rec.percentile(0.99)
			b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
			b.ReportMetric(float64(rec.percentile(0.999).Microseconds()), "p99.9-µs")
			relative(b, kind, float64(p99), &raw, "p99-x-raw")
			b.ReportMetric(gc, "gogc")
		})
	}
}
