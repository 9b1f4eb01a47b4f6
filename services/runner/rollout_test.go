package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// During a rolling upgrade a turn of a session that a newer replica started
// comes to an older one, whose rules are not the session's: it passes the
// turn on, and a newer replica answers it, once. Nothing is dead-lettered,
// where the consumers' default bound of five deliveries would have let the
// older replicas dead-letter it alone.
func TestTurnOfANewerSessionIsPassedOn(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	ctx := context.Background()
	sid := rig.CreateSession(t, "project-discovery", "rollout")
	startProcess := func(memoryVersion int) *Service {
		t.Helper()
		r, err := New(Config{LLM: fixed("What problem are you trying to solve?"), Registry: rig.Registry, Logger: rig.Logger})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewService(ServiceConfig{DB: rig.DB, Bus: rig.NewProcess(t).Bus, Relay: rig.Relay, Engines: rig.Engines,
			Runner: r, Logger: rig.Logger, AckWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s.memoryVersion = memoryVersion
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := startProcess(engine.MemorySchemaVersion - 1)

	turn := runnertest.Turn(sid, 1, "We want to schedule our plumbers' jobs.", nil)
	rig.Publish(t, turn.TurnID, t0.Add(time.Minute), turn)
	const defaultMaxDeliver = 5
	runnertest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d deliveries to the older replica", defaultMaxDeliver+1), func() bool {
		return rig.Delivered(Consumer) > defaultMaxDeliver
	})
	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type); len(got) > 0 {
		t.Fatalf("the older replica answered a turn of a newer session")
	}
	if dls := rig.Events(t, events.DeadLetterStream, events.DeadLetterType); len(dls) > 0 {
		dl, _ := events.AsDeadLetter(dls[0])
		t.Fatalf("the older replica dead-lettered the turn (%d dead letters), reason: %s", len(dls), dl.Reason)
	}
	newer := startProcess(engine.MemorySchemaVersion)
	t.Cleanup(func() { _ = newer.Stop(context.Background()) })
	runnertest.WaitFor(t, 30*time.Second, "turn 1 answered", func() bool {
		return len(rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type)) > 0
	})
	if _, m := rig.Session(t, sid); m.TurnNumber != 1 {
		t.Errorf("session at turn %d, want 1", m.TurnNumber)
	}
	if got := rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type); len(got) != 1 {
		t.Errorf("turn.responded published %d times, want once", len(got))
	}
	if dls := rig.Events(t, events.DeadLetterStream, events.DeadLetterType); len(dls) > 0 {
		t.Errorf("%d dead letters, want none", len(dls))
	}
}

// During a rolling upgrade that brings an engine's new version, a turn of a
// session in a phase only the new version has comes to an older replica,
// which has no definition to run it on: it passes the turn on, and a newer
// replica answers it, once. It used to fail the turn as permanent, and the
// user's message was dead-lettered.
func TestTurnInAPhaseOfANewerEngineVersionIsPassedOn(t *testing.T) {
	first := tinyAt("1.0.0", "Ask about the goal.")
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"tiny.yaml": first}})
	older := rig.Engines
	renamed := strings.NewReplacer("initial_phase: START", "initial_phase: WELCOME", "- id: START", "- id: WELCOME").
		Replace(tinyAt("1.1.0", "Ask about the goal."))
	newer := tinyCatalog(t, rig, map[string]string{"tiny.yaml": renamed, "tiny@1.0.0.yaml": first})
	rig.Engines = newer // the gateway has the new version: the session starts in WELCOME
	sid := rig.CreateSession(t, "tiny", "rollout-phase")

	old := recording(t, rig, older)
	turn := runnertest.Turn(sid, 1, "We want to sell pottery online.", nil)
	rig.Publish(t, turn.TurnID, t0.Add(time.Minute), turn)
	const defaultMaxDeliver = 5
	runnertest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d deliveries to the older replica, or a dead letter", defaultMaxDeliver+1), func() bool {
		return rig.Delivered(Consumer) > defaultMaxDeliver || len(rig.Events(t, events.DeadLetterStream, events.DeadLetterType)) > 0
	})
	stop(t, old)
	if got := rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type); len(got) > 0 {
		t.Fatalf("the older replica answered a turn in a phase its engine does not have")
	}
	if dls := rig.Events(t, events.DeadLetterStream, events.DeadLetterType); len(dls) > 0 {
		dl, _ := events.AsDeadLetter(dls[0])
		t.Fatalf("the older replica dead-lettered the turn (%d dead letters), reason: %s", len(dls), dl.Reason)
	}
	recording(t, rig, newer)
	runnertest.WaitFor(t, 30*time.Second, "turn 1 answered", func() bool {
		return len(rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type)) > 0
	})
	if _, m := rig.Session(t, sid); m.TurnNumber != 1 || m.EngineVersion != "1.1.0" || m.Phase.Current != "WELCOME" {
		t.Errorf("session at turn %d, tiny %s, phase %s; want turn 1 on 1.1.0 in WELCOME", m.TurnNumber, m.EngineVersion, m.Phase.Current)
	}
	if got := rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type); len(got) != 1 {
		t.Errorf("turn.responded published %d times, want once", len(got))
	}
}
