package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/trace"
	"slices"
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
// clock to the clock the turns are timed with.
const traceAnchor = "praetor-bench-anchor"

// turnTrace records an execution trace of the timed turns
// (PRAETOR_BENCH_TRACE=1), to tell what the slow turns waited on: a
// collector's mark phase, or the SQLite checkpointer (sqlite.RestartRegion,
// sqlite.CheckpointRegion). The trace goes to a file (counted in
// disk-kB/turn), not to the heap the collector paces itself by.
type turnTrace struct {
	file   *os.File
	anchor time.Time // when the anchor event was logged
}

// startTurnTrace starts the trace when PRAETOR_BENCH_TRACE=1, else returns
// nil.
func startTurnTrace(b *testing.B) *turnTrace {
	if os.Getenv("PRAETOR_BENCH_TRACE") != "1" {
		return nil
	}
	f, err := os.CreateTemp(b.TempDir(), "turns-*.trace")
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		b.Fatalf("PRAETOR_BENCH_TRACE: %v (is -test.trace set too?)", err)
	}
	b.Cleanup(trace.Stop) // should the benchmark fail before report
	t := &turnTrace{file: f, anchor: time.Now()}
	trace.Log(context.Background(), traceAnchor, "")
	return t
}

// window is a span of time.
type window struct{ from, to time.Time }

func (w window) overlaps(from, to time.Time) bool { return w.from.Before(to) && from.Before(w.to) }

// total is how long the windows last, all together.
func total(ws []window) time.Duration {
	var d time.Duration
	for _, w := range ws {
		d += w.to.Sub(w.from)
	}
	return d
}

