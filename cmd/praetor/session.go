package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/llm/record"
	"github.com/praetorhq/praetor/internal/wiring"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/runner"
)

// replaySession rebuilds a session from the event log, serving the runner's
// model answers from their records, and prints a line per turn, one per
// handoff, then the final state, its hash and the handoffs. It returns an
// error when a rebuilt turn's state hash differs from the one recorded
// live, or a rebuilt handoff's payload from the handoff.created the live
// run published. While it reads and rebuilds, it says on stderr what it is
// at, once a second by now.
func replaySession(ctx context.Context, bus *events.Bus, sessionID string, enginesDirs []string, stdout, stderr io.Writer,
	now func() time.Time) error {
	if !contracts.ValidToken(sessionID) {
		return settingErr("session", "%q is not a session id", sessionID)
	}
	progress := &replayProgress{w: stderr, now: now, last: now()}
	collect := func(stream, subject string) ([]event.Event, error) {
		var evs []event.Event
		err := bus.Replay(ctx, events.ReplayConfig{Stream: stream, Subjects: []string{subject}}, func(r events.Record) error {
			if r.Err == nil {
				evs = append(evs, r.Event)
			}
			progress.say("reading %s: %d events of session %s", stream, len(evs), sessionID)
			return nil
		})
		return evs, err
	}
	// The turns stream is partitioned: its subjects end in a partition token.
	sessionEvents, err := collect(contracts.StreamTurns, "praetor.turn.*.*."+sessionID+".*")
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("no stream %s on %s: not the NATS praetor runs on (--nats-url, --data-dir)",
			contracts.StreamTurns, bus.Conn().ConnectedUrl())
	}
	if err != nil {
		return err
	}
	if len(sessionEvents) == 0 {
		return fmt.Errorf("no events of session %s in %s%s", sessionID, contracts.StreamTurns, lost(ctx, bus, contracts.StreamTurns))
	}
	calls, err := collect(contracts.StreamLLM, "praetor.llm.call.*."+sessionID)
	if err != nil {
		return err
	}
	replayer, err := record.NewReplayerFromEvents(calls)
	if err != nil {
		return err
	}
	summaries := recordedSummaries(calls)
	calls = nil // the replayer keeps the answers; the prompts can go
	// What it keeps less what is left once the session is rebuilt is what
	// served the replay: the runner's calls, not the extractor's or the
	// background tasks', whose results the events carry.
	recorded := replayer.Remaining()
	cat, reg, err := wiring.LoadEngines(enginesDirs, stderr)
	if err != nil {
		return err
	}
	// The per-turn telemetry was logged live; a replay only reports hashes.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := runner.Config{LLM: replayer, Registry: reg, Logger: quiet}
	if summaries {
		cfg.Summarizer = contextasm.LLMSummarizer{LLM: replayer}
	}
	r, err := runner.New(cfg)
	if err != nil {
		return err
	}
	res, err := runner.ReplayWith(ctx, r, cat, sessionEvents, runner.ReplayOptions{Each: func(step runner.ReplayedTurn, turns int) {
		progress.say("rebuilding session %s: turn %d of %d", sessionID, step.TurnNumber, turns)
	}, Handoffs: publishedHandoffs{bus}})
	if errors.Is(err, runner.ErrNoSessionStart) {
		return fmt.Errorf("session %s: %w%s", sessionID, err, lost(ctx, bus, contracts.StreamTurns))
	}
	if err != nil {
		return err
	}
	merges := 0
	for _, t := range res.Turns {
		if t.TaskID != "" {
			merges++
		}
	}
	version := ""
	handoffs := []*runner.ReplayedHandoff{}
	stateDiverged, handoffDiverged := false, false
	for _, t := range res.Turns {
		stateDiverged = stateDiverged || !t.Match
		mark := "ok"
		if !t.Match {
			mark = "DIVERGED (recorded " + t.RecordedHash + ")"
			if t.EngineChanged {
				mark += ": the live run's definition of " + res.EngineID + " " + t.EngineVersion + " (another digest) is not loaded; " +
					"give the directory of the engine files it ran with --engines-dir"
			}
		}
		if t.EngineVersion != version {
			fmt.Fprintf(stderr, "engine %s %s\n", res.EngineID, t.EngineVersion)
			version = t.EngineVersion
		}
		if t.TaskID != "" { // a background task's result merged after turn TurnNumber
			fmt.Fprintf(stderr, "  merge %-14s %s  %s\n", t.TaskID, t.StateHash, mark)
			continue
		}
		fmt.Fprintf(stderr, "turn %d  %-16s %s  %s\n", t.TurnNumber, t.Phase, t.StateHash, mark)
		if h := t.Handoff; h != nil {
			handoffs = append(handoffs, h)
			handoffDiverged = handoffDiverged || h.Checked && !h.Match
			printHandoff(stderr, h)
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"session_id": res.SessionID, "engine_id": res.EngineID,
		"turns": len(res.Turns) - merges, "merges": merges, "state_hash": res.StateHash, "state": res.State,
		"handoffs": handoffs}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "session %s rebuilt from %d events and %d recorded model calls: state hash %s\n",
		sessionID, len(sessionEvents), recorded-replayer.Remaining(), res.StateHash)
	switch {
	case stateDiverged && handoffDiverged:
		return errors.New("the rebuilt state differs from the live run's, and so does a handoff it published")
	case stateDiverged:
		return errors.New("the rebuilt state differs from the live run's")
	case handoffDiverged:
		return errors.New("a rebuilt handoff differs from the one the live run published")
	}
	return nil
}

