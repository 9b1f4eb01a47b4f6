package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/datadir"
)

// One holder at a time, even within a process; the second learns who holds
// it and where its NATS listens; once released, the lock can be taken again.
func TestOneHolderAtATime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := datadir.Acquire(dir, datadir.Owner{PID: os.Getpid(), Command: "praetor dev"})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Record(datadir.Owner{PID: os.Getpid(), Command: "praetor dev", NATSURL: "nats://127.0.0.1:4222"}); err != nil {
		t.Fatal(err)
	}
	_, err = datadir.Acquire(dir, datadir.Owner{PID: 1})
	inUse, ok := datadir.IsInUse(err)
	if !ok || inUse.Owner.PID != os.Getpid() || inUse.Owner.NATSURL != "nats://127.0.0.1:4222" || inUse.Dir != dir ||
		!strings.Contains(err.Error(), "in use by praetor dev (pid ") {
		t.Fatalf("second Acquire: %v (%+v), want in use by this process's praetor dev at its NATS URL", err, inUse)
	}
	first.Release()
	again, err := datadir.Acquire(dir, datadir.Owner{PID: 2})
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	again.Release()
	again.Release() // twice does no harm
}

// The data directory holds conversations and token hashes: Acquire makes
// a new one 0700 with its lock 0600, whatever the umask.
func TestAcquireCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := datadir.Acquire(dir, datadir.Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	assertMode(t, dir, 0o700)
	assertMode(t, filepath.Join(dir, datadir.FileName), 0o600)
	if len(l.Tightened) != 0 {
		t.Errorf("a new directory was tightened: %v", l.Tightened)
	}
}

// A directory made by an older version (0755, its files 0644) is
// tightened, and Lock.Tightened says what was, for a log line.
func TestAcquireTightensExistingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "nats"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := []string{"praetor.db", "praetor.db-wal", "praetor.db-shm", "memory.db", datadir.FileName}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := datadir.Acquire(dir, datadir.Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	assertMode(t, dir, 0o700)
	assertMode(t, filepath.Join(dir, "nats"), 0o700)
	for _, f := range files {
		assertMode(t, filepath.Join(dir, f), 0o600)
	}
	if len(l.Tightened) != 1+len(files) || l.Tightened[0] != dir {
		t.Errorf("Tightened = %v, want the directory and its %d files", l.Tightened, len(files))
	}
}

func TestCreatePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "praetor.db")
	if err := datadir.CreatePrivate(path); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Dir(path), 0o700)
	assertMode(t, path, 0o600)
	// An existing file is left as it is, content and mode.
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := datadir.CreatePrivate(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "x" {
		t.Errorf("CreatePrivate emptied an existing file: %q", b)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s is %#o, want %#o", path, got, want)
	}
}
