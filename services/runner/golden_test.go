package runner

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/llm/record"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Golden replays: sessions recorded by earlier builds, which this build must
// rebuild exactly, as `praetor replay --session` does for an auditor. Each
// testdata/golden/NAME.jsonl.gz is one session as `praetor replay --stream`
// prints it (its PRAETOR_TURNS events, then its PRAETOR_LLM model calls),
// recorded through the real path by testdata/golden/record.sh: praetor dev
// with the offline provider, praetor chat with testdata/golden/chats/NAME.txt,
// the session's events exported. They cover each shipped engine with its
// background task merged between turns, a project-discovery session
// started by exploration's handoff (handoff-*), and a chain (chain-*): an
// ideation session hands off to exploration, which carries that handoff
// forward into its own to project-discovery (handoff.CarryForward: the
// constraints, budget and deadline replaced by exploration's, the
// assumption, goals, pains and open question carried). The v1-* files were
// recorded by 1a7403c (2026-11-26), before session.started carried
// memory_version: they replay with the rules of working memory version 1.
// The v3-chain-* files are the chain again, recorded under memory version
// 3: ideation hands exploration the problem, its root cause and the
// shortlist (handoff.Builtin), and exploration 1.3.0 takes up the problem
// (problemCarried); the chain-* files hold the version 2 path. The
// v3-profile-chain-* files are the only golden sessions of the two other
// shipped handoffs: a business profile confirmed and handed to ideation
// (its constraints, goals, pains and sensitivities), whose selected idea
// goes on to project-discovery.
//
// A failure names the file and the first turn whose rebuilt state differs
// from the one the live run recorded, or the model call the replay asked
// that the live run did not, or the handoff whose rebuilt payload is not
// the one its target session started with: a change of this build alters
// what sessions already in JetStream replay to, or what a session hands
// the next engine. A handoff's target is the golden session of the target
// session id the replay rebuilds, whose session.started holds the handoff
// (goldenSessions): handoff-exploration's is handoff-project-discovery (and
// v1-handoff-exploration's v1-handoff-project-discovery),
// chain-ideation's chain-exploration, chain-exploration's
// chain-project-discovery, v3-profile-chain-business-profile's
// v3-profile-chain-ideation and its v3-profile-chain-project-discovery; a
// file that started with a handoff no golden
// session made fails too. Such a change must be gated, so that a
// session keeps the rules it started with, live and in a replay:
//
//   - a change of an engine's YAML takes a new engine version, frozen in
//     engines/history (engines/README.md, "Versions"): the session goes on
//     with the new one only from the turn it was loaded, and a replay runs
//     each step on the definition of the digest it recorded, which the
//     frozen copies keep built in;
//   - a change of the runner's or an engine package's rules takes a new
//     engine.MemorySchemaVersion, the old path kept for older versions
//     (obligation.Ask's resting, the runner's handover, coreProblemCarried).
//
// Never re-record or edit a golden file to make this test pass: it stands
// for every stored session recorded like it, and those cannot be
// re-recorded. Once a change is gated, the old files pass unchanged (their
// versions take the old path); add a recording made with the new build
// (record.sh with a new name, or PREFIX=v2- ...) so that the new path is
// held too. A file may be removed only when its versions are deliberately
// no longer replayable (this build refuses them, by design), in the commit
// that makes it so, saying which sessions that leaves behind.
func TestGoldenReplays(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.jsonl.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden sessions in testdata/golden (%v)", err)
	}
	// The sessions that made the handoffs the golden sessions started with
	// must rebuild them; each golden chain holds how a session carries its
	// own inbound handoff forward into the next.
	sessions := readGoldenSessions(t, files)
	chains := 0
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		s := sessions[id]
		src, ok := sessions[s.Source]
		switch {
		case s.HandoffID == "":
		case !ok:
			t.Errorf("%s started with the handoff %s of session %s, which no golden file holds: "+
				"record.sh records a handoff's source beside its target", s.File, s.HandoffID, s.Source)
		case src.HandoffID != "":
			chains++
		}
	}
	if chains == 0 {
		t.Errorf("no golden session starts with a handoff and hands off again: " +
			"nothing holds how an inbound handoff is carried into the next")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".jsonl.gz"), func(t *testing.T) {
			t.Parallel()
			if err := replayGolden(t, file, sessions); err != nil {
				t.Errorf("%s: %v", file, err)
			}
		})
	}
}

