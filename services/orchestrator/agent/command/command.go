// Package command is the runtime that runs an external agent CLI for each
// attempt — the seed's claude_code_adapter is one configuration of it.
//
// The protocol, for any CLI:
//
//   - The process starts in a fresh working directory, with the assembled
//     context (agent.Render) on stdin and also in $PRAETOR_CONTEXT_FILE.
//   - It writes each declared output to a file of that name in its working
//     directory ($PRAETOR_WORK_DIR); $PRAETOR_OUTPUTS lists the names, one a
//     line. With StdoutOutput set, its standard output is that output (for
//     CLIs that print their answer).
//   - It may write a JSON object to $PRAETOR_HANDOVER_FILE for downstream
//     tasks. An approval task writes {"approved": bool, "reason": "..."} to
//     $PRAETOR_APPROVAL_FILE.
//   - Exit status 0 is success; anything else fails the attempt (retryable),
//     with the end of its stderr as the reason.
//
// The environment is minimal: PATH, HOME, TMPDIR and LANG of the
// orchestrator, the variables named in PassEnv, Env, and PRAETOR_RUN_ID,
// PRAETOR_TASK_ID, PRAETOR_DISPATCH_ID, PRAETOR_ATTEMPT, PRAETOR_AGENT,
// PRAETOR_TASK_KIND and the paths above. Secrets reach an agent only when
// named.
//
// When the attempt's context ends (task timeout, run stopping) the whole
// process group gets SIGTERM, then SIGKILL after KillGrace, so a CLI that
// started children does not leave them running.
package command

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// Config configures a command runtime.
type Config struct {
	// Path is the executable: a bare name (no slash) is looked up in PATH
	// when an attempt starts; a relative path with a slash is relative to
	// the current directory when New is called. Required.
	Path string
	// Args are its arguments.
	Args []string
	// Env sets variables for it.
	Env map[string]string
	// PassEnv names variables of the orchestrator's environment to pass on.
	PassEnv []string
	// WorkDir is where per-attempt directories are made; a relative one is
	// relative to the current directory when New is called. Default
	// os.TempDir().
	WorkDir string
	// StdoutOutput names a declared output taken from standard output.
	StdoutOutput string
	// MaxOutputBytes bounds each output. Default agent.DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// KillGrace is the time between SIGTERM and SIGKILL. Default 2s.
	KillGrace time.Duration
	// KeepWorkDirs keeps each attempt's directory for inspection. Default:
	// removed once the outputs are read.
	KeepWorkDirs bool
	// Logger receives one line per attempt. Default slog.Default() is not
	// used: nil discards.
	Logger *slog.Logger
	// LookupEnv reads the orchestrator's environment. Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// AttemptsDir, when set, makes attempts durable: each runs in
	// AttemptsDir/<run>/<task>/<attempt>, kept after it ends, in a process
	// that outlives the orchestrator; a re-dispatch of the same dispatch id
	// (after a restart) waits for that process or collects what it left
	// instead of running the command again (see durable.go). A relative one
	// is relative to the current directory when New is called. Default:
	// attempts run in temporary directories under WorkDir.
	AttemptsDir string
}

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	c.WorkDir = cmp.Or(c.WorkDir, os.TempDir())
	c.MaxOutputBytes = cmp.Or(c.MaxOutputBytes, int64(agent.DefaultMaxOutputBytes))
	c.KillGrace = cmp.Or(c.KillGrace, 2*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	return c
}

func (c Config) validate() error {
	if c.Path == "" {
		return errors.New("command: Path is required")
	}
	for k := range c.Env {
		if strings.HasPrefix(k, "PRAETOR_") {
			return fmt.Errorf("command: Env may not set %s: PRAETOR_* variables are the orchestrator's", k)
		}
	}
	return nil
}

// Runtime runs an agent CLI per attempt.
type Runtime struct {
	cfg Config
}

// New returns a command runtime.
func New(cfg Config) (*Runtime, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The command runs in its attempt's own directory, and its supervisor
	// and environment name files by these paths: a relative one would be
	// read from there. Made absolute here, every caller is right.
	for _, p := range []*string{&cfg.WorkDir, &cfg.AttemptsDir, &cfg.Path} {
		if *p == "" || filepath.IsAbs(*p) || (p == &cfg.Path && !strings.ContainsRune(*p, '/')) {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("command: %w", err)
		}
		*p = abs
	}
	return &Runtime{cfg: cfg}, nil
}

