package command

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Pruned counts what PruneAttempts did.
type Pruned struct {
	// Removed is how many attempt directories were removed.
	Removed int
	// Running is how many were kept because their command still runs.
	Running int
	// Recent is how many were kept because they ended (or last changed)
	// within the retention.
	Recent int
}

// PruneAttempts removes the durable attempts under dir (Config.AttemptsDir)
// that ended more than keep before now, and the run and task directories
// they leave empty. A long-running worker calls it from time to time:
// nothing else removes the attempts of runs it serves, since only the
// orchestrator knows when a run is over (RemoveRun is for a process that
// does).
//
// An attempt has ended when its supervisor wrote its exit status (the
// status file's time is the end), or when no process of it runs any more
// and none of its files changed within keep (it was killed). One still
// running is kept whatever its age. keep must outlast the longest time a
// stopped orchestrator may take to re-dispatch an attempt and collect its
// result: an attempt removed before that runs again.
func PruneAttempts(dir string, keep time.Duration, now time.Time) (Pruned, error) {
	var p Pruned
	if keep <= 0 {
		return p, fmt.Errorf("command: prune attempts: keep %s must be positive", keep)
	}
	cutoff := now.Add(-keep)
	// The run and task directories, with their times before any attempt in
	// them is removed (removing one touches its parent): an old one left
	// empty goes too; one that just got a new attempt does not.
	type parent struct {
		path string
		old  bool
	}
	var parents []parent
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			errs = append(errs, err)
			return nil
		}
		if !d.IsDir() || path == dir {
			return nil
		}
		last, ended, ok := attemptTimes(path)
		if !ok {
			info, err := d.Info()
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			parents = append(parents, parent{path, info.ModTime().Before(cutoff)})
			return nil
		}
		switch {
		case !ended && groupAlive(path):
			p.Running++
		case !last.Before(cutoff):
			p.Recent++
		default:
			if err := os.RemoveAll(path); err != nil {
				errs = append(errs, fmt.Errorf("command: prune attempt: %w", err))
			} else {
				p.Removed++
			}
		}
		return filepath.SkipDir
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil // no attempt was ever made
		}
		return p, fmt.Errorf("command: prune attempts: %w", err)
	}
	for _, d := range slices.Backward(parents) {
		if !d.old {
			continue
		}
		// Fails, as it should, when the directory is not empty.
		if err := os.Remove(d.path); err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) &&
			!errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("command: prune attempts: %w", err))
		}
	}
	return p, errors.Join(errs...)
}

// attemptFiles are the files an attempt directory holds beside its work
// directory (see durable.go); run and task directories hold directories
// only.
var attemptFiles = []string{"status", "pid", "context.md", "stdout", "stderr"}

// attemptTimes reports whether dir is an attempt's directory and, if so,
// the last time one of its files changed, and whether it ended with an exit
// status (last is then the status's time).
func attemptTimes(dir string) (last time.Time, ended, ok bool) {
	for _, name := range attemptFiles {
		info, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if name == "status" {
			return info.ModTime(), true, true
		}
		ok = true
		if info.ModTime().After(last) {
			last = info.ModTime()
		}
	}
	return last, false, ok
}

// groupAlive reports whether the recorded process of an attempt, or any
// process of its group, still runs.
func groupAlive(dir string) bool {
	pid, ok := readPID(filepath.Join(dir, "pid"))
	if !ok {
		return false
	}
	return running(pid) || syscall.Kill(-pid.pid, 0) == nil
}
