package command

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// durable returns a runtime with durable attempts for an sh script, and the
// attempts directory.
func durable(t *testing.T, body string, change func(*Config)) (*Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	r := script(t, body, func(c *Config) {
		c.AttemptsDir = dir
		if change != nil {
			change(c)
		}
	})
	return r, dir
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// A durable attempt keeps its directory; dispatching the same dispatch id
// again collects the result it left instead of running the command again.
func TestDurableAttemptRunsOnce(t *testing.T) {
	t.Parallel()
	effects := filepath.Join(t.TempDir(), "effects")
	r, dir := durable(t, `set -e
echo "$PRAETOR_DISPATCH_ID" >> `+effects+`
grep -q REQUIREMENT-42 -
echo "# design" > design.md; mkdir -p docs; echo '{"n": 1}' > docs/api.json
echo '{"by": "sh"}' > "$PRAETOR_HANDOVER_FILE"
`, nil)
	first, err := r.Dispatch(context.Background(), designTask, designContext)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Check(designTask, first, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run-1", "design", "1", "status")); err != nil {
		t.Fatalf("attempt directory: %v", err)
	}
	again, err := r.Dispatch(context.Background(), designTask, designContext)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Outputs["design.md"]) != "# design\n" || string(again.Handover) != "{\"by\": \"sh\"}\n" {
		t.Fatalf("collected result = %+v", again)
	}
	if got := lines(t, effects); len(got) != 1 {
		t.Fatalf("the command ran %d times, want once: %v", len(got), got)
	}
	// Another attempt of the task runs.
	second := designTask
	second.Attempt, second.DispatchID = 2, "run-1/design/2"
	if _, err := r.Dispatch(context.Background(), second, designContext); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, effects); len(got) != 2 || got[1] != "run-1/design/2" {
		t.Fatalf("effects = %v", got)
	}
	if err := RemoveRun(dir, "run-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("RemoveRun left %v", err)
	}
	if err := RemoveRun(dir, "../x"); err == nil {
		t.Fatal("RemoveRun took a path")
	}
}

// A second dispatch of an attempt that is still running — as an
// orchestrator restarted while the command runs would do — waits for the
// running command and returns its result; the command runs once.
func TestDurableAttemptAttachesToRunningCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	gate := filepath.Join(dir, "gate")
	r, _ := durable(t, `echo started >> `+effects+`
while [ ! -f `+gate+` ]; do sleep 0.05; done
echo done >> `+effects+`
echo "# design" > design.md; mkdir -p docs; echo '{}' > docs/api.json
`, nil)
	var wg sync.WaitGroup
	results := make([]agent.Result, 2)
	errs := make([]error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[0], errs[0] = r.Dispatch(context.Background(), designTask, designContext)
	}()
	deadline := time.Now().Add(30 * time.Second)
	pidFile := filepath.Join(AttemptDir(r.cfg.AttemptsDir, designTask.DispatchID), "pid")
	for _, err := os.Stat(pidFile); len(lines(t, effects)) == 0 || err != nil; _, err = os.Stat(pidFile) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond) // polling a file another process writes
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[1], errs[1] = r.Dispatch(context.Background(), designTask, designContext)
	}()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || string(results[i].Outputs["design.md"]) != "# design\n" {
			t.Fatalf("dispatch %d: %+v %v", i, results[i], errs[i])
		}
	}
	if got := lines(t, effects); strings.Join(got, ",") != "started,done" {
		t.Fatalf("effects = %v, want the command once", got)
	}
}

