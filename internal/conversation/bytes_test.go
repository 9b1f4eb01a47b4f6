package conversation_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
)

// A working memory comes back byte for byte as it was written: values kept
// raw in it reach the prompts, and a live turn must see what a replay
// (which folds the events as sent) sees. PostgreSQL's JSONB would reorder
// these keys and respace them.
func TestStateKeepsItsBytes(t *testing.T) {
	const state = `{"turn_number":1,"fields":{"budget":{"value":{"max":90000,"currency":"EUR","min":50000},"confidence":0.8}}}`
	const extraction = `{"zeta":1,"alpha":{"b":2,"a":1}}`
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s := conversation.Session{ID: "s1", TenantID: "acme", ProjectID: "p1", EngineID: "exploration",
			EngineVersion: "1.0.0", Status: conversation.StatusActive, Phase: "OPENING",
			State: json.RawMessage(state), CreatedAt: t0, UpdatedAt: t0}
		if err := conversation.CreateSession(ctx, db, s); err != nil {
			t.Fatal(err)
		}
		got, err := conversation.GetSession(ctx, db, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.State) != state {
			t.Errorf("state read back as\n%s\nwant\n%s", got.State, state)
		}
		if err := conversation.SaveExtractionState(ctx, db, "acme", "s1",
			conversation.ExtractionState{TurnNumber: 1, Extraction: json.RawMessage(extraction)}, t0); err != nil {
			t.Fatal(err)
		}
		st, err := conversation.GetExtractionState(ctx, db, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if string(st.Extraction) != extraction {
			t.Errorf("extraction read back as %s, want %s", st.Extraction, extraction)
		}
	})
}
