package events

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetterType is the CloudEvents type of dead letters.
const DeadLetterType = "dev.praetor.dead.letter.v1"

// Causes of dead letters.
const (
	// CauseDecode: the message is not a valid CloudEvent.
	CauseDecode = "decode"
	// CausePermanent: the handler failed for good (Permanent).
	CausePermanent = "permanent"
	// CauseMaxDeliver: the deliveries ran out.
	CauseMaxDeliver = "max_deliver"
	// CauseUnpublishable: the stream refused the message for good
	// (DeadLetterUnpublishable).
	CauseUnpublishable = "unpublishable"
	// CauseUnavailable: the last delivery failed because a dependency of
	// the handler was down (ConsumerConfig.Unavailable); the event is
	// likely sound, to be redriven once the dependency is back.
	CauseUnavailable = "unavailable"
)

// DeadLetterCauses are the causes a dead letter can have.
var DeadLetterCauses = []string{CauseDecode, CausePermanent, CauseMaxDeliver, CauseUnpublishable, CauseUnavailable}

// AsDeadLetter reads a dead letter from an event of DeadLetterStream.
func AsDeadLetter(ev event.Event) (DeadLetter, error) {
	var dl DeadLetter
	if ev.Type() != DeadLetterType {
		return dl, fmt.Errorf("event %s is a %s, not a dead letter", ev.ID(), ev.Type())
	}
	if err := json.Unmarshal(ev.Data(), &dl); err != nil {
		return dl, fmt.Errorf("dead letter %s: %w", ev.ID(), err)
	}
	return dl, nil
}

// DeadLetter is an event that could not be handled, kept with the original
// message byte for byte so nothing is lost.
type DeadLetter struct {
	// Reason says why, in words: the decode error, the handler's permanent
	// error, or the last error before MaxDeliver ran out.
	Reason string `json:"reason"`
	// Cause is decode, permanent, max_deliver, unavailable or unpublishable (then
	// Stream and StreamSeq are empty, Consumer names who tried to publish
	// and Deliveries counts the tries).
	Cause      string `json:"cause"`
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
	Subject    string `json:"subject"`
	// EventID is the event's id (its Nats-Msg-Id, else its ce-id header),
	// when it has one; Reason says when it has none.
	EventID string      `json:"event_id,omitempty"`
	Header  nats.Header `json:"header,omitempty"`
	Data    []byte      `json:"data,omitempty"`
	// DataOmitted is set when the original's data was too large to carry
	// in a dead letter (which holds it in base64, a third larger) and its
	// stream keeps it (Stream, StreamSeq): Data is empty, DataSize and
	// DataSHA256 say what it was.
	DataOmitted bool      `json:"data_omitted,omitempty"`
	DataSize    int       `json:"data_size,omitempty"`
	DataSHA256  string    `json:"data_sha256,omitempty"`
	At          time.Time `json:"at"`
}

// eventIDOf is the event id a message gives: its Nats-Msg-Id, else its
// binary-mode ce-id header, in whatever case its publisher spelt it (a
// message that is not a valid CloudEvent may still name its event); ""
// when it gives none.
func eventIDOf(h nats.Header) string {
	if id := h.Get(HeaderMsgID); id != "" {
		return id
	}
	for name, vs := range h {
		if len(vs) == 0 || vs[0] == "" || !strings.EqualFold(name, headerPrefix+"id") {
			continue
		}
		if id, err := percentDecode(vs[0]); err == nil {
			return id
		}
		return vs[0]
	}
	return ""
}

// noEventID ends the reason of a dead letter whose message gives no event
// id, so its EventID is not left empty without a word.
const noEventID = "; the message gives no event id (no Nats-Msg-Id or ce-id header)"

// DeadLetterSubject is where a consumer's dead letters go.
func DeadLetterSubject(stream, consumer string) string {
	return deadLetterPrefix + "." + stream + "." + consumer
}