// replayGolden replays a golden file with this build's shipped engines, its
// model answers served from its recorded calls. It fails at the first step
// whose state is not the live run's, when a step the live run recorded a
// state for is not replayed at all, when a handoff the session makes is
// not the one its target among sessions started with (or its target is
// none of them), and when a handoff one of sessions started with, which
// the session made, is not rebuilt.
func replayGolden(t *testing.T, file string, sessions goldenSessions) error {
	t.Helper()
	evs, calls := readGolden(t, file)
	res, err := replayGoldenEvents(t, evs, calls, ReplayOptions{Handoffs: sessions})
	if err != nil {
		return err
	}
	replayed, handedOff := map[string]bool{}, map[string]bool{}
	for _, step := range res.Turns {
		name := fmt.Sprintf("turn %d (%s)", step.TurnNumber, step.TurnID)
		key := step.TurnID
		if step.TaskID != "" {
			name = fmt.Sprintf("the merge of %s after turn %d (%s)", step.TaskID, step.TurnNumber, step.TurnID)
			key = mergedEventID(step.TurnID)
		}
		if !step.Match {
			return fmt.Errorf("%s diverges: state %s, the live run's %s", name, step.StateHash, step.RecordedHash)
		}
		if step.EngineChanged {
			// Each recorded digest is a frozen version's: a step that ran on
			// another definition matched by chance.
			return fmt.Errorf("%s ran on %s, not on the definition the live run recorded", name, step.EngineVersion)
		}
		replayed[key] = true
		if h := step.Handoff; h != nil {
			if !h.Checked {
				return fmt.Errorf("%s hands off to %s (session %s), which no golden session started with: "+
					"record.sh records a handoff's target beside its source", name, h.TargetEngineID, h.TargetSessionID)
			}
			if !h.Match {
				return fmt.Errorf("%s hands %s another handoff than its target session %s started with:\n\t%s",
					name, h.TargetEngineID, h.TargetSessionID, strings.Join(h.Differences, "\n\t"))
			}
			handedOff[h.HandoffID] = true
		}
	}
	for id, s := range sessions {
		if s.Source == res.SessionID && !handedOff[s.HandoffID] {
			return fmt.Errorf("the handoff %s to session %s (%s), which the live run made, is not rebuilt",
				s.HandoffID, id, s.File)
		}
	}
	for _, ev := range evs {
		var key, hash string
		switch ev.Type() {
		case contracts.TurnRespondedSpec.Type:
			tr, err := contracts.DecodeAs[contracts.TurnResponded](ev)
			if err != nil {
				t.Fatal(err)
			}
			key, hash = tr.TurnID, tr.StateHash
		case contracts.TaskMergedSpec.Type:
			tm, err := contracts.DecodeAs[contracts.TaskMerged](ev)
			if err != nil {
				t.Fatal(err)
			}
			key, hash = ev.ID(), tm.StateHash
		}
		if hash != "" && !replayed[key] {
			return fmt.Errorf("the step recorded by %s (%s, state %s) is not replayed", ev.ID(), ev.Type(), hash)
		}
	}
	return nil
}

// goldenSession is the session of a golden file, and the handoff it
// started with, if any: HandoffID, the payload as its session.started
// holds it (Handoff), and the session that made it (Source).
type goldenSession struct {
	File      string
	HandoffID string
	Handoff   json.RawMessage
	Source    string
}

// goldenSessions are the golden sessions by session id. A handoff is paired
// with its target by the ids the live run recorded, not by file names: the
// target session id a replayed handoff carries is the session.started of
// one golden file, whose inbound handoff must be that handoff. So a chain
// (ideation → exploration → project-discovery) pairs up in order: each
// session's handoff with the next one's inbound handoff.
type goldenSessions map[string]goldenSession