// An attempt whose process died without an exit status (the machine went
// down) is run afresh.
func TestDurableAttemptRerunsAfterItsProcessDied(t *testing.T) {
	t.Parallel()
	effects := filepath.Join(t.TempDir(), "effects")
	r, dir := durable(t, `echo ran >> `+effects+`
echo "# design" > design.md; mkdir -p docs; echo '{}' > docs/api.json
`, nil)
	base := AttemptDir(dir, designTask.DispatchID)
	if err := os.MkdirAll(filepath.Join(base, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A pid that runs no process of ours: the kernel's pid_max is far above it, and it has no /proc entry.
	if err := os.WriteFile(filepath.Join(base, "pid"), []byte("4194000 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Dispatch(context.Background(), designTask, designContext); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, effects); len(got) != 1 {
		t.Fatalf("effects = %v, want one fresh run", got)
	}
}

func TestDurableAttemptFailuresAndTimeout(t *testing.T) {
	t.Parallel()
	r, _ := durable(t, "echo 'quota exhausted' >&2; exit 3\n", nil)
	if _, err := r.Dispatch(context.Background(), designTask, designContext); err == nil ||
		!strings.Contains(err.Error(), "exited with status 3: quota exhausted") || events.IsPermanent(err) {
		t.Fatalf("failing command = %v", err)
	}
	missing, err := New(Config{Path: filepath.Join(t.TempDir(), "no-such-agent"), AttemptsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Dispatch(context.Background(), designTask, designContext); !events.IsPermanent(err) || !strings.Contains(err.Error(), "cannot start") {
		t.Fatalf("missing executable = %v", err)
	}
	hung, _ := durable(t, "trap '' TERM; while :; do sleep 1; done\n", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := hung.Dispatch(ctx, designTask, designContext); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung command = %v", err)
	}
	printed, _ := durable(t, "printf '# answer\\n'\n", func(c *Config) { c.StdoutOutput = "answer.md" })
	res, err := printed.Dispatch(context.Background(), agent.Task{RunID: "r", TaskID: "t", DispatchID: "r/t/1", Attempt: 1,
		Outputs: []string{"answer.md"}}, agent.Context{})
	if err != nil || string(res.Outputs["answer.md"]) != "# answer\n" {
		t.Fatalf("stdout output = %q, %v", res.Outputs["answer.md"], err)
	}
}

// dead reports whether pid has ended (gone, or a zombie no one reaped).
func dead(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	state, _, _ := statFields(raw)
	return state == "Z" || state == "X"
}

// Abandon kills what an attempt whose supervisor died left in its process
// group; but a pid file whose number now belongs to another live process
// (pids start again in a restarted container) kills nothing.
func TestAbandonKillsOrphansOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, _ := durable(t, "true\n", func(c *Config) { c.AttemptsDir = dir })
	attempt := func(id string, pidLine string) agent.Task {
		t.Helper()
		task := designTask
		task.DispatchID = id
		base := AttemptDir(dir, id)
		if err := os.MkdirAll(filepath.Join(base, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, "pid"), []byte(pidLine), 0o600); err != nil {
			t.Fatal(err)
		}
		return task
	}

	// A supervisor that died and left its child running in its group.
	childFile := filepath.Join(dir, "child")
	sup := exec.Command("/bin/sh", "-c", "sleep 30 & echo $! > "+childFile)
	sup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sup.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-sup.Process.Pid, syscall.SIGKILL) })
	child, err := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(childFile)))))
	if err != nil || dead(child) {
		t.Fatalf("the orphan: %d, %v", child, err)
	}
	if err := r.Abandon(context.Background(), attempt("run-1/orphan/1", strconv.Itoa(sup.Process.Pid)+" 1\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !dead(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling another process's end
	}
	if !dead(child) {
		t.Error("the orphan of a dead supervisor runs on")
	}

	// A live process of another attempt, whose pid the stale file names.
	other := exec.Command("/bin/sh", "-c", "sleep 30")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-other.Process.Pid, syscall.SIGKILL); _ = other.Wait() })
	if err := r.Abandon(context.Background(), attempt("run-1/stale/1", strconv.Itoa(other.Process.Pid)+" 1\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a kill, had there been one, lands at once
	if dead(other.Process.Pid) {
		t.Error("a process that only shares the stale pid was killed")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Relative paths in the config are relative to the directory New is called
// in, not to the attempt's directory the command runs in: with a relative
// AttemptsDir (the CLI's default state directory), the supervisor wrote its
// status under the attempt's own directory and the attempt failed with
// "read exit status: ... no such file or directory".
func TestRelativePathsAreTheCallersDirectory(t *testing.T) {
	// t.Chdir: not parallel.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll("bin", 0o755); err != nil {
		t.Fatal(err)
	}
	body := "#!/bin/sh\nset -e\ngrep -q REQUIREMENT-42 \"$PRAETOR_CONTEXT_FILE\"\n" +
		"echo '# design' > design.md; mkdir -p docs; echo '{}' > docs/api.json\necho '{\"by\": \"sh\"}' > \"$PRAETOR_HANDOVER_FILE\"\n"
	if err := os.WriteFile(filepath.Join("bin", "agent.sh"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"durable", Config{Path: "bin/agent.sh", AttemptsDir: filepath.Join(".praetor", "state", "attempts")}},
		{"durable, ./ path", Config{Path: "./bin/agent.sh", AttemptsDir: "attempts"}},
		{"temporary", Config{Path: "bin/agent.sh", WorkDir: "tmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.WorkDir != "" {
				if err := os.MkdirAll(tc.cfg.WorkDir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Dispatch(context.Background(), designTask, designContext)
			if err != nil {
				t.Fatalf("dispatch: %v", err)
			}
			if string(res.Outputs["design.md"]) != "# design\n" || string(res.Handover) != "{\"by\": \"sh\"}\n" {
				t.Fatalf("result = %+v", res)
			}
			if tc.cfg.AttemptsDir != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.cfg.AttemptsDir, "run-1", "design", "1", "status")); err != nil {
					t.Fatalf("the attempt is not under the caller's %s: %v", tc.cfg.AttemptsDir, err)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"run.sh": 0o755, "plain.txt": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh in PATH")
	}
	for _, tc := range []struct {
		path, want string
		err        error
	}{
		{filepath.Join(dir, "run.sh"), filepath.Join(dir, "run.sh"), nil},
		{"sh", sh, nil},
		{filepath.Join(dir, "nope.sh"), "", ErrNotFound},
		{"praetor-no-such-agent-cli", "", ErrNotFound},
		{filepath.Join(dir, "plain.txt"), "", ErrNotExecutable},
		{dir, "", ErrNotExecutable},
	} {
		got, err := Resolve(tc.path)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Resolve(%s) = %q, %v; want %q, %v", tc.path, got, err, tc.want, tc.err)
		}
	}
}