// report stops the trace and reports which share of the slow turns (over
// turnGoal) overlapped a mark phase or a log restart, against the share of
// all turns: a cause shows as a far larger share of the slow ones.
func (t *turnTrace) report(b *testing.B, answered []timing) {
	trace.Stop()
	if _, err := t.file.Seek(0, io.SeekStart); err != nil {
		b.Fatal(err)
	}
	tr, err := traceWindows(bufio.NewReader(t.file), t.anchor)
	t.file.Close()
	if err != nil {
		b.Fatalf("PRAETOR_BENCH_TRACE: reading the trace: %v", err)
	}
	windows, markWork := tr.windows, tr.markWork
	// The hand-offs of a turn: goroutines made runnable by another (each
	// may wake a sleeping thread) and goroutines started, over the timed
	// turns, the process's background included.
	b.ReportMetric(float64(tr.wakeups)/float64(b.N), "wakeups/turn")
	b.ReportMetric(float64(tr.created)/float64(b.N), "goroutines/turn")
	kinds := []string{markPhase, sqlite.RestartRegion, sqlite.CheckpointRegion}
	var all, slow, slowNone int
	allIn, slowIn := map[string]int{}, map[string]int{}
	for _, tm := range answered {
		due, done := tm.due, tm.done
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
		parts = append(parts, fmt.Sprintf("%s: %d (%s), over %.0f%% of the slow turns and %.0f%% of all",
			k, len(windows[k]), total(windows[k]).Round(time.Millisecond), pct(slowIn[k], slow), pct(allIn[k], all)))
	}
	b.Logf("trace: %d of %d turns over %s, %.0f%% of them during none of these: %s", slow, all, turnGoal,
		pct(slowNone, slow), strings.Join(parts, "; "))
	// The collector's share of the machine while it marks: its workers
	// aim at a quarter of the processors, plus those idle, and with more
	// processors than cores (see gctune) the operating system shares the
	// cores between them and the handlers.
	if marking := total(windows[markPhase]); marking > 0 {
		cores := markWork.Seconds() / marking.Seconds()
		b.Logf("trace: the collector's mark workers ran %s in %s of mark phases: %.2f processors of %d on average",
			markWork.Round(time.Millisecond), marking.Round(time.Millisecond), cores, runtime.GOMAXPROCS(0))
		b.ReportMetric(cores, "gc-procs-in-mark")
	}
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

// traceWindows reads an execution trace and returns the collector's mark
// phases (markPhase) and the SQLite checkpointer's regions
// (sqlite.CheckpointRegion, sqlite.RestartRegion) in it, by name, placed in
// time by the anchor event (traceAnchor), logged at anchor; how long the
// collector's mark workers (runtime.gcBgMarkWorker: dedicated, fractional
// and idle) ran during the mark phases, all together; and how many
// goroutines were woken and started (see traced).
func traceWindows(r io.Reader, anchor time.Time) (traced, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return traced{}, err
	}
	var out traced
	var (
		anchorAt xtrace.Time
		anchored bool
		last     xtrace.Time
		markFrom xtrace.Time = -1
		spans                = map[string][][2]xtrace.Time{}
		open                 = map[xtrace.GoID]region{} // regions begun, by goroutine (they do not nest)
		running              = map[xtrace.GoID]xtrace.Time{}
	)
	var workers [][2]xtrace.Time // the mark workers' spells of running
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return traced{}, err
		}
		last = ev.Time()
		switch ev.Kind() {
		case xtrace.EventStateTransition:
			// A goroutine is known for a mark worker by its stack when it
			// stops running (a worker parks or is preempted in
			// gcBgMarkWorker); it began running at its last transition
			// to running.
			st := ev.StateTransition()
			if st.Resource.Kind != xtrace.ResourceGoroutine {
				break
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			switch {
			case from == xtrace.GoWaiting && to == xtrace.GoRunnable:
				out.wakeups++
			case from == xtrace.GoNotExist && to == xtrace.GoRunnable:
				out.created++
			}
			if from == xtrace.GoRunning {
				if since, ok := running[g]; ok && onStack(st.Stack, "runtime.gcBgMarkWorker") {
					workers = append(workers, [2]xtrace.Time{since, ev.Time()})
				}
				delete(running, g)
			}
			if to == xtrace.GoRunning {
				running[g] = ev.Time()
			}
		case xtrace.EventLog:
			if ev.Log().Category == traceAnchor {
				anchorAt, anchored = ev.Time(), true
			}
		case xtrace.EventRangeBegin, xtrace.EventRangeActive:
			// A mark phase still running is announced again at every
			// generation of the trace (about each second): it began at the
			// first.
			if strings.HasPrefix(ev.Range().Name, "GC concurrent mark") && (ev.Kind() == xtrace.EventRangeBegin || markFrom < 0) {
				markFrom = ev.Time()
			}
		case xtrace.EventRangeEnd:
			if strings.HasPrefix(ev.Range().Name, "GC concurrent mark") && markFrom >= 0 {
				spans[markPhase] = append(spans[markPhase], [2]xtrace.Time{markFrom, ev.Time()})
				markFrom = -1
			}
		case xtrace.EventRegionBegin:
			if t := ev.Region().Type; checkpointerRegion(t) {
				open[ev.Goroutine()] = region{t, ev.Time()}
			}
		case xtrace.EventRegionEnd:
			if r, ok := open[ev.Goroutine()]; ok && r.name == ev.Region().Type {
				spans[r.name] = append(spans[r.name], [2]xtrace.Time{r.from, ev.Time()})
				delete(open, ev.Goroutine())
			}
		}
	}
	if !anchored {
		return traced{}, errors.New("no anchor event")
	}
	// Still going when the trace stopped: up to its end.
	if markFrom >= 0 {
		spans[markPhase] = append(spans[markPhase], [2]xtrace.Time{markFrom, last})
	}
	for _, w := range workers {
		for _, m := range spans[markPhase] {
			if from, to := max(w[0], m[0]), min(w[1], m[1]); from < to {
				out.markWork += time.Duration(to - from)
			}
		}
	}
	for _, r := range open {
		spans[r.name] = append(spans[r.name], [2]xtrace.Time{r.from, last})
	}
	out.windows = map[string][]window{}
	for name, ss := range spans {
		for _, s := range ss {
			out.windows[name] = append(out.windows[name], window{anchor.Add(time.Duration(s[0] - anchorAt)), anchor.Add(time.Duration(s[1] - anchorAt))})
		}
	}
	return out, nil
}

