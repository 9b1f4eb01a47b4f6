package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

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
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: "LATER", Subjects: []string{"later.>"}, Duplicates: 90 * time.Minute}); err != nil {
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
	// It says how long the window is and when it ends: 90 minutes after the
	// first copy was stored.
	later, err := bus.JetStream().Stream(ctx, "LATER")
	if err != nil {
		t.Fatal(err)
	}
	first, err := later.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if end := first.Time.Add(90 * time.Minute).UTC().Format(time.RFC3339); !strings.Contains(errOut, "(1h30m0s,") ||
		!strings.Contains(errOut, "redrive it after "+end) {
		t.Errorf("a second redrive within the duplicate window does not say its length (1h30m0s) and end (%s):\n%s", end, errOut)
	}
	if _, errOut, code := dlq("redrive", "x"); code != 1 || !strings.Contains(errOut, `"x" is not a dead letter's sequence`) {
		t.Errorf("redrive x: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := dlq("list", "--cause", "permanet"); code == 0 || !strings.Contains(errOut, "not one of decode") {
		t.Errorf("list --cause permanet: exit %d\n%s", code, errOut)
	}

	// --all: every dead letter the filters select, one an event; lost-1 is
	// still in the window, lost-2 is stored, lost-2's second dead letter
	// (another source gave up on it too) is skipped.
	time.Sleep(10 * time.Millisecond) // lost-2's dead letters come after since
	since := time.Now().UTC().Format(time.RFC3339Nano)
	m2, err := events.Encode("later.y", eventstest.NewEvent("lost-2", "k", 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"outbox", "other-outbox"} {
		if err := bus.DeadLetterUnpublishable(ctx, source, m2, "no stream takes later.y", 5); err != nil {
			t.Fatal(err)
		}
	}
	if out, errOut, code := dlq("redrive", "--all", "--since", since); code != 0 || strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, `"event_id":"lost-2"`) || !strings.Contains(errOut, "redriving 1 dead letter\n") ||
		!strings.Contains(errOut, "the same event as dead letter 2; skipped") {
		t.Fatalf("redrive --all --since: exit %d, want lost-2 alone, once\n%s%s", code, out, errOut)
	}
	out, errOut, code = dlq("redrive", "--all", "--cause", events.CauseUnpublishable)
	if code != 1 || !strings.Contains(errOut, "redriving 2 dead letters") || !strings.Contains(errOut, "2 of 2 dead letters not redriven") ||
		!strings.Contains(out, `"event_id":"lost-2","subject":"later.y","stream":"LATER","stream_seq":2,"duplicate":true`) {
		t.Errorf("redrive --all: exit %d, want 1 with lost-1 and lost-2 duplicates (both just stored)\n%s%s", code, out, errOut)
	}
	if out, errOut, code := dlq("redrive", "--all", "--cause", "decode"); code != 0 || out != "" || !strings.Contains(errOut, "redriving 0 dead letters") {
		t.Errorf("redrive --all --cause decode: exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all=true", "1"}, "not both"},
		{[]string{"--cause", "permanent", "1"}, "select dead letters for --all"},
		{nil, "give the sequences"},
	} {
		if _, errOut, code := dlq("redrive", tc.args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("redrive %v: exit %d, want an error saying %q\n%s", tc.args, code, tc.want, errOut)
		}
	}
}

