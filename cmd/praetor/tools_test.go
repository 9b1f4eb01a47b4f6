package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// A tool whose --data-dir holds no store reads the praetor dev listening
// on the default address, which may run on any other directory: it says
// which server it reads and why, and how to choose another.
func TestToolSaysWhichNATSItFallsBackTo(t *testing.T) {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	was := localDevURL
	localDevURL = srv.ClientURL()
	t.Cleanup(func() { localDevURL = was })

	dataDir := filepath.Join(t.TempDir(), ".praetor")
	var stderr bytes.Buffer
	nc, closeConn, err := toolConn("replay", "", dataDir, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	if got := nc.ConnectedUrl(); got != srv.ClientURL() {
		t.Fatalf("connected to %s, want the local dev's %s", got, srv.ClientURL())
	}
	for _, want := range []string{srv.ClientURL(), filepath.Join(dataDir, "nats") + " not found", "--data-dir", "--nats-url"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", stderr.String(), want)
		}
	}
}

// praetor replay refuses flags of two modes at once, which it would
// otherwise ignore, saying which flags go with which mode; without a mode
// it names all three.
func TestReplayRefusesFlagsOfAnotherMode(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--session", "s-1", "--stream", "PRAETOR_TURNS"}, []string{"--stream, --session", "--session with --engines-dir"}},
		{[]string{"--session", "s-1", "--from-seq", "5"}, []string{"--from-seq, --session", "--stream with --subject, --from-seq, --since"}},
		{[]string{"--workflow", "r-1", "--from-seq", "5"}, []string{"--from-seq, --workflow", "--workflow with --tenant"}},
		{[]string{"--workflow", "r-1", "--since", "1h"}, []string{"--since, --workflow"}},
		{[]string{"--session", "s-1", "--workflow", "r-1"}, []string{"--session, --workflow"}},
		{[]string{"--session", "s-1", "--tenant", "acme"}, []string{"--session, --tenant"}},
		{[]string{"--stream", "PRAETOR_TURNS", "--engines-dir", "x"}, []string{"--stream, --engines-dir"}},
		{[]string{"--from-seq", "5"}, []string{"--stream", "required (or --session ID, or --workflow RUN)"}},
	} {
		var stdout, stderr bytes.Buffer
		// No NATS is given: the flags are refused before any is looked for.
		err := run(t.Context(), append([]string{"replay", "--nats-url", "nats://127.0.0.1:1"}, tc.args...), &stdout, &stderr)
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("replay %v: %v, want it refused saying %q", tc.args, err, want)
			}
		}
	}
}

// A replay that reads nothing says why when it can be known: a subject
// filter no subject of the stream can match (naming its subjects), a
// --from-seq past its last sequence; an empty result is still a result
// (no error).
func TestReplayOfNothingSaysWhy(t *testing.T) {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc := eventstest.Connect(t, srv)
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := node.Provision(ctx, bus, node.StreamSettings{Partitions: node.DevPartitions, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	ev, err := contracts.NewEvent(contracts.Meta{ID: "s-1-started", Source: "/test", Time: at},
		contracts.SessionStarted{TenantID: "local", SessionID: "s-1", ProjectID: "p", EngineID: "exploration",
			EngineVersion: "1.0.0", StartedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--subject", "praetor.turn.*.local.s-1"},
			"no subject it holds can match --subject praetor.turn.*.local.s-1; its subjects are praetor.turn.*.*.*.* " +
				"(praetor.turn.<event>.<tenant>.<session>.<partition>)"},
		{[]string{"--subject", "praetor.handoff.>"}, "no subject it holds can match --subject praetor.handoff.>"},
		{[]string{"--from-seq", "9999"}, "--from-seq 9999 is past its last sequence, 1"},
		{[]string{"--subject", "praetor.turn.*.local.s-2.*"}, "replayed 0 messages from PRAETOR_TURNS\n"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"replay", "--nats-url", srv.ClientURL(), "--stream", contracts.StreamTurns}, tc.args...)
		if err := run(ctx, args, &stdout, &stderr); err != nil {
			t.Errorf("replay %v: %v, want no error", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("replay %v: stdout %q, stderr %q, want nothing on stdout and %q on stderr", tc.args, stdout.String(), stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	args := []string{"replay", "--nats-url", srv.ClientURL(), "--stream", contracts.StreamTurns, "--subject", "praetor.turn.*.local.s-1.*"}
	if err := run(ctx, args, &stdout, &stderr); err != nil || stderr.String() != "replayed 1 messages from PRAETOR_TURNS\n" {
		t.Errorf("replay of the session's subjects: %v, stderr %q, want the one message and nothing more said", err, stderr.String())
	}
}
