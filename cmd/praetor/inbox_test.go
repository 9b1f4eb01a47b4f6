package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
)

// praetor inbox prune deletes the inbox rows of events handled longer ago
// than it is told, and keeps the others; it refuses an age at which an
// event may still be redelivered. Found by helper-50: nothing ever ran
// store.PruneInbox, so every handled event left a row for ever.
func TestInboxPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := node.OpenStore(ctx, true, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	for id, age := range map[string]time.Duration{"old-1": 72 * time.Hour, "old-2": 49 * time.Hour, "recent": time.Hour} {
		if _, err := store.MarkHandled(ctx, db, "acme", "runner", id, time.Now().Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	cmd := exec.Command(binary, "inbox", "prune", "--older-than", "12h", "--data-dir", dir, "--database-url", "")
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "too recent") {
		t.Errorf("prune --older-than 12h: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	out, err := exec.Command(binary, "inbox", "prune", "--older-than", "48h", "--data-dir", dir, "--database-url", "").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "pruned 2 inbox rows") {
		t.Fatalf("prune --older-than 48h: %v\n%s", err, out)
	}
	db, err = node.OpenStore(ctx, true, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[string]bool{"old-1": false, "old-2": false, "recent": true} {
		if got, err := store.Handled(ctx, db, "runner", id); err != nil || got != want {
			t.Errorf("%s handled after the prune: %t (%v), want %t", id, got, err, want)
		}
	}
}
