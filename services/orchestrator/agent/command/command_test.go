package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script writes an sh script into a temp dir and returns a runtime for it.
func script(t *testing.T, body string, change func(*Config)) *Runtime {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	// Run by /bin/sh rather than exec'd: a file this process has just
	// written may still be open for writing in a child that a parallel test
	// forked meanwhile, and exec fails with "text file busy" (ETXTBSY).
	cfg := Config{Path: "/bin/sh", Args: []string{path}, WorkDir: t.TempDir(), KillGrace: 200 * time.Millisecond,
		LookupEnv: func(k string) (string, bool) {
			switch k {
			case "PATH":
				return os.Getenv("PATH"), true
			case "SECRET", "API_KEY":
				return "s3cret-" + k, true
			}
			return "", false
		}}
	if change != nil {
		change(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var designTask = agent.Task{RunID: "run-1", TaskID: "design", DispatchID: "run-1/design/1", Attempt: 1,
	Agent: "sh", Kind: agent.KindWork, Outputs: []string{"design.md", "docs/api.json"}}

var designContext = agent.Context{Instructions: "Design it.", Definition: "id: design\n",
	Inputs: []agent.Input{{Name: "req.md", Source: "file req.md", Content: "REQUIREMENT-42"}}}

func TestCommandSuccess(t *testing.T) {
	t.Parallel()
	r := script(t, `set -e
grep -q REQUIREMENT-42 -          # the context arrives on stdin
test -f "$PRAETOR_CONTEXT_FILE"
{ echo "# Design for $PRAETOR_TASK_ID"; echo "dispatch=$PRAETOR_DISPATCH_ID attempt=$PRAETOR_ATTEMPT agent=$PRAETOR_AGENT"
  echo "secret=${SECRET:-unset} api=${API_KEY:-unset} custom=$CUSTOM"; echo "outputs=$(echo "$PRAETOR_OUTPUTS" | tr '\n' ',')"; pwd; } > design.md
mkdir -p docs && echo '{"endpoints": 3}' > docs/api.json
echo '{"decisions": ["rest"]}' > "$PRAETOR_HANDOVER_FILE"
echo "some chatter on stderr" >&2
`, func(c *Config) {
		c.PassEnv = []string{"API_KEY"}
		c.Env = map[string]string{"CUSTOM": "yes"}
	})
	res, err := r.Dispatch(context.Background(), designTask, designContext)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	if err := agent.Check(designTask, res, 0); err != nil {
		t.Fatalf("Check: %v", err)
	}
	design := string(res.Outputs["design.md"])
	for _, want := range []string{
		"# Design for design",
		"dispatch=run-1/design/1 attempt=1 agent=sh",
		"secret=unset api=s3cret-API_KEY custom=yes", // only named variables pass
		"outputs=design.md,docs/api.json,",
	} {
		if !strings.Contains(design, want) {
			t.Errorf("design.md lacks %q:\n%s", want, design)
		}
	}
	if string(res.Outputs["docs/api.json"]) != "{\"endpoints\": 3}\n" || string(res.Handover) != "{\"decisions\": [\"rest\"]}\n" {
		t.Fatalf("outputs = %q, handover = %q", res.Outputs["docs/api.json"], res.Handover)
	}
	// The work directory is removed afterwards.
	if entries, _ := os.ReadDir(r.cfg.WorkDir); len(entries) != 0 {
		t.Fatalf("work dir left behind: %v", entries)
	}
}

func TestCommandOutputProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       string
	}{
		{"missing output", "echo '# d' > design.md\n", "output docs/api.json: missing: the command did not write docs/api.json"},
		{"malformed json output", "echo '# d' > design.md; mkdir docs; echo '{\"a\":' > docs/api.json\n", "output docs/api.json: malformed JSON"},
		{"malformed handover", "echo '# d' > design.md; mkdir docs; echo '{}' > docs/api.json; echo 'not json' > \"$PRAETOR_HANDOVER_FILE\"\n", "output handover: must be a JSON object"},
		{"empty output", ": > design.md; mkdir docs; echo '{}' > docs/api.json\n", "output design.md: empty"},
		{"output is a directory", "mkdir design.md docs; echo '{}' > docs/api.json\n", "output design.md: is a directory"},
		{"output escapes the work dir", "ln -s /etc/passwd design.md; mkdir docs; echo '{}' > docs/api.json\n", "output design.md:"},
		{"nothing written", "exit 0\n", "output design.md: missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := script(t, tc.body, nil)
			res, err := r.Dispatch(context.Background(), designTask, designContext)
			if err == nil {
				err = agent.Check(designTask, res, 0)
			}
			var oe *agent.OutputError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want an OutputError containing %q", err, tc.want)
			}
		})
	}
}

func TestCommandExitStatus(t *testing.T) {
	t.Parallel()
	r := script(t, "echo 'model quota exhausted' >&2; exit 3\n", nil)
	_, err := r.Dispatch(context.Background(), designTask, designContext)
	if err == nil || !strings.Contains(err.Error(), "exited with status 3: model quota exhausted") {
		t.Fatalf("error = %v", err)
	}
	if events.IsPermanent(err) {
		t.Fatal("a failed run is retryable, not permanent")
	}
	missing, err := New(Config{Path: filepath.Join(t.TempDir(), "no-such-agent"), WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.Dispatch(context.Background(), designTask, designContext)
	if !events.IsPermanent(err) || !strings.Contains(err.Error(), "cannot start") {
		t.Fatalf("missing executable = %v, want a permanent error", err)
	}
}

func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// The agent starts a child that would outlive it, then hangs.
	r := script(t, `sleep 300 &
echo $! > `+pidFile+`
trap '' TERM   # ignore SIGTERM: only SIGKILL after the grace ends it
while :; do sleep 1; done
`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Dispatch(ctx, designTask, designContext)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a hung agent was not stopped")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("error = %v, want the deadline", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("child pid: %v", rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the agent survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond) // polling a process we do not own; no channel to wait on
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper is dead).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestCommandStdoutOutputAndApproval(t *testing.T) {
	t.Parallel()
	r := script(t, `printf '# Printed answer\n'
test "$PRAETOR_TASK_KIND" = approval && echo '{"approved": false, "reason": "needs tests"}' > "$PRAETOR_APPROVAL_FILE"
exit 0
`, func(c *Config) { c.StdoutOutput = "answer.md" })
	task := agent.Task{TaskID: "review", Attempt: 1, Kind: agent.KindApproval, Outputs: []string{"answer.md"}}
	res, err := r.Dispatch(context.Background(), task, agent.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Outputs["answer.md"]) != "# Printed answer\n" {
		t.Fatalf("stdout output = %q", res.Outputs["answer.md"])
	}
	err = agent.Check(task, res, 0)
	var re *agent.RejectedError
	if !errors.As(err, &re) || re.Reason != "needs tests" {
		t.Fatalf("Check = %v, want the refusal", err)
	}
	silent := script(t, "exit 0\n", nil)
	_, err = silent.Dispatch(context.Background(), agent.Task{TaskID: "review", Attempt: 1, Kind: agent.KindApproval}, agent.Context{})
	if err == nil || !strings.Contains(err.Error(), "PRAETOR_APPROVAL_FILE") {
		t.Fatalf("approval without decision = %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("New accepted a config without a path")
	}
	if _, err := New(Config{Path: "x", Env: map[string]string{"PRAETOR_TASK_ID": "y"}}); err == nil {
		t.Fatal("New accepted a PRAETOR_ variable in Env")
	}
}
