package praetortest_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/praetorhq/praetor/pkg/praetortest"
)

// A test of a chat gateway starts a node, opens a session of a shipped
// engine and talks to it; the offline provider answers the same words the
// same way on every run.
func Example() {
	runExample(func(t testing.TB) { // in a test: func TestChat(t *testing.T) {
		n := praetortest.Start(t)
		id := n.NewSession("project-discovery", "field-app")
		for _, msg := range []string{
			"Hi! Our field technicians keep losing track of their jobs because everything runs on paper and spreadsheets. " +
				"We want to build a mobile app to fix that.",
			"Last month we missed three urgent repairs and lost a big customer. That's why it became a priority now.",
		} {
			r := n.Turn(id, msg)
			fmt.Println(r.TurnNumber, r.Phase)
		}
	})
	// Output:
	// 1 CORE_CAPTURE
	// 2 USERS_AND_GOALS
}

// runExample runs f as a test would, with a testing.TB that prints its
// errors, and then runs its cleanups: an example has no *testing.T.
func runExample(f func(t testing.TB)) {
	t := &recordingT{print: true}
	t.run(f)
}

// recordingT is a testing.TB outside a test: it keeps the errors (and
// prints them, for an example), ends f's goroutine on Fatal as testing
// does, and runs the cleanups once f has returned.
type recordingT struct {
	testing.TB // nil: a method not below panics
	print      bool

	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (t *recordingT) run(f func(t testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(t)
	}()
	<-done
	t.mu.Lock()
	cleanups := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for _, c := range slices.Backward(cleanups) {
		c()
	}
}

func (t *recordingT) Helper()      {}
func (t *recordingT) Name() string { return "example" }

func (t *recordingT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *recordingT) TempDir() string {
	dir, err := os.MkdirTemp("", "praetortest-example-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (t *recordingT) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errors = append(t.errors, msg)
	if t.print {
		fmt.Println("error:", msg)
	}
}

func (t *recordingT) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }

func (t *recordingT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}

func (t *recordingT) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

func (t *recordingT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.errors) > 0
}

func (t *recordingT) Logf(format string, args ...any) {
	if t.print {
		fmt.Printf(format+"\n", args...)
	}
}

func (t *recordingT) Log(args ...any) { t.Logf("%s", fmt.Sprint(args...)) }

// Errors are the errors reported, in order.
func (t *recordingT) Errors() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.errors)
}
