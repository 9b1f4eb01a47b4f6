package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/testenv"
)

func TestValidate(t *testing.T) {
	out, err := exec.Command(binary, "validate", "../../engines").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 errors") {
		t.Fatalf("validate of the shipped engines: %v\n%s", err, out)
	}

	dir := t.TempDir()
	bad := `engine_id: broken
name: Broken
description: x
version: 1.0.0
engine_type: extract-dominant
initial_phase: START
phases:
  - id: START
    display_name: Start
    order: 1
    next_phase: MISSING
    mode_blend: {extract: 100}
information_ratio: {user: 70, system: 20}
`
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "validate", dir)
	out, err = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("validate of a broken engine: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"broken.yaml:11:5: phases[0].next_phase:", "[phase-ref]",
		"broken.yaml:13:1: information_ratio:", "[information-ratio]",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = exec.Command(binary, "validate", "--json", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `"valid": false`) || !strings.Contains(string(out), `"rule": "phase-ref"`) {
		t.Errorf("validate --json: %v\n%s", err, out)
	}

	// A file alone is checked as well; a directory without engine files,
	// or a file that is not YAML, is an error, not a pass.
	cmd = exec.Command(binary, "validate", filepath.Join(dir, "broken.yaml"))
	if out, _ = cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "broken.yaml:11:5: phases[0].next_phase:") {
		t.Errorf("validate FILE: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	empty := t.TempDir()
	for arg, want := range map[string]string{empty: "has no engine files", "../../go.mod": "is not an engine file"} {
		cmd := exec.Command(binary, "validate", arg)
		if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), want) {
			t.Errorf("validate %s: exit %d, want an error saying %q\n%s", arg, cmd.ProcessState.ExitCode(), want, out)
		}
	}
}

func TestChat(t *testing.T) {
	httpAddr := testenv.FreeAddr(t)
	start(t, nil, "dev", "--data-dir", t.TempDir(), "--http-addr", httpAddr, "--nats-listen", "")
	testenv.WaitHTTP(t, "http://"+httpAddr+"/readyz", 30*time.Second)
	cmd := exec.Command(binary, "chat", "--url", "http://"+httpAddr, "--engine", "project-discovery")
	cmd.Stdin = strings.NewReader("Our technicians keep losing track of their jobs. We want a mobile app.\n\nAbout 40 technicians.\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "session ") || !strings.Contains(text, "offline provider") {
		t.Errorf("chat did not start a session or did not say the offline provider answers:\n%s", text)
	}
	if n := strings.Count(text, "project-discovery> "); n != 2 {
		t.Errorf("%d replies for 2 messages (the blank line is skipped):\n%s", n, text)
	}
	if !strings.Contains(text, "%]") {
		t.Errorf("no phase and completeness after a reply:\n%s", text)
	}

	// An exploration that reaches its decision hands off to project
	// discovery; chat follows the handoff and the next message goes there.
	script, err := os.Open(filepath.Join("testdata", "exploration-chat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	cmd = exec.Command(binary, "chat", "--url", "http://"+httpAddr, "--engine", "exploration")
	cmd.Stdin = script
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat through a handoff: %v\n%s", err, out)
	}
	text = string(out)
	if n := strings.Count(text, "exploration> "); n != 10 {
		t.Errorf("%d exploration replies, want 10 (the handoff fires at the decision):\n%s", n, text)
	}
	if !strings.Contains(text, "(handed off to project-discovery") || strings.Count(text, "project-discovery> ") != 1 {
		t.Errorf("chat did not follow the handoff to project-discovery:\n%s", text)
	}

	cmd = exec.Command(binary, "chat", "--url", "http://"+httpAddr, "--engine", "nope")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no engine") {
		t.Errorf("chat with an unknown engine: %v\n%s", err, out)
	}
}

