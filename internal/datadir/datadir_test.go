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
