package events

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// benchEvent is shaped like the events Praetor services exchange (and like
// the publish→handler benchmark's): tenant and partition key extensions, a
// time, a JSON body of 512 bytes.
func benchEvent() event.Event {
	ev := event.New()
	ev.SetID("0a6c8f7e-3b1d-4f7a-9c2e-5d8b1a4f6e90")
	ev.SetType("dev.praetor.turn.received.v1")
	ev.SetSource("/praetor/gateway")
	ev.SetTime(time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC))
	ev.SetExtension("tenant", "acme")
	ev.SetExtension("partitionkey", "session-42")
	ev.SetDataContentType(event.ApplicationJSON)
	ev.DataEncoded = []byte(`{"pad":"` + strings.Repeat("x", 500) + `"}`)
	return ev
}

func BenchmarkEncode(b *testing.B) {
	ev := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode("s.t", ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	msg, _ := Encode("s.t", benchEvent())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(msg.Header, msg.Data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMiddlewareChain runs the chain every consumer puts around its
// handler, with logs at info level as in production.
func BenchmarkMiddlewareChain(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := ConsumerConfig{Name: "svc"}.WithDefaults()
	h := standardChain(func(context.Context, event.Event) error { return nil }, log, unregisteredMetrics(), cfg)
	ev := benchEvent()
	ctx := withDelivery(context.Background(), Delivery{Stream: "S"})
	b.ReportAllocs()
	for b.Loop() {
		_ = h(ctx, ev)
	}
}

// BenchmarkProcess is a consumer's work on one message outside the
// client and the server: metadata, decode, context, watch timer, chain,
// metrics, ack.
func BenchmarkProcess(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := &Bus{cfg: Config{Logger: log}.WithDefaults()}
	cfg := ConsumerConfig{Stream: "S", Name: "svc", Subjects: []string{"s.>"}}.WithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Subscription{bus: bus, cfg: cfg, ctx: ctx, metrics: bus.cfg.Metrics.forService(cfg.Name),
		handler: standardChain(func(context.Context, event.Event) error { return nil }, log, bus.cfg.Metrics, cfg)}
	w := s.newWorker()
	enc, err := Encode("s.t", benchEvent())
	if err != nil {
		b.Fatal(err)
	}
	msg := &fakeMsg{msg: enc, reply: "$JS.ACK.S.svc.1.42.42.1767225600000000000.0"}
	b.ReportAllocs()
	for b.Loop() {
		w.process(msg)
	}
	if msg.acks != b.N {
		b.Fatalf("%d acks for %d messages", msg.acks, b.N)
	}
}

// fakeMsg is a delivered JetStream message without a connection.
type fakeMsg struct {
	jetstream.Msg // the methods process does not call panic
	msg           *nats.Msg
	reply         string
	acks          int
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) {
	// As jetstream's own does: one allocation, parsed from the reply subject.
	return &jetstream.MsgMetadata{Stream: "S", Consumer: "svc", NumDelivered: 1,
		Sequence: jetstream.SequencePair{Stream: 42, Consumer: 42}}, nil
}
func (m *fakeMsg) Data() []byte         { return m.msg.Data }
func (m *fakeMsg) Headers() nats.Header { return m.msg.Header }
func (m *fakeMsg) Subject() string      { return m.msg.Subject }
func (m *fakeMsg) Reply() string        { return m.reply }
func (m *fakeMsg) Ack() error           { m.acks++; return nil }