// traced is what traceWindows reads from a trace.
type traced struct {
	// windows are the mark phases and the checkpointer's regions, by kind.
	windows map[string][]window
	// markWork is the mark workers' running time within the mark phases.
	markWork time.Duration
	// wakeups counts goroutines made runnable after waiting (on a channel,
	// a lock, the network...), created the goroutines started.
	wakeups, created int
}

// onStack reports whether the function fn is on the stack.
func onStack(stack xtrace.Stack, fn string) bool {
	for f := range stack.Frames() {
		if f.Func == fn {
			return true
		}
	}
	return false
}

// region is a trace region begun: its name and when.
type region struct {
	name string
	from xtrace.Time
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
	trace.Log(context.Background(), traceAnchor, "")
	runtime.GC()
	region := trace.StartRegion(context.Background(), sqlite.RestartRegion)
	time.Sleep(2 * time.Millisecond)
	region.End()
	// A goroutine started, and 100 round trips with it: each side waits
	// for the other's message, so each round trip is two wake-ups.
	ping, pong := make(chan int), make(chan int)
	go func() {
		for i := range ping {
			pong <- i
		}
		close(pong)
	}()
	for i := range 100 {
		ping <- i
		<-pong
	}
	close(ping)
	<-pong
	to := time.Now()
	trace.Stop()

	tr, err := traceWindows(&buf, from)
	if err != nil {
		t.Fatal(err)
	}
	windows, markWork := tr.windows, tr.markWork
	// Little else runs meanwhile: the round trips are most of the
	// wake-ups (goroutines preempted are not wake-ups: thousands here).
	if tr.created < 1 || tr.wakeups < 200 || tr.wakeups > 1000 {
		t.Errorf("%d goroutines started and %d woken, want at least 1, and 200 to 1000", tr.created, tr.wakeups)
	}
	// runtime.GC marks with the mark workers, no longer in all than the
	// processors for the mark phases' length.
	marking := total(windows[markPhase])
	if markWork <= 0 || markWork > time.Duration(runtime.GOMAXPROCS(0))*marking {
		t.Errorf("mark workers ran %v in %v of mark phases on %d processors: want more than none, at most all",
			markWork, marking, runtime.GOMAXPROCS(0))
	}
	// A millisecond of slack: the anchor's clock is read just before its
	// event.
	inside := func(w window) bool {
		return !w.from.Before(from.Add(-time.Millisecond)) && !w.to.After(to.Add(time.Millisecond)) && !w.to.Before(w.from)
	}
	rs := windows[sqlite.RestartRegion]
	if len(rs) != 1 || !inside(rs[0]) {
		t.Fatalf("restart windows %v, want one inside the trace's %v–%v", rs, from, to)
	}
	if r := rs[0]; r.to.Sub(r.from) < 2*time.Millisecond {
		t.Errorf("restart window %v long, want at least the 2ms slept in it", r.to.Sub(r.from))
	}
	// runtime.GC returns once its cycle has marked: that mark phase lies in
	// the trace and ends before the region begins. (Other tests of the
	// package run meanwhile: a cycle of theirs may have begun before the
	// trace, or end after it.)
	if !slices.ContainsFunc(windows[markPhase], func(m window) bool { return inside(m) && !m.to.After(rs[0].from) }) {
		t.Errorf("mark phases %v: none inside the trace's %v–%v ending before the restart region began at %v",
			windows[markPhase], from, to, rs[0].from)
	}
	if len(windows[sqlite.CheckpointRegion]) != 0 {
		t.Errorf("checkpoint windows %v, want none", windows[sqlite.CheckpointRegion])
	}
}
