package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// praetor replay --session on a stream that lost a session's first events
// (expired past the streams' max age, or removed) says so, with where the
// stream's events now begin, rather than only that the session has no
// session.started; on a NATS without praetor's streams it names the server.
func TestReplaySessionSaysWhatTheStreamLost(t *testing.T) {
	nc := eventstest.Connect(t, eventstest.StartServer(t))
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var out, errOut bytes.Buffer
	err = replaySession(ctx, bus, "s-1", nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no stream PRAETOR_TURNS on nats://") {
		t.Errorf("replay on a NATS without the streams: %v, want the stream and the server named", err)
	}

	if err := node.Provision(ctx, bus, node.StreamSettings{Partitions: node.DevPartitions, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	for _, ev := range []struct {
		id string
		p  contracts.Payload
	}{
		{"s-1-started", contracts.SessionStarted{TenantID: "acme", SessionID: "s-1", ProjectID: "p", EngineID: "exploration",
			EngineVersion: "1.0.0", StartedAt: at}},
		{"s-1-turn-1", contracts.TurnExtracted{TenantID: "acme", SessionID: "s-1", TurnID: "s-1-turn-1", TurnNumber: 1,
			Message: "Tell me about hosting."}},
		{"s-1-turn-2", contracts.TurnExtracted{TenantID: "acme", SessionID: "s-1", TurnID: "s-1-turn-2", TurnNumber: 2,
			Message: "We know AWS a little."}},
	} {
		e, err := contracts.NewEvent(contracts.Meta{ID: ev.id, Source: "/test", Time: at}, ev.p)
		if err != nil {
			t.Fatal(err)
		}
		if err := bus.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st, err := bus.JetStream().Stream(ctx, contracts.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(2)); err != nil {
		t.Fatal(err)
	}
	err = replaySession(ctx, bus, "s-1", nil, &out, &errOut)
	if want := "PRAETOR_TURNS holds its events from sequence 2 ("; err == nil || !strings.Contains(err.Error(), "no session.started") ||
		!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the 1 before expired or removed") {
		t.Errorf("replay of a session whose start was lost: %v, want %q and what was lost", err, want)
	}
	err = replaySession(ctx, bus, "s-2", nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no events of session s-2 in PRAETOR_TURNS; PRAETOR_TURNS holds its events from sequence 2") {
		t.Errorf("replay of an unknown session: %v, want where the stream's events begin", err)
	}
}
