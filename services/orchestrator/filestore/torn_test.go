package filestore

import (
	"context"
	"os"
	"testing"
)

// A Save whose append was cut short (disk full, power loss) leaves a torn
// last line, which Load drops, so the run resumes from the event before;
// the next Save drops it too before it appends, rather than glue the new
// event to it and leave a log no Load can read. Found by helper-52.
func TestASaveAfterATornLineKeepsTheLogReadable(t *testing.T) {
	ctx := context.Background()
	states, events := history(t, "r1")
	fs := newStore(t)
	for i := 0; i < 2; i++ {
		if err := fs.Save(ctx, states[i], events[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	// Event 3's append was torn (ENOSPC mid-write); Save failed, the state
	// file still says seq 2.
	f, _ := os.OpenFile(fs.eventsPath("r1"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":3,"at":"2026-02-27T10:00:`)
	f.Close()

	// Resume: a new process loads the run (seq 2) and saves event 3 again.
	fs2, err := New(Config{Dir: fs.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs2.Load(ctx, "r1")
	if err != nil || st.Seq != 2 {
		t.Fatalf("load after the torn write: seq %d, %v", st.Seq, err)
	}
	if err := fs2.Save(ctx, states[2], events[2:3]); err != nil {
		t.Fatalf("save after resume: %v", err)
	}
	fs3, _ := New(Config{Dir: fs.Dir()})
	if _, err := fs3.Load(ctx, "r1"); err != nil {
		t.Fatalf("load after a successful save: %v", err)
	}
}
