// Package gctune sets the garbage collector's defaults of a Praetor
// process: GOGC 400 where Go's is 100, and a soft memory limit of 90% of
// the container's (cgroup) memory limit. Explicit GOGC and GOMEMLIMIT
// variables always win.
//
// Why: Praetor's services allocate a little for every event on small live
// heaps, so at Go's defaults the collector runs many times a second, and on
// a small machine its mark phase takes a core from the handlers: most of a
// handler's p99 latency is queueing behind it. GOGC 400 runs it a quarter
// as often for a heap that may grow to five times the live one; the memory
// limit makes the collector work harder instead of letting that heap pass
// the container's limit.
//
// It also runs one processor (GOMAXPROCS) more than the runtime's default,
// the cores the process may use: a goroutine in a file system call (SQLite's
// log writes and syncs, the NATS server's block writes) keeps its processor
// until the runtime's monitor takes it back, up to 10 ms later when the
// monitor has been idle, and on 2 cores that leaves one core to everything
// else meanwhile. At 500 turns/s on 2 cores, three processors had fewer turns
// over 10 ms than two in 33 of 44 alternating pairs of the turn-path
// benchmark. An explicit GOMAXPROCS wins. Setting it ends the runtime's own
// updates of GOMAXPROCS when the container's CPU limit changes; the process
// keeps the count it started with.
package gctune

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// DefaultPercent is GOGC when the environment sets none.
const DefaultPercent = 400

// ExtraProcs is how many processors a process runs beyond the runtime's
// default.
const ExtraProcs = 1

// defaultProcs is GOMAXPROCS as the runtime set it at start (from the
// environment, else from the CPUs and the container's CPU limit), before
// Apply changes it: applying twice adds ExtraProcs once.
var defaultProcs = runtime.GOMAXPROCS(0)

// MemoryRatio is the part of the container's memory limit given to the Go
// runtime as GOMEMLIMIT; the rest is for memory it does not manage, SQLite's
// page cache among it (modernc.org/sqlite allocates outside the Go heap).
const MemoryRatio = 0.9

// Settings are the collector's settings of a process, and where each came
// from.
type Settings struct {
	// Percent is GOGC; -1 when the collector is off.
	Percent int
	// PercentFrom is "GOGC" when the environment set it, else "default".
	PercentFrom string
	// MemoryLimit is GOMEMLIMIT in bytes; math.MaxInt64 for none.
	MemoryLimit int64
	// MemoryLimitFrom is "GOMEMLIMIT", "cgroup" (MemoryRatio of the
	// container's limit) or "none".
	MemoryLimitFrom string
	// Procs is GOMAXPROCS.
	Procs int
	// ProcsFrom is "GOMAXPROCS" when the environment set it, else
	// "default" (the runtime's default and ExtraProcs).
	ProcsFrom string
}

// Decide returns the settings for an environment, a container memory limit
// (0 for none) and the runtime's default GOMAXPROCS: pure, so that every
// rule is tested without changing the process.
func Decide(getenv func(string) string, containerLimit uint64, runtimeProcs int) Settings {
	s := Settings{Percent: DefaultPercent, PercentFrom: "default", MemoryLimit: math.MaxInt64, MemoryLimitFrom: "none",
		Procs: runtimeProcs + ExtraProcs, ProcsFrom: "default"}
	if getenv("GOMAXPROCS") != "" {
		// The runtime has read it already.
		s.Procs, s.ProcsFrom = runtimeProcs, "GOMAXPROCS"
	}
	if v := getenv("GOGC"); v != "" {
		// The runtime has read it already; report what it took.
		s.PercentFrom = "GOGC"
		s.Percent = 100
		if v == "off" {
			s.Percent = -1
		} else if n, err := strconv.Atoi(v); err == nil {
			s.Percent = n
		}
	}
	switch {
	case getenv("GOMEMLIMIT") != "":
		s.MemoryLimitFrom = "GOMEMLIMIT"
		s.MemoryLimit = -1 // the runtime's; Apply reads it
	case containerLimit > 0:
		s.MemoryLimitFrom = "cgroup"
		s.MemoryLimit = int64(float64(containerLimit) * MemoryRatio)
	}
	return s
}

// Apply decides the settings for the process's environment and container
// and sets them. A container limit that cannot be read is no limit.
func Apply(getenv func(string) string) (Settings, error) {
	limit, err := memlimit.FromCgroup()
	switch {
	case err == nil:
	case errors.Is(err, memlimit.ErrNoLimit), errors.Is(err, memlimit.ErrNoCgroup), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		limit, err = 0, nil
	default:
		limit, err = 0, fmt.Errorf("gctune: read the container's memory limit (set GOMEMLIMIT to choose one): %w", err)
	}
	s := Decide(getenv, limit, defaultProcs)
	if s.PercentFrom == "default" {
		debug.SetGCPercent(s.Percent)
	}
	if s.ProcsFrom == "default" {
		runtime.GOMAXPROCS(s.Procs)
	}
	switch s.MemoryLimitFrom {
	case "cgroup":
		debug.SetMemoryLimit(s.MemoryLimit)
	case "GOMEMLIMIT":
		s.MemoryLimit = debug.SetMemoryLimit(-1) // a negative limit reads it
	}
	return s, err
}

// LogValue is the settings as log attributes:
// gogc=400 gogc_from=default memory_limit=921MiB memory_limit_from=cgroup
// procs=3 procs_from=default.
func (s Settings) LogValue() slog.Value {
	p := strconv.Itoa(s.Percent)
	if s.Percent < 0 {
		p = "off"
	}
	m := "none"
	if s.MemoryLimit != math.MaxInt64 {
		m = strconv.FormatInt(s.MemoryLimit>>20, 10) + "MiB"
	}
	return slog.GroupValue(slog.String("gogc", p), slog.String("gogc_from", s.PercentFrom),
		slog.String("memory_limit", m), slog.String("memory_limit_from", s.MemoryLimitFrom),
		slog.Int("procs", s.Procs), slog.String("procs_from", s.ProcsFrom))
}
