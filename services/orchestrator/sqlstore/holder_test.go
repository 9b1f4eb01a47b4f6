package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
)

// Holder reads who holds a run's lease and until when: nobody for a run
// started without one (praetor workflow run's), the owner and the time for
// the others; held only before that time.
func TestHolder(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		st := newStore(t, db, "acme", 0)
		b := orchtest.Bundle(t, diamond, registry, nil)
		until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		for _, run := range []string{"cli", "leased"} {
			s, ev, err := engine.Start(engine.StartInfo{RunID: run, Workflow: b.Workflow.Name, Project: b.ProjectDir, Seed: 1,
				Limits: b.Limits(), Plan: b.Plan()}, engine.NewCtx(time.Now(), 1, 1))
			if err != nil {
				t.Fatal(err)
			}
			if run == "leased" {
				st.SetLease(run, "replica-1", until)
			}
			if err := st.Save(context.Background(), s, []engine.Event{ev}); err != nil {
				t.Fatal(err)
			}
		}
		h, err := st.Holder(context.Background(), "cli")
		if err != nil || h.Owner != "" || !h.Until.IsZero() || h.Held(time.Now()) {
			t.Fatalf("Holder(cli) = %+v, %v, want none", h, err)
		}
		h, err = st.Holder(context.Background(), "leased")
		if err != nil || h.Owner != "replica-1" || !h.Until.Equal(until) || !h.Held(time.Now()) || h.Held(until.Add(time.Second)) {
			t.Fatalf("Holder(leased) = %+v, %v, want replica-1 until %s", h, err, until)
		}
		if _, err := st.Holder(context.Background(), "nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Holder(nobody) = %v, want ErrNotFound", err)
		}
	})
}
