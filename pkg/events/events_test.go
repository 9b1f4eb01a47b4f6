package events_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
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
	bus, topic := dlqBus(t, events.StreamConfig{})
	ctx := t.Context()
	var msgs []*nats.Msg
	for i, id := range []string{"a", "nowhere", "c", "huge"} {
		m, err := bus.Encode(ctx, eventstest.NewEvent(id, "k", i))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	msgs[1].Subject = "no.stream.takes.this"
	msgs[3].Data = make([]byte, bus.JetStream().Conn().MaxPayload()+1)
	err := bus.PublishMsgs(ctx, msgs)
	var berr *events.BatchError
	if !errors.As(err, &berr) {
		t.Fatalf("PublishMsgs = %v, want a BatchError", err)
	}
	// The huge one fails as it is sent, before the other's acknowledgement
	// is awaited: the failures are named in batch order all the same, each
	// with its own error.
	if len(berr.Failed) != 2 || berr.Failed[0] != 1 || berr.Failed[1] != 3 || len(berr.Errs) != 2 ||
		!errors.Is(berr.Errs[0], jetstream.ErrNoStreamResponse) || !errors.Is(berr.Errs[1], nats.ErrMaxPayload) {
		t.Fatalf("BatchError names %v with %v, want messages 1 (no stream) and 3 (too large)", berr.Failed, berr.Errs)
	}
	for _, tc := range []struct {
		subject string
		err     error
		want    bool
	}{
		{"no.stream.takes.this", berr.Errs[0], true},
		{msgs[3].Subject, berr.Errs[1], true},
		{msgs[0].Subject, jetstream.ErrNoStreamResponse, false}, // its stream exists: it may answer later
		{"no.stream.takes.this", errors.New("no acknowledgement within 5s"), false},
	} {
		if got := bus.Refused(ctx, tc.subject, tc.err); got != tc.want {
			t.Errorf("Refused(%s, %v) = %v, want %v", tc.subject, tc.err, got, tc.want)
		}
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

// A dead letter is redriven byte for byte to its subject: a handler that
// failed for good handles it once its fault is mended (the stream drops the
// copy while the event's id is in its duplicate window, and says so), and an
// unpublishable message reaches the stream created for it.
func TestRedrive(t *testing.T) {
	// The window outlasts the dead-lettering, which under load can take
	// longer than the 200ms it was. (A long window cut short after the
	// first redrive would not do: the server applies the shorter one only
	// when the timer the longer one set fires.)
	const window = 3 * time.Second
	// Partitioned, as the ordered streams are: the stream stores subjects
	// with a partition appended, which a redrive must not send.
	bus, topic := dlqBus(t, events.StreamConfig{Duplicates: window, Partitions: 4})
	ctx := t.Context()
	var mended, firstRedriven atomic.Bool
	handled := make(chan string, 4)
	sub, err := bus.Subscribe(ctx, events.ConsumerConfig{Stream: topic.Stream, Name: "fragile", Subjects: []string{topic.Pattern()}, Keyed: true},
		func(ctx context.Context, ev event.Event) error {
			if !mended.Load() {
				d, _ := events.DeliveryFrom(ctx)
				firstRedriven.Store(d.Redriven)
				return events.Permanent(errors.New("a bug"))
			}
			if d, _ := events.DeliveryFrom(ctx); !d.Redriven {
				return events.Permanent(errors.New("a redriven event delivered without Delivery.Redriven"))
			}
			handled <- ev.ID()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	if err := bus.Publish(ctx, eventstest.NewEvent("e1", "k", 1)); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	eventstest.Eventually(t, 10*time.Second, "e1 dead-lettered", func() bool {
		seq = deadLetterSeq(t, bus, "e1")
		return seq > 0
	})

	if firstRedriven.Load() {
		t.Error("the first delivery of the original says Redriven")
	}
	got, err := bus.Redrive(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Duplicate || got.EventID != "e1" {
		t.Fatalf("redrive within the duplicate window = %+v, want a duplicate of e1", got)
	}
	mended.Store(true)
	// Once the window has passed, the stream forgets the event's id.
	eventstest.Eventually(t, 10*time.Second, "a redrive stored", func() bool {
		if got, err = bus.Redrive(ctx, seq); err != nil {
			t.Fatal(err)
		}
		return !got.Duplicate
	})
	if got.Duplicate || got.Stream != topic.Stream || got.StreamSeq != 2 {
		t.Fatalf("redrive after the window = %+v, want it stored as message 2 of %s", got, topic.Stream)
	}
	select {
	case id := <-handled:
		if id != "e1" {
			t.Fatalf("handled %s, want e1", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the redriven event was not handled")
	}

	// An unpublishable message reaches the stream made for its subject.
	m, err := bus.Encode(ctx, eventstest.NewEvent("lost", "k", 2))
	if err != nil {
		t.Fatal(err)
	}
	m.Subject = "later.stream.x"
	if err := bus.DeadLetterUnpublishable(ctx, "outbox", m, "no stream", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Redrive(ctx, deadLetterSeq(t, bus, "lost")); err == nil {
		t.Fatal("redrive to a subject no stream takes succeeded")
	}
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: "LATER", Subjects: []string{"later.>"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := bus.Redrive(ctx, deadLetterSeq(t, bus, "lost")); err != nil || got.Stream != "LATER" || got.Duplicate {
		t.Fatalf("redrive once the stream exists = %+v, %v; want stored in LATER", got, err)
	}

	if _, err := bus.Redrive(ctx, 999); !errors.Is(err, events.ErrNotRedrivable) {
		t.Fatalf("redrive of no dead letter = %v, want ErrNotRedrivable", err)
	}
	if _, err := bus.Redrive(ctx, 0); !errors.Is(err, events.ErrNotRedrivable) {
		t.Fatalf("redrive of sequence 0 = %v, want ErrNotRedrivable", err)
	}
}

// deadLetterSeq returns the sequence in the dead-letter stream of the dead
// letter of an event, 0 when there is none.
func deadLetterSeq(t *testing.T, bus *events.Bus, eventID string) uint64 {
	t.Helper()
	var seq uint64
	err := bus.Replay(t.Context(), events.ReplayConfig{Stream: events.DeadLetterStream}, func(r events.Record) error {
		if r.Err != nil {
			return nil
		}
		if dl, err := events.AsDeadLetter(r.Event); err == nil && dl.EventID == eventID {
			seq = r.StreamSeq
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// An event too large for its dead letter to carry its data (base64, a
// third larger) is dead-lettered all the same, with what the data was and
// where the stream keeps it, and a redrive takes the data from there while
// it is the original. A
// message no stream keeps is not dead-lettered without its data.
func TestDeadLetterTooLargeToCarryItsData(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{Duplicates: 200 * time.Millisecond})
	ctx := t.Context()
	most := int(bus.JetStream().Conn().MaxPayload())
	big := eventstest.NewEvent("big", "k", 1)
	big.DataEncoded = []byte(`"` + strings.Repeat("x", most*4/5) + `"`)
	sub, err := bus.Subscribe(ctx, events.ConsumerConfig{Stream: topic.Stream, Name: "strict", Subjects: []string{topic.Pattern()}},
		func(context.Context, event.Event) error { return events.Permanent(errors.New("too big for me")) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	if err := bus.Publish(ctx, big); err != nil {
		t.Fatal(err)
	}
	var dls []events.DeadLetter
	eventstest.Eventually(t, 10*time.Second, "big dead-lettered", func() bool {
		dls = eventstest.DeadLetters(t, bus, topic.Stream, "strict")
		return len(dls) == 1
	})
	dl := dls[0]
	sum := sha256.Sum256(big.DataEncoded)
	if !dl.DataOmitted || len(dl.Data) != 0 || dl.DataSize != len(big.DataEncoded) || dl.DataSHA256 != hex.EncodeToString(sum[:]) ||
		dl.StreamSeq != 1 || dl.EventID != "big" {
		t.Fatalf("dead letter: omitted %v, %d bytes kept, size %d, sha256 %s, stream seq %d; want the data described, not kept",
			dl.DataOmitted, len(dl.Data), dl.DataSize, dl.DataSHA256, dl.StreamSeq)
	}
	// Redriven, the data comes from the stream's copy, checked against
	// what the dead letter kept. Once the stream lets it go, it cannot be.
	handled := make(chan int, 1)
	sub2, err := bus.Subscribe(ctx, events.ConsumerConfig{Stream: topic.Stream, Name: "roomy", Subjects: []string{topic.Pattern()},
		DeliverNew: true},
		func(_ context.Context, ev event.Event) error { handled <- len(ev.Data()); return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub2.Stop(context.Background()) })
	dlSeq := deadLetterSeq(t, bus, "big") // the copy redriven is dead-lettered again by "strict"
	var r events.Redriven
	eventstest.Eventually(t, 10*time.Second, "a redrive stored", func() bool {
		if r, err = bus.Redrive(ctx, dlSeq); err != nil {
			t.Fatal(err)
		}
		return !r.Duplicate
	})
	select {
	case n := <-handled:
		if n != len(big.DataEncoded) {
			t.Errorf("the redriven event has %d bytes of data, want %d", n, len(big.DataEncoded))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the redriven event was not handled")
	}
	if err := sub.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sub2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The stream made again holds other data at the original's place.
	if err := bus.JetStream().DeleteStream(ctx, topic.Stream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(ctx, eventstest.NewEvent("other", "k", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Redrive(ctx, dlSeq); !errors.Is(err, events.ErrNotRedrivable) || !strings.Contains(err.Error(), "other bytes") {
		t.Errorf("redrive when the stream holds other data there = %v, want ErrNotRedrivable saying so", err)
	}
	if err := bus.JetStream().DeleteStream(ctx, topic.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Redrive(ctx, dlSeq); !errors.Is(err, events.ErrNotRedrivable) ||
		!strings.Contains(err.Error(), "message 1 of "+topic.Stream) {
		t.Errorf("redrive without its data, the stream gone = %v, want ErrNotRedrivable naming the original", err)
	}

	m, err := events.Encode("nowhere.x", big)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.DeadLetterUnpublishable(ctx, "outbox", m, "no stream", 1); !errors.Is(err, events.ErrTooLarge) {
		t.Errorf("dead-lettering an unpublishable message too large to carry = %v, want ErrTooLarge (nothing else keeps its data)", err)
	}
}

// idle subscribes a handler that does nothing, stopped when the test ends.
func idle(t *testing.T, bus *events.Bus, cfg events.ConsumerConfig) {
	t.Helper()
	sub, err := bus.Subscribe(t.Context(), cfg, func(context.Context, event.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
}

// consumerOf reads a durable consumer of a stream straight from JetStream.
func consumerOf(t *testing.T, bus *events.Bus, stream, durable string) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(t.Context(), stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	return js, cons
}

// dlqBus starts a server and returns a bus on it with the dead-letter
// streams and a stream for a new topic, configured by stream (whose name
// and subjects are the topic's).
func dlqBus(t *testing.T, stream events.StreamConfig) (*events.Bus, eventstest.Topic) {
	t.Helper()
	return dlqBusWith(t, stream, events.Config{})
}

// dlqBusWith is dlqBus with the bus configured by cfg (its Subject is the
// topic's).
func dlqBusWith(t *testing.T, stream events.StreamConfig, cfg events.Config) (*events.Bus, eventstest.Topic) {
	t.Helper()
	srv := eventstest.StartServer(t)
	topic := eventstest.NewTopic()
	cfg.Subject = topic.Route
	bus, err := events.New(eventstest.Connect(t, srv), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stream.Name, stream.Subjects = topic.Stream, []string{topic.Pattern()}
	if err := bus.EnsureStream(t.Context(), stream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureDeadLetterStreams(t.Context(), events.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	return bus, topic
}

// A stream is provisioned with the compression asked for, its full blocks
// are compressed on disk, and its events read back as published, from the
// disk after a restart; another compression changes the stream's config, and
// an unknown one is refused by name.
func TestStreamCompression(t *testing.T) {
	dir := t.TempDir()
	srv, err := events.StartServer(events.ServerConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc := eventstest.Connect(t, srv)
	topic := eventstest.NewTopic()
	bus, err := events.New(nc, events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sc := events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}, Compression: events.CompressionS2}

	if err := bus.EnsureStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	compression := func() jetstream.StoreCompression {
		s, err := js.Stream(ctx, topic.Stream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.Compression
	}
	if got := compression(); got != jetstream.S2Compression {
		t.Fatalf("stream compression %v, want s2", got)
	}

	// Past one 8 MB block of compressible events: the first block is
	// compressed on disk, and reading it decompresses it.
	const n = 1200
	body := strings.Repeat("the same prompt again and again, ", 300) // ~10 kB
	for i := range n {
		ev := eventstest.NewEvent(fmt.Sprintf("e%d", i), "k", i)
		if err := ev.SetData(event.ApplicationJSON, []byte(fmt.Sprintf(`{"i":%d,"text":%q}`, i, body))); err != nil {
			t.Fatal(err)
		}
		if err := bus.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	// The server compresses a full block in the background.
	blocks, _ := filepath.Glob(filepath.Join(dir, "*", "*", "streams", topic.Stream, "msgs", "1.blk"))
	if len(blocks) != 1 {
		t.Fatalf("the stream's first block is not where expected under %s: %v", dir, blocks)
	}
	var size int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(blocks[0]); err == nil {
			if size = fi.Size(); size < 1<<20 {
				break
			}
		}
	}
	if size >= 1<<20 {
		t.Fatalf("the full first block takes %d bytes on disk, want it compressed (< 1 MiB)", size)
	}
	// After a restart every event comes from the disk, the compressed
	// block decompressed.
	nc.Close()
	srv.Shutdown()
	srv, err = events.StartServer(events.ServerConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc = eventstest.Connect(t, srv)
	if bus, err = events.New(nc, events.Config{Subject: topic.Route}); err != nil {
		t.Fatal(err)
	}
	if js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, topic.Stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, n / 2, n} {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		if want := fmt.Sprintf(`{"i":%d,"text":%q}`, seq-1, body); string(m.Data) != want {
			t.Fatalf("message %d reads back as %.60q..., want %.60q...", seq, m.Data, want)
		}
	}

	// The setting changes in the stream's config at once (the server's store
	// takes it at its next start).
	sc.Compression = events.CompressionNone
	if err := bus.EnsureStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if got := compression(); got != jetstream.NoCompression {
		t.Fatalf("stream compression after asking for none: %v", got)
	}
	sc.Compression = "zstd"
	if err := bus.EnsureStream(ctx, sc); err == nil || !strings.Contains(err.Error(), `compression "zstd"`) {
		t.Fatalf("EnsureStream with compression zstd: %v, want a refusal naming it", err)
	}
}

// A MaxDeliver advisory for a stream deleted since (recreated with other
// partitions, say) is dead-lettered with what it says, not retried every
// few seconds for as long as the advisory is kept. Found by helper-50.
func TestAdvisoryOfADeletedStream(t *testing.T) {
	bus, _ := dlqBus(t, events.StreamConfig{})
	if err := bus.HandleAdvisory([]byte(`{"stream":"PRAETOR_GONE","consumer":"runner-p003","stream_seq":7,"deliveries":5}`)); err != nil {
		t.Fatalf("advisory of a deleted stream: %v, want it dead-lettered", err)
	}
	dls := eventstest.DeadLetters(t, bus, "PRAETOR_GONE", "runner")
	if len(dls) != 1 || dls[0].StreamSeq != 7 || dls[0].Cause != events.CauseMaxDeliver ||
		!strings.Contains(dls[0].Reason, "stream no longer exists") {
		t.Fatalf("dead letters %+v, want one for PRAETOR_GONE #7 saying its stream is gone", dls)
	}
}

// PublishAck says where an event went; a duplicate is told so, with its
// first copy's sequence, which Stored reads back.
func TestPublishAckAndStored(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	first := eventstest.NewEvent("ack-1", "k", 1)
	ack, err := bus.PublishAck(t.Context(), first)
	if err != nil || ack.Stream != topic.Stream || ack.Seq != 1 || ack.Duplicate {
		t.Fatalf("first publish: %+v, %v", ack, err)
	}
	if _, err := bus.PublishAck(t.Context(), eventstest.NewEvent("ack-2", "k", 2)); err != nil {
		t.Fatal(err)
	}
	again := eventstest.NewEvent("ack-1", "k", 99) // the same id, other data
	ack, err = bus.PublishAck(t.Context(), again)
	if err != nil || ack.Seq != 1 || !ack.Duplicate {
		t.Fatalf("the same id again: %+v, %v; want a duplicate of #1", ack, err)
	}
	stored, err := bus.Stored(t.Context(), ack.Stream, ack.Seq)
	if err != nil || stored.ID() != "ack-1" || eventstest.PayloadOf(t, stored).N != 1 {
		t.Fatalf("stored #1 = %v (%v), want the first copy", stored, err)
	}
	if _, err := bus.Stored(t.Context(), ack.Stream, 42); err == nil {
		t.Error("read a sequence the stream does not hold")
	}
}

// A consumer whose events wait on the stream for a time of their own
// (NoBacklog: timers, not work) is left out of praetor_consumer_backlog,
// which the autoscalers read; the others are in it.
func TestNoBacklogConsumerIsNotReported(t *testing.T) {
	srv := eventstest.StartServer(t)
	topic := eventstest.NewTopic()
	reg := prometheus.NewRegistry()
	m, err := events.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(eventstest.Connect(t, srv), events.Config{Subject: topic.Route, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStream(t.Context(), events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		no   bool
	}{{"timers", true}, {"work", false}} { // the timers' poller, if any, starts first
		idle(t, bus, events.ConsumerConfig{Stream: topic.Stream, Name: c.name, Subjects: []string{topic.Pattern()}, NoBacklog: c.no})
	}
	reported := func() []string {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fams {
			if f.GetName() != "praetor_consumer_backlog" {
				continue
			}
			for _, mt := range f.GetMetric() {
				for _, l := range mt.GetLabel() {
					if l.GetName() == "service" {
						out = append(out, l.GetValue())
					}
				}
			}
		}
		return out
	}
	// Each poller reports as soon as its consumer starts.
	eventstest.Eventually(t, 10*time.Second, "the backlog of work", func() bool { return slices.Contains(reported(), "work") })
	if got := reported(); slices.Contains(got, "timers") {
		t.Errorf("backlog series %v include the NoBacklog consumer", got)
	}
}

// A consumer without a bound on deliveries (MaxDeliver -1) tries an event
// again for as long as its handler fails, past the default five deliveries,
// and handles it once the failure ends; an event whose failure is
// permanent is still dead-lettered, with its reason.
func TestUnboundedDeliveries(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	const failures = 12
	handled := make(chan uint64, 1)
	var calls atomic.Int64
	sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "timers", Subjects: []string{topic.Pattern()},
		MaxDeliver: -1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		func(ctx context.Context, ev event.Event) error {
			if ev.ID() == "malformed" {
				return events.Permanent(errors.New("cannot be handled"))
			}
			if calls.Add(1) <= failures {
				return errors.New("store down")
			}
			d, _ := events.DeliveryFrom(ctx)
			handled <- d.NumDelivered
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	for _, ev := range []event.Event{eventstest.NewEvent("outlasts", "k", 1), eventstest.NewEvent("malformed", "k", 2)} {
		if err := bus.Publish(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if n := eventstest.Wait(t, handled, 30*time.Second, "the event handled"); n != failures+1 {
		t.Errorf("handled on delivery %d, want %d", n, failures+1)
	}
	var dls []events.DeadLetter
	eventstest.Eventually(t, 10*time.Second, "the malformed event dead-lettered", func() bool {
		dls = eventstest.DeadLetters(t, bus, topic.Stream, "timers")
		return len(dls) > 0
	})
	if len(dls) != 1 || dls[0].EventID != "malformed" || dls[0].Cause != events.CausePermanent || !strings.Contains(dls[0].Reason, "cannot be handled") {
		t.Errorf("dead letters = %+v, want the malformed event's, permanent", dls)
	}
}

// A consumer's events put back until a time of their own (Postpone) stay
// pending on the server meanwhile; MaxAckPending -1 lets any number of
// them wait without holding back an event due sooner.
func TestUnboundedAckPending(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	const waiting = 300 // beyond the default bound, 256 for 16 workers
	var evs []event.Event
	for i := range waiting {
		evs = append(evs, eventstest.NewEvent(fmt.Sprintf("later-%d", i), "k", i))
	}
	if err := bus.PublishBatch(t.Context(), append(evs, eventstest.NewEvent("due", "k", waiting))); err != nil {
		t.Fatal(err)
	}
	due := make(chan struct{})
	sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "timers", Subjects: []string{topic.Pattern()},
		MaxAckPending: -1},
		func(ctx context.Context, ev event.Event) error {
			if ev.ID() == "due" {
				close(due)
				return nil
			}
			return events.Postpone(errors.New("not due"), time.Hour)
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	eventstest.Wait(t, due, 30*time.Second, "the event due now, behind the ones that wait")
}

// A handler that panics on an event of a consumer without a bound on
// deliveries (MaxDeliver -1) would panic again at every delivery, for
// good: a panic is a bug, not an outage to wait out, so the event is
// dead-lettered with the panic as its reason, and an operator can mend the
// handler and redrive it.
func TestUnboundedDeliveriesDeadLetterAPanic(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	var calls atomic.Int64
	sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "timers", Subjects: []string{topic.Pattern()},
		MaxDeliver: -1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		func(ctx context.Context, ev event.Event) error {
			calls.Add(1)
			var m map[string]int
			m["boom"]++ // a bug: assignment to a nil map
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	if err := bus.Publish(t.Context(), eventstest.NewEvent("buggy", "k", 1)); err != nil {
		t.Fatal(err)
	}
	var dls []events.DeadLetter
	eventstest.Eventually(t, 30*time.Second, "the event dead-lettered, or delivered 20 times", func() bool {
		dls = eventstest.DeadLetters(t, bus, topic.Stream, "timers")
		return len(dls) > 0 || calls.Load() >= 20
	})
	if len(dls) != 1 || dls[0].EventID != "buggy" || dls[0].Cause != events.CausePermanent ||
		!strings.Contains(dls[0].Reason, "handler panic: assignment to entry in nil map") {
		t.Fatalf("after %d deliveries, dead letters = %+v, want the buggy event's, permanent, naming the panic", calls.Load(), dls)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}

// A dead letter whose publish takes longer than what is left of the ack
// wait (a slow dead-letter stream) is still the event's one settlement: the
// consumer reports progress until the message is settled, so the server
// does not deliver it again meanwhile and the handler runs once.
func TestSlowDeadLetterRunsTheHandlerOnce(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	bus.SlowDeadLetters(2500 * time.Millisecond)
	var calls atomic.Int64
	sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "slowdl", Subjects: []string{topic.Pattern()},
		AckWait: time.Second},
		func(ctx context.Context, ev event.Event) error {
			calls.Add(1)
			return events.Permanent(errors.New("unknown engine x"))
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	if err := bus.Publish(t.Context(), eventstest.NewEvent("doomed", "k", 1)); err != nil {
		t.Fatal(err)
	}
	var dls []events.DeadLetter
	eventstest.Eventually(t, 30*time.Second, "the event dead-lettered", func() bool {
		dls = eventstest.DeadLetters(t, bus, topic.Stream, "slowdl")
		return len(dls) > 0
	})
	if len(dls) != 1 || dls[0].EventID != "doomed" || dls[0].Cause != events.CausePermanent {
		t.Errorf("dead letters = %+v, want the doomed event's, permanent", dls)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}

// A consumer's settings written over by another process (an older replica
// starting during a rolling upgrade, whose CreateOrUpdateConsumer is the
// last) are put back by the running subscription within a backlog
// interval: runner-deadlines went back to ten deliveries and 512 pending
// events until a new replica restarted.
func TestConsumerSettingsRestored(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	idle(t, bus, events.ConsumerConfig{Stream: topic.Stream, Name: "timers", Subjects: []string{topic.Pattern()},
		MaxDeliver: -1, MaxAckPending: -1, NoBacklog: true, BacklogInterval: 50 * time.Millisecond})
	js, cons := consumerOf(t, bus, topic.Stream, "timers")
	old := cons.CachedInfo().Config
	old.MaxDeliver, old.MaxAckPending = 10, 512
	if _, err := js.UpdateConsumer(t.Context(), topic.Stream, old); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, 10*time.Second, "the settings restored", func() bool {
		info, err := cons.Info(t.Context())
		return err == nil && info.Config.MaxDeliver == -1 && info.Config.MaxAckPending == -1
	})
}

// Settings another process made looser than a subscription's own (a
// replica run with a longer --ack-wait, or more workers and so more
// pending events) stay when the subscription puts back those made
// tighter: two replicas configured otherwise wrote theirs over each
// other's every backlog interval for as long as both ran, the ack wait
// flipping under the handlers of the one that wanted it longer. A keyed
// consumer's partition keeps its one pending event either way.
func TestConsumerSettingsLooserKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keyed bool
	}{{"shared", false}, {"keyed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			partitions := 0
			if tc.keyed {
				partitions = 1
			}
			bus, topic := dlqBus(t, events.StreamConfig{Partitions: partitions})
			t.Cleanup(func() { _ = bus.Close(context.Background()) })
			cfg := events.ConsumerConfig{Stream: topic.Stream, Name: "worker", Subjects: []string{topic.Pattern()},
				AckWait: 2 * time.Second, MaxDeliver: 5, MaxAckPending: 256, BacklogInterval: 50 * time.Millisecond}
			durable := "worker"
			if tc.keyed {
				cfg.Keyed, cfg.MaxAckPending = true, 0
				durable = events.PartitionConsumer("worker", 0)
			}
			idle(t, bus, cfg)
			js, cons := consumerOf(t, bus, topic.Stream, durable)
			// Another replica, run with a longer ack wait, more deliveries
			// and more pending events, subscribes too. Each replica's watch
			// reads the settings and writes them back; neither waits for the
			// other, so the test waits for where they settle rather than
			// for a single write.
			other, err := events.New(bus.Conn(), events.Config{Subject: topic.Route})
			if err != nil {
				t.Fatal(err)
			}
			looser := cfg
			looser.AckWait, looser.MaxDeliver = 5*time.Second, 8
			if !tc.keyed {
				looser.MaxAckPending = 512
			}
			idle(t, other, looser)
			wantPending := 512
			if tc.keyed {
				wantPending = 1
			}
			var got jetstream.ConsumerConfig
			settled := func() bool {
				info, err := cons.Info(t.Context())
				if err == nil {
					got = info.Config
				}
				return err == nil && got.AckWait == 5*time.Second && got.MaxDeliver == 8 && got.MaxAckPending == wantPending
			}
			eventstest.Eventually(t, 20*time.Second, "the looser settings kept", settled)
			// Both keep them, round after round of each watch.
			for range 20 {
				time.Sleep(cfg.BacklogInterval)
				if !settled() {
					t.Fatalf("settings %s ack wait, %d deliveries, %d pending while both watches run: want 5s, 8 and %d",
						got.AckWait, got.MaxDeliver, got.MaxAckPending, wantPending)
				}
			}
			// An older replica starting writes fewer deliveries over them,
			// once: they are put back.
			tighter := got
			tighter.MaxDeliver = 3
			if _, err := js.UpdateConsumer(t.Context(), topic.Stream, tighter); err != nil {
				t.Fatal(err)
			}
			eventstest.Eventually(t, 20*time.Second, "max deliver put back", settled)
		})
	}
}

// A message that is not a valid CloudEvent is dead-lettered with the event
// id its binary-mode ce-id header gives, in whatever case it is spelt, when
// it has no Nats-Msg-Id; one with neither says in its reason that it gave
// no id, so the dead letter is not left without a word of it.
func TestDecodeDeadLetterKeepsTheEventID(t *testing.T) {
	bus, topic := dlqBus(t, events.StreamConfig{})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	handled := make(chan string, 1)
	sub, err := bus.Subscribe(t.Context(), events.ConsumerConfig{Stream: topic.Stream, Name: "audit", Subjects: []string{topic.Pattern()}},
		func(ctx context.Context, ev event.Event) error {
			handled <- ev.ID()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	for _, h := range []nats.Header{{"Ce-Id": {"audit-bad-1"}}, {"X-Other": {"1"}}} {
		msg := &nats.Msg{Subject: topic.Prefix + ".t1.k", Header: h, Data: []byte(`{"garbage":`)}
		if _, err := bus.JetStream().PublishMsg(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.Publish(t.Context(), eventstest.NewEvent("good-1", "k", 1)); err != nil {
		t.Fatal(err)
	}
	if id := eventstest.Wait(t, handled, 30*time.Second, "the good event"); id != "good-1" {
		t.Fatalf("handled %q, want good-1", id)
	}
	dls := eventstest.DeadLetters(t, bus, topic.Stream, "audit")
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dls), dls)
	}
	// The workers may dead-letter them in either order.
	slices.SortFunc(dls, func(a, b events.DeadLetter) int { return int(a.StreamSeq) - int(b.StreamSeq) })
	if dls[0].EventID != "audit-bad-1" || dls[0].Cause != events.CauseDecode || strings.Contains(dls[0].Reason, "no event id") {
		t.Errorf("dead letter of a message with a Ce-Id header = %+v, want event id audit-bad-1", dls[0])
	}
	if dls[1].EventID != "" || !strings.Contains(dls[1].Reason, "no event id (no Nats-Msg-Id or ce-id header)") {
		t.Errorf("dead letter of a message without an id = %+v, want a reason saying it gave none", dls[1])
	}
}

// A consumer with an InactiveThreshold stays while its subscription pulls,
// however long no event comes, and the server deletes it once no process
// has pulled from it for the threshold.
func TestInactiveThresholdDeletesAnAbandonedConsumer(t *testing.T) {
	srv := eventstest.StartServer(t)
	nc := eventstest.Connect(t, srv)
	topic := eventstest.NewTopic()
	bus, err := events.New(nc, events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	ctx := t.Context()
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	cfg := events.ConsumerConfig{Stream: topic.Stream, Name: "passing", Subjects: []string{topic.Pattern()},
		InactiveThreshold: time.Second}
	handled := make(chan string, 1)
	sub, err := bus.Subscribe(ctx, cfg, func(_ context.Context, ev event.Event) error { handled <- ev.ID(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	info, err := bus.JetStream().Consumer(ctx, topic.Stream, "passing")
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.InactiveThreshold; got != time.Second {
		t.Fatalf("inactive threshold on the server = %s, want 1s", got)
	}
	// Three thresholds without an event: the waiting pulls keep it.
	idle := time.NewTimer(3 * time.Second)
	<-idle.C
	if err := bus.Publish(ctx, eventstest.NewEvent("late", "k", 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-handled:
		if id != "late" {
			t.Fatalf("handled %s, want late", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event published after three idle thresholds was not handled")
	}
	if err := sub.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, 15*time.Second, "the abandoned consumer deleted", func() bool {
		_, err := bus.JetStream().Consumer(ctx, topic.Stream, "passing")
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
}

// A consumer created with DeliverFrom starts at the first event stored at
// or after that time; DeliverFrom with DeliverNew, or a negative
// InactiveThreshold, is refused.
func TestDeliverFromStartsAtATime(t *testing.T) {
	srv := eventstest.StartServer(t)
	nc := eventstest.Connect(t, srv)
	topic := eventstest.NewTopic()
	bus, err := events.New(nc, events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	ctx := t.Context()
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(ctx, eventstest.NewEvent("before", "k", 1)); err != nil {
		t.Fatal(err)
	}
	first, err := bus.JetStream().Stream(ctx, topic.Stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := first.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	from := msg.Time.Add(time.Millisecond)
	if err := bus.Publish(ctx, eventstest.NewEvent("after", "k", 2)); err != nil {
		t.Fatal(err)
	}
	if m2, err := first.GetMsg(ctx, 2); err != nil || m2.Time.Before(from) {
		t.Skipf("the two events were stored within a millisecond (%v)", err)
	}
	cfg := events.ConsumerConfig{Stream: topic.Stream, Name: "from", Subjects: []string{topic.Pattern()}, Concurrency: 1,
		DeliverFrom: from}
	handled := make(chan string, 2)
	sub, err := bus.Subscribe(ctx, cfg, func(_ context.Context, ev event.Event) error { handled <- ev.ID(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(context.Background()) })
	select {
	case id := <-handled:
		if id != "after" {
			t.Fatalf("first event handled %s, want after", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing handled")
	}
	for _, bad := range []events.ConsumerConfig{
		{Stream: topic.Stream, Name: "both", Subjects: []string{topic.Pattern()}, DeliverNew: true, DeliverFrom: from},
		{Stream: topic.Stream, Name: "negative", Subjects: []string{topic.Pattern()}, InactiveThreshold: -time.Second},
	} {
		if _, err := bus.Subscribe(ctx, bad, func(context.Context, event.Event) error { return nil }); err == nil {
			t.Errorf("consumer %s accepted", bad.Name)
		}
	}
}

// A consumer that exists keeps the start it was created with: subscribing
// to it again with another DeliverFrom, with DeliverNew or with neither
// works (the server refuses to change a start) and leaves its start as it
// was.
func TestExistingConsumerKeepsItsStart(t *testing.T) {
	srv := eventstest.StartServer(t)
	nc := eventstest.Connect(t, srv)
	topic := eventstest.NewTopic()
	bus, err := events.New(nc, events.Config{Subject: topic.Route})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	ctx := t.Context()
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: topic.Stream, Subjects: []string{topic.Pattern()}}); err != nil {
		t.Fatal(err)
	}
	first := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	base := events.ConsumerConfig{Stream: topic.Stream, Name: "kept", Subjects: []string{topic.Pattern()}, Concurrency: 1}
	nop := func(context.Context, event.Event) error { return nil }
	for _, tc := range []struct {
		name        string
		deliverNew  bool
		deliverFrom time.Time
	}{
		{"created from an hour ago", false, first},
		{"another DeliverFrom", false, first.Add(30 * time.Minute)},
		{"DeliverNew", true, time.Time{}},
		{"from the beginning", false, time.Time{}},
	} {
		cfg := base
		cfg.DeliverNew, cfg.DeliverFrom = tc.deliverNew, tc.deliverFrom
		sub, err := bus.Subscribe(ctx, cfg, nop)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := sub.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		cons, err := bus.JetStream().Consumer(ctx, topic.Stream, "kept")
		if err != nil {
			t.Fatal(err)
		}
		have := cons.CachedInfo().Config
		if have.DeliverPolicy != jetstream.DeliverByStartTimePolicy || have.OptStartTime == nil || !have.OptStartTime.Equal(first) {
			t.Fatalf("%s: the consumer starts by %v at %v, want by start time at %v", tc.name, have.DeliverPolicy, have.OptStartTime, first)
		}
	}
}
