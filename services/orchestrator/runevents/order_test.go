package runevents_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
)

// swapped replays a run's events with two of them in the other order, as
// the relay stores them when the first one's publish fails and is retried
// after the next (delivery.Relay's doc says so).
type swapped struct {
	evs   []engine.Event
	order []int
}

func (s swapped) Replay(_ context.Context, _ events.ReplayConfig, fn func(events.Record) error) error {
	for i, k := range s.order {
		ce, err := runevents.CloudEvent("acme", s.evs[k])
		if err != nil {
			return err
		}
		rec := events.Record{Event: ce}
		rec.StreamSeq = uint64(i + 1)
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// Every event of the run is on the stream, one after the next (a publish
// the relay retried): Read puts them in order. Found by helper-52.
func TestReadTakesEventsOutOfOrder(t *testing.T) {
	t0 := time.Date(2026, 2, 27, 10, 0, 0, 0, time.UTC)
	plan := engine.Plan{Tasks: []engine.PlanTask{{ID: "a", Agent: "m", Kind: engine.KindWork, Timeout: engine.Duration(time.Minute)}}}
	s, e1, err := engine.Start(engine.StartInfo{RunID: "r1", Workflow: "wf", Seed: 3, Plan: plan}, engine.NewCtx(t0, 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	s, e2, err := engine.ApplyAction(s, engine.Action{Type: engine.RequestWork, TaskID: "a"}, engine.Next(s, t0.Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	_, e3, err := engine.ApplyResponse(s, engine.Response{TaskID: "a", Attempt: 1, DispatchID: "r1/a/1", OK: true}, engine.Next(s, t0.Add(2*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	evs := []engine.Event{e1, e2, e3}
	got, err := runevents.Read(context.Background(), swapped{evs, []int{0, 2, 1, 2}}, "acme", "r1")
	if err != nil || len(got) != 3 || got[0].Seq != 1 || got[1].Seq != 2 || got[2].Seq != 3 {
		t.Fatalf("replay of a complete log, out of order and with a copy: %d events, %v", len(got), err)
	}
	// An event missing from the stream is still an error.
	if _, err := runevents.Read(context.Background(), swapped{evs, []int{0, 2}}, "acme", "r1"); err == nil ||
		!strings.Contains(err.Error(), "events 2-2 are missing") {
		t.Errorf("replay without event 2: %v, want it named missing", err)
	}
}
