package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func TestSessionsAndTurns(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s := conversation.Session{ID: "s1", TenantID: "acme", ProjectID: "p1", EngineID: "project-discovery",
			EngineVersion: "1.0.0", Status: conversation.StatusActive, Phase: "OPENING",
			State: json.RawMessage(`{"turn_number":0}`), CreatedAt: t0, UpdatedAt: t0}
		if err := conversation.CreateSession(ctx, db, s); err != nil {
			t.Fatal(err)
		}
		if _, err := conversation.GetSession(ctx, db, "other", "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another tenant reads the session: err = %v, want ErrNotFound", err)
		}
		s.Phase, s.Completeness, s.TurnCount = "CORE_CAPTURE", 0.42, 3
		s.State, s.StateHash, s.Sidebar = json.RawMessage(`{"turn_number":3}`), "h3", json.RawMessage(`{"sections":[]}`)
		s.UpdatedAt = t0.Add(time.Minute)
		if err := conversation.SaveSession(ctx, db, s); err != nil {
			t.Fatal(err)
		}
		got, err := conversation.GetSession(ctx, db, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase != "CORE_CAPTURE" || got.Completeness != 0.42 || got.TurnCount != 3 || got.StateHash != "h3" ||
			string(got.Sidebar) != `{"sections": []}` && string(got.Sidebar) != `{"sections":[]}` || !got.UpdatedAt.Equal(s.UpdatedAt) {
			t.Errorf("session after save = %+v", got)
		}
		head, err := conversation.GetSessionHead(ctx, db, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		want := got
		want.State, want.Sidebar = nil, nil
		if !reflect.DeepEqual(head, want) {
			t.Errorf("session head = %+v, want the session without state and sidebar %+v", head, want)
		}
		if _, err := conversation.GetSessionHead(ctx, db, "other", "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another tenant reads the session's head: err = %v, want ErrNotFound", err)
		}
		other := s
		other.TenantID = "other"
		if err := conversation.SaveSession(ctx, db, other); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another tenant wrote the session: err = %v", err)
		}

		turn := conversation.Turn{ID: "turn-1", TenantID: "acme", SessionID: "s1", Message: "hello", ReceivedAt: t0}
		if err := conversation.CreateTurn(ctx, db, turn); err != nil {
			t.Fatal(err)
		}
		if err := conversation.CreateTurn(ctx, db, turn); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second create of a turn: err = %v, want ErrConflict", err)
		}
		pending, _ := conversation.GetTurn(ctx, db, "acme", "turn-1")
		if pending.Answered() {
			t.Fatal("a new turn reads as answered")
		}
		at := t0.Add(2 * time.Second)
		turn.TurnNumber, turn.Reply, turn.Phase, turn.Completeness, turn.RespondedAt = 1, "Who uses it?", "OPENING", 0.1, &at
		if err := conversation.AnswerTurn(ctx, db, turn); err != nil {
			t.Fatal(err)
		}
		turns, err := conversation.ListTurns(ctx, db, "acme", "s1")
		if err != nil || len(turns) != 1 || turns[0].Reply != "Who uses it?" || turns[0].TurnNumber != 1 || !turns[0].Answered() {
			t.Fatalf("turns = %+v, %v", turns, err)
		}
		if turns, _ := conversation.ListTurns(ctx, db, "other", "s1"); len(turns) != 0 {
			t.Fatalf("another tenant lists %d turns", len(turns))
		}
		// Answering again replaces the reply; no tenant but the turn's answers it.
		turn.Reply, turn.Sidebar, turn.Degraded = "What problem does it solve?", json.RawMessage(`{"phase":"OPENING"}`), true
		if err := conversation.AnswerTurn(ctx, db, turn); err != nil {
			t.Fatal(err)
		}
		again, err := conversation.GetTurn(ctx, db, "acme", "turn-1")
		if err != nil || again.Reply != turn.Reply || !again.Degraded || !again.RespondedAt.Equal(at) || !sameJSON(again.Sidebar, turn.Sidebar) {
			t.Fatalf("turn answered again = %+v, %v; want reply %q, degraded, sidebar %s", again, err, turn.Reply, turn.Sidebar)
		}
		for _, stranger := range []conversation.Turn{{ID: "turn-1", TenantID: "other"}, {ID: "turn-9", TenantID: "acme"}} {
			if err := conversation.AnswerTurn(ctx, db, stranger); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("answer turn %s of tenant %s: err = %v, want ErrNotFound", stranger.ID, stranger.TenantID, err)
			}
		}
	})
}