// The reasons Resolve gives that an executable cannot run.
var (
	ErrNotFound      = errors.New("not found")
	ErrNotExecutable = errors.New("not executable")
)

// Resolve returns the executable path names: a bare name (no slash) looked
// up in PATH, any other path as it is, once it is checked to be an
// executable file. The error wraps ErrNotFound or ErrNotExecutable when the
// path is missing or cannot be run.
func Resolve(path string) (string, error) {
	if !strings.ContainsRune(path, '/') {
		p, err := exec.LookPath(path)
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s: %w in $PATH", path, ErrNotFound)
		}
		if err != nil {
			return "", err
		}
		return p, nil
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: %w", path, ErrNotFound)
	case err != nil:
		return "", err
	case st.IsDir():
		return "", fmt.Errorf("%s: %w: a directory", path, ErrNotExecutable)
	case st.Mode()&0o111 == 0:
		return "", fmt.Errorf("%s: %w: no execute permission", path, ErrNotExecutable)
	}
	return path, nil
}

// stderrTail is how much of stderr a failure quotes.
const stderrTail = 2048

// Dispatch runs the CLI once for t.
func (r *Runtime) Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	if err := ctx.Err(); err != nil {
		return agent.Result{}, err
	}
	if r.cfg.AttemptsDir != "" && t.DispatchID != "" {
		return r.dispatchDurable(ctx, t, c)
	}
	base, err := os.MkdirTemp(r.cfg.WorkDir, "praetor-"+safeName(t.TaskID)+"-")
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: make work dir: %w", err)
	}
	if !r.cfg.KeepWorkDirs {
		defer os.RemoveAll(base)
	}
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return agent.Result{}, fmt.Errorf("command: make work dir: %w", err)
	}
	rendered := agent.Render(t, c)
	files := map[string]string{
		"context":  filepath.Join(base, "context.md"),
		"handover": filepath.Join(base, "handover.json"),
		"approval": filepath.Join(base, "approval.json"),
	}
	if err := os.WriteFile(files["context"], []byte(rendered), 0o600); err != nil {
		return agent.Result{}, fmt.Errorf("command: write context: %w", err)
	}

	cmd := exec.CommandContext(ctx, r.cfg.Path, r.cfg.Args...)
	cmd.Dir = work
	cmd.Env = r.env(t, work, files)
	cmd.Stdin = strings.NewReader(rendered)
	var stdout, stderr limitedBuffer
	stdout.limit = r.cfg.MaxOutputBytes + 1
	stderr.limit, stderr.tail = stderrTail, true
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var killer *time.Timer
	var killMu sync.Mutex
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		killMu.Lock()
		killer = time.AfterFunc(r.cfg.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		killMu.Unlock()
		return syscall.Kill(-pgid, syscall.SIGTERM)
	}
	// Wait returns after this even if a grandchild holds the pipes open.
	cmd.WaitDelay = r.cfg.KillGrace + time.Second

	start := time.Now()
	runErr := cmd.Run()
	killMu.Lock()
	if killer != nil {
		killer.Stop()
	}
	killMu.Unlock()
	log := r.cfg.Logger.With("task", t.TaskID, "dispatch", t.DispatchID, "path", r.cfg.Path)
	if runErr != nil {
		log.Warn("agent command failed", "error", runErr, "elapsed", time.Since(start))
		if ctxErr := ctx.Err(); ctxErr != nil {
			return agent.Result{}, fmt.Errorf("command %s stopped: %w", r.cfg.Path, ctxErr)
		}
		var exitErr *exec.ExitError
		if errors.As(runErr, &exitErr) {
			return agent.Result{}, fmt.Errorf("command %s exited with status %d: %s",
				r.cfg.Path, exitErr.ExitCode(), cmp.Or(strings.TrimSpace(stderr.String()), "(no stderr)"))
		}
		if errors.Is(runErr, exec.ErrNotFound) || errors.Is(runErr, fs.ErrNotExist) || errors.Is(runErr, fs.ErrPermission) {
			return agent.Result{}, events.Permanent(fmt.Errorf("command %s cannot start: %w", r.cfg.Path, runErr))
		}
		return agent.Result{}, fmt.Errorf("command %s: %w", r.cfg.Path, runErr)
	}
	log.Debug("agent command finished", "elapsed", time.Since(start))
	return r.collect(t, work, files, stdout.Bytes())
}

