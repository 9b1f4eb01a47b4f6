package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	// An event that is no CloudEvent, or breaks its contract, never reached
	// the live state: every service that consumes it dead-letters it (a
	// decode failure, a permanent contract violation). The rebuild leaves
	// it out as they did, and says so, event by event; skipped counts them
	// by stream (no service consumes the model calls' records).
	skipped := map[string]int{}
	collect := func(stream, subject string) ([]event.Event, error) {
		var evs []event.Event
		err := bus.Replay(ctx, events.ReplayConfig{Stream: stream, Subjects: []string{subject}}, func(r events.Record) error {
			why := ""
			if r.Err != nil {
				why = "not a CloudEvent: " + r.Err.Error()
			} else if err := contracts.Validate(r.Event); err != nil {
				why = "breaks its contract: " + err.Error()
			}
			if why != "" {
				skipped[stream]++
				fmt.Fprintf(stderr, "skipped %s #%d %s: %s\n", stream, r.StreamSeq, r.Subject, why)
				return nil
			}
			evs = append(evs, r.Event)
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
	published := &publishedHandoffs{bus: bus, in: map[string]string{}}
	res, err := runner.ReplayWith(ctx, r, cat, sessionEvents, runner.ReplayOptions{Each: func(step runner.ReplayedTurn, turns int) {
		progress.say("rebuilding session %s: turn %d of %d", sessionID, step.TurnNumber, turns)
	}, Handoffs: published})
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
	handoffs := []replayedHandoff{}
	stateDiverged, handoffDiverged, handoffUnchecked := false, false, false
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
			rh := replayedHandoff{ReplayedHandoff: h, RecordedIn: published.in[h.HandoffID]}
			handoffs = append(handoffs, rh)
			handoffDiverged = handoffDiverged || h.Checked && !h.Match
			handoffUnchecked = handoffUnchecked || !h.Checked
			printHandoff(ctx, stderr, bus, rh)
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"session_id": res.SessionID, "engine_id": res.EngineID,
		"turns": len(res.Turns) - merges, "merges": merges, "state_hash": res.StateHash, "state": res.State,
		"handoffs": handoffs}); err != nil {
		return err
	}
	skips := ""
	if n := skipped[contracts.StreamTurns]; n > 0 {
		skips = fmt.Sprintf(", skipped %d undecodable %s (dead-lettered by the services)", n, plural(n, "event", "events"))
	}
	if n := skipped[contracts.StreamLLM]; n > 0 {
		skips += fmt.Sprintf(", skipped %d undecodable %s of %s", n, plural(n, "model call record", "model call records"), contracts.StreamLLM)
	}
	fmt.Fprintf(stderr, "session %s rebuilt from %d events and %d recorded model calls%s: state hash %s\n",
		sessionID, len(sessionEvents), recorded-replayer.Remaining(), skips, res.StateHash)
	var failed []string
	if stateDiverged {
		failed = append(failed, "the rebuilt state differs from the live run's")
	}
	if handoffDiverged {
		failed = append(failed, "a rebuilt handoff differs from the one the live run published")
	}
	if handoffUnchecked {
		// The state is proven, but not what the next engine was told.
		failed = append(failed, "a rebuilt handoff could not be checked: neither "+contracts.StreamHandoffs+" nor "+
			contracts.StreamTurns+" holds the payload the live run published (its line says why)")
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// replayedHandoff is a handoff as stdout's JSON reports it: what the
// replay found of it, and the record it was checked against
// (handoffRecord), "" when none.
type replayedHandoff struct {
	*runner.ReplayedHandoff
	RecordedIn string `json:"recorded_in,omitempty"`
}

// printHandoff says on w what the replay found of a handoff: its payload's
// hash, and whether it is the one the live run published, with what
// differs and the record it was checked against, or why it could not be
// checked.
func printHandoff(ctx context.Context, w io.Writer, bus *events.Bus, h replayedHandoff) {
	var mark string
	switch {
	case !h.Checked:
		mark = "NOT CHECKED: " + contracts.StreamHandoffs + " holds no handoff.created of it" +
			inParens(lost(ctx, bus, contracts.StreamHandoffs)) + ", nor " + contracts.StreamTurns +
			" a session.started of session " + h.TargetSessionID + inParens(lost(ctx, bus, contracts.StreamTurns))
	case h.RecordedIn == recordedCreated && h.Match:
		mark = "ok (the handoff.created on " + contracts.StreamHandoffs + ")"
	case h.RecordedIn == recordedCreated:
		mark = "DIVERGED from the handoff.created the live run published (" + h.RecordedHash + "):"
	case h.Match:
		mark = "ok (the inbound handoff of session " + h.TargetSessionID + "'s session.started on " + contracts.StreamTurns +
			"; " + contracts.StreamHandoffs + " holds no handoff.created of it)"
	default:
		mark = "DIVERGED from the inbound handoff session " + h.TargetSessionID + " started with (" + h.RecordedHash + "):"
	}
	fmt.Fprintf(w, "  handoff %s to %s (session %s): payload %s  %s\n", h.HandoffID, h.TargetEngineID, h.TargetSessionID,
		h.PayloadHash, mark)
	for _, d := range h.Differences {
		fmt.Fprintf(w, "    %s\n", d)
	}
}

// inParens is lost's reason in parentheses, "" without one.
func inParens(reason string) string {
	if reason = strings.TrimPrefix(reason, "; "); reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

// The records a handoff is checked against (replayedHandoff.RecordedIn).
const (
	recordedCreated = "handoff.created"
	recordedStarted = "session.started"
)

// publishedHandoffs reads the payload the live run published for a
// handoff: its handoff.created on PRAETOR_HANDOFFS, on the subject of the
// session it started (partitioned, as the turns stream: its subjects end
// in a partition token), or, when that stream does not hold it (expired
// sooner than the turns), the inbound handoff of that session's
// session.started on PRAETOR_TURNS. in keeps which, by handoff id.
type publishedHandoffs struct {
	bus *events.Bus
	in  map[string]string
}

func (p *publishedHandoffs) RecordedHandoff(ctx context.Context, handoffID, targetSessionID string) (json.RawMessage, bool, error) {
	for _, rec := range []struct{ stream, subject, name string }{
		{contracts.StreamHandoffs, contracts.HandoffCreatedSpec.SubjectPrefix() + ".*." + targetSessionID + ".*", recordedCreated},
		{contracts.StreamTurns, contracts.SessionStartedSpec.SubjectPrefix() + ".*." + targetSessionID + ".*", recordedStarted},
	} {
		found := runner.HandoffPayloads{}
		err := p.bus.Replay(ctx, events.ReplayConfig{Stream: rec.stream, Subjects: []string{rec.subject}}, func(r events.Record) error {
			if r.Err != nil {
				return nil
			}
			return found.Add(r.Event)
		})
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", rec.stream, err)
		}
		if payload, ok, _ := found.RecordedHandoff(ctx, handoffID, targetSessionID); ok {
			p.in[handoffID] = rec.name
			return payload, true, nil
		}
	}
	return nil, false, nil
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