// TestHandlersReadSessionsWithoutTheSidebar: the extractor and the runner
// read a session without its sidebar, and a save without one keeps it.
func TestHandlersReadSessionsWithoutTheSidebar(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		sidebar := json.RawMessage(`{"phase":"OPENING"}`)
		s := conversation.Session{ID: "s1", TenantID: "acme", ProjectID: "p1", EngineID: "project-discovery",
			EngineVersion: "1.0.0", Status: conversation.StatusActive, Phase: "OPENING",
			State: json.RawMessage(`{"turn_number":0}`), Sidebar: sidebar, CreatedAt: t0, UpdatedAt: t0}
		if err := conversation.CreateSession(ctx, db, s); err != nil {
			t.Fatal(err)
		}
		if _, err := store.MarkHandled(ctx, db, "acme", "runner", "ev-1", t0); err != nil {
			t.Fatal(err)
		}
		for _, ev := range []struct {
			id      string
			handled bool
		}{{"ev-1", true}, {"ev-2", false}} {
			got, handled, err := conversation.GetSessionForEvent(ctx, db, "acme", "s1", "runner", ev.id)
			if err != nil || handled != ev.handled || got.Sidebar != nil || !sameJSON(got.State, s.State) || got.Phase != "OPENING" {
				t.Errorf("GetSessionForEvent(%s) = %+v, handled %v, %v; want the session without its sidebar, handled %v",
					ev.id, got, handled, err, ev.handled)
			}
			got, _, handled, err = conversation.GetSessionExtraction(ctx, db, "acme", "s1", "runner", ev.id)
			if err != nil || handled != ev.handled || got.Sidebar != nil || !sameJSON(got.State, s.State) {
				t.Errorf("GetSessionExtraction(%s) = %+v, handled %v, %v; want the session without its sidebar, handled %v",
					ev.id, got, handled, err, ev.handled)
			}
		}
		read, _, err := conversation.GetSessionForEvent(ctx, db, "acme", "s1", "runner", "ev-2")
		if err != nil {
			t.Fatal(err)
		}
		read.Phase = "CORE_CAPTURE"
		if err := conversation.SaveSession(ctx, db, read); err != nil {
			t.Fatal(err)
		}
		got, err := conversation.GetSession(ctx, db, "acme", "s1")
		if err != nil || got.Phase != "CORE_CAPTURE" || !sameJSON(got.Sidebar, sidebar) {
			t.Fatalf("after a save without a sidebar: %+v, %v; want phase CORE_CAPTURE and the sidebar %s kept", got, err, sidebar)
		}
		got.Sidebar = json.RawMessage(`{"phase":"CORE_CAPTURE"}`)
		if err := conversation.SaveSession(ctx, db, got); err != nil {
			t.Fatal(err)
		}
		if again, err := conversation.GetSession(ctx, db, "acme", "s1"); err != nil || !sameJSON(again.Sidebar, got.Sidebar) {
			t.Fatalf("after a save with a sidebar: %s, %v; want %s", again.Sidebar, err, got.Sidebar)
		}
	})
}

// TestMigrationKeepsTheReplies upgrades turns answered before migration 00011,
// which moved replies out of the turns table.
func TestMigrationKeepsTheReplies(t *testing.T) {
	for _, a := range testdb.Adapters() {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := a.Empty(t)
			testdb.MigrateTo(t, db, 10)
			sidebar := json.RawMessage(`{"phase":"OPENING"}`)
			at := t0.Add(3 * time.Second)
			if _, err := db.Exec(ctx, `INSERT INTO turns (id, tenant_id, session_id, message, turn_number, reply, phase,
				completeness, sidebar_json, degraded, received_at, responded_at)
				VALUES ('turn-1', 'acme', 's1', 'hello', 1, 'Who uses it?', 'OPENING', 0.25, $1, true, $2, $3),
					('turn-2', 'acme', 's1', 'a shop', NULL, NULL, NULL, NULL, NULL, false, $4, NULL)`,
				store.Large(sidebar), t0, at, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			testdb.Migrate(t, db)
			turns, err := conversation.ListTurns(ctx, db, "acme", "s1")
			if err != nil || len(turns) != 2 {
				t.Fatalf("turns after the migration = %+v, %v; want 2", turns, err)
			}
			answered, pending := turns[0], turns[1]
			if answered.ID != "turn-1" || !answered.Answered() || answered.TurnNumber != 1 || answered.Reply != "Who uses it?" ||
				answered.Phase != "OPENING" || answered.Completeness != 0.25 || !answered.Degraded ||
				!answered.RespondedAt.Equal(at) || !sameJSON(answered.Sidebar, sidebar) || answered.Message != "hello" {
				t.Errorf("answered turn after the migration = %+v", answered)
			}
			if pending.ID != "turn-2" || pending.Answered() || pending.Message != "a shop" || !pending.ReceivedAt.Equal(t0.Add(time.Minute)) {
				t.Errorf("pending turn after the migration = %+v", pending)
			}
			pending.TurnNumber, pending.Reply, pending.Phase, pending.RespondedAt = 2, "Who buys?", "OPENING", &at
			if err := conversation.AnswerTurn(ctx, db, pending); err != nil {
				t.Fatalf("answer a turn received before the migration: %v", err)
			}
		})
	}
}