// collect reads the declared outputs, the handover and the approval. Every
// problem is reported, not just the first, so the agent's author sees them
// all.
func (r *Runtime) collect(t agent.Task, work string, files map[string]string, stdout []byte) (agent.Result, error) {
	res := agent.Result{Outputs: map[string][]byte{}}
	var problems []error
	root, err := os.OpenRoot(work)
	if err != nil {
		return agent.Result{}, fmt.Errorf("command: open work dir: %w", err)
	}
	defer root.Close()
	for _, name := range t.Outputs {
		if name == r.cfg.StdoutOutput {
			res.Outputs[name] = stdout
			continue
		}
		content, err := readLimited(root, filepath.FromSlash(name), r.cfg.MaxOutputBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, &agent.OutputError{Output: name, Reason: "missing: the command did not write " + name + " in its working directory"})
		case err != nil:
			problems = append(problems, &agent.OutputError{Output: name, Reason: err.Error()})
		default:
			res.Outputs[name] = content
		}
	}
	if h, err := os.ReadFile(files["handover"]); err == nil {
		res.Handover = h
	} else if !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, &agent.OutputError{Output: "handover", Reason: err.Error()})
	}
	if t.Kind == agent.KindApproval {
		a, err := os.ReadFile(files["approval"])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, &agent.OutputError{Output: "approval", Reason: "missing: write {\"approved\": true|false, \"reason\": \"...\"} to $PRAETOR_APPROVAL_FILE"})
		case err != nil:
			problems = append(problems, &agent.OutputError{Output: "approval", Reason: err.Error()})
		default:
			var ap agent.Approval
			dec := json.NewDecoder(bytes.NewReader(a))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ap); err != nil {
				problems = append(problems, &agent.OutputError{Output: "approval", Reason: "malformed: " + err.Error()})
			} else {
				res.Approval = &ap
			}
		}
	}
	if len(problems) > 0 {
		return agent.Result{}, errors.Join(problems...)
	}
	return res, nil
}

func readLimited(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("is a directory, not a file")
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("more than the limit of %d bytes", limit)
	}
	return b, nil
}

func (r *Runtime) env(t agent.Task, work string, files map[string]string) []string {
	env := map[string]string{}
	for _, k := range append([]string{"PATH", "HOME", "TMPDIR", "LANG"}, r.cfg.PassEnv...) {
		if v, ok := r.cfg.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range r.cfg.Env {
		env[k] = v
	}
	env["PRAETOR_RUN_ID"] = t.RunID
	env["PRAETOR_TASK_ID"] = t.TaskID
	env["PRAETOR_DISPATCH_ID"] = t.DispatchID
	env["PRAETOR_ATTEMPT"] = strconv.Itoa(t.Attempt)
	env["PRAETOR_AGENT"] = t.Agent
	env["PRAETOR_TASK_KIND"] = cmp.Or(t.Kind, agent.KindWork)
	env["PRAETOR_WORK_DIR"] = work
	env["PRAETOR_OUTPUTS"] = strings.Join(t.Outputs, "\n")
	env["PRAETOR_CONTEXT_FILE"] = files["context"]
	env["PRAETOR_HANDOVER_FILE"] = files["handover"]
	env["PRAETOR_APPROVAL_FILE"] = files["approval"]
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, s)
}

// limitedBuffer keeps at most limit bytes: the first ones, or with tail the
// last ones.
type limitedBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int64
	tail  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := int64(len(b.buf)) - b.limit; over > 0 {
		if b.tail {
			b.buf = append(b.buf[:0], b.buf[over:]...)
		} else {
			b.buf = b.buf[:b.limit]
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.buf)
}

func (b *limitedBuffer) String() string { return string(b.Bytes()) }
