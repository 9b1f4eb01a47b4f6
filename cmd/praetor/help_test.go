package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// helpOf returns what praetor ARGS --help prints.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	_ = run(context.Background(), append(args, "--help"), &out, &errOut)
	if !strings.Contains(out.String(), "USAGE") {
		t.Fatalf("praetor %s --help printed no usage:\n%s%s", strings.Join(args, " "), &out, &errOut)
	}
	return out.String()
}

// flagLine returns the help's line of --name.
func flagLine(t *testing.T, help, name string) string {
	t.Helper()
	for line := range strings.Lines(help) {
		if strings.HasPrefix(strings.TrimSpace(line), "--"+name+" ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("no --%s in the help:\n%s", name, help)
	return ""
}

// With NATS_URL set, a command's --nats-url says the value it starts from,
// once, and not also the local praetor dev it would use without one.
func TestNATSURLHelpSaysOneDefault(t *testing.T) {
	const url = "nats://10.0.0.9:4222"
	for _, args := range [][]string{{"replay"}, {"dlq"}, {"dlq", "list"}, {"dlq", "redrive"}, {"serve"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Setenv("NATS_URL", url)
			line := flagLine(t, helpOf(t, args...), "nats-url")
			if strings.Count(line, "default") != 1 || !strings.Contains(line, "(default: "+url+")") {
				t.Errorf("with NATS_URL set, the help says\n%s\nwant its value as the one default", line)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		t.Setenv("NATS_URL", "")
		if line := flagLine(t, helpOf(t, "replay"), "nats-url"); !strings.HasSuffix(line, "default: a local praetor dev") {
			t.Errorf("without NATS_URL, the help says\n%s\nwant the local praetor dev as the default", line)
		}
	})
}

// A help text never shows the secrets of the defaults it prints: a
// database or NATS URL's password (the user is kept, as url.URL.Redacted
// does) and a token taken from the environment; the flag's value itself
// stays whole.
func TestHelpRedactsSecretDefaults(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:pgSECRET@h/db")
	t.Setenv("NATS_URL", "nats://u:NatsSecret@127.0.0.1:4222")
	t.Setenv("PRAETOR_TOKEN", "prt_TokenSecret")
	secrets := []string{"pgSECRET", "NatsSecret", "TokenSecret"}
	check := func(t *testing.T, name, help string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(help, s) {
				t.Errorf("%s shows %s:\n%s", name, s, help)
			}
		}
	}
	for _, args := range [][]string{
		{"tenant"}, {"tenant", "list"}, {"tenant", "token", "issue"}, {"migrate"}, {"serve"}, {"inbox"},
		{"replay"}, {"dlq"}, {"chat"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			help := helpOf(t, args...)
			check(t, "praetor "+strings.Join(args, " ")+" --help", help)
			if args[0] != "replay" && strings.Contains(help, "--database-url") {
				if line := flagLine(t, help, "database-url"); !strings.Contains(line, "(default: postgres://u:xxxxx@h/db)") {
					t.Errorf("--database-url's line is\n%s\nwant the URL with its password masked", line)
				}
			}
		})
	}
	// Without a subcommand these print their help (on stderr, exit 2).
	for _, args := range [][]string{{"tenant"}, {"inbox"}, {"memory"}, {"workflow"}} {
		t.Run(strings.Join(args, " ")+" alone", func(t *testing.T) {
			var out, errOut bytes.Buffer
			_ = run(context.Background(), args, &out, &errOut)
			check(t, "praetor "+strings.Join(args, " "), out.String()+errOut.String())
		})
	}
	t.Run("workflow run --database-url", func(t *testing.T) {
		var out, errOut bytes.Buffer
		_ = run(context.Background(), []string{"workflow", "run", "wf.yaml", "--database-url", "postgres://u:pgSECRET@h/db", "--help"}, &out, &errOut)
		check(t, "praetor workflow run --help", out.String()+errOut.String())
	})
}

// praetor dlq redrive's usage and help write --force as --force=true, the
// form that works before a sequence: --force 1 is refused, as the parser
// would read the 1 as its value.
func TestDLQRedriveHelpWritesForceWithItsValue(t *testing.T) {
	help := helpOf(t, "dlq", "redrive")
	if !strings.Contains(help, "praetor dlq redrive [--force=true] SEQ...") {
		t.Errorf("the usage does not write --force=true before SEQ:\n%s", help)
	}
	for line := range strings.Lines(help) {
		if strings.Contains(line, "--force ") && !strings.HasPrefix(strings.TrimSpace(line), "--force ") ||
			strings.Contains(line, "[--force]") {
			t.Errorf("a line of the help shows a bare --force: %q", strings.TrimSpace(line))
		}
	}
}
