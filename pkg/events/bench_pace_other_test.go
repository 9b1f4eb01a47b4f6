//go:build !linux

package events_test

import "time"

// pacer spaces a benchmark's publishes on a fixed schedule. Outside Linux it
// uses time.Sleep, which the runtime may round up to a millisecond: the
// latency figures are then of bursts, not of a steady rate.
type pacer struct {
	pace  time.Duration
	begin time.Time
}

func newPacer(pace time.Duration) *pacer { return &pacer{pace: pace, begin: time.Now()} }

func (p *pacer) wait(i int) time.Time {
	if p.pace > 0 {
		time.Sleep(time.Until(p.begin.Add(time.Duration(i) * p.pace)))
	}
	return time.Now()
}

func (p *pacer) stop() {}

// cpuTime is not measured outside Linux; the cpu-µs/event metric is then
// left out.
func cpuTime() time.Duration { return 0 }
