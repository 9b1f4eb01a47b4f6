package extractor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// TestTurnRoundTrips counts the store calls the extractor makes to extract
// a turn, on SQLite and PostgreSQL: one read (session, extraction state
// and inbox look-up together), one transaction (inbox row, state, the
// turn's log rows in one insert, supersessions, outbox) and, after
// publishing turn.extracted itself, its share of a batched "mark sent".
// (The bench of the runner service serves the extractor too.)
func TestTurnRoundTrips(t *testing.T) {
	runnertest.ForEachStore(t, func(t *testing.T, rig *runnertest.Rig) {
		ctx := context.Background()
		db, relay := rig.Counted(t)
		s, err := New(Config{DB: db, Bus: rig.Bus, Relay: relay, Engines: rig.Engines, LLM: runnertest.Skills{}, Logger: rig.Logger,
			AckWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
		sid := rig.CreateSession(t, "project-discovery", "rt-x")

		messages := []string{
			"Our field technicians keep losing track of their jobs. We want to build a mobile app.",
			"Last month we missed three urgent repairs and lost a big customer.",
			"About 40 technicians, plus 5 office dispatchers who plan the routes.",
			"We need it within 6 months, before the busy winter season.",
			"Actually, we have about 60 technicians now.",
		}
		at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
		db.Reset()
		for i, msg := range messages {
			n := i + 1
			turnID := fmt.Sprintf("rt-x-turn-%d", n)
			rig.Publish(t, turnID, at.Add(time.Duration(n)*time.Minute), contracts.TurnReceived{TenantID: runnertest.Tenant,
				SessionID: sid, TurnID: turnID, Message: msg, ReceivedAt: at.Add(time.Duration(n) * time.Minute)})
			runnertest.WaitFor(t, 10*time.Second, fmt.Sprintf("turn %d extracted and marked sent", n), func() bool {
				st, err := conversation.GetExtractionState(ctx, rig.DB, runnertest.Tenant, sid)
				unsent, uerr := store.Unsent(ctx, rig.DB, 10)
				return err == nil && uerr == nil && st.TurnNumber == n && len(unsent) == 0
			})
		}
		turns := len(messages)
		c := db.Counts()
		log, err := conversation.ListExtractions(ctx, rig.DB, runnertest.Tenant, sid)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) == 0 {
			t.Fatal("nothing was extracted: the count measures nothing")
		}
		// Inbox row, state, log rows, outbox; and one a turn with supersessions.
		c.CheckTurns(t, turns, 5*turns)
	})
}
