package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/engines"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/llm/record"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// recording starts the runner service on the bench with the engines of
// cat and its model calls recorded on the bench's stream, as praetor runs
// it.
func recording(t *testing.T, rig *runnertest.Rig, cat *engine.Catalog) *Service {
	t.Helper()
	rec, err := record.NewRecorder(fixed("What have you looked at so far?"), rig.Bus, record.Config{Provider: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{LLM: rec, Registry: rig.Registry, Logger: rig.Logger})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(ServiceConfig{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Engines: cat, Runner: r,
		Logger: rig.Logger, Registerer: prometheus.NewRegistry(), AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	return s
}

// say publishes a session's turn n and waits for its reply.
func say(t *testing.T, rig *runnertest.Rig, sid string, n int, msg string) {
	t.Helper()
	rig.Publish(t, runnertest.TurnID(sid, n), t0.Add(time.Duration(n)*time.Minute), runnertest.Turn(sid, n, msg, nil))
	runnertest.WaitFor(t, 20*time.Second, "the reply", func() bool {
		for _, ev := range rig.SessionEvents(t, sid) {
			if ev.Type() == contracts.TurnRespondedSpec.Type && ev.ID() == events.DeriveID(runnertest.TurnID(sid, n), "responded") {
				return true
			}
		}
		return false
	})
}

// recordedSession runs a session's turns through a recording runner
// service and returns its events, its recorded calls and its live state
// hash.
func recordedSession(t *testing.T, rig *runnertest.Rig, id string, messages ...string) (evs, calls []event.Event, live string) {
	t.Helper()
	recording(t, rig, rig.Engines)
	sid := rig.CreateSession(t, "exploration", id)
	for i, msg := range messages {
		say(t, rig, sid, i+1, msg)
	}
	sess, _ := rig.Session(t, sid)
	return rig.SessionEvents(t, sid), rig.Events(t, contracts.StreamLLM, contracts.LLMCallRecordedSpec.Type), sess.StateHash
}

// replayRecorded replays a session as praetor replay --session does: the
// model answers come from the recorded calls.
func replayRecorded(t *testing.T, rig *runnertest.Rig, cat *engine.Catalog, evs, calls []event.Event) (*ReplayResult, error) {
	t.Helper()
	rp, err := record.NewReplayerFromEvents(calls)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{LLM: rp, Registry: rig.Registry, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return Replay(context.Background(), r, cat, evs)
}

// A replay whose turn asks the model something the records cannot answer
// stops at that turn and names the call: the request the live run asked
// instead, or that the live run's record is missing. It used to take the
// miss as a model failure, answer the turn degraded, and report only that
// the state hashes differed.
func TestReplayNamesTheCallItCannotServe(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	evs, calls, live := recordedSession(t, rig, "missed-1",
		"Tell me about hosting options.", "We know AWS a little.", "Cost matters most.")
	res, err := replayRecorded(t, rig, rig.Engines, evs, calls)
	if err != nil || res.Diverged || res.StateHash != live {
		t.Fatalf("replay of the whole record: %v; diverged %v, hash %v, live %s", err, res != nil && res.Diverged, res, live)
	}

	turn2 := runnertest.TurnID("missed-1", 2)
	var without []event.Event // turn 2's reply record expired, or never published
	var liveHash string
	for _, ev := range calls {
		c, _ := contracts.DecodeAs[contracts.LLMCallRecorded](ev)
		if c.CallID == "turn/"+turn2+"/"+PurposeResponse {
			liveHash = c.RequestHash
			continue
		}
		without = append(without, ev)
	}
	if liveHash == "" {
		t.Fatalf("no record of turn 2's reply among %d calls", len(calls))
	}
	_, err = replayRecorded(t, rig, rig.Engines, evs, without)
	var nre *record.NotRecordedError
	if !errors.As(err, &nre) || !strings.Contains(err.Error(), "turn 2 ("+turn2+")") ||
		!strings.Contains(err.Error(), "has no record") || nre.Purpose != PurposeResponse || nre.RequestHash != liveHash {
		t.Errorf("replay without turn 2's record: %v, want turn 2's response request %s named, with no record", err, liveHash)
	}

	// The same version of the engine, its first phase's instructions edited
	// since: the first turn's prompt is not the live run's.
	_, err = replayRecorded(t, rig, editedExploration(t, rig, shippedExploration(t, rig)), evs, calls)
	turn1 := runnertest.TurnID("missed-1", 1)
	var first string
	for _, ev := range calls {
		if c, _ := contracts.DecodeAs[contracts.LLMCallRecorded](ev); c.CallID == "turn/"+turn1+"/"+PurposeResponse {
			first = c.RequestHash
		}
	}
	if !errors.As(err, &nre) || !strings.Contains(err.Error(), "turn 1 ("+turn1+")") || nre.LiveHash != first ||
		!strings.Contains(err.Error(), fmt.Sprintf("which asked request %s", first)) {
		t.Errorf("replay with an edited engine: %v, want turn 1's call named with the live run's request %s", err, first)
	}
}

// shippedExploration is the version of exploration that new sessions
// start on: its file's.
func shippedExploration(t *testing.T, rig *runnertest.Rig) string {
	t.Helper()
	def, ok := rig.Engines.Get("exploration")
	if !ok {
		t.Fatal("exploration is not shipped")
	}
	return def.Version
}

// editedExploration is the catalog of a build whose exploration engine is
// the shipped one at version, its first phase's instructions edited: the
// shipped engines, exploration's file edited in place and the frozen copy
// of that version gone (the other versions stay frozen).
func editedExploration(t *testing.T, rig *runnertest.Rig, version string) *engine.Catalog {
	t.Helper()
	yaml, err := fs.ReadFile(engines.FS, "exploration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(yaml), "agent_instructions: >-\n", "agent_instructions: >-\n      Be brief.\n", 1)
	edited = strings.Replace(edited, "\nversion: "+shippedExploration(t, rig)+"\n", "\nversion: "+version+"\n", 1)
	fsys := fstest.MapFS{}
	build := engine.Source{FS: fsys, Dir: ".", Label: "build"}
	for _, name := range builtin.Source().Files {
		data, err := fs.ReadFile(engines.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "history/exploration@"+version+".yaml" {
			continue
		}
		if name == "exploration.yaml" {
			data = []byte(edited)
		}
		fsys[name] = &fstest.MapFile{Data: data}
		build.Files = append(build.Files, name)
	}
	cat, _, err := engine.Load(rig.Registry, build)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// A session that went on under a new version of its engine (praetor
// restarted with the engine's YAML changed) is replayed turn by turn with
// the version each turn ran, given both; given only the old one, the
// replay names the turn that ran the new one. It used to refuse such a
// session whatever it was given: it compared the one loaded version with
// the version the session started on, and with that one loaded the later
// turns diverged.
func TestReplayFollowsTheEngineVersionOfEachTurn(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	old := recording(t, rig, rig.Engines)
	sid := rig.CreateSession(t, "exploration", "versions-1")
	say(t, rig, sid, 1, "Tell me about hosting options.")
	say(t, rig, sid, 2, "We know AWS a little.")
	stop(t, old)
	shipped := shippedExploration(t, rig)
	major, minor, _ := strings.Cut(shipped, ".")
	n, _ := strconv.Atoi(strings.Split(minor, ".")[0])
	version := fmt.Sprintf("%s.%d.0", major, n+1) // the next release, not shipped
	newer := editedExploration(t, rig, version)
	recording(t, rig, newer)
	say(t, rig, sid, 3, "Cost matters most.")
	sess, m := rig.Session(t, sid)
	if m.EngineVersion != version {
		t.Fatalf("the live session is at engine %s after the restart, want %s", m.EngineVersion, version)
	}
	// What GET /v1/sessions reads: it stayed at the version the session
	// started on.
	if sess.EngineVersion != version {
		t.Errorf("the session's row is at engine %s after the restart, want %s", sess.EngineVersion, version)
	}
	evs, calls := rig.SessionEvents(t, sid), rig.Events(t, contracts.StreamLLM, contracts.LLMCallRecordedSpec.Type)

	res, err := replayRecorded(t, rig, newer, evs, calls)
	if err != nil {
		t.Fatalf("replay with both versions: %v", err)
	}
	var ran []string
	for _, rt := range res.Turns {
		if rt.TaskID == "" {
			ran = append(ran, rt.EngineVersion)
		}
	}
	if res.Diverged || res.StateHash != sess.StateHash || !slices.Equal(ran, []string{shipped, shipped, version}) {
		t.Errorf("replay with both versions: diverged %t, hash %s (live %s), versions %v", res.Diverged, res.StateHash,
			sess.StateHash, ran)
	}
	_, err = replayRecorded(t, rig, rig.Engines, evs, calls)
	if want := "turn 3 (" + runnertest.TurnID(sid, 3) + ") ran exploration " + version + ", which is not loaded (loaded: "; err == nil ||
		!strings.Contains(err.Error(), want) {
		t.Errorf("replay with the old version alone: %v, want %q", err, want)
	}
}

func stop(t *testing.T, s *Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// An engine file edited without a new version: the live run went on with
// the edited definition, the replay has the first one, and the replay says
// the file changed rather than only that a prompt differs.
func TestReplayNamesAnEngineEditedWithoutANewVersion(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	old := recording(t, rig, rig.Engines)
	sid := rig.CreateSession(t, "exploration", "digest-1")
	say(t, rig, sid, 1, "Tell me about hosting options.")
	stop(t, old)
	edited := editedExploration(t, rig, shippedExploration(t, rig))
	recording(t, rig, edited)
	say(t, rig, sid, 2, "We know AWS a little.")
	evs, calls := rig.SessionEvents(t, sid), rig.Events(t, contracts.StreamLLM, contracts.LLMCallRecordedSpec.Type)

	for _, c := range []struct {
		name string
		cat  *engine.Catalog
		turn int
	}{{"the first definition", rig.Engines, 2}, {"the edited definition", edited, 1}} {
		_, err := replayRecorded(t, rig, c.cat, evs, calls)
		if want := fmt.Sprintf("turn %d (%s)", c.turn, runnertest.TurnID(sid, c.turn)); err == nil ||
			!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "edited without a new version") {
			t.Errorf("replay with %s: %v, want it to name %s and the edit", c.name, err, want)
		}
	}
}

// A session recorded by a newer build, whose working memory version this
// build does not know, is not replayed with this build's rules: the replay
// names the version, where it used to rebuild the session with older rules
// and report, at best, that the live run diverged.
func TestReplayRefusesANewerMemoryVersion(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	evs, calls, _ := recordedSession(t, rig, "newer-1", "Tell me about hosting options.", "We know AWS a little.")
	newer := engine.MemorySchemaVersion + 1
	for i, ev := range evs {
		if ev.Type() != contracts.SessionStartedSpec.Type {
			continue
		}
		s, err := contracts.DecodeAs[contracts.SessionStarted](ev)
		if err != nil {
			t.Fatal(err)
		}
		s.MemoryVersion = newer
		evs[i] = runnertest.Event(t, ev.ID(), ev.Time(), *s)
	}
	res, err := replayRecorded(t, rig, rig.Engines, evs, calls)
	if want := fmt.Sprintf("working memory version %d", newer); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("replay: %v (result %+v), want an error naming %s", err, res, want)
	}
}