// sameJSON compares JSON documents (PostgreSQL's JSONB keeps a form of its
// own).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestExtractionLogAndState(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		first := conversation.ExtractionLogEntry{ID: "e1", TenantID: "acme", SessionID: "s1", ProjectID: "p1", MessageID: "m1",
			EngineID: "pd", FieldPath: "purpose.core_problem", Value: json.RawMessage(`"website"`), Confidence: 0.7,
			Type: conversation.ExtractionNew, TurnNumber: 1, CreatedAt: t0}
		second := first
		second.ID, second.MessageID, second.Value, second.Type, second.TurnNumber = "e2", "m2", json.RawMessage(`"mobile app"`), conversation.ExtractionSupersede, 2
		if err := conversation.LogExtractions(ctx, db, first, second, first); err != nil {
			t.Fatal(err)
		}
		if err := conversation.MarkSuperseded(ctx, db, "acme", "e1", "e2"); err != nil {
			t.Fatal(err)
		}
		log, err := conversation.ListExtractions(ctx, db, "acme", "s1")
		if err != nil || len(log) != 2 {
			t.Fatalf("log = %+v, %v; want 2 entries (the duplicate skipped)", log, err)
		}
		if log[0].SupersededBy != "e2" || log[1].Type != "supersede" || string(log[1].Value) != `"mobile app"` {
			t.Errorf("log = %+v", log)
		}
		bad := first
		bad.ID, bad.Type = "e3", "guess"
		if err := conversation.LogExtractions(ctx, db, bad); err == nil {
			t.Error("an extraction type outside new/update/supersede was stored")
		}

		st, err := conversation.GetExtractionState(ctx, db, "acme", "s1")
		if err != nil || st.TurnNumber != 0 || st.Extraction != nil {
			t.Fatalf("state before any turn = %+v, %v", st, err)
		}
		for n := 1; n <= 2; n++ {
			if err := conversation.SaveExtractionState(ctx, db, "acme", "s1",
				conversation.ExtractionState{TurnNumber: n, Extraction: json.RawMessage(`{"fields":{}}`)}, t0); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := conversation.GetExtractionState(ctx, db, "acme", "s1"); st.TurnNumber != 2 {
			t.Fatalf("turn number = %d, want 2", st.TurnNumber)
		}
		// A stale delivery that numbered a turn the state has passed (or
		// reached) writes nothing.
		for _, n := range []int{1, 2} {
			err := conversation.SaveExtractionState(ctx, db, "acme", "s1",
				conversation.ExtractionState{TurnNumber: n, Extraction: json.RawMessage(`{"fields":{"stale":{}}}`)}, t0)
			if !errors.Is(err, conversation.ErrStaleExtraction) {
				t.Errorf("saving turn %d over turn 2: %v, want ErrStaleExtraction", n, err)
			}
		}
		if st, _ := conversation.GetExtractionState(ctx, db, "acme", "s1"); st.TurnNumber != 2 || strings.Contains(string(st.Extraction), "stale") {
			t.Fatalf("after stale writes: turn %d, %s", st.TurnNumber, st.Extraction)
		}

		cp := conversation.Checkpoint{ID: "c1", TenantID: "acme", SessionID: "s1", AtTurn: 5, Reason: "every_n_turns",
			Snapshot: json.RawMessage(`{"turn_number":5}`), ContextTokens: 812, CreatedAt: t0}
		if err := conversation.SaveCheckpoint(ctx, db, cp); err != nil {
			t.Fatal(err)
		}
		if err := conversation.SaveCheckpoint(ctx, db, cp); err != nil {
			t.Fatal(err)
		}
		cps, err := conversation.ListCheckpoints(ctx, db, "acme", "s1")
		if err != nil || len(cps) != 1 || cps[0].ContextTokens != 812 || cps[0].AtTurn != 5 {
			t.Fatalf("checkpoints = %+v, %v", cps, err)
		}
	})
}

