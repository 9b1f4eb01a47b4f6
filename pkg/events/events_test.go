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
