package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ReplayConfig selects what to read back from a stream.
type ReplayConfig struct {
	Stream string
	// Subjects filter the stream; empty reads all of it.
	Subjects []string
	// FromSeq starts at this stream sequence; Since starts at this time.
	// Neither: from the beginning.
	FromSeq uint64
	Since   time.Time
	// Batch is how many messages one fetch asks for. Default: 512.
	Batch int
}

// Record is one message read back by Replay.
type Record struct {
	Delivery
	// Event is the decoded event; zero when Err is set.
	Event event.Event
	// Err is the decode error of a message that is not a valid CloudEvent.
	Err error
	// Header and Data are the message as stored.
	Header nats.Header
	Data   []byte
}

// Replay reads a stream (or the subjects of it) in order with an ordered
// consumer, from a sequence or a time, up to the last message present when it
// started, and calls fn for each. It never touches durable consumers, so
// running services are unaffected. fn returning an error stops the replay
// with that error.
func (b *Bus) Replay(ctx context.Context, cfg ReplayConfig, fn func(Record) error) error {
	if cfg.Stream == "" {
		return errors.New("events: replay needs a stream")
	}
	if cfg.FromSeq > 0 && !cfg.Since.IsZero() {
		return errors.New("events: replay takes a start sequence or a start time, not both")
	}
	batch := cmp.Or(cfg.Batch, 512)
	stream, err := b.js.Stream(ctx, cfg.Stream)
	if err != nil {
		return fmt.Errorf("events: replay %s: %w", cfg.Stream, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("events: replay %s: %w", cfg.Stream, err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 || last < cfg.FromSeq {
		return nil
	}
	oc := jetstream.OrderedConsumerConfig{FilterSubjects: cfg.Subjects, DeliverPolicy: jetstream.DeliverAllPolicy}
	switch {
	case cfg.FromSeq > 0:
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, cfg.FromSeq
	case !cfg.Since.IsZero():
		since := cfg.Since
		oc.DeliverPolicy, oc.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := stream.OrderedConsumer(ctx, oc)
	if err != nil {
		return fmt.Errorf("events: replay %s: %w", cfg.Stream, err)
	}
	for {
		mb, err := cons.FetchNoWait(batch)
		if err != nil {
			return fmt.Errorf("events: replay %s: %w", cfg.Stream, err)
		}
		n, done, err := replayBatch(mb, last, fn)
		if err != nil || done {
			return err
		}
		if err := drainErr(mb.Error()); err != nil {
			return fmt.Errorf("events: replay %s: %w", cfg.Stream, err)
		}
		if n == 0 {
			return ctx.Err()
		}
	}
}

// replayBatch hands a fetched batch's messages to fn, up to the stream's
// last sequence (done). Whatever it returns, it reads the batch to its end
// first: the client's fetch goroutine lives until then.
func replayBatch(mb jetstream.MessageBatch, last uint64, fn func(Record) error) (n int, done bool, err error) {
	defer func() {
		for range mb.Messages() {
		}
	}()
	for msg := range mb.Messages() {
		n++
		meta, err := msg.Metadata()
		if err != nil {
			return n, true, fmt.Errorf("events: replay: %w", err)
		}
		r := Record{
			Delivery: Delivery{Stream: meta.Stream, Subject: msg.Subject(), StreamSeq: meta.Sequence.Stream,
				NumDelivered: meta.NumDelivered, Timestamp: meta.Timestamp},
			Header: msg.Headers(), Data: msg.Data(),
		}
		r.Event, r.Err = Decode(msg.Headers(), msg.Data())
		if err := fn(r); err != nil {
			return n, true, err
		}
		if meta.Sequence.Stream >= last || meta.NumPending == 0 {
			return n, true, drainErr(mb.Error())
		}
	}
	return n, false, nil
}

func drainErr(err error) error {
	if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
		return nil
	}
	return err
}
