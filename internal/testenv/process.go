package testenv

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BuildPraetor builds the praetor binary into dir and returns its path, for
// the end-to-end tests that run it as processes.
func BuildPraetor(dir string) (string, error) {
	bin := filepath.Join(dir, "praetor")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/praetorhq/praetor/cmd/praetor")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: out}
	}
	return bin, nil
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "build praetor: " + e.err.Error() + "\n" + string(e.out) }

// Process is a program a test runs, its output kept for the test. It is
// killed when the test ends; a test that failed first gets a goroutine dump
// of it (SIGQUIT) and its output in the log.
type Process struct {
	cmd    *exec.Cmd
	out    Buffer
	exited chan struct{}
	err    error // the exit status, set before exited is closed
}

// StartProcess starts bin with args, the test's environment plus env.
func StartProcess(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			// A stuck process tells where it is stuck.
			_ = p.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-p.exited:
			case <-time.After(2 * time.Second):
			}
		}
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s %s output:\n%s", filepath.Base(bin), strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// Output is what the process wrote so far, stdout and stderr interleaved.
func (p *Process) Output() string { return p.out.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL — no cleanup, no last write — and waits for the exit.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// Exited is closed when the process has exited; Err is then its status.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is the exit status once Exited is closed (nil: exit 0).
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Buffer is a bytes.Buffer safe for a writer and readers in several
// goroutines: a process's output copier and the test, a logger and the test.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FreeAddr returns a loopback TCP address no one listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitHTTP polls url until it answers 200 and returns the body; the test
// fails if it does not within the given time.
func WaitHTTP(t testing.TB, url string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
			err = &statusError{code: resp.StatusCode}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %s (last: %v)", url, within, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + http.StatusText(e.code) }

// PrepareTenant readies the database at dbURL as an operator does, with
// the praetor binary bin: it migrates it, adds the tenant and returns a new
// API token of it.
func PrepareTenant(t testing.TB, bin, dbURL, tenant string) (token string) {
	t.Helper()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--database-url", dbURL)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("praetor %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
		}
		return strings.TrimSpace(string(out))
	}
	run("migrate")
	run("tenant", "add", "--tenant", tenant)
	return run("tenant", "token", "issue", "--tenant", tenant, "--name", "e2e")
}
