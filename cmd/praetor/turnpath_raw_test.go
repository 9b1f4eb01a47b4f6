package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/events"
)

// The raw turn path is BenchmarkTurnPath's baseline, run beside ours in
// the same run (BenchmarkTurnPath/raw/MODE): the turn path's messaging on
// JetStream alone, with nothing between the messages — the floor that NATS
// puts under a turn on this machine at this hour. It has what the dev node
// has: the embedded server, file storage, uncompressed streams, dev's
// duplicate window and partitions, the services on an in-process
// connection, and per stage and partition one durable consumer with one
// message in flight. A turn stores the same five messages, of the sizes
// the turn path's have (measured on project discovery): the client
// publishes turn.received and awaits its acknowledgement, as the gateway
// does; the "extractor" publishes an LLM record and turn.extracted, the
// "runner" an LLM record and turn.responded, each awaiting its
// acknowledgement before it acknowledges its input; turn.responded reaches
// the benchmark's subscriber.
const (
	rawReceivedBytes  = 590
	rawExtractedBytes = 2100
	rawRespondedBytes = 4960
	// The extraction prompt's record is the larger (its schema); the two
	// average 15.6 kB.
	rawExtractRecordBytes = 21_000
	rawReplyRecordBytes   = 10_200
)

// rawTurnHeader carries a raw turn's id from message to message.
const rawTurnHeader = "Raw-Turn"

// rawReplies is the subject the raw turn path's replies reach.
const rawReplies = "raw.turn.responded.*"

// startRawTurnPath starts an embedded server listening on a free port, the
// raw turn path's streams and its two stages, and returns the server's
// address and a send function that publishes turn i (id) as the gateway
// would.
func startRawTurnPath(b *testing.B) (addr string, send func(i int, id string) error) {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: b.TempDir(), Listen: true, Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	dup := node.DefaultDuplicates(true, 30*time.Second)
	for name, subject := range map[string]string{"RAW_TURNS": "raw.turn.*.*", "RAW_LLM": "raw.llm.*"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
			Storage: jetstream.FileStorage, Duplicates: dup}); err != nil {
			b.Fatal(err)
		}
	}
	parts := node.DevPartitions
	stage := func(name, in, out string, recordBytes, outBytes int) {
		record, payload := make([]byte, recordBytes), make([]byte, outBytes)
		for p := range parts {
			cons, err := js.CreateOrUpdateConsumer(ctx, "RAW_TURNS", jetstream.ConsumerConfig{
				Durable: fmt.Sprintf("%s-p%03d", name, p), FilterSubject: fmt.Sprintf("raw.turn.%s.%d", in, p),
				AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1, DeliverPolicy: jetstream.DeliverAllPolicy})
			if err != nil {
				b.Fatal(err)
			}
			cc, err := cons.Consume(func(m jetstream.Msg) {
				id := m.Headers().Get(rawTurnHeader)
				for _, msg := range []*nats.Msg{
					{Subject: fmt.Sprintf("raw.llm.%d", p), Data: record, Header: nats.Header{
						nats.MsgIdHdr: {id + "/" + name + "/record"}}},
					{Subject: fmt.Sprintf("raw.turn.%s.%d", out, p), Data: payload, Header: nats.Header{
						nats.MsgIdHdr: {id + "/" + out}, rawTurnHeader: {id}}},
				} {
					if _, err := js.PublishMsg(ctx, msg); err != nil {
						b.Error(err)
						return
					}
				}
				if err := m.Ack(); err != nil {
					b.Error(err)
				}
			}, jetstream.PullMaxMessages(64))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(cc.Stop)
		}
	}
	stage("raw-extractor", "received", "extracted", rawExtractRecordBytes, rawExtractedBytes)
	stage("raw-runner", "extracted", "responded", rawReplyRecordBytes, rawRespondedBytes)

	received := make([]byte, rawReceivedBytes)
	send = func(i int, id string) error {
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "raw.turn.received." + strconv.Itoa(i%parts), Data: received,
			Header: nats.Header{nats.MsgIdHdr: {id}, rawTurnHeader: {id}}})
		return err
	}
	return srv.ClientURL(), send
}
