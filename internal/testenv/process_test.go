package testenv

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestProcess(t *testing.T) {
	p := StartProcess(t, "/bin/sh", []string{"GREETING=hello"}, "-c", `echo "$GREETING"; echo oops >&2; exit 3`)
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("sh did not exit")
	}
	var exit *exec.ExitError
	if err := p.Err(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit status %v, want 3", err)
	}
	if out := p.Output(); !strings.Contains(out, "hello\n") || !strings.Contains(out, "oops\n") {
		t.Errorf("output %q lacks stdout or stderr", out)
	}

	sleeper := StartProcess(t, "/bin/sh", nil, "-c", "sleep 60")
	sleeper.Kill(t)
	if err := sleeper.Err(); !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Errorf("after SIGKILL: %v, want killed by a signal", err)
	}
}
