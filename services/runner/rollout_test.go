package runner

import (
	"context"
	"fmt"
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
