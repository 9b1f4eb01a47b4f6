package command

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// Durable attempts (Config.AttemptsDir).
//
// An attempt's directory is AttemptsDir/<run>/<task>/<attempt> (the
// dispatch id's parts) and holds:
//
//	context.md     the rendered context (also the command's stdin)
//	work/          the command's working directory, where it writes outputs
//	stdout, stderr what the command printed
//	handover.json, approval.json
//	pid            "<pid> <start time>" of the supervising shell
//	status         the command's exit status, written when it ends
//
// The command runs under a small shell that waits for it and records its
// exit status, in a process group of its own, with its standard streams on
// files, so it does not depend on the process that started it: when the
// orchestrator dies, the attempt runs on. A later Dispatch of the same
// dispatch id — the orchestrator resumed — finds the directory and, instead
// of running the command again, waits for it if it still runs and collects
// its result once it has ended. The command's effect happens once.

// supervisor runs the command given as its arguments, after the status
// file's path, and records its exit status atomically.
const supervisor = `st="$1"; shift; "$@"; code=$?; printf '%s\n' "$code" > "$st.tmp" && mv "$st.tmp" "$st"`

// attemptPollInterval is how often an attached attempt is checked.
const attemptPollInterval = 50 * time.Millisecond

// AttemptDir is where an attempt of dispatchID lives under dir.
func AttemptDir(dir, dispatchID string) string {
	parts := strings.Split(dispatchID, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "\\\x00") {
			return filepath.Join(dir, url.PathEscape(dispatchID))
		}
	}
	return filepath.Join(append([]string{dir}, parts...)...)
}

// RemoveRun deletes the attempt directories of a run under dir: call it
// once the run has finished and its results are recorded.
func RemoveRun(dir, runID string) error {
	if runID == "" || strings.ContainsAny(runID, "/\\\x00") || runID == "." || runID == ".." {
		return fmt.Errorf("command: run id %q is not a plain name", runID)
	}
	return os.RemoveAll(filepath.Join(dir, runID))
}

func (r *Runtime) dispatchDurable(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	base := AttemptDir(r.cfg.AttemptsDir, t.DispatchID)
	files := map[string]string{
		"context":  filepath.Join(base, "context.md"),
		"handover": filepath.Join(base, "handover.json"),
		"approval": filepath.Join(base, "approval.json"),
		"stdout":   filepath.Join(base, "stdout"),
		"stderr":   filepath.Join(base, "stderr"),
		"pid":      filepath.Join(base, "pid"),
		"status":   filepath.Join(base, "status"),
	}
	work := filepath.Join(base, "work")
	log := r.cfg.Logger.With("task", t.TaskID, "dispatch", t.DispatchID, "path", r.cfg.Path)

	if _, err := os.Stat(files["status"]); err == nil {
		log.Info("attempt already finished; collecting its result")
		return r.finish(t, work, files)
	}
	if pid, ok := readPID(files["pid"]); ok && running(pid) {
		log.Info("attempt still running from an earlier process; waiting for it", "pid", pid.pid)
		return r.attach(ctx, t, work, files, pid)
	} else if ok {
		// Its supervisor is gone without a status: nothing of the attempt
		// can be trusted. Make sure none of it runs on, and start afresh.
		killOrphans(pid)
	}
	return r.start(ctx, t, c, base, work, files)
}

// Abandon stops the durable attempt of t if its command still runs (its
// worker died, and the orchestrator has given up on it): SIGTERM to its
// process group, SIGKILL after KillGrace (it returns once that is sent). Its
// directory stays, for the pruner. Without AttemptsDir there is nothing an
// attempt leaves running.
func (r *Runtime) Abandon(_ context.Context, t agent.Task) error {
	if r.cfg.AttemptsDir == "" || t.DispatchID == "" {
		return nil
	}
	base := AttemptDir(r.cfg.AttemptsDir, t.DispatchID)
	if _, err := os.Stat(filepath.Join(base, "status")); err == nil {
		return nil // it ended
	}
	pid, ok := readPID(filepath.Join(base, "pid"))
	if !ok {
		return nil
	}
	if !running(pid) {
		// Its supervisor is gone without a status, but what it started may
		// run on in its group: as dispatchDurable does, none of it may.
		killOrphans(pid)
		return nil
	}
	r.cfg.Logger.Warn("stopping an attempt left running, which the orchestrator gave up on", "task", t.TaskID,
		"dispatch", t.DispatchID, "pid", pid.pid)
	r.stopGroup(pid.pid, nil)
	return nil
}