// praetor dlq redrive skips a dead letter whose message cannot be handled
// as it is, saying why on its line and in the summary: one that is not a
// CloudEvent (cause decode), and one whose data breaks its type's contract
// (cause permanent); sent again byte for byte, each was only dead-lettered
// again. A permanent failure of a sound message (its session was missing)
// goes, and --force sends the others all the same.
func TestDLQRedriveSkipsWhatCannotSucceed(t *testing.T) {
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
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: "LATER", Subjects: []string{"later.>"}, Duplicates: 90 * time.Minute}); err != nil {
		t.Fatal(err)
	}

	malformed := cloudevents.New()
	malformed.SetID("malformed-1")
	malformed.SetType(contracts.Catalog()[0].Type)
	malformed.SetSource("/test")
	malformed.SetExtension("tenant", "t1")
	malformed.SetExtension("partitionkey", "k")
	if err := malformed.SetData(cloudevents.ApplicationJSON, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := contracts.Validate(malformed); err == nil {
		t.Fatalf("%s with data {} keeps its contract; the test needs one it breaks", malformed.Type())
	}
	msgs := []*nats.Msg{{Subject: "later.a", Header: nats.Header{}, Data: []byte("not a CloudEvent")}}
	for _, ev := range []cloudevents.Event{malformed, eventstest.NewEvent("sound-1", "k", 1)} {
		m, err := events.Encode("later.b", ev)
		if err != nil {
			t.Fatal(err)
		}
		// Without its id the stream keeps every copy: a redrive is stored
		// though the duplicate window still holds the original.
		m.Header.Del(events.HeaderMsgID)
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		if _, err := bus.JetStream().PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := bus.Subscribe(ctx, events.ConsumerConfig{Stream: "LATER", Name: "strict", Subjects: []string{"later.>"}},
		func(_ context.Context, ev cloudevents.Event) error {
			if _, ok := contracts.Lookup(ev.Type()); ok {
				return contracts.Validate(ev)
			}
			return events.Permanent(errors.New("session not found"))
		})
	if err != nil {
		t.Fatal(err)
	}
	dls, err := bus.JetStream().Stream(ctx, events.DeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, 10*time.Second, "three dead letters", func() bool {
		info, err := dls.Info(ctx)
		return err == nil && info.State.Msgs == 3
	})
	if err := sub.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	dlq := func(args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(binary, append([]string{"dlq", "--nats-url", srv.ClientURL()}, args...)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		_ = cmd.Run()
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	out, _, _ := dlq("list")
	seq := map[string]string{} // decode, malformed-1, sound-1
	for l := range strings.Lines(out) {
		var line deadLetterLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		key := line.EventID
		if line.Cause == events.CauseDecode {
			key = "decode"
		}
		seq[key] = strconv.FormatUint(line.Seq, 10)
	}
	if len(seq) != 3 || seq["decode"] == "" || seq["malformed-1"] == "" || seq["sound-1"] == "" {
		t.Fatalf("dlq list = %v, want a decode dead letter, malformed-1 and sound-1:\n%s", seq, out)
	}

	out, errOut, code := dlq("redrive", seq["decode"], seq["malformed-1"], seq["sound-1"])
	for _, want := range []string{
		"dead letter " + seq["decode"] + ": skipped: its message is not a valid CloudEvent (",
		"dead letter " + seq["malformed-1"] + ": skipped: its message breaks its contract (",
		"so a redrive would be dead-lettered again (--force=true redrives it)",
		"2 of 3 dead letters not redriven (2 skipped: their messages cannot be handled as they are; --force=true redrives them)",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("redrive: stderr lacks %q", want)
		}
	}
	if code != 1 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"event_id":"sound-1"`) {
		t.Errorf("redrive: exit %d, want 1 with sound-1 alone stored:\n%s%s", code, out, errOut)
	}
	out, errOut, code = dlq("redrive", "--all", "--cause", events.CauseDecode)
	if code != 1 || out != "" || !strings.Contains(errOut, "1 of 1 dead letter") || !strings.Contains(errOut, "(1 skipped: its message cannot") {
		t.Errorf("redrive --all --cause decode: exit %d, want 1 with it skipped:\n%s%s", code, out, errOut)
	}
	// A sequence after a bare bool flag is taken for its value when it
	// parses as a bool: --force 1 2 redrove 2 alone.
	for _, flag := range []string{"--force", "--all"} {
		if out, errOut, code := dlq("redrive", flag, "1", "2"); code == 0 || out != "" ||
			!strings.Contains(errOut, flag+` takes no value, and "1" would be read as one: give it as `+flag+"=true") {
			t.Errorf("redrive %s 1 2: exit %d, want a usage error:\n%s%s", flag, code, out, errOut)
		}
	}
	out, errOut, code = dlq("redrive", "--force=true", seq["decode"], seq["malformed-1"])
	if code != 0 || strings.Count(out, "\n") != 2 || strings.Contains(errOut, "skipped") {
		t.Errorf("redrive --force: exit %d, want both stored:\n%s%s", code, out, errOut)
	}
}