// praetor alone is a usage error, as a misspelt command is: the help on
// stderr and exit 2, where it printed the help on stdout and exited 0.
// --help still asks for it: stdout, exit 0.
func TestNoCommandIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--log-level", "debug"}} {
		cmd := exec.Command(binary, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 2 || stdout.Len() != 0 ||
			!strings.Contains(stderr.String(), "praetor [FLAGS] <COMMAND>") ||
			!strings.Contains(stderr.String(), "praetor: no command given (the commands: dev, serve,") {
			t.Errorf("praetor %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, the help and the commands on stderr",
				strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
	out, err := exec.Command(binary, "--help").Output()
	if err != nil || !strings.Contains(string(out), "praetor [FLAGS] <COMMAND>") {
		t.Errorf("praetor --help: %v, stdout:\n%s\nwant exit 0 and the help", err, out)
	}
}

// Every command of commands given none does as praetor alone: its help on
// stderr and exit 2, naming its commands; tenant, memory, workflow and inbox
// printed their help on stdout and exited 0, dlq exited 1. One it does not
// know names them too. The commands are read from the command tree, so a
// new one is checked without being listed here.
func TestCommandOfCommandsAloneIsAUsageError(t *testing.T) {
	t.Parallel()
	var walk func(path []string, cmd *ff.Command)
	var cases []struct {
		path []string
		cmd  *ff.Command
	}
	walk = func(path []string, cmd *ff.Command) {
		if len(cmd.Subcommands) == 0 {
			return
		}
		cases = append(cases, struct {
			path []string
			cmd  *ff.Command
		}{path, cmd})
		for _, c := range cmd.Subcommands {
			walk(append(slices.Clip(path), c.Name), c)
		}
	}
	walk(nil, rootCommand(&globals{stdout: io.Discard, stderr: io.Discard}))
	if len(cases) < 7 {
		t.Fatalf("%d commands with subcommands, want praetor, dlq, workflow, memory, memory token, tenant, tenant token, inbox at least", len(cases))
	}
	for _, tc := range cases {
		name := strings.Join(append([]string{"praetor"}, tc.path...), " ")
		names := make([]string, len(tc.cmd.Subcommands))
		for i, c := range tc.cmd.Subcommands {
			names[i] = c.Name
		}
		listed := "(the commands: " + strings.Join(names, ", ") + ")"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(binary, tc.path...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 2 || stdout.Len() != 0 ||
				!strings.Contains(stderr.String(), "USAGE") || !strings.Contains(stderr.String(), tc.cmd.Usage) ||
				!strings.Contains(stderr.String(), "praetor: no command given") || !strings.Contains(stderr.String(), listed) {
				t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, its help and %s on stderr",
					name, code, stdout.String(), stderr.String(), listed)
			}

			cmd = exec.Command(binary, append(slices.Clip(tc.path), "bogus")...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), listed) {
				t.Errorf("%s bogus: exit %d, output:\n%s\nwant exit 2 naming %s", name, code, out, listed)
			}
		})
	}
}

// The help says who uses a setting and what it takes: --nats-listen said
// chat joins the embedded NATS (chat talks HTTP), and workflow run's
// --agents was "the same as --registry" beside PRAETOR_WORKFLOW_AGENTS, a
// list of agent names.
func TestHelpSaysWhatSettingsAre(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args       []string
		flag       string
		want, lack []string
	}{
		{[]string{"dev", "--help"}, "--nats-listen", []string{"praetor replay and dlq", "workflow run --nats-url", "chat talks HTTP (--url), not NATS"},
			[]string{"(praetor replay, chat)"}},
		{[]string{"workflow", "run", "--help"}, "--agents", []string{"another name of --registry", "a registry YAML file, not agent names",
			"PRAETOR_WORKFLOW_AGENTS"}, []string{"the same as --registry"}},
	}
	for _, tc := range cases {
		out, err := exec.Command(binary, tc.args...).Output()
		if err != nil {
			t.Fatalf("praetor %s: %v", strings.Join(tc.args, " "), err)
		}
		var line string
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(strings.TrimSpace(l), tc.flag+" ") {
				line = l
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("praetor %s: %s says %q, want it to say %q", strings.Join(tc.args, " "), tc.flag, line, w)
			}
		}
		for _, w := range tc.lack {
			if strings.Contains(line, w) {
				t.Errorf("praetor %s: %s still says %q", strings.Join(tc.args, " "), tc.flag, w)
			}
		}
	}
}

// A command line that does not say what its user meant is refused with
// exit 2 and what to fix, instead of printing the help and succeeding, or
// of taking a flag for an argument.
func TestCommandLinesThatSayNothing(t *testing.T) {
	cases := []struct {
		args     []string
		mentions []string
	}{
		{[]string{"serv"}, []string{`"serv" is not a command of praetor`, `did you mean "serve"`}},
		{[]string{"tenant", "tokens", "issue"}, []string{`of praetor tenant`, `did you mean "token"`}},
		{[]string{"dlq", "lst"}, []string{`did you mean "list"`}},
		{[]string{"workflow", "frobnicate"}, []string{`"frobnicate" is not a command of praetor workflow`, "run, resume"}},
		{[]string{"chat", "exploration", "--url", "http://127.0.0.1:1"}, []string{"the flag --url comes after the argument", "put flags first"}},
		{[]string{"validate", "../../engines", "--json"}, []string{"the flag --json comes after"}},
		{[]string{"chat", "exploration"}, []string{"praetor chat takes no arguments", "exploration"}},
		{[]string{"version", "now"}, []string{"takes no arguments"}},
	}
	for _, tc := range cases {
		cmd := exec.Command(binary, tc.args...)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
			t.Errorf("praetor %s: exit %d, want 2\n%s", strings.Join(tc.args, " "), code, out)
			continue
		}
		for _, m := range tc.mentions {
			if !strings.Contains(string(out), m) {
				t.Errorf("praetor %s: output lacks %q:\n%s", strings.Join(tc.args, " "), m, out)
			}
		}
	}
	// After "--", what begins with '-' is an argument.
	out, err := exec.Command(binary, "validate", "--json", "--", "../../engines").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"valid": true`) {
		t.Errorf("validate --json -- DIR: %v\n%s", err, out)
	}
}
