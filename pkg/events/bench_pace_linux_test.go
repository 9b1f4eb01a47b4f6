package events_test

import (
	"runtime"
	"syscall"
	"time"
)

// pacer spaces a benchmark's publishes on a fixed schedule (open loop: a
// late publisher catches up rather than shifting the schedule).
//
// It sleeps with nanosleep(2) on a locked thread, not time.Sleep: the Go
// runtime rounds a sleep under a millisecond up to its 1ms netpoll timeout
// when the process is otherwise idle, which at 5,000 events/s turns the
// steady rate into bursts of about five events every millisecond, and the
// queueing inside a burst then dominates every system's p99.
type pacer struct {
	pace  time.Duration
	begin time.Time
}

func newPacer(pace time.Duration) *pacer {
	if pace > 0 {
		runtime.LockOSThread()
	}
	return &pacer{pace: pace, begin: time.Now()}
}

// wait blocks until the i-th publish is due and returns the time.
func (p *pacer) wait(i int) time.Time {
	if p.pace > 0 {
		if d := time.Until(p.begin.Add(time.Duration(i) * p.pace)); d > 0 {
			ts := syscall.NsecToTimespec(int64(d))
			_ = syscall.Nanosleep(&ts, nil)
		}
	}
	return time.Now()
}

// cpuTime is the CPU time (user and system) the process has used so far:
// the embedded server's, the client's and the layer's, since all run in the
// test binary.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (p *pacer) stop() {
	if p.pace > 0 {
		runtime.UnlockOSThread()
	}
}
