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
