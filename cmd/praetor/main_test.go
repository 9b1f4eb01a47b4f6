package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/testenv"
)

// binary is the praetor built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "praetor-e2e")
	if err != nil {
		panic(err)
	}
	if binary, err = testenv.BuildPraetor(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// start runs the praetor under test with args.
func start(t *testing.T, env []string, args ...string) *testenv.Process {
	t.Helper()
	return testenv.StartProcess(t, binary, env, args...)
}

func TestDevServesHealthAndStopsOnSIGTERM(t *testing.T) {
	httpAddr, natsAddr, dataDir := testenv.FreeAddr(t), testenv.FreeAddr(t), t.TempDir()
	p := start(t, nil, "dev", "--data-dir", dataDir, "--http-addr", httpAddr, "--nats-listen", natsAddr)
	began := time.Now()
	testenv.WaitHTTP(t, "http://"+httpAddr+"/healthz", 20*time.Second)
	t.Logf("healthz answered %s after start", time.Since(began).Round(time.Millisecond))
	if body := testenv.WaitHTTP(t, "http://"+httpAddr+"/readyz", 30*time.Second); !strings.Contains(body, "ready") {
		t.Errorf("readyz = %q", body)
	}
	metrics := testenv.WaitHTTP(t, "http://"+httpAddr+"/metrics", 5*time.Second)
	for _, name := range []string{"praetor_llm_record_failures_total", "praetor_sqlite_commits_total", "go_goroutines"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	// Another process reads the event log through the embedded server.
	out, err := exec.Command(binary, "replay", "--stream", "PRAETOR_TURNS", "--nats-url", "nats://"+natsAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "replayed 0 messages") {
		t.Errorf("replay: %v\n%s", err, out)
	}
	// A tool given the data directory reads through the running dev's
	// server, at the address its lock records, never opening the store
	// beside it; a second dev on the directory is refused.
	out, err = exec.Command(binary, "replay", "--stream", "PRAETOR_TURNS", "--data-dir", dataDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "replayed 0 messages") {
		t.Errorf("replay --data-dir beside the running dev: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, "praetor.lock")); err != nil || !strings.Contains(string(b), `"nats_url":"nats://`+natsAddr+`"`) {
		t.Errorf("the data directory's lock says %s (%v), want the dev's NATS address", b, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, binary, "dev", "--data-dir", dataDir, "--http-addr", testenv.FreeAddr(t), "--nats-listen", "")
	out, err = second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is in use by praetor dev (pid ") {
		t.Errorf("a second dev on the same data directory: %v\n%s", err, out)
	}
	if !strings.Contains(p.Output(), "offline") {
		t.Errorf("the log does not say the offline provider is in use")
	}
	// The streams are provisioned with the default settings.
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := js.Stream(t.Context(), "PRAETOR_LLM"); err != nil {
		t.Errorf("the LLM stream: %v", err)
	} else {
		if got := s.CachedInfo().Config.Compression; got != jetstream.NoCompression {
			t.Errorf("the LLM stream's compression is %v, want none (--stream-compression's default in dev)", got)
		}
		if got := s.CachedInfo().Config.Duplicates; got != time.Minute {
			t.Errorf("the LLM stream's duplicate window is %v, want 1m (--duplicate-window's default in dev: the ack wait and 30s)", got)
		}
	}

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
		if err := p.Err(); err != nil {
			t.Fatalf("exit after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("praetor did not exit within 20s of SIGTERM")
	}
	if !strings.Contains(p.Output(), "praetor stopped") {
		t.Errorf("no clean stop in the log")
	}
}

func TestInvalidSettingsNameTheSetting(t *testing.T) {
	cases := []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"dev", "--http-addr", "nowhere"}, nil, "--http-addr (PRAETOR_HTTP_ADDR)"},
		{[]string{"dev", "--partitions", "5000"}, nil, "--partitions (PRAETOR_PARTITIONS)"},
		{[]string{"dev", "--stream-compression", "zstd"}, nil, `--stream-compression (PRAETOR_STREAM_COMPRESSION): "zstd": want s2 or none`},
		{[]string{"dev"}, []string{"PRAETOR_LOG_LEVEL=loud"}, "--log-level (PRAETOR_LOG_LEVEL)"},
		{[]string{"dev", "--llm-provider", "magic"}, nil, "PRAETOR_LLM_PROVIDER"},
		{[]string{"serve", "--services", "x"}, []string{"NATS_URL=", "DATABASE_URL="}, "NATS_URL"},
		{[]string{"serve", "--nats-url", "nats://x:1", "--database-url", "postgres://x/y", "--services", "nope"}, nil, `unknown service "nope"`},
		{[]string{"replay"}, nil, "--stream (PRAETOR_STREAM)"},
		{[]string{"replay", "--stream", "S", "--since", "yesterday"}, nil, "--since"},
		{[]string{"dev", "--no-such-flag"}, nil, "no-such-flag"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dataDir := t.TempDir()
			cmd := exec.CommandContext(ctx, binary, append(c.args, "--data-dir", dataDir)...)
			if c.args[0] == "replay" || c.args[0] == "serve" {
				cmd = exec.CommandContext(ctx, binary, c.args...)
			}
			cmd.Env = append(os.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("exit 0, want a failure naming %s:\n%s", c.want, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("output does not name %q:\n%s", c.want, out)
			}
			// A wrong setting is named before anything starts.
			if started, _ := os.ReadDir(dataDir); len(started) > 0 {
				t.Errorf("the data directory holds %d entries: the node started before naming the setting", len(started))
			}
		})
	}
}

// dev refuses a bad --engines-dir in one line that names it, and lists each
// error of a bad engine once.
func TestDevRefusesBadEngines(t *testing.T) {
	nope := filepath.Join(t.TempDir(), "nope")
	file := filepath.Join(t.TempDir(), "engine.yaml")
	bad := t.TempDir()
	if err := os.WriteFile(file, []byte("engine_id: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "bad.yaml"), []byte("engine_id: bad\n\tversion: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badIssue := filepath.Join(bad, "bad.yaml") + ":2: found a tab character that violates indentation [yaml-syntax]"
	cases := []struct {
		name, dir string
		want      []string // the lines of the output that are not the log's
	}{
		{"no directory", nope, []string{"praetor: --engines-dir " + nope + ": no such directory"}},
		{"a file", file, []string{"praetor: --engines-dir " + file + ": not a directory"}},
		{"bad engine", bad, []string{badIssue, "praetor: invalid engine definition: 1 error listed above (praetor validate DIR checks a directory)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "dev", "--data-dir", t.TempDir(), "--engines-dir", c.dir)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("exit 0, want a failure:\n%s", out)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if !strings.HasPrefix(l, "time=") {
					got = append(got, l)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("output\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestHelpEverywhere(t *testing.T) {
	for _, sub := range []string{"", "dev", "serve", "migrate", "replay", "version"} {
		args := []string{"--help"}
		if sub != "" {
			args = []string{sub, "--help"}
		}
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			t.Errorf("praetor %s --help: %v", sub, err)
		}
		if !strings.Contains(string(out), "USAGE") {
			t.Errorf("praetor %s --help printed no usage:\n%s", sub, out)
		}
		// The auditor's replay is told, not only the stream dump's.
		if sub == "replay" && (!strings.Contains(string(out), "required unless --session or --workflow") ||
			!strings.Contains(string(out), "--session ID rebuilds a session")) {
			t.Errorf("praetor replay --help does not say what --session does, or calls --stream required:\n%s", out)
		}
	}
}

func TestMigrateSQLite(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []string{"applied 00001", "database is up to date"} {
		out, err := exec.Command(binary, "migrate", "--data-dir", dir, "--database-url", "").CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("run %d: %v, output lacks %q:\n%s", i+1, err, want, out)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"1h":                   now.Add(-time.Hour),
		"2026-11-22T10:00:00Z": time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1h", "soon", ""} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) accepted it", bad)
		}
	}
}
