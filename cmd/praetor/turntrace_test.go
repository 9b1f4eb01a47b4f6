package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/praetorhq/praetor/internal/store/sqlite"
)

// turnGoal is the latency goal of the turn path (issue 3): p99 under it at
// 500 turns/s, that is at most 1% of the turns slower.
const turnGoal = 10 * time.Millisecond

// traceAnchor is the category of the trace log event that ties the trace's
// clock to the wall clock the turns are timed with.
const traceAnchor = "praetor-bench-anchor"

// turnTrace records an execution trace of the timed turns
// (PRAETOR_BENCH_TRACE=1), to tell what the slow turns waited on: a
// collector's mark phase, or the SQLite checkpointer holding the writer to
// start its log over (sqlite.RestartRegion).
type turnTrace struct{ buf bytes.Buffer }

// startTurnTrace starts the trace when PRAETOR_BENCH_TRACE=1, else returns
// nil.
func startTurnTrace(b *testing.B) *turnTrace {
	if os.Getenv("PRAETOR_BENCH_TRACE") != "1" {
		return nil
	}
	t := &turnTrace{}
	if err := trace.Start(&t.buf); err != nil {
		b.Fatalf("PRAETOR_BENCH_TRACE: %v (is -test.trace set too?)", err)
	}
	trace.Log(context.Background(), traceAnchor, strconv.FormatInt(time.Now().UnixNano(), 10))
	return t
}

// window is a span of wall-clock time.
type window struct{ from, to time.Time }

func (w window) overlaps(from, to time.Time) bool { return w.from.Before(to) && from.Before(w.to) }

// report stops the trace and reports which share of the slow turns (over
// turnGoal) overlapped a mark phase or a log restart, against the share of
// all turns: a cause shows as a far larger share of the slow ones.
func (t *turnTrace) report(b *testing.B, sent, arrived map[string]time.Time) {
	trace.Stop()
	windows, err := traceWindows(&t.buf)
	if err != nil {
		b.Fatalf("PRAETOR_BENCH_TRACE: reading the trace: %v", err)
	}
	kinds := []string{markPhase, sqlite.RestartRegion, sqlite.CheckpointRegion}
	var all, slow, slowNone int
	allIn, slowIn := map[string]int{}, map[string]int{}
	for id, due := range sent {
		done, ok := arrived[id]
		if !ok {
			continue
		}
		all++
		late := done.Sub(due) > turnGoal
		slow += btoi(late)
		none := true
		for _, k := range kinds {
			if overlapsAny(windows[k], due, done) {
				allIn[k]++
				slowIn[k] += btoi(late)
				none = false
			}
		}
		slowNone += btoi(late && none)
	}
	pct := func(n, of int) float64 {
		if of == 0 {
			return 0
		}
		return 100 * float64(n) / float64(of)
	}
	var parts []string
	for _, k := range kinds {
		var d time.Duration
		for _, w := range windows[k] {
			d += w.to.Sub(w.from)
		}
		parts = append(parts, fmt.Sprintf("%s: %d (%s), over %.0f%% of the slow turns and %.0f%% of all",
			k, len(windows[k]), d.Round(time.Millisecond), pct(slowIn[k], slow), pct(allIn[k], all)))
	}
	b.Logf("trace: %d of %d turns over %s, %.0f%% of them during none of these: %s", slow, all, turnGoal,
		pct(slowNone, slow), strings.Join(parts, "; "))
	b.ReportMetric(pct(slowIn[markPhase], slow), "slow-in-gc-%")
	b.ReportMetric(pct(slowIn[sqlite.RestartRegion], slow), "slow-in-restart-%")
}