// printHandoff says on w what the replay found of a handoff: its payload's
// hash, and whether it is the one the live run published, with what
// differs.
func printHandoff(w io.Writer, h *runner.ReplayedHandoff) {
	mark := "ok"
	switch {
	case !h.Checked:
		mark = "not checked: " + contracts.StreamHandoffs + " holds no handoff.created of it"
	case !h.Match:
		mark = "DIVERGED from the handoff.created the live run published (" + h.RecordedHash + "):"
	}
	fmt.Fprintf(w, "  handoff %s to %s (session %s): payload %s  %s\n", h.HandoffID, h.TargetEngineID, h.TargetSessionID,
		h.PayloadHash, mark)
	for _, d := range h.Differences {
		fmt.Fprintf(w, "    %s\n", d)
	}
}

// publishedHandoffs reads the payloads the live run published from
// PRAETOR_HANDOFFS: each handoff.created is on the subject of the session
// it started (partitioned, as the turns stream: its subjects end in a
// partition token).
type publishedHandoffs struct{ bus *events.Bus }

func (p publishedHandoffs) RecordedHandoff(ctx context.Context, handoffID, targetSessionID string) (json.RawMessage, bool, error) {
	found := runner.HandoffPayloads{}
	err := p.bus.Replay(ctx, events.ReplayConfig{Stream: contracts.StreamHandoffs,
		Subjects: []string{contracts.HandoffCreatedSpec.SubjectPrefix() + ".*." + targetSessionID + ".*"}}, func(r events.Record) error {
		if r.Err != nil {
			return nil
		}
		return found.Add(r.Event)
	})
	if err != nil {
		return nil, false, err
	}
	return found.RecordedHandoff(ctx, handoffID, targetSessionID)
}

// recordedSummaries reports whether the live run summarized with the model.
func recordedSummaries(calls []event.Event) bool {
	for _, ev := range calls {
		if c, err := contracts.DecodeAs[contracts.LLMCallRecorded](ev); err == nil && c.Purpose == contextasm.PurposeSummarize {
			return true
		}
	}
	return false
}

// lost says which of a stream's events are gone (expired past its max
// age, or removed), "" when it holds all it was given: the reason a
// session's first events may be missing.
func lost(ctx context.Context, bus *events.Bus, stream string) string {
	st, err := bus.JetStream().Stream(ctx, stream)
	if err != nil {
		return ""
	}
	info := st.CachedInfo()
	if info.State.FirstSeq <= 1 {
		return ""
	}
	why := "expired or removed"
	if info.Config.MaxAge > 0 {
		why = fmt.Sprintf("expired (it keeps events for %s) or removed", info.Config.MaxAge)
	}
	if info.State.Msgs == 0 {
		return fmt.Sprintf("; %s holds none of its %d events: they %s", stream, info.State.LastSeq, why)
	}
	return fmt.Sprintf("; %s holds its events from sequence %d (%s) on: the %d before %s", stream, info.State.FirstSeq,
		info.State.FirstTime.UTC().Format(time.RFC3339), info.State.FirstSeq-1, why)
}

// replayProgress says what a long replay is at, at most once an interval
// (a second): runner.Replay gives its turns' lines only when the whole
// session is rebuilt, and a long one is a while reading and rebuilding.
type replayProgress struct {
	w   io.Writer
	now func() time.Time

	mu   sync.Mutex
	last time.Time
}

func (p *replayProgress) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.now(); t.Sub(p.last) >= time.Second {
		p.last = t
		fmt.Fprintf(p.w, format+"\n", args...)
	}
}