// Two writers read the same version: the first write wins, the second is
// refused as stale and writes nothing, on both stores.
func TestSaveSessionRefusesAStaleWrite(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s := conversation.Session{ID: "s1", TenantID: "acme", ProjectID: "p1", EngineID: "project-discovery",
			EngineVersion: "1.0.0", Status: conversation.StatusActive, Phase: "OPENING",
			State: json.RawMessage(`{"turn_number":0}`), CreatedAt: t0, UpdatedAt: t0}
		if err := conversation.CreateSession(ctx, db, s); err != nil {
			t.Fatal(err)
		}
		a, _ := conversation.GetSession(ctx, db, "acme", "s1")
		b, _ := conversation.GetSession(ctx, db, "acme", "s1")
		a.StateHash, b.StateHash = "from-a", "from-b"
		if err := db.Tx(ctx, func(tx store.Querier) error { return conversation.SaveSession(ctx, tx, a) }); err != nil {
			t.Fatal(err)
		}
		err := db.Tx(ctx, func(tx store.Querier) error { return conversation.SaveSession(ctx, tx, b) })
		if !errors.Is(err, conversation.ErrStale) {
			t.Fatalf("the second write = %v, want ErrStale", err)
		}
		got, _ := conversation.GetSession(ctx, db, "acme", "s1")
		if got.StateHash != "from-a" || got.Version != 1 {
			t.Errorf("session = hash %s version %d, want from-a at version 1", got.StateHash, got.Version)
		}
		got.StateHash = "again"
		if err := conversation.SaveSession(ctx, db, got); err != nil {
			t.Fatalf("a write over the fresh version: %v", err)
		}
	})
}

// A session whose turn ran on a newer version of its engine reads back with
// that version (GET /v1/sessions showed the one it started on); a save that
// names none keeps the stored one.
func TestSaveSessionFollowsTheEngineVersion(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s := conversation.Session{ID: "s1", TenantID: "acme", ProjectID: "p1", EngineID: "project-discovery",
			EngineVersion: "1.0.0", Status: conversation.StatusActive, Phase: "OPENING",
			State: json.RawMessage(`{"turn_number":0}`), CreatedAt: t0, UpdatedAt: t0}
		if err := conversation.CreateSession(ctx, db, s); err != nil {
			t.Fatal(err)
		}
		for i, tc := range []struct{ save, want string }{{"1.1.0", "1.1.0"}, {"", "1.1.0"}} {
			got, err := conversation.GetSession(ctx, db, "acme", "s1")
			if err != nil {
				t.Fatal(err)
			}
			got.EngineVersion = tc.save
			if err := conversation.SaveSession(ctx, db, got); err != nil {
				t.Fatal(err)
			}
			got, err = conversation.GetSession(ctx, db, "acme", "s1")
			if err != nil {
				t.Fatal(err)
			}
			list, err := conversation.ListSessions(ctx, db, "acme", 10)
			if err != nil || len(list) != 1 {
				t.Fatalf("ListSessions = %v, %v", list, err)
			}
			if got.EngineVersion != tc.want || list[0].EngineVersion != tc.want {
				t.Errorf("save %d of %q: session at %q, listed at %q; want %q", i+1, tc.save, got.EngineVersion,
					list[0].EngineVersion, tc.want)
			}
		}
	})
}

func TestHandoffs(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		h := conversation.Handoff{ID: "h1", TenantID: "acme", ProjectID: "p1", SourceEngineID: "exploration", SourceSessionID: "s1",
			TargetEngineID: "project-discovery", TargetSessionID: "s2", Payload: json.RawMessage(`{"metadata":{"session_id":"s1"}}`),
			TransitionReason: "decided", CreatedAt: t0}
		if err := conversation.CreateHandoff(ctx, db, h); err != nil {
			t.Fatal(err)
		}
		if err := conversation.CreateHandoff(ctx, db, h); err != nil {
			t.Fatalf("the same handoff again: %v, want a no-op", err)
		}
		second := h
		second.ID = "h2"
		if err := conversation.CreateHandoff(ctx, db, second); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second handoff of s1 = %v, want ErrConflict", err)
		}
		for _, sid := range []string{"s1", "s2"} {
			hs, err := conversation.ListHandoffs(ctx, db, "acme", sid)
			if err != nil || len(hs) != 1 || hs[0].ID != "h1" || hs[0].TargetSessionID != "s2" || hs[0].Verified || len(hs[0].Verification) != 0 {
				t.Fatalf("handoffs of %s = %+v, %v", sid, hs, err)
			}
		}
		if hs, _ := conversation.ListHandoffs(ctx, db, "other", "s1"); len(hs) != 0 {
			t.Errorf("another tenant sees %+v", hs)
		}
		if err := conversation.RecordVerification(ctx, db, "acme", "h1", true, json.RawMessage(`{"verified":true,"score":0.9}`)); err != nil {
			t.Fatal(err)
		}
		got, err := conversation.GetHandoff(ctx, db, "acme", "h1")
		if err != nil || !got.Verified || !json.Valid(got.Verification) || !got.CreatedAt.Equal(t0) || got.TransitionReason != "decided" {
			t.Errorf("after verification = %+v, %v", got, err)
		}
		if err := conversation.RecordVerification(ctx, db, "other", "h1", false, json.RawMessage(`{}`)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another tenant verified it: %v", err)
		}
	})
}
