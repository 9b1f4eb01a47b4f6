package events

import (
	"context"
	"fmt"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPublishBatchWindowIsBounded checks that a batch never has more than
// Config.BatchWindow acknowledgements outstanding, however long the batch.
func TestPublishBatchWindowIsBounded(t *testing.T) {
	for _, tc := range []struct{ window, events int }{{1, 10}, {4, 3}, {8, 100}, {256, 2000}} {
		t.Run(fmt.Sprintf("window %d, %d events", tc.window, tc.events), func(t *testing.T) {
			js := &windowJS{}
			bus := &Bus{js: js, cfg: Config{BatchWindow: tc.window,
				Subject: func(event.Event) (string, error) { return "s.t", nil }}.WithDefaults()}
			evs := make([]event.Event, tc.events)
			for i := range evs {
				evs[i] = benchEvent()
				evs[i].SetID(fmt.Sprint(i))
			}
			if err := bus.PublishBatch(context.Background(), evs); err != nil {
				t.Fatal(err)
			}
			if js.published != tc.events {
				t.Errorf("published %d, want %d", js.published, tc.events)
			}
			if js.outstanding != 0 {
				t.Errorf("%d acknowledgements never awaited", js.outstanding)
			}
			if want := min(tc.window, tc.events); js.most != want {
				t.Errorf("at most %d acknowledgements outstanding, want %d", js.most, want)
			}
		})
	}
}

// windowJS acknowledges every publish at once and counts the
// acknowledgements published but not yet taken.
type windowJS struct {
	jetstream.JetStream // only PublishMsgAsync is called
	published           int
	outstanding, most   int
}

func (js *windowJS) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	js.published++
	js.outstanding++
	js.most = max(js.most, js.outstanding)
	ok := make(chan *jetstream.PubAck, 1)
	ok <- &jetstream.PubAck{}
	return &ackedFuture{js: js, ok: ok, msg: m}, nil
}

type ackedFuture struct {
	js    *windowJS
	ok    chan *jetstream.PubAck
	msg   *nats.Msg
	taken bool
}

func (f *ackedFuture) Ok() <-chan *jetstream.PubAck {
	if !f.taken {
		// The acknowledgement is ready, so the caller takes it now.
		f.taken = true
		f.js.outstanding--
	}
	return f.ok
}
func (f *ackedFuture) Err() <-chan error { return make(chan error) }
func (f *ackedFuture) Msg() *nats.Msg    { return f.msg }
