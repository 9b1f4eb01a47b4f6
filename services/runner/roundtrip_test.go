package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// TestTurnRoundTrips counts the store calls the runner makes to answer a
// turn, on SQLite and PostgreSQL: one read (the session, with the inbox
// look-up), one transaction (inbox row, session, turn, outbox; a checkpoint
// every fifth turn) and, after publishing the reply itself, its share of a
// batched "mark sent" — no outbox read by a relay. The performance
// section asks for fewer round trips per turn; this keeps them from
// creeping back.
func TestTurnRoundTrips(t *testing.T) {
	runnertest.ForEachStore(t, func(t *testing.T, rig *runnertest.Rig) {
		ctx := context.Background()
		// This test's relay, on the counted store, is the only one.
		db, relay := rig.Counted(t)
		r, err := New(Config{LLM: fixed("What does the team need most?"), Registry: rig.Registry, Logger: rig.Logger})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewService(ServiceConfig{DB: db, Bus: rig.Bus, Relay: relay, Engines: rig.Engines, Runner: r,
			Logger: rig.Logger, AckWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start(t, s)
		sid := rig.CreateSession(t, "project-discovery", "rt-1")

		const turns = 10
		db.Reset()
		for n := 1; n <= turns; n++ {
			rig.Publish(t, fmt.Sprintf("rt-turn-%d", n), t0.Add(time.Duration(n)*time.Minute),
				runnertest.Turn(sid, n, fmt.Sprintf("Message number %d about the field technicians.", n), nil))
			runnertest.WaitFor(t, 10*time.Second, fmt.Sprintf("turn %d answered and marked sent", n), func() bool {
				sess, _ := rig.Session(t, sid)
				unsent, err := store.Unsent(ctx, rig.DB, 10)
				return err == nil && sess.TurnCount == n && len(unsent) == 0
			})
		}
		db.Counts().CheckTurns(t, turns, 4*turns+turns/5) // a checkpoint every fifth turn
	})
}
