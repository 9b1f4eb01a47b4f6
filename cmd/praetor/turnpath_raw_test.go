package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// The raw turn path is BenchmarkTurnPath's baseline, run beside ours in
// the same run (BenchmarkTurnPath/raw/MODE): the turn path's messaging on
// JetStream alone, with nothing between the messages — a floor that NATS
// puts under a turn on this machine at this hour. It has what the dev node
// has: the embedded server, file storage, streams provisioned as the node
// provisions its own (events.Bus.EnsureStream: partitioned by the server
// from a tenant and a session token, dev's partitions and duplicate
// window, uncompressed), the services on an in-process connection, per
// stage and partition one durable consumer with one message in flight and
// the node's pull options, and messages with a CloudEvent's headers. A turn
// stores the same five messages, of the sizes the turn path's have
// (measured on project discovery): the client publishes turn.received and
// awaits its acknowledgement, as the gateway does; the "extractor"
// publishes an LLM record and turn.extracted, the "runner" an LLM record
// and turn.responded, each awaiting the stream's acknowledgement before it
// acknowledges its input; turn.responded reaches the benchmark's
// subscriber. Cheaper than the node's in what it leaves out: one filter
// subject a consumer (the runner's has two), synchronous publishes where
// the outbox publishes a batch asynchronously, and none of the
// PRAETOR_BENCH_* settings of the node's streams.
const (
	rawReceivedBytes  = 590
	rawExtractedBytes = 2100
	rawRespondedBytes = 4960
	// The extraction prompt's record is the larger (its schema); the two
	// average 15.6 kB.
	rawExtractRecordBytes = 21_000
	rawReplyRecordBytes   = 10_200
	// The node's pull options (pkg/events: pullExpiry, pullHeartbeat).
	rawPullExpiry    = 20 * time.Second
	rawPullHeartbeat = 5 * time.Second
)

// rawTurnHeader carries a raw turn's id from message to message.
const rawTurnHeader = "Raw-Turn"

// rawReplies is the subject the raw turn path's replies reach, as
// published (the partition token is the stream's).
const rawReplies = "raw.turn.responded.*.*"

// rawHeader is a CloudEvent's headers in binary mode, as events.Encode
// writes them, for a message of turn id and event kind.
func rawHeader(id, kind string) nats.Header {
	eid := id + "/" + kind
	return nats.Header{
		"ce-specversion":   {"1.0"},
		"ce-id":            {eid},
		"ce-source":        {"praetor/raw"},
		"ce-type":          {"dev.praetor.raw." + kind + ".v1"},
		"ce-time":          {"2026-11-27T07:00:00.123456789Z"},
		"ce-praetortenant": {"dev"},
		"ce-traceparent":   {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"content-type":     {"application/json"},
		nats.MsgIdHdr:      {eid},
		rawTurnHeader:      {id},
	}
}

// startRawTurnPath starts an embedded server listening on a free port, the
// raw turn path's streams and its two stages, and returns it as a turnPath
// whose turns are published as the gateway would (turn i in session
// i%sessions).
func startRawTurnPath(b *testing.B, sessions int) turnPath {
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
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject}) // provisioning only
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	dup := node.DefaultDuplicates(true, 30*time.Second)
	parts := node.DevPartitions
	for _, sc := range []events.StreamConfig{
		{Name: "RAW_TURNS", Subjects: []string{"raw.turn.*.*.*"}, Partitions: parts, Duplicates: dup},
		{Name: "RAW_LLM", Subjects: []string{"raw.llm.*.*.*"}, Duplicates: dup},
	} {
		if err := bus.EnsureStream(ctx, sc); err != nil {
			b.Fatal(err)
		}
	}
	// stopping silences the stages' errors once the run is over: a
	// callback in flight may find the connection closed.
	var stopping atomic.Bool
	b.Cleanup(func() { stopping.Store(true) })
	fail := func(err error) {
		if !stopping.Load() {
			b.Error(err)
		}
	}
	stage := func(name, in, out string, recordBytes, outBytes int) {
		record, payload := make([]byte, recordBytes), make([]byte, outBytes)
		for p := range parts {
			cons, err := js.CreateOrUpdateConsumer(ctx, "RAW_TURNS", jetstream.ConsumerConfig{
				Durable: fmt.Sprintf("%s-p%03d", name, p), FilterSubject: fmt.Sprintf("raw.turn.%s.*.*.%d", in, p),
				AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1, DeliverPolicy: jetstream.DeliverAllPolicy})
			if err != nil {
				b.Fatal(err)
			}
			cc, err := cons.Consume(func(m jetstream.Msg) {
				id := m.Headers().Get(rawTurnHeader)
				// raw.turn.EVENT.TENANT.SESSION.PARTITION
				tokens := strings.Split(m.Subject(), ".")
				key := tokens[3] + "." + tokens[4]
				for _, msg := range []*nats.Msg{
					{Subject: "raw.llm.call." + key, Data: record, Header: rawHeader(id, name+"-record")},
					{Subject: "raw.turn." + out + "." + key, Data: payload, Header: rawHeader(id, out)},
				} {
					if _, err := js.PublishMsg(ctx, msg); err != nil {
						fail(err)
						return
					}
				}
				if err := m.Ack(); err != nil {
					fail(err)
				}
			}, jetstream.PullMaxMessages(64), jetstream.PullExpiry(rawPullExpiry), jetstream.PullHeartbeat(rawPullHeartbeat))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				cc.Stop()
				<-cc.Closed()
			})
		}
	}
	stage("raw-extractor", "received", "extracted", rawExtractRecordBytes, rawExtractedBytes)
	stage("raw-runner", "extracted", "responded", rawReplyRecordBytes, rawRespondedBytes)

	received := make([]byte, rawReceivedBytes)
	return turnPath{
		natsURL: srv.ClientURL(),
		replies: rawReplies,
		turnOf:  func(m *nats.Msg) string { return m.Header.Get(rawTurnHeader) },
		send: func(i int) (string, error) {
			id := strconv.Itoa(i)
			_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "raw.turn.received.dev.s" + strconv.Itoa(i%sessions),
				Data: received, Header: rawHeader(id, "received")})
			return id, err
		},
	}
}
