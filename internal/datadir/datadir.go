// Package datadir keeps a praetor dev data directory to one server at a
// time.
//
// The embedded NATS server does not lock its store: a second server opened
// on the directory of a running praetor dev (a tool reading the event log,
// say) would write into the same files. So praetor dev holds a lock on
// DIR/praetor.lock while it runs, recording in it its process id and the
// address its NATS server listens on; a tool takes the lock to open the
// store itself, or, when dev holds it, connects to that address.
package datadir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the lock file's name in a data directory.
const FileName = "praetor.lock"

// Owner is what the process holding a directory's lock records in it.
type Owner struct {
	PID int `json:"pid"`
	// Command is what the process runs: "praetor dev", "praetor replay".
	Command string `json:"command,omitempty"`
	// NATSURL is where its NATS server takes other processes; empty when
	// it takes none (praetor dev --nats-listen "").
	NATSURL string `json:"nats_url,omitempty"`
}

// InUseError is Lock's error when another process holds the lock.
type InUseError struct {
	Dir   string
	Owner Owner // as the holder recorded it; zero if unreadable
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s is in use by %s", e.Dir, e.Owner)
}

// String names the owner: "praetor dev (pid 42)".
func (o Owner) String() string {
	cmd := o.Command
	if cmd == "" {
		cmd = "another praetor process"
	}
	if o.PID == 0 {
		return cmd
	}
	return fmt.Sprintf("%s (pid %d)", cmd, o.PID)
}

// recordSize is the fixed length of the lock file's record: each Record
// writes it whole, at once, so a reader never sees half of one record and
// half of another.
const recordSize = 512

// Lock is a held lock on a data directory.
type Lock struct {
	f *os.File
	// Tightened are the directory and the files in it that Acquire found
	// readable by others and made private, for a log line; none when the
	// directory is new.
	Tightened []string
}

// Acquire takes dir's lock without waiting, creating dir if need be, and
// records owner in it. When another process holds it, the error is an
// *InUseError naming that process.
//
// The directory holds conversations and token hashes: Acquire creates it
// 0700, and makes an existing one that is looser (an older version made
// it 0755, its files 0644) 0700, and its files 0600, saying so in
// Lock.Tightened.
func Acquire(dir string, owner Owner) (*Lock, error) {
	tightened, err := tighten(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !held {
		var o Owner
		if b, err := os.ReadFile(path); err == nil {
			_ = json.Unmarshal(b, &o) // the record's padding is white space
		}
		f.Close()
		return nil, &InUseError{Dir: dir, Owner: o}
	}
	l := &Lock{f: f, Tightened: tightened}
	if err := l.Record(owner); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// tighten creates dir 0700, or takes the group's and others' permissions
// off an existing dir and off the files directly in it, and returns what
// it changed. Subdirectories are left as they are: the embedded NATS
// server makes its own 0700.
func tighten(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var changed []string
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, st.Mode().Perm()&^0o077); err != nil {
			return nil, fmt.Errorf("datadir: make %s private: %w", dir, err)
		}
		changed = append(changed, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		if info.Mode().Perm()&0o077 == 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Chmod(path, info.Mode().Perm()&^0o077); err != nil {
			return nil, fmt.Errorf("datadir: make %s private: %w", path, err)
		}
		changed = append(changed, path)
	}
	return changed, nil
}

// CreatePrivate creates the file at path empty and 0600 if it does not
// exist, and its directory 0700 if that does not: SQLite would create a
// database 0644 under the usual umask, and creates its -wal and -shm
// files with the database's mode.
func CreatePrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Record replaces what the lock file says of its owner (once its NATS
// server listens, say).
func (l *Lock) Record(owner Owner) error {
	b, err := json.Marshal(owner)
	if err != nil {
		return err
	}
	if len(b) >= recordSize {
		return fmt.Errorf("datadir: the owner's record is %d bytes, more than %d", len(b), recordSize-1)
	}
	rec := bytes.Repeat([]byte{' '}, recordSize)
	copy(rec, b)
	rec[recordSize-1] = '\n'
	if _, err := l.f.WriteAt(rec, 0); err != nil {
		return err
	}
	return l.f.Truncate(recordSize)
}

// Release gives the lock up. The file stays: removing it would let a
// process that opened it before the removal lock a file no one else sees.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = l.f.Close() // closing the descriptor releases its lock
	l.f = nil
}

// IsInUse reports whether err is Acquire's error for a lock held by
// another process, and returns it.
func IsInUse(err error) (*InUseError, bool) {
	var e *InUseError
	ok := errors.As(err, &e)
	return e, ok
}
