package events_test

import (
	"os"
	"testing"

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