// DeadLetterUnpublishable copies a message that never reached a stream,
// and never will (no stream takes its subject, or the stream refuses it), to
// the dead-letter stream on praetor.dlq.unpublishable.<source>, with the
// reason and how many times publishing it was tried. source names who tried:
// "outbox" for the outbox relay. The copy's id is fixed per (source, event
// id): copying the same message twice stores it once. A message whose data
// a dead letter cannot carry (it holds it in base64, a third larger than
// the message) fails with ErrTooLarge: nothing would keep the data.
func (b *Bus) DeadLetterUnpublishable(ctx context.Context, source string, msg *nats.Msg, reason string, attempts int) error {
	id := msg.Header.Get(HeaderMsgID)
	if id == "" {
		return fmt.Errorf("events: dead-letter a message on %s: it has no %s header", msg.Subject, HeaderMsgID)
	}
	dl := DeadLetter{Reason: reason, Cause: CauseUnpublishable, Consumer: source, Deliveries: uint64(attempts),
		Subject: msg.Subject, EventID: id, Header: msg.Header, Data: msg.Data, At: time.Now().UTC()}
	return b.publishDeadLetter(ctx, "dlq-unpublishable-"+source+"-"+id, DeadLetterSubject("unpublishable", source), dl)
}

// publishDeadLetterOf copies a message a consumer gave up on.
func (b *Bus) publishDeadLetterOf(ctx context.Context, dl DeadLetter) error {
	// The id is fixed per (stream, consumer, sequence): copying the same
	// message twice, from the handler and from the advisory, stores it once.
	id := "dlq-" + dl.Stream + "-" + dl.Consumer + "-" + strconv.FormatUint(dl.StreamSeq, 10)
	return b.publishDeadLetter(ctx, id, DeadLetterSubject(dl.Stream, dl.Consumer), dl)
}

func (b *Bus) publishDeadLetter(ctx context.Context, id, subject string, dl DeadLetter) error {
	ev := event.New()
	ev.SetID(id)
	ev.SetType(DeadLetterType)
	ev.SetSource("/praetor/events")
	ev.SetTime(dl.At)
	if err := ev.SetData(event.ApplicationJSON, dl); err != nil {
		return err
	}
	msg, err := Encode(subject, ev)
	if err != nil {
		return err
	}
	if most := b.nc.MaxPayload(); most > 0 && int64(msgSize(msg)) > most && len(dl.Data) > 0 {
		if dl.Stream == "" {
			return fmt.Errorf("%w: dead letter of %s: %d bytes of data do not fit in a dead letter (it holds them in base64), and no stream holds the original",
				ErrTooLarge, dl.EventID, len(dl.Data))
		}
		// Too large to copy whole, but the stream keeps the original: the
		// dead letter says what the data was and where it is.
		sum := sha256.Sum256(dl.Data)
		dl.DataOmitted, dl.DataSize, dl.DataSHA256 = true, len(dl.Data), hex.EncodeToString(sum[:])
		dl.Data = nil
		return b.publishDeadLetter(ctx, id, subject, dl)
	}
	if err := b.PublishMsg(ctx, msg); err != nil {
		return err
	}
	b.cfg.Metrics.deadLetters.WithLabelValues(dl.Consumer, dl.Cause).Inc()
	b.cfg.Logger.Warn("event dead-lettered", "service", dl.Consumer, "stream", dl.Stream,
		"stream_seq", dl.StreamSeq, "event_id", dl.EventID, "cause", dl.Cause, "reason", dl.Reason)
	return nil
}

// advisory is the server's JetStream MaxDeliver advisory.
type advisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// advisoryWatcher turns MaxDeliver advisories captured in AdvisoryStream into
// dead letters: an event whose last delivery was never settled (its handler's
// process died) is fetched by sequence and copied. Every process that
// consumes runs one on the same durable consumer, so each advisory is handled
// once.
type advisoryWatcher struct {
	cc       jetstream.ConsumeContext
	stopOnce sync.Once
}

const advisoryConsumer = "praetor-dead-letters"

