package events_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The embedded server and client keep a few process-wide goroutines.
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*Server).startGoRoutine.func1"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).Start.func1"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).syncBlocks"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).monitorJetStreamLimits"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
	)
}

// TestConformance runs the suite against the embedded server.
func TestConformance(t *testing.T) {
	srv := eventstest.StartServer(t)
	eventstest.Run(t, eventstest.Harness{Connect: func(t *testing.T) *nats.Conn {
		return eventstest.Connect(t, srv)
	}})
}

// TestConformanceExternal runs the suite against NATS_URL when set: a
// standalone server or a cluster.
func TestConformanceExternal(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("set NATS_URL to run the conformance suite against an external NATS server")
	}
	eventstest.Run(t, eventstest.Harness{Connect: func(t *testing.T) *nats.Conn {
		nc, err := events.Connect(url, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}})
}

// An event the server would refuse is refused when it is encoded for an
// outbox, before its transaction commits; one just under the limit passes
// and the server takes it.
func TestEncodeRefusesAnEventTheServerWould(t *testing.T) {
	srv := eventstest.StartServer(t)
	nc := eventstest.Connect(t, srv)
	topic := eventstest.NewTopic()
	bus, err := events.New(nc, events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStream(t.Context(), events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	most := int(nc.MaxPayload())
	sized := func(n int) event.Event {
		ev := eventstest.NewEvent("big", "k", 0)
		if err := ev.SetData(event.ApplicationJSON, []byte(`"`+strings.Repeat("x", n-2)+`"`)); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if _, err := bus.Encode(t.Context(), sized(most)); !errors.Is(err, events.ErrTooLarge) {
		t.Fatalf("Encode of an event of %d bytes of data: %v, want ErrTooLarge", most, err)
	}
	ok := sized(most - 4096) // room for the headers
	m, err := bus.Encode(t.Context(), ok)
	if err != nil {
		t.Fatalf("Encode of an event under max_payload: %v", err)
	}
	if err := bus.PublishMsg(t.Context(), m); err != nil {
		t.Fatalf("the server refused what Encode let through: %v", err)
	}
}

// A batch whose middle message no stream takes fails with a BatchError that
// names that message alone, with its own error, and the others are stored;
// DeadLetterUnpublishable then copies the message, with the reason, to the
// dead-letter stream, once however often it is called.
func TestRefusedMessageIsNamedAndDeadLettered(t *testing.T) {
	srv := eventstest.StartServer(t)
	topic := eventstest.NewTopic()
	bus, err := events.New(eventstest.Connect(t, srv), events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureDeadLetterStreams(ctx, events.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	var msgs []*nats.Msg
	for i, id := range []string{"a", "nowhere", "c"} {
		m, err := bus.Encode(ctx, eventstest.NewEvent(id, "k", i))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	msgs[1].Subject = "no.stream.takes.this"
	err = bus.PublishMsgs(ctx, msgs)
	var berr *events.BatchError
	if !errors.As(err, &berr) {
		t.Fatalf("PublishMsgs = %v, want a BatchError", err)
	}
	if len(berr.Failed) != 1 || berr.Failed[0] != 1 || len(berr.Errs) != 1 || berr.Errs[0] == nil {
		t.Fatalf("BatchError names %v with %v, want message 1 alone, with its error", berr.Failed, berr.Errs)
	}
	var stored []string
	if err := bus.Replay(ctx, events.ReplayConfig{Stream: topic.Stream}, func(r events.Record) error {
		stored = append(stored, r.Event.ID())
		return r.Err
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(stored, ",") != "a,c" {
		t.Fatalf("the stream holds %v, want a,c", stored)
	}

	for range 2 {
		if err := bus.DeadLetterUnpublishable(ctx, "outbox", msgs[1], berr.Errs[0].Error(), 5); err != nil {
			t.Fatal(err)
		}
	}
	dls := eventstest.DeadLetters(t, bus, "unpublishable", "outbox")
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1 (the second copy is a duplicate)", len(dls))
	}
	dl := dls[0]
	if dl.Cause != events.CauseUnpublishable || dl.EventID != "nowhere" || dl.Subject != msgs[1].Subject ||
		dl.Deliveries != 5 || dl.Reason != berr.Errs[0].Error() || string(dl.Data) != string(msgs[1].Data) ||
		dl.Header.Get("ce-id") != "nowhere" {
		t.Errorf("dead letter = %+v, want the refused message whole with its reason", dl)
	}
}
