package runevents

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// Replayer reads a stream back in order; *events.Bus is one.
type Replayer interface {
	Replay(ctx context.Context, cfg events.ReplayConfig, fn func(events.Record) error) error
}

// ErrNoEvents is returned by Read for a run with no events on the stream.
var ErrNoEvents = errors.New("runevents: no events for the run")

// Subjects are the filters of one run's events in the workflow stream,
// whether the stream is partitioned (a partition token after the run) or not.
func Subjects(tenant, runID string) []string {
	base := "praetor.workflow.*." + tenant + "." + runID
	return []string{base, base + ".*"}
}

// Read returns a run's engine events from the workflow stream, in sequence
// order. Copies of an event (a republish outside the duplicate window) are
// dropped; a gap in the sequence is an error, since a fold past it would be
// wrong.
func Read(ctx context.Context, r Replayer, tenant, runID string) ([]engine.Event, error) {
	if !contracts.ValidToken(tenant) || !contracts.ValidToken(runID) {
		return nil, fmt.Errorf("runevents: tenant %q and run %q must be 1-128 of [A-Za-z0-9_-]", tenant, runID)
	}
	var out []engine.Event
	err := r.Replay(ctx, events.ReplayConfig{Stream: contracts.StreamWorkflows, Subjects: Subjects(tenant, runID)},
		func(rec events.Record) error {
			if rec.Err != nil {
				return fmt.Errorf("runevents: stream sequence %d: %w", rec.StreamSeq, rec.Err)
			}
			e, err := FromCloudEvent(rec.Event)
			if errors.Is(err, ErrNotRunEvent) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("runevents: stream sequence %d: %w", rec.StreamSeq, err)
			}
			out = append(out, e)
			return nil
		})
	if err != nil {
		return nil, err
	}
	// In sequence order: the relay publishes an event whose first publish
	// failed after later ones. Copies are dropped; a gap is an error.
	slices.SortStableFunc(out, func(a, b engine.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	out = slices.CompactFunc(out, func(a, b engine.Event) bool { return a.Seq == b.Seq })
	for i, e := range out {
		if want := int64(i + 1); e.Seq != want {
			return nil, fmt.Errorf("runevents: run %s: the stream has event %d but not event %d (events %d-%d are missing)",
				runID, e.Seq, want, want, e.Seq-1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s of tenant %s in %s", ErrNoEvents, runID, tenant, contracts.StreamWorkflows)
	}
	return out, nil
}

// Rebuild folds a run's events from the stream into its state.
func Rebuild(ctx context.Context, r Replayer, tenant, runID string) (engine.State, []engine.Event, error) {
	evs, err := Read(ctx, r, tenant, runID)
	if err != nil {
		return engine.State{}, nil, err
	}
	s, err := engine.Fold(evs)
	if err != nil {
		return engine.State{}, evs, fmt.Errorf("runevents: fold run %s: %w", runID, err)
	}
	return s, evs, nil
}
