//go:build linux

package sqlite

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SQLite's locks on a database file are POSIX record locks, which belong to
// the process: closing any descriptor of the file releases them all. The
// checkpointer's own descriptor (checkpointer.file) must therefore outlive
// every connection, or another process could take the file from under
// them while DB.Close waits for the readers.
func TestCheckpointerKeepsTheProcessLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	db := openPages(t, Config{Path: path, CheckpointInterval: time.Hour, RestartFrames: 100})
	// The probe's descriptor stays open to the end: closing it, too, would
	// release the locks.
	probe, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close() })
	locked := func() bool { return sharedLocked(t, probe) }
	writePages(t, db, 300)
	round(t, t.Context(), db, true, "round on a log past RestartFrames") // the file synced
	if !locked() {
		t.Fatal("no lock on the database file while it is open; the probe sees nothing")
	}
	// DB.Close stops the checkpointer first, then closes the connections.
	if err := db.ckpt.stop(); err != nil {
		t.Fatal(err)
	}
	if !locked() {
		t.Fatal("stopping the checkpointer released the connections' locks on the database file")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if locked() {
		t.Fatal("the database file is still locked after Close")
	}
}

// sharedLocked reports whether a lock of this process covers SQLite's
// shared-lock bytes of the file f. An open file description lock conflicts
// with the process's own POSIX locks, which F_GETLK would not report.
func sharedLocked(t *testing.T, f *os.File) bool {
	t.Helper()
	const (
		fOFDGetlk   = 36             // F_OFD_GETLK
		sharedFirst = 0x40000000 + 2 // PENDING_BYTE + 2
		sharedSize  = 510
	)
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: sharedFirst, Len: sharedSize}
	if err := syscall.FcntlFlock(f.Fd(), fOFDGetlk, &lk); err != nil {
		t.Fatal(err)
	}
	return lk.Type != syscall.F_UNLCK
}
