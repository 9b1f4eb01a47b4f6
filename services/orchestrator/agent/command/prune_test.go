package command

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

const week = 7 * 24 * time.Hour

// age sets back by d the times of path and of everything under it, as if
// it had been written d ago.
func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	err := filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		at := info.ModTime().Add(-d)
		return os.Chtimes(p, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func attemptOf(run, task string, n int) agent.Task {
	t := designTask
	t.RunID, t.TaskID, t.Attempt = run, task, n
	t.DispatchID = run + "/" + task + "/" + strconv.Itoa(n)
	return t
}

// Attempts that ended longer ago than the retention go, with the run and
// task directories they leave empty; recent ones, and the directories that
// still hold one, stay and can still be collected.
func TestPruneAttemptsRemovesOnlyOldEndedAttempts(t *testing.T) {
	t.Parallel()
	r, dir := durable(t, `echo "# design" > design.md; mkdir -p docs; echo '{}' > docs/api.json
`, nil)
	dispatch := func(task agent.Task) {
		t.Helper()
		if _, err := r.Dispatch(context.Background(), task, designContext); err != nil {
			t.Fatal(err)
		}
	}
	oldRun := []agent.Task{attemptOf("run-old", "design", 1), attemptOf("run-old", "design", 2), attemptOf("run-old", "review", 1)}
	for _, task := range oldRun {
		dispatch(task)
	}
	mixedOld, mixedNew := attemptOf("run-mixed", "design", 1), attemptOf("run-mixed", "status", 1) // a task may be named as a file of an attempt
	dispatch(mixedOld)
	age(t, filepath.Join(dir, "run-old"), 8*24*time.Hour)
	age(t, filepath.Join(dir, "run-mixed"), 8*24*time.Hour)
	dispatch(mixedNew)

	p, err := PruneAttempts(dir, week, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p != (Pruned{Removed: 4, Recent: 1}) {
		t.Errorf("pruned %+v, want 4 removed and 1 recent kept", p)
	}
	if exists(t, filepath.Join(dir, "run-old")) {
		t.Error("the old run's directory is left, empty")
	}
	if exists(t, AttemptDir(dir, mixedOld.DispatchID)) || exists(t, filepath.Join(dir, "run-mixed", "design")) {
		t.Error("the mixed run's old attempt, or its emptied task directory, is left")
	}
	if !exists(t, filepath.Join(AttemptDir(dir, mixedNew.DispatchID), "status")) {
		t.Fatal("the recent attempt was removed")
	}
	// What is kept is whole: a re-dispatch collects it without running it.
	effects := filepath.Join(t.TempDir(), "effects")
	again, _ := durable(t, `echo ran >> `+effects+`
`, func(c *Config) { c.AttemptsDir = dir })
	res, err := again.Dispatch(context.Background(), mixedNew, designContext)
	if err != nil || string(res.Outputs["design.md"]) != "# design\n" {
		t.Fatalf("collecting the kept attempt: %+v, %v", res, err)
	}
	if exists(t, effects) {
		t.Error("the kept attempt ran again")
	}
	// A second round finds nothing more to do.
	if p, err := PruneAttempts(dir, week, time.Now()); err != nil || p != (Pruned{Recent: 1}) {
		t.Errorf("second round: %+v, %v", p, err)
	}
}

// An attempt whose command still runs is kept however old; one whose
// process is gone without an exit status (killed) goes once its files are
// older than the retention.
func TestPruneAttemptsKeepsRunningAndRemovesKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	attempts := filepath.Join(dir, "attempts")
	r, _ := durable(t, `while [ ! -f `+gate+` ]; do sleep 0.05; done
echo "# design" > design.md; mkdir -p docs; echo '{}' > docs/api.json
`, func(c *Config) { c.AttemptsDir = attempts })
	running := attemptOf("run-1", "design", 1)
	var wg sync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() {
		defer wg.Done()
		_, runErr = r.Dispatch(context.Background(), running, designContext)
	}()
	pidFile := filepath.Join(AttemptDir(attempts, running.DispatchID), "pid")
	deadline := time.Now().Add(30 * time.Second)
	for !exists(t, pidFile) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond) // polling a file another process writes
	}
	killed := AttemptDir(attempts, "run-2/design/1")
	if err := os.MkdirAll(filepath.Join(killed, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A pid that runs no process: the kernel's pid_max is far above it.
	if err := os.WriteFile(filepath.Join(killed, "pid"), []byte("4194000 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	recentKilled := AttemptDir(attempts, "run-3/design/1")
	if err := os.MkdirAll(recentKilled, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recentKilled, "context.md"), []byte("context"), 0o600); err != nil {
		t.Fatal(err)
	}
	age(t, filepath.Join(attempts, "run-1"), 30*24*time.Hour)
	age(t, filepath.Join(attempts, "run-2"), 8*24*time.Hour)

	p, err := PruneAttempts(attempts, week, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p != (Pruned{Removed: 1, Running: 1, Recent: 1}) {
		t.Errorf("pruned %+v, want the killed attempt removed, the running and the recent one kept", p)
	}
	if exists(t, filepath.Join(attempts, "run-2")) || !exists(t, recentKilled) {
		t.Error("the old killed attempt is left, or the recent one removed")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if runErr != nil {
		t.Fatalf("the running attempt, kept, failed: %v", runErr)
	}
}

func TestPruneAttemptsWithoutAttempts(t *testing.T) {
	t.Parallel()
	if p, err := PruneAttempts(filepath.Join(t.TempDir(), "none"), week, time.Now()); err != nil || p != (Pruned{}) {
		t.Errorf("a directory never made: %+v, %v", p, err)
	}
	if _, err := PruneAttempts(t.TempDir(), 0, time.Now()); err == nil {
		t.Error("no retention was taken")
	}
}
