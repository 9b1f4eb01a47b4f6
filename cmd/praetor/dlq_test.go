package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// praetor dlq lists a dead letter and redrives it: refused while no stream
// takes its subject (exit 1, the reason on stderr), stored once one does.
func TestDLQListAndRedrive(t *testing.T) {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := bus.EnsureDeadLetterStreams(ctx, events.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	m, err := events.Encode("later.x", eventstest.NewEvent("lost-1", "k", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.DeadLetterUnpublishable(ctx, "outbox", m, "no stream takes later.x", 5); err != nil {
		t.Fatal(err)
	}
	dlq := func(sub string, args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(binary, append([]string{"dlq", sub, "--nats-url", srv.ClientURL()}, args...)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		_ = cmd.Run()
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}

	out, _, code := dlq("list")
	var line deadLetterLine
	if err := json.Unmarshal([]byte(out), &line); code != 0 || err != nil {
		t.Fatalf("dlq list: exit %d, %v\n%s", code, err, out)
	}
	if line.Seq != 1 || line.Cause != events.CauseUnpublishable || line.EventID != "lost-1" || line.Subject != "later.x" ||
		line.Service != "outbox" || line.Reason != "no stream takes later.x" {
		t.Errorf("dlq list = %+v, want the dead letter of lost-1", line)
	}
	if out, _, _ := dlq("list", "--cause", "decode"); out != "" {
		t.Errorf("dlq list --cause decode printed %q, want nothing", out)
	}

	if _, errOut, code := dlq("redrive", "1"); code != 1 || !strings.Contains(errOut, "dead letter 1:") {
		t.Fatalf("redrive with no stream for the subject: exit %d, want 1 with the reason\n%s", code, errOut)
	}
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: "LATER", Subjects: []string{"later.>"}}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := dlq("redrive", "1")
	var r events.Redriven
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Stream != "LATER" || r.StreamSeq != 1 || r.EventID != "lost-1" {
		t.Fatalf("redrive once the stream exists: exit %d, %v, %+v\n%s%s", code, err, r, out, errOut)
	}
	// Again at once: the stream still holds the event's id.
	out, errOut, code = dlq("redrive", "1")
	if code != 1 || !strings.Contains(out, `"duplicate":true`) || !strings.Contains(errOut, "within its duplicate window") {
		t.Errorf("a second redrive within the duplicate window: exit %d, want 1 saying so\n%s%s", code, out, errOut)
	}
	if _, errOut, code := dlq("redrive", "x"); code != 1 || !strings.Contains(errOut, `"x" is not a dead letter's sequence`) {
		t.Errorf("redrive x: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := dlq("list", "--cause", "permanet"); code == 0 || !strings.Contains(errOut, "not one of decode") {
		t.Errorf("list --cause permanet: exit %d\n%s", code, errOut)
	}

	// --all: every dead letter the filters select; lost-1 is still in the
	// window, lost-2 is stored.
	m2, err := events.Encode("later.y", eventstest.NewEvent("lost-2", "k", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.DeadLetterUnpublishable(ctx, "outbox", m2, "no stream takes later.y", 5); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = dlq("redrive", "--all", "--cause", events.CauseUnpublishable)
	if code != 1 || !strings.Contains(errOut, "redriving 2 dead letters") || !strings.Contains(errOut, "1 of 2 dead letters not redriven") ||
		!strings.Contains(out, `"event_id":"lost-2","subject":"later.y","stream":"LATER","stream_seq":2,"duplicate":false`) {
		t.Errorf("redrive --all: exit %d, want 1 with lost-2 stored and lost-1 a duplicate\n%s%s", code, out, errOut)
	}
	if out, errOut, code := dlq("redrive", "--all", "--cause", "decode"); code != 0 || out != "" || !strings.Contains(errOut, "redriving 0 dead letters") {
		t.Errorf("redrive --all --cause decode: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"--all", "1"}, {"--cause", "permanent", "1"}, {}} {
		if _, errOut, code := dlq("redrive", args...); code == 0 {
			t.Errorf("redrive %v: exit 0, want an error\n%s", args, errOut)
		}
	}
}