// start runs the attempt afresh.
func (r *Runtime) start(ctx context.Context, t agent.Task, c agent.Context, base, work string, files map[string]string) (agent.Result, error) {
	if err := ctx.Err(); err != nil {
		return agent.Result{}, err
	}
	if err := os.RemoveAll(base); err != nil {
		return agent.Result{}, fmt.Errorf("command: clear attempt dir: %w", err)
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return agent.Result{}, fmt.Errorf("command: make attempt dir: %w", err)
	}
	if err := os.WriteFile(files["context"], []byte(agent.Render(t, c)), 0o600); err != nil {
		return agent.Result{}, fmt.Errorf("command: write context: %w", err)
	}
	// Resolve now, with the orchestrator's PATH, so that a missing
	// executable is a permanent error rather than a shell's exit 127.
	path, err := Resolve(r.cfg.Path)
	if err != nil {
		return agent.Result{}, events.Permanent(fmt.Errorf("command %s cannot start: %w", r.cfg.Path, err))
	}
	stdin, err := os.Open(files["context"])
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: %w", err)
	}
	defer stdin.Close()
	stdout, err := os.Create(files["stdout"])
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(files["stderr"])
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: %w", err)
	}
	defer stderr.Close()

	args := append([]string{"-c", supervisor, "praetor-attempt", files["status"], path}, r.cfg.Args...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Dir = work
	cmd.Env = r.env(t, work, files)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return agent.Result{}, fmt.Errorf("command %s: start: %w", r.cfg.Path, err)
	}
	pid := procID{pid: cmd.Process.Pid, start: startTime(cmd.Process.Pid)}
	if err := writePID(files["pid"], pid); err != nil {
		_ = syscall.Kill(-pid.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return agent.Result{}, fmt.Errorf("command: record the attempt's process: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-ctx.Done():
		r.stopGroup(pid.pid, waited)
		return agent.Result{}, fmt.Errorf("command %s stopped: %w", r.cfg.Path, ctx.Err())
	}
	r.cfg.Logger.Debug("agent command finished", "task", t.TaskID, "dispatch", t.DispatchID, "elapsed", time.Since(start))
	return r.finish(t, work, files)
}

// attach waits for an attempt started by an earlier process.
func (r *Runtime) attach(ctx context.Context, t agent.Task, work string, files map[string]string, pid procID) (agent.Result, error) {
	tick := time.NewTicker(attemptPollInterval)
	defer tick.Stop()
	for {
		if _, err := os.Stat(files["status"]); err == nil {
			return r.finish(t, work, files)
		}
		if !running(pid) {
			// It may have written its status just before it ended.
			if _, err := os.Stat(files["status"]); err == nil {
				return r.finish(t, work, files)
			}
			return agent.Result{}, fmt.Errorf("command %s: the attempt started by an earlier process ended without an exit status (killed?): %s",
				r.cfg.Path, cmp.Or(tail(files["stderr"]), "(no stderr)"))
		}
		select {
		case <-ctx.Done():
			r.stopGroup(pid.pid, nil)
			return agent.Result{}, fmt.Errorf("command %s stopped: %w", r.cfg.Path, ctx.Err())
		case <-tick.C:
		}
	}
}

// stopGroup ends an attempt's process group: SIGTERM, then SIGKILL after
// KillGrace. waited, when given, reports the supervisor's end.
func (r *Runtime) stopGroup(pgid int, waited <-chan error) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	timer := time.NewTimer(r.cfg.KillGrace)
	defer timer.Stop()
	if waited == nil {
		tick := time.NewTicker(attemptPollInterval)
		defer tick.Stop()
		for syscall.Kill(-pgid, 0) == nil {
			select {
			case <-timer.C:
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				return
			case <-tick.C:
			}
		}
		return
	}
	select {
	case <-waited:
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // children that outlived the shell
	case <-timer.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
	}
}

// finish reads a finished attempt: its exit status, then its outputs.
func (r *Runtime) finish(t agent.Task, work string, files map[string]string) (agent.Result, error) {
	raw, err := os.ReadFile(files["status"])
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: read exit status: %w", err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: exit status %q: %w", raw, err)
	}
	if code != 0 {
		return agent.Result{}, fmt.Errorf("command %s exited with status %d: %s", r.cfg.Path, code, cmp.Or(tail(files["stderr"]), "(no stderr)"))
	}
	var stdout []byte
	if r.cfg.StdoutOutput != "" {
		f, err := os.Open(files["stdout"])
		if err != nil {
			return agent.Result{}, fmt.Errorf("command: read stdout: %w", err)
		}
		stdout, err = io.ReadAll(io.LimitReader(f, r.cfg.MaxOutputBytes+1))
		f.Close()
		if err != nil {
			return agent.Result{}, fmt.Errorf("command: read stdout: %w", err)
		}
	}
	return r.collect(t, work, files, stdout)
}

// tail returns the end of a file, as much as a failure quotes.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > stderrTail {
		_, _ = f.Seek(st.Size()-stderrTail, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, stderrTail))
	return strings.TrimSpace(string(b))
}

// procID identifies a process: its pid and, where /proc says, its start
// time, so a pid reused by another process is not mistaken for it.
type procID struct {
	pid   int
	start string
}

func writePID(path string, p procID) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %s\n", p.pid, p.start), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readPID(path string) (procID, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return procID{}, false
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return procID{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return procID{}, false
	}
	p := procID{pid: pid}
	if len(f) > 1 {
		p.start = f[1]
	}
	return p, true
}

// running reports whether the process still runs (a zombie does not) and
// is the one recorded.
func running(p procID) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		return syscall.Kill(p.pid, 0) == nil // no /proc: trust the pid
	}
	state, start, ok := statFields(raw)
	if !ok || state == "Z" || state == "X" {
		return false
	}
	return p.start == "" || p.start == start
}

// killOrphans kills the process group of an attempt whose supervisor p is
// gone, with what it started still in it. Only when no live process holds
// p's pid: a pid file can outlive its process (a restarted container starts
// its pids again), and the number may now lead another attempt's group.
func killOrphans(p procID) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err == nil {
		state, start, ok := statFields(raw)
		if !ok || (state != "Z" && state != "X") || (p.start != "" && start != p.start) {
			return // another process has the pid (live, or another's zombie): not ours to kill
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return // no /proc to tell by: leave it
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

// startTime is a process's start time from /proc (empty without it).
func startTime(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	_, start, _ := statFields(raw)
	return start
}

// statFields returns the state and start time of a /proc/<pid>/stat line.
// The command name may hold spaces and parentheses, so fields are counted
// from the last ')'.
func statFields(raw []byte) (state, start string, ok bool) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(string(raw[i+1:]))
	// After the name: state is field 3 of the line, starttime field 22.
	if len(f) < 20 {
		return "", "", false
	}
	return f[0], f[19], true
}