func overlapsAny(ws []window, from, to time.Time) bool {
	for _, w := range ws {
		if w.overlaps(from, to) {
			return true
		}
	}
	return false
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// markPhase names the collector's mark phases among the windows of
// traceWindows.
const markPhase = "GC mark phase"

// traceWindows reads an execution trace and returns, in wall-clock time,
// the collector's mark phases (markPhase) and the SQLite checkpointer's
// regions (sqlite.CheckpointRegion, sqlite.RestartRegion) in it, by name.
func traceWindows(r io.Reader) (map[string][]window, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return nil, err
	}
	var (
		anchorAt   xtrace.Time
		anchorWall int64
		last       xtrace.Time
		markFrom   xtrace.Time = -1
		spans                  = map[string][][2]xtrace.Time{}
		open                   = map[xtrace.GoID]xtrace.Time{} // regions begun, by goroutine (they do not nest)
	)
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		last = ev.Time()
		switch ev.Kind() {
		case xtrace.EventLog:
			if l := ev.Log(); l.Category == traceAnchor {
				anchorAt = ev.Time()
				if anchorWall, err = strconv.ParseInt(l.Message, 10, 64); err != nil {
					return nil, err
				}
			}
		case xtrace.EventRangeBegin, xtrace.EventRangeActive:
			if strings.HasPrefix(ev.Range().Name, "GC concurrent mark") {
				markFrom = ev.Time()
			}
		case xtrace.EventRangeEnd:
			if strings.HasPrefix(ev.Range().Name, "GC concurrent mark") && markFrom >= 0 {
				spans[markPhase] = append(spans[markPhase], [2]xtrace.Time{markFrom, ev.Time()})
				markFrom = -1
			}
		case xtrace.EventRegionBegin:
			if checkpointerRegion(ev.Region().Type) {
				open[ev.Goroutine()] = ev.Time()
			}
		case xtrace.EventRegionEnd:
			if t := ev.Region().Type; checkpointerRegion(t) {
				if from, ok := open[ev.Goroutine()]; ok {
					spans[t] = append(spans[t], [2]xtrace.Time{from, ev.Time()})
					delete(open, ev.Goroutine())
				}
			}
		}
	}
	if anchorWall == 0 {
		return nil, errors.New("no anchor event")
	}
	if markFrom >= 0 { // still marking when the trace stopped
		spans[markPhase] = append(spans[markPhase], [2]xtrace.Time{markFrom, last})
	}
	out := map[string][]window{}
	for name, ss := range spans {
		for _, s := range ss {
			out[name] = append(out[name], window{time.Unix(0, anchorWall+int64(s[0]-anchorAt)), time.Unix(0, anchorWall+int64(s[1]-anchorAt))})
		}
	}
	return out, nil
}

func checkpointerRegion(name string) bool {
	return name == sqlite.CheckpointRegion || name == sqlite.RestartRegion
}

// TestTraceWindows checks the reading of an execution trace: a collection
// and a checkpointer region made while tracing come back as windows inside
// the wall-clock span of the trace.
func TestTraceWindows(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("tracing is on already: %v", err)
	}
	from := time.Now()
	trace.Log(context.Background(), traceAnchor, strconv.FormatInt(from.UnixNano(), 10))
	runtime.GC()
	region := trace.StartRegion(context.Background(), sqlite.RestartRegion)
	time.Sleep(2 * time.Millisecond)
	region.End()
	to := time.Now()
	trace.Stop()

	windows, err := traceWindows(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{markPhase, sqlite.RestartRegion} {
		ws := windows[k]
		if len(ws) == 0 {
			t.Fatalf("no %s window in %v", k, windows)
		}
		// A millisecond of slack: the anchor's wall clock is read just
		// before its event.
		for _, w := range ws {
			if w.from.Before(from.Add(-time.Millisecond)) || w.to.After(to.Add(time.Millisecond)) || w.to.Before(w.from) {
				t.Errorf("%s window %v–%v outside the trace's %v–%v", k, w.from, w.to, from, to)
			}
		}
	}
	if w := windows[sqlite.RestartRegion][0]; w.to.Sub(w.from) < 2*time.Millisecond {
		t.Errorf("restart window %v long, want at least the 2ms slept in it", w.to.Sub(w.from))
	}
	// runtime.GC returns once the cycle has marked: its mark phase ends
	// before the region begins.
	if m, r := windows[markPhase][0], windows[sqlite.RestartRegion][0]; m.to.After(r.from) {
		t.Errorf("mark phase ends at %v, after the restart region began at %v", m.to, r.from)
	}
	if len(windows[sqlite.CheckpointRegion]) != 0 {
		t.Errorf("checkpoint windows %v, want none", windows[sqlite.CheckpointRegion])
	}
}