func (b *Bus) startWatcher(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watcher != nil {
		return nil
	}
	if _, err := b.js.Stream(ctx, AdvisoryStream); errors.Is(err, jetstream.ErrStreamNotFound) {
		if err := b.EnsureDeadLetterStreams(ctx, StreamConfig{}); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("events: look up %s: %w", AdvisoryStream, err)
	}
	cons, err := b.js.CreateOrUpdateConsumer(ctx, AdvisoryStream, jetstream.ConsumerConfig{
		Durable:    advisoryConsumer,
		AckPolicy:  jetstream.AckExplicitPolicy,
		AckWait:    30 * time.Second,
		MaxDeliver: -1,
	})
	if err != nil {
		return fmt.Errorf("events: advisory consumer: %w", err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if err := b.handleAdvisory(msg.Data()); err != nil {
			b.cfg.Logger.Error("max-deliver advisory not dead-lettered yet; retrying", "error", err)
			_ = msg.NakWithDelay(2 * time.Second)
			return
		}
		_ = msg.Ack()
	})
	if err != nil {
		return fmt.Errorf("events: consume advisories: %w", err)
	}
	b.watcher = &advisoryWatcher{cc: cc}
	return nil
}

func (b *Bus) handleAdvisory(data []byte) error {
	var a advisory
	if err := json.Unmarshal(data, &a); err != nil || a.Stream == "" {
		b.cfg.Logger.Error("unreadable max-deliver advisory dropped", "data", string(data))
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.PublishTimeout)
	defer cancel()
	service := serviceOf(a.Consumer)
	dl := DeadLetter{
		Reason:     fmt.Sprintf("delivered %d times without being acknowledged (MaxDeliver reached)", a.Deliveries),
		Cause:      CauseMaxDeliver,
		Stream:     a.Stream,
		Consumer:   service,
		StreamSeq:  a.StreamSeq,
		Deliveries: a.Deliveries,
		At:         time.Now().UTC(),
	}
	var raw *jetstream.RawStreamMsg
	stream, err := b.js.Stream(ctx, a.Stream)
	if err == nil {
		raw, err = stream.GetMsg(ctx, a.StreamSeq)
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		// Deleted since (recreated with other partitions, say): the dead
		// letter says what it can rather than wait for a stream that will
		// not come back, trying every few seconds for the advisory's life.
		dl.Reason += "; its stream no longer exists"
	case errors.Is(err, jetstream.ErrMsgNotFound):
		dl.Reason += "; the original is no longer in the stream"
	case err != nil:
		return fmt.Errorf("fetch %s #%d: %w", a.Stream, a.StreamSeq, err)
	default:
		dl.Subject, dl.Header, dl.Data, dl.EventID = raw.Subject, raw.Header, raw.Data, eventIDOf(raw.Header)
		if dl.EventID == "" {
			dl.Reason += noEventID
		}
	}
	return b.publishDeadLetterOf(ctx, dl)
}

func (w *advisoryWatcher) stop(ctx context.Context) error {
	var err error
	w.stopOnce.Do(func() {
		w.cc.Drain()
		select {
		case <-w.cc.Closed():
		case <-ctx.Done():
			w.cc.Stop()
			err = ctx.Err()
		}
	})
	return err
}

// Redriven is what Redrive did with a dead letter.
type Redriven struct {
	// DeadLetterSeq is the dead letter's sequence in DeadLetterStream.
	DeadLetterSeq uint64 `json:"dead_letter_seq"`
	EventID       string `json:"event_id,omitempty"`
	Subject       string `json:"subject"`
	// Stream and StreamSeq are where the stream stored the message again.
	Stream    string `json:"stream"`
	StreamSeq uint64 `json:"stream_seq"`
	// Duplicate is set when the stream already held the event's id within
	// its duplicate window and stored nothing: redrive it once the window
	// has passed.
	Duplicate bool `json:"duplicate"`
}

// ErrNotRedrivable is wrapped by Redrive's failures that trying again will
// not mend: no dead letter at that sequence, or one that did not keep its
// original message (nor its data, which its stream no longer keeps).
var ErrNotRedrivable = errors.New("events: dead letter cannot be redriven")

// HeaderRedriven marks a message Redrive published again; its value is the
// dead letter's sequence. Handlers see it as Delivery.Redriven.
const HeaderRedriven = "Praetor-Redriven"