// RecordedHandoff is the handoff the target session started with; none
// when no golden file holds that session. A target that started with
// another handoff, or with none, is an error: the replay's handoff went to
// a session the live one did not start.
func (g goldenSessions) RecordedHandoff(_ context.Context, handoffID, targetSessionID string) (json.RawMessage, bool, error) {
	s, ok := g[targetSessionID]
	switch {
	case !ok:
		return nil, false, nil
	case s.HandoffID == "":
		return nil, false, fmt.Errorf("its target session %s (%s) started with no handoff", targetSessionID, s.File)
	case s.HandoffID != handoffID:
		return nil, false, fmt.Errorf("its target session %s (%s) started with the handoff %s",
			targetSessionID, s.File, s.HandoffID)
	}
	return s.Handoff, true, nil
}

// readGoldenSessions reads the session each golden file holds.
func readGoldenSessions(t *testing.T, files []string) goldenSessions {
	t.Helper()
	sessions := goldenSessions{}
	for _, file := range files {
		evs, _ := readGolden(t, file)
		for _, ev := range evs {
			if ev.Type() != contracts.SessionStartedSpec.Type {
				continue
			}
			st, err := contracts.DecodeAs[contracts.SessionStarted](ev)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if other, ok := sessions[st.SessionID]; ok {
				t.Fatalf("%s and %s both hold session %s", other.File, file, st.SessionID)
			}
			s := goldenSession{File: file, HandoffID: st.InboundHandoffID}
			if s.HandoffID != "" {
				recorded := HandoffPayloads{}
				if err := recorded.Add(ev); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				s.Handoff = recorded[s.HandoffID]
				h, ok := contracts.DecodeHandoff(s.Handoff)
				if !ok || h.Metadata.SessionID == "" {
					t.Fatalf("%s: the inbound handoff %s names no source session", file, s.HandoffID)
				}
				s.Source = h.Metadata.SessionID
			}
			sessions[st.SessionID] = s
		}
	}
	return sessions
}

// replayGoldenEvents replays a golden session's events with this build's
// shipped engines, its model answers served from its recorded calls.
func replayGoldenEvents(t *testing.T, evs, calls []event.Event, opts ReplayOptions) (*ReplayResult, error) {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	cat, _, err := builtin.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := record.NewReplayerFromEvents(calls)
	if err != nil {
		return nil, err
	}
	// The offline provider summarizes without the model, so the replay has
	// no Summarizer (praetor replay sets one for a live run that called it).
	// A replay's steps take their time from the events: one that read the
	// clock instead would diverge here, not only years later.
	r, err := New(Config{LLM: rp, Registry: reg, Logger: slog.New(slog.DiscardHandler),
		Clock: func() time.Time { return time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return ReplayWith(context.Background(), r, cat, evs, opts)
}

// readGolden reads a golden file: the session's events, in stream order,
// and its recorded model calls.
func readGolden(t *testing.T, file string) (evs, calls []event.Event) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	starts := 0
	for n := 1; sc.Scan(); n++ {
		var line struct {
			Event json.RawMessage `json:"event"`
			Error string          `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s:%d: %v", file, n, err)
		}
		if line.Error != "" {
			t.Fatalf("%s:%d: a message that is not an event: %s", file, n, line.Error)
		}
		var ev event.Event
		if err := json.Unmarshal(line.Event, &ev); err != nil {
			t.Fatalf("%s:%d: %v", file, n, err)
		}
		switch ev.Type() {
		case contracts.LLMCallRecordedSpec.Type:
			calls = append(calls, ev)
		case contracts.SessionStartedSpec.Type:
			starts++
			fallthrough
		default:
			evs = append(evs, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if starts != 1 {
		t.Fatalf("%s holds %d session.started events, want one session", file, starts)
	}
	return evs, calls
}
