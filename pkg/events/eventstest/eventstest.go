// Package eventstest is the conformance suite of package events, and the
// helpers tests use to run the real NATS server in-process.
//
// Run executes the suite against any server reachable through a Harness; the
// events package runs it against the embedded server, and against NATS_URL
// when set.
package eventstest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/pkg/events"
)

// StartServer starts an embedded JetStream server with file storage in a
// temporary directory, shut down when the test ends.
func StartServer(t testing.TB) *events.Server {
	t.Helper()
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start embedded NATS: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Connect opens an in-process connection to srv, closed when the test ends.
func Connect(t testing.TB, srv *events.Server) *nats.Conn {
	t.Helper()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Harness gives the suite its connections. Each Connect is a new client, as
// a separate process would be.
type Harness struct {
	Connect func(t *testing.T) *nats.Conn
}

var seq atomic.Int64

// Topic is an isolated stream and subject space for one test.
type Topic struct {
	Stream string
	// Prefix is the subject prefix; events go to <Prefix>.<tenant>.<key>.
	Prefix string
}

// NewTopic returns a topic no other test uses.
func NewTopic() Topic {
	n := seq.Add(1)
	tag := fmt.Sprintf("%d%d", time.Now().UnixNano()%1_000_000, n)
	return Topic{Stream: "CONF_" + tag, Prefix: "conf" + tag + ".ev"}
}

// Pattern is the stream's subject pattern.
func (tp Topic) Pattern() string { return tp.Prefix + ".*.*" }

// Route is the Config.Subject of the topic: tenant and partitionkey
// extensions become the last two tokens.
func (tp Topic) Route(ev event.Event) (string, error) {
	tenant := events.ExtensionString(ev, "tenant")
	key := events.ExtensionString(ev, "partitionkey")
	if tenant == "" || key == "" {
		return "", fmt.Errorf("event %s lacks tenant or partitionkey", ev.ID())
	}
	return tp.Prefix + "." + tenant + "." + key, nil
}

// Payload is the data of the suite's events.
type Payload struct {
	Key string `json:"key"`
	N   int    `json:"n"`
	Pad string `json:"pad,omitempty"`
}

// NewEvent builds a valid event for key carrying n.
func NewEvent(id, key string, n int) event.Event {
	ev := event.New()
	ev.SetID(id)
	ev.SetType("dev.praetor.test.v1")
	ev.SetSource("/eventstest")
	ev.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ev.SetExtension("tenant", "t1")
	ev.SetExtension("partitionkey", key)
	if err := ev.SetData(event.ApplicationJSON, Payload{Key: key, N: n}); err != nil {
		panic(err)
	}
	return ev
}

// PayloadOf decodes a suite event's data.
func PayloadOf(t testing.TB, ev event.Event) Payload {
	t.Helper()
	var p Payload
	if err := json.Unmarshal(ev.Data(), &p); err != nil {
		t.Fatalf("decode payload of %s: %v", ev.ID(), err)
	}
	return p
}

// Eventually polls cond until it holds or the deadline passes.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Wait receives from ch or fails the test after within.
func Wait[T any](t testing.TB, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("timed out after %s waiting for %s", within, what)
		var zero T
		return zero
	}
}

// DeadLetters reads every dead letter of a consumer.
func DeadLetters(t testing.TB, bus *events.Bus, stream, consumer string) []events.DeadLetter {
	t.Helper()
	var out []events.DeadLetter
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := bus.Replay(ctx, events.ReplayConfig{
		Stream: events.DeadLetterStream, Subjects: []string{events.DeadLetterSubject(stream, consumer)},
	}, func(r events.Record) error {
		if r.Err != nil {
			return r.Err
		}
		dl, err := events.AsDeadLetter(r.Event)
		if err != nil {
			return err
		}
		out = append(out, dl)
		return nil
	})
	if err != nil {
		t.Fatalf("read dead letters: %v", err)
	}
	return out
}