// Redrive publishes again, on its subject and byte for byte (headers,
// Nats-Msg-Id included, with HeaderRedriven added), the original message of
// the dead letter at sequence seq of DeadLetterStream: once its cause is
// mended (a bug fixed, a stream created), the event is handled as if it had
// just arrived. The dead letter stays, as the record of what failed.
// Redriving twice does no harm: within the duplicate window the stream
// drops the copy, and after it the consumers' inboxes do (a handler that
// skips its inbox on first deliveries treats a redriven one as a
// redelivery).
func (b *Bus) Redrive(ctx context.Context, seq uint64) (Redriven, error) {
	if seq == 0 {
		return Redriven{}, fmt.Errorf("%w: sequence 0 (sequences start at 1)", ErrNotRedrivable)
	}
	stream, err := b.js.Stream(ctx, DeadLetterStream)
	if err != nil {
		return Redriven{}, fmt.Errorf("events: redrive #%d: %w", seq, err)
	}
	raw, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Redriven{}, fmt.Errorf("%w: no message at sequence %d of %s", ErrNotRedrivable, seq, DeadLetterStream)
	}
	if err != nil {
		return Redriven{}, fmt.Errorf("events: redrive #%d: %w", seq, err)
	}
	ev, err := Decode(raw.Header, raw.Data)
	if err != nil {
		return Redriven{}, fmt.Errorf("%w: message %d of %s is not a dead letter", ErrNotRedrivable, seq, DeadLetterStream)
	}
	dl, err := AsDeadLetter(ev)
	if err != nil {
		return Redriven{}, fmt.Errorf("%w: message %d of %s: %v", ErrNotRedrivable, seq, DeadLetterStream, err)
	}
	if dl.Subject == "" {
		return Redriven{}, fmt.Errorf("%w: dead letter %d kept no original message (%s)", ErrNotRedrivable, seq, dl.Reason)
	}
	if dl.DataOmitted {
		// The dead letter kept what the data was; its stream keeps the data.
		if err := b.originalData(ctx, &dl); err != nil {
			return Redriven{}, fmt.Errorf("events: redrive dead letter %d, which did not keep the original's %d bytes of data (too large): %w",
				seq, dl.DataSize, err)
		}
	}
	subject := dl.Subject
	if dl.Stream != "" {
		// A partitioned stream stored the subject with the partition it
		// appended: published again, the subject goes without it.
		n, err := b.Partitions(ctx, dl.Stream)
		if err != nil {
			return Redriven{}, fmt.Errorf("events: redrive dead letter %d: %w", seq, err)
		}
		if i := strings.LastIndexByte(subject, '.'); n > 0 && i > 0 {
			subject = subject[:i]
		}
	}
	header := maps.Clone(dl.Header)
	if header == nil {
		header = nats.Header{}
	}
	header.Set(HeaderRedriven, strconv.FormatUint(seq, 10))
	ack, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: header, Data: dl.Data})
	if err != nil {
		return Redriven{}, fmt.Errorf("events: redrive dead letter %d to %s: %w", seq, subject, err)
	}
	return Redriven{DeadLetterSeq: seq, EventID: cmp.Or(dl.EventID, dl.Header.Get(HeaderMsgID)), Subject: subject, Stream: ack.Stream,
		StreamSeq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// originalData fills in the data a dead letter omitted from the original
// message its stream keeps, checked against the size and sha256 it kept.
// Failures that will last wrap ErrNotRedrivable: no stream keeps the
// original any more, or what it keeps is not it.
func (b *Bus) originalData(ctx context.Context, dl *DeadLetter) error {
	if dl.Stream == "" || dl.StreamSeq == 0 {
		return fmt.Errorf("%w: no stream keeps the original", ErrNotRedrivable)
	}
	where := fmt.Sprintf("message %d of %s", dl.StreamSeq, dl.Stream)
	stream, err := b.js.Stream(ctx, dl.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: the original was %s, which no longer exists", ErrNotRedrivable, where)
	}
	if err != nil {
		return err
	}
	raw, err := stream.GetMsg(ctx, dl.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: the original was %s, which the stream no longer keeps", ErrNotRedrivable, where)
	}
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw.Data)
	if len(raw.Data) != dl.DataSize || hex.EncodeToString(sum[:]) != dl.DataSHA256 {
		return fmt.Errorf("%w: %s holds %d other bytes, not the original's", ErrNotRedrivable, where, len(raw.Data))
	}
	dl.Data = raw.Data
	return nil
}
