package events

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
)

func BenchmarkEncode(b *testing.B) {
	ev := testEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode("s.t", ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	msg, _ := Encode("s.t", testEvent())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(msg.Header, msg.Data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMiddlewareChain(b *testing.B) {
	m := unregisteredMetrics()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := Chain(func(context.Context, event.Event) error { return nil },
		Recover(log, m, "svc"), Logging(log, "svc"), Measure(m, "svc"), Trace(), Timeout(1e9))
	ev := testEvent()
	ctx := withDelivery(context.Background(), Delivery{Stream: "S"})
	b.ReportAllocs()
	for b.Loop() {
		_ = h(ctx, ev)
	}
}
