package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/record"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// varying answers differently every time, as a model at a non-zero
// temperature does; it fails while fail is set.
type varying struct {
	n    atomic.Int64
	fail atomic.Bool
}

func (v *varying) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	n := v.n.Add(1)
	if v.fail.Load() {
		return nil, &llm.APIError{Provider: "fake", Status: 503, Err: llm.ErrUnavailable, Retryable: true, Message: "down"}
	}
	return &llm.Response{Content: fmt.Sprintf("answer %d", n), Provider: "fake", Model: "fake-1", FinishReason: llm.FinishStop}, nil
}

func llmBus(t *testing.T) *events.Bus {
	t.Helper()
	bus, err := events.New(eventstest.Connect(t, eventstest.StartServer(t)), events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	if err := bus.EnsureStream(t.Context(), events.StreamConfig{Name: contracts.StreamLLM,
		Subjects: []string{contracts.LLMCallRecordedSpec.FilterSubject()}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return bus
}

func recorded(t *testing.T, bus *events.Bus) []event.Event {
	t.Helper()
	var evs []event.Event
	if err := bus.Replay(t.Context(), events.ReplayConfig{Stream: contracts.StreamLLM}, func(r events.Record) error {
		evs = append(evs, r.Event)
		return r.Err
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// Work redone — in this process after a stale write, or in another after a
// crash — makes the same calls; each is answered with what was recorded the
// first time, which is what a replay serves, though the model answers
// otherwise now. The stream keeps one record of each.
func TestRedoneWorkIsAnsweredAsRecorded(t *testing.T) {
	t.Parallel()
	bus := llmBus(t)
	model := &varying{}
	newRecorder := func() *record.Recorder { // a process
		r, err := record.NewRecorder(model, bus, record.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ask := func(msg string) llm.Request {
		return llm.Request{Purpose: "response", Messages: []llm.Message{{Role: llm.User, Content: msg}}}
	}
	work := llm.WithWork(llm.WithOwner(t.Context(), "acme", "s1"), "turn/t7")

	first, err := newRecorder().Complete(work, ask("hello"))
	if err != nil || first.Content != "answer 1" {
		t.Fatalf("first call: %+v, %v", first, err)
	}
	for _, rec := range []*record.Recorder{newRecorder(), newRecorder()} {
		again, err := rec.Complete(work, ask("hello"))
		if err != nil || again.Content != "answer 1" {
			t.Errorf("the call redone: %+v, %v; want the recorded answer 1", again, err)
		}
	}
	// The same work asking something else (its state changed meanwhile) is
	// another call; other work is too.
	if other, _ := newRecorder().Complete(work, ask("hello, again")); other == nil || other.Content == "answer 1" {
		t.Errorf("another request of the same work: %+v, want its own answer", other)
	}
	if other, _ := newRecorder().Complete(llm.WithWork(work, "turn/t8"), ask("hello")); other == nil || other.Content == "answer 1" {
		t.Errorf("the same request of other work: %+v, want its own answer", other)
	}
	// A recorded failure is what the redo gets too: the first run answered
	// the turn degraded, and a replay will.
	fails := llm.WithWork(work, "turn/t9")
	model.fail.Store(true)
	if _, err := newRecorder().Complete(fails, ask("hello")); err == nil {
		t.Fatal("the model failed; the call did not")
	}
	model.fail.Store(false)
	if resp, err := newRecorder().Complete(fails, ask("hello")); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("redoing the failed call: %+v, %v; want the recorded failure", resp, err)
	}

	evs := recorded(t, bus)
	if len(evs) != 4 {
		t.Fatalf("%d records, want 4: t7's two requests, t8's and t9's", len(evs))
	}
	rp, err := record.NewReplayerFromEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := rp.Complete(work, ask("hello")); err != nil || resp.Content != "answer 1" {
		t.Errorf("the replay serves %+v, %v; want answer 1, as the live work got", resp, err)
	}
}
