package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/wiring"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/gctune"
	"github.com/praetorhq/praetor/internal/llm/provider"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// BenchmarkTurnPath measures the whole turn path: the gateway records a turn
// and publishes turn.received (outbox), the extractor extracts it, the runner
// answers it, and turn.responded reaches a subscriber — offline provider,
// JetStream file storage, every store write. Latency runs from the moment a
// turn was due to be posted to the moment its turn.responded event reaches a
// NATS subscriber, so it includes the gateway's HTTP handling and
// transaction as well as the publish → extractor → runner → reply path.
//
//	go test -run '^$' -bench TurnPath -benchtime 3000x ./cmd/praetor/
//
// Beside the node on SQLite (dev) and on PostgreSQL, raw/MODE runs the
// turn path's messaging on JetStream alone in the same run (see
// startRawTurnPath): the same messages of the same sizes, streams and
// consumers, with nothing between them — the floor NATS puts under a turn
// on this machine at this hour, to read the other figures against.
//
// The load is open loop over 250 sessions (or PRAETOR_BENCH_SESSIONS), after
// one warm-up turn per session: pacedN posts N turns/s on a fixed schedule,
// each from its own goroutine, and reports p50/p99 measured from the
// scheduled time (a client that falls behind adds to the latency rather than
// hiding it); max posts as fast as 64 clients can (the gateway answers 202
// at once, so the backlog builds) and its turns/s is the throughput at
// saturation — its latencies are queueing time and say little. Every mode
// also reports, over the timed turns, the process CPU and heap allocations
// per turn (count and kB) and the collector's cycles a second and CPU of
// marking per cycle (mark-cpu-ms/gc: it grows with the live heap's pointers)
// and the live heap at the last cycle (live-MB) — all services, the NATS
// server and this client; not PostgreSQL's processes — the figures to watch
// on a shared machine where wall-clock ones are noisy, and the bytes it
// wrote to disk files per turn (SQLite's and NATS's: disk-kB/turn, Linux
// only). The postgres variants need DATABASE_URL.
//
// A run of 3000 turns lasts seconds, before the process reaches its steady
// state: the NATS server keeps each stream's per-subject state and its
// duplicate window (a minute of message ids in dev) in memory, and the collector
// marks it all at every cycle. For steady-state figures run longer, over
// more sessions (PRAETOR_BENCH_SESSIONS, so that conversations stay at a
// realistic length), and see how the tail moves as the run goes on
// (PRAETOR_BENCH_WINDOW logs the latencies of each window of that length):
//
//	PRAETOR_BENCH_SESSIONS=5000 PRAETOR_BENCH_WINDOW=10s go test -run '^$' -bench 'TurnPath/sqlite/paced500' -benchtime 60000x ./cmd/praetor/
//
// over-10ms-% is the share of turns slower than the goal (p99 ≤ 10 ms
// means at most 1%). PRAETOR_BENCH_TRACE=1 records an execution trace of
// the timed turns and says what the slow ones were in flight with: the
// collector's mark phases and the SQLite checkpointer's copies and log
// restarts, each against the share of all turns that overlapped them
// (slow-in-gc-%, slow-in-restart-%), and how many processors the
// collector's mark workers took while it marked (gc-procs-in-mark; the
// trace costs some CPU itself).
//
// A run whose replies do not all come within two minutes fails naming the
// unanswered turns, sorted by what the reply stream says of them (no reply:
// the path did not answer; a reply the benchmark's subscription never saw;
// a reply that came after the wait); PRAETOR_BENCH_LOG=FILE keeps the
// node's log, to read what became of them.
func BenchmarkTurnPath(b *testing.B) {
	for _, st := range []string{"raw", "sqlite", "postgres"} {
		for _, mode := range []string{"paced100", "paced300", "paced500", "max"} {
			b.Run(st+"/"+mode, func(b *testing.B) { benchTurnPath(b, st, mode) })
		}
	}
}

func benchTurnPath(b *testing.B, storeKind, mode string) {
	// The collector settings the praetor binary runs with (see tuneGC);
	// GOGC=100 measures Go's defaults. They are put back after the run: a
	// benchmark that leaves GOMAXPROCS changed has the testing package say
	// so between the runs of -count, and benchstat reads that line as a
	// configuration and splits the runs.
	procs, percent, limit := runtime.GOMAXPROCS(0), debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	b.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	gc, err := gctune.Apply(os.Getenv)
	if err != nil {
		b.Log(err)
	}
	// PRAETOR_BENCH_SESSIONS sets the number of sessions (default 250): a
	// run of N turns gives each session about N/sessions turns, and later
	// turns of a conversation carry more history.
	sessions := 250
	if v := os.Getenv("PRAETOR_BENCH_SESSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("PRAETOR_BENCH_SESSIONS=%q: want a positive number", v)
		}
		sessions = n
	}
	// The path under test: a node (its gateway's HTTP API, replies as
	// turn.responded events), or raw JetStream doing its messaging alone.
	metricsReg := prometheus.NewRegistry()
	var path turnPath
	if storeKind == "raw" {
		path = startRawTurnPath(b, sessions)
	} else {
		path = startNode(b, storeKind, mode, metricsReg, sessions)
	}
	natsAddr := strings.TrimPrefix(path.natsURL, "nats://")

	// Replies arrive on the subject the gateway also listens to. A core
	// subscription drops what it cannot keep up with: say so, rather than
	// wait for replies that were dropped.
	nc, err := nats.Connect("nats://"+natsAddr,
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { b.Errorf("replies subscription: %v", err) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.Errorf("replies connection lost: %v", err)
			}
		}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	// A reply may arrive before its POST returns the turn id: both times are
	// kept by turn id and paired at the end. answered counts the turns in
	// both, so that waiting for the last replies reads a number rather than
	// walking every turn sent (which took a tenth of the CPU of a run whose
	// backlog drained for seconds, and held mu against the replies).
	var (
		mu       sync.Mutex
		sent     = map[string]time.Time{}
		arrived  = map[string]time.Time{}
		answered int
	)
	sub, err := nc.Subscribe(path.replies, func(m *nats.Msg) {
		id := path.turnOf(m)
		if id == "" {
			return
		}
		now := time.Now()
		mu.Lock()
		if _, again := arrived[id]; !again { // a turn's first reply is its time
			arrived[id] = now
			if _, ok := sent[id]; ok {
				answered++
			}
		}
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	// PRAETOR_BENCH_STAGES=1 (and PRAETOR_BENCH_TURNS, see reportStages)
	// also times when each turn's turn.received and
	// turn.extracted reach a subscriber, by event id (the Nats-Msg-Id
	// header; no decoding), and reports the p50/p99 of each stage: gateway
	// (due to turn.received), extractor (to turn.extracted), runner (to
	// turn.responded). It adds the client's work to cpu-ms/turn.
	stages := os.Getenv("PRAETOR_BENCH_STAGES") == "1" && storeKind != "raw"
	staged := map[string]time.Time{} // event id -> arrival
	if stages {
		for _, spec := range []*contracts.Spec{contracts.TurnReceivedSpec, contracts.TurnExtractedSpec} {
			s, err := nc.Subscribe(spec.FilterSubject(), func(m *nats.Msg) {
				now := time.Now()
				mu.Lock()
				staged[m.Header.Get(nats.MsgIdHdr)] = now
				mu.Unlock()
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Unsubscribe() })
		}
	}

	// The server has the subscriptions before the first turn is sent.
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}

	// post sends turn i and records when it was due: the time the open-loop
	// schedule meant to send it, so a pacer or client that falls behind
	// counts against the latency instead of hiding it (no coordinated
	// omission).
	post1 := func(i int, due time.Time) {
		id, err := path.send(i)
		if err != nil {
			b.Error(err)
			return
		}
		mu.Lock()
		sent[id] = due
		if _, ok := arrived[id]; ok {
			answered++
		}
		mu.Unlock()
	}
	// waiting reports whether a turn sent has no reply yet.
	waiting := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return answered < len(sent)
	}
	// unanswered returns the sent turns without a reply.
	unanswered := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var ids []string
		for id := range sent {
			if _, ok := arrived[id]; !ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	// waitAnswered waits for the replies to every turn sent; those that do
	// not come in two minutes fail the run, sorted by what the reply stream
	// says of them.
	waitAnswered := func() {
		deadline := time.Now().Add(2 * time.Minute)
		for waiting() && time.Now().Before(deadline) && !b.Failed() {
			time.Sleep(5 * time.Millisecond)
		}
		if b.Failed() {
			b.FailNow() // a turn was not sent: it says why above
		}
		missing := unanswered()
		if len(missing) == 0 {
			return
		}
		stored, err := storedReplies(nc, path, missing)
		if err != nil {
			b.Logf("reading the stream's replies: %v (the stream may hold more of them)", err)
		}
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		b.Fatal(unansweredReport(n, missing, stored, unanswered()))
	}

	// Warm up: one turn per session, so the timed turns find loaded
	// tokenizers, warm connection pools and sessions past their first turn.
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() { post1(i, time.Now()) })
	}
	wg.Wait()
	waitAnswered()
	mu.Lock()
	clear(sent)
	clear(arrived)
	clear(staged)
	answered = 0
	mu.Unlock()

	// The figures cover the timed turns only: process CPU (every service,
	// the embedded NATS server and this client; not PostgreSQL's own
	// processes) and heap allocations.
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	mark0 := gcMarkCPU()
	cpu0 := processCPU(b)
	disk0, diskOK := diskWritten()
	tx0, commits0 := counter(metricsReg, "praetor_sqlite_transactions_total"), counter(metricsReg, "praetor_sqlite_commits_total")

	tr := startTurnTrace(b)
	b.ResetTimer()
	start := time.Now()
	switch {
	case strings.HasPrefix(mode, "paced"):
		rate, err := strconv.Atoi(strings.TrimPrefix(mode, "paced"))
		if err != nil || rate < 1 {
			b.Fatalf("mode %q: want pacedN with N turns/s", mode)
		}
		pace := time.Second / time.Duration(rate)
		for i := range b.N {
			due := start.Add(time.Duration(i) * pace)
			time.Sleep(time.Until(due))
			wg.Go(func() { post1(sessions+i, due) })
		}
	case mode == "max":
		next := atomic.Int64{}
		for range 64 {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
					post1(sessions+i, time.Now())
				}
			})
		}
	}
	wg.Wait()
	waitAnswered()
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	disk1, _ := diskWritten()
	tx1, commits1 := counter(metricsReg, "praetor_sqlite_transactions_total"), counter(metricsReg, "praetor_sqlite_commits_total")
	runtime.ReadMemStats(&ms1)
	mark := gcMarkCPU() - mark0
	// PRAETOR_BENCH_HEAP=FILE writes a heap profile of the running node
	// (-test.memprofile is written after it has stopped): what the
	// collector marks at every cycle. Its collection comes after the
	// figures above; with -count, the last round's profile is kept.
	if f := os.Getenv("PRAETOR_BENCH_HEAP"); f != "" {
		writeHeapProfile(b, f)
	}
	mu.Lock()
	defer mu.Unlock()
	last := start
	var (
		timings []timing
		lat     []time.Duration
	)
	for id, t0 := range sent {
		if t1, ok := arrived[id]; ok {
			timings = append(timings, timing{t0, t1})
			lat = append(lat, t1.Sub(t0))
			if t1.After(last) {
				last = t1
			}
		}
	}
	elapsed := last.Sub(start)
	if v := os.Getenv("PRAETOR_BENCH_WINDOW"); v != "" {
		logWindows(b, v, start, timings)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	over, _ := slices.BinarySearch(lat, turnGoal+1)
	b.ReportMetric(100*float64(len(lat)-over)/float64(len(lat)), "over-10ms-%")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/turn")
	if stages {
		reportStages(b, sent, arrived, staged)
	}
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N), "allocs/turn")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/1024/float64(b.N), "alloc-kB/turn")
	b.ReportMetric(float64(ms1.NumGC-ms0.NumGC)/elapsed.Seconds(), "gc/s")
	if cycles := ms1.NumGC - ms0.NumGC; cycles > 0 {
		b.ReportMetric(mark.Seconds()*1000/float64(cycles), "mark-cpu-ms/gc")
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	if metrics.Read(live); live[0].Value.Kind() == metrics.KindUint64 {
		b.ReportMetric(float64(live[0].Value.Uint64())/(1<<20), "live-MB")
	}
	if diskOK {
		b.ReportMetric(float64(disk1-disk0)/1024/float64(b.N), "disk-kB/turn")
	}
	b.ReportMetric(float64(gc.Percent), "gogc")
	b.ReportMetric(float64(gc.Procs), "procs")
	if commits1 > commits0 {
		// The SQLite store's group commit: transactions a commit.
		b.ReportMetric((tx1-tx0)/(commits1-commits0), "tx/commit")
	}
	if tr != nil {
		tr.report(b, timings)
	}
}

// turnPath is a turn path under test: the NATS server its replies reach,
// and how to send a turn and tell a reply's turn.
type turnPath struct {
	natsURL string
	// replies is the subject of the replies; turnOf returns a reply's turn
	// id, "" for another message.
	replies string
	turnOf  func(*nats.Msg) string
	// send sends turn i (of session i%sessions) and returns its id.
	send func(i int) (string, error)
}

// startNode starts a node with the gateway, the extractor and the runner on
// storeKind's store (SQLite in dev, or PostgreSQL), creates sessions
// sessions through its API, and returns it as a turnPath whose turns are
// posted to the API.
func startNode(b *testing.B, storeKind, mode string, metricsReg *prometheus.Registry, sessions int) turnPath {
	cfg := node.Config{HTTPAddr: "127.0.0.1:0", Available: wiring.Services(wiring.Options{}), DrainTimeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler), LLM: provider.Config{Provider: provider.Offline},
		Services: []string{"gateway", "extractor", "runner"}}
	cat, reg, err := wiring.LoadEngines(nil, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Engines, cfg.EngineRegistry = cat, reg
	cfg.Registry = metricsReg
	// PRAETOR_BENCH_LOG=FILE appends the node's log to FILE (JSON, from
	// info up), to read what happened to a turn the benchmark waited for
	// in vain.
	if name := os.Getenv("PRAETOR_BENCH_LOG"); name != "" {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatalf("PRAETOR_BENCH_LOG: %v", err)
		}
		b.Cleanup(func() { _ = f.Close() })
		cfg.Logger = slog.New(slog.NewJSONHandler(f, nil))
	}
	// PRAETOR_BENCH_PARTITIONS measures another partition count than the
	// node's default (each partition is a durable consumer per keyed
	// service, and the server writes each active consumer's state to a
	// file up to ten times a second).
	if v := os.Getenv("PRAETOR_BENCH_PARTITIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("PRAETOR_BENCH_PARTITIONS=%q: want a number", v)
		}
		cfg.Streams.Partitions = n
	}
	// PRAETOR_BENCH_DUPLICATES measures another duplicate window than the
	// node's default (the NATS server keeps every message id of the window
	// in memory, and in dev its heap is the services' heap).
	if v := os.Getenv("PRAETOR_BENCH_DUPLICATES"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("PRAETOR_BENCH_DUPLICATES=%q: want a positive duration", v)
		}
		cfg.Streams.Duplicates = d
	}
	// PRAETOR_BENCH_COMPRESSION=s2 measures streams stored compressed,
	// serve's default (dev's is none: the embedded server compresses each
	// full message block at once, on the handlers' cores; see
	// node.DefaultCompression).
	if v := os.Getenv("PRAETOR_BENCH_COMPRESSION"); v != "" {
		if err := events.CheckCompression(v); err != nil {
			b.Fatalf("PRAETOR_BENCH_COMPRESSION: %v", err)
		}
		cfg.Streams.Compression = v
	}
	// PRAETOR_BENCH_OMIT_PROMPTS=1 runs as --llm-omit-prompts does: the
	// recorded LLM calls keep their hashes and answers, not their prompts
	// (tens of kilobytes a call, copied by the recorder, the NATS client
	// and server, and compressed with the stream's blocks).
	cfg.OmitLLMPrompts = os.Getenv("PRAETOR_BENCH_OMIT_PROMPTS") == "1"
	natsAddr := testenv.FreeAddr(b)
	switch storeKind {
	case "sqlite":
		cfg.Dev, cfg.DataDir, cfg.NATSListen = true, b.TempDir(), natsAddr
		// PRAETOR_BENCH_DATADIR=DIR keeps the run's data directory in
		// DIR/MODE-N, to read after it (sqlite3's dbstat says which table
		// each page is of).
		if dir := os.Getenv("PRAETOR_BENCH_DATADIR"); dir != "" {
			cfg.DataDir = filepath.Join(dir, fmt.Sprintf("%s-%d", mode, b.N))
		}
	case "postgres":
		url := testenv.Postgres(b)
		// PRAETOR_BENCH_NATS_URL runs against a NATS server of its own
		// process, as praetor serve does in production (its heap is then
		// not the services'); else one starts in this process.
		natsURL := os.Getenv("PRAETOR_BENCH_NATS_URL")
		if natsURL == "" {
			srv, err := events.StartServer(events.ServerConfig{StoreDir: b.TempDir(), Listen: true, Port: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Shutdown)
			natsURL = srv.ClientURL()
		}
		cfg.NATSURL, cfg.DatabaseURL, cfg.Migrate = natsURL, url, true
		natsAddr = strings.TrimPrefix(natsURL, "nats://")
	}
	ready := make(chan string, 1)
	cfg.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, cfg) }()
	b.Cleanup(func() { cancel(); <-done })
	var addr, token string
	select {
	case addr = <-ready:
	case err := <-done:
		b.Fatalf("node: %v", err)
	}
	if storeKind == "postgres" {
		token = benchToken(b, cfg.DatabaseURL)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	post := func(path string, body any, out any) error {
		buf, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(buf))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			data, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%s: %d %s", path, resp.StatusCode, data)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}
	ids := make([]string, sessions)
	for i := range ids {
		var s struct {
			SessionID string `json:"session_id"`
		}
		if err := post("/v1/sessions", map[string]string{"engine_id": "project-discovery"}, &s); err != nil {
			b.Fatal(err)
		}
		ids[i] = s.SessionID
	}
	messages := []string{
		"Our field technicians keep losing track of their jobs. We want to build a mobile app.",
		"Last month we missed three urgent repairs and lost a big customer.",
		"About 40 technicians, plus 5 office dispatchers who plan the routes.",
		"We need it within 6 months, before the busy winter season.",
	}
	return turnPath{
		natsURL: "nats://" + natsAddr,
		replies: contracts.TurnRespondedSpec.FilterSubject(),
		turnOf: func(m *nats.Msg) string {
			ev, err := events.Decode(m.Header, m.Data)
			if err != nil {
				return ""
			}
			r, err := contracts.DecodeAs[contracts.TurnResponded](ev)
			if err != nil {
				return ""
			}
			return r.TurnID
		},
		send: func(i int) (string, error) {
			var t struct {
				TurnID string `json:"turn_id"`
			}
			err := post("/v1/sessions/"+ids[i%sessions]+"/turns", map[string]string{"message": messages[(i/sessions)%len(messages)]}, &t)
			return t.TurnID, err
		},
	}
}

// counter returns the value of the counter name in reg, 0 if it has none.
func counter(reg *prometheus.Registry, name string) float64 {
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// gcMarkCPU returns the runtime's estimate of the CPU time its mark phase
// has taken (the time its workers, dedicated and fractional, and the
// goroutines made to assist held a P; not the idle-time marking, which
// takes nothing from anyone), or 0 where the runtime has no such metrics.
// Per cycle it grows with the pointers of the live heap, and it is what a
// cycle takes from the turns: the figure to watch when the live heap
// changes.
func gcMarkCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}}
	metrics.Read(s)
	var total float64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindFloat64 {
			total += x.Value.Float64()
		}
	}
	return time.Duration(total * float64(time.Second))
}

// diskWritten returns the bytes the process has written to files on block
// devices (Linux's write_bytes in /proc/self/io: pages it dirtied, whether
// or not the kernel has written them out yet; files on tmpfs do not count),
// and false where that is not known.
func diskWritten() (int64, bool) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// reportStages reports the p50 and p99 of each stage of the turns (see
// PRAETOR_BENCH_STAGES), and how the slowest 1% of turns spent their time.
func reportStages(b *testing.B, sent, arrived, staged map[string]time.Time) {
	type turn struct {
		due                 time.Time
		gw, ext, run, total time.Duration
	}
	var ts []turn
	for id, due := range sent {
		rec, ok1 := staged[id]
		ext, ok2 := staged[events.DeriveID(id, "extracted")]
		done, ok3 := arrived[id]
		if ok1 && ok2 && ok3 {
			ts = append(ts, turn{due, rec.Sub(due), ext.Sub(rec), done.Sub(ext), done.Sub(due)})
		}
	}
	if len(ts) == 0 {
		b.Fatal("no turn seen at every stage")
	}
	// PRAETOR_BENCH_TURNS=FILE writes every turn's stages in the order they
	// were due, to see whether slow turns come alone or in bursts (and how
	// far apart the bursts are: a periodic stall shows its period).
	if f := os.Getenv("PRAETOR_BENCH_TURNS"); f != "" {
		slices.SortFunc(ts, func(a, b turn) int { return a.due.Compare(b.due) })
		var out strings.Builder
		out.WriteString("due_ms gateway_ms extractor_ms runner_ms total_ms\n")
		for _, t := range ts {
			fmt.Fprintf(&out, "%.3f %.3f %.3f %.3f %.3f\n", millis(t.due.Sub(ts[0].due)), millis(t.gw), millis(t.ext), millis(t.run), millis(t.total))
		}
		if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
			b.Errorf("PRAETOR_BENCH_TURNS: %v", err)
		}
	}
	for _, st := range []struct {
		name string
		of   func(turn) time.Duration
	}{{"gw", func(t turn) time.Duration { return t.gw }}, {"ext", func(t turn) time.Duration { return t.ext }},
		{"run", func(t turn) time.Duration { return t.run }}} {
		ds := make([]time.Duration, len(ts))
		for i, t := range ts {
			ds[i] = st.of(t)
		}
		slices.Sort(ds)
		b.ReportMetric(percentile(ds, 0.5), st.name+"-p50-ms")
		b.ReportMetric(percentile(ds, 0.99), st.name+"-p99-ms")
	}
	// The slowest 1%: the mean of each stage, to say where the tail is.
	slices.SortFunc(ts, func(a, b turn) int { return int(b.total - a.total) })
	tail := ts[:max(1, len(ts)/100)]
	var sum turn
	for _, t := range tail {
		sum.gw, sum.ext, sum.run = sum.gw+t.gw, sum.ext+t.ext, sum.run+t.run
	}
	n := time.Duration(len(tail))
	b.Logf("slowest %d turns: mean gateway %.1f ms, extractor %.1f ms, runner %.1f ms", len(tail),
		millis(sum.gw/n), millis(sum.ext/n), millis(sum.run/n))
}

// logWindows logs the p50, p99 and maximum latency of the turns due in each
// window of PRAETOR_BENCH_WINDOW (e.g. 10s) from the start: whether the
// tail holds or grows as the run goes on (the steady state's does).
func logWindows(b *testing.B, window string, start time.Time, answered []timing) {
	w, err := time.ParseDuration(window)
	if err != nil || w <= 0 {
		b.Fatalf("PRAETOR_BENCH_WINDOW=%q: want a positive duration", window)
	}
	var buckets [][]time.Duration
	for _, t := range answered {
		i := int(t.due.Sub(start) / w)
		for len(buckets) <= i {
			buckets = append(buckets, nil)
		}
		buckets[i] = append(buckets[i], t.done.Sub(t.due))
	}
	for i, ds := range buckets {
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		b.Logf("from %v: %d turns, p50 %.1f ms, p99 %.1f ms, max %.1f ms", time.Duration(i)*w, len(ds),
			percentile(ds, 0.5), percentile(ds, 0.99), millis(ds[len(ds)-1]))
	}
}

// timing is when an answered turn was due and when its reply arrived.
type timing struct{ due, done time.Time }

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the pth (0 to 1) of sorted latencies, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	return millis(sorted[int(p*float64(len(sorted)-1))])
}

// writeHeapProfile writes the heap profile as of a collection now.
func writeHeapProfile(b *testing.B, file string) {
	runtime.GC()
	f, err := os.Create(file)
	if err != nil {
		b.Fatalf("PRAETOR_BENCH_HEAP: %v", err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatalf("PRAETOR_BENCH_HEAP: %v", err)
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchToken creates a tenant and a token in the benchmark's database.
func benchToken(b *testing.B, url string) string {
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Config{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := store.CreateTenant(ctx, db, store.Tenant{ID: "bench", Name: "Bench", CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	secret, _, err := store.CreateToken(ctx, db, "bench", "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	return secret
}

// unansweredReport says what became of the replies to the turns missing
// of n sent when the wait ended: those that came since (not in still, the
// turns unanswered now), those the stream holds (stored) that the
// benchmark's subscription never saw, and those the stream does not hold,
// which the path did not answer.
func unansweredReport(n int, missing, stored, still []string) string {
	slices.Sort(missing)
	var late, unseen, unreplied []string
	for _, id := range missing {
		switch {
		case !slices.Contains(still, id):
			late = append(late, id)
		case slices.Contains(stored, id):
			unseen = append(unseen, id)
		default:
			unreplied = append(unreplied, id)
		}
	}
	first := func(ids []string) string {
		if len(ids) > 20 {
			return fmt.Sprintf("%v and %d more", ids[:20], len(ids)-20)
		}
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%d of %d turns answered in 2 minutes; of the %d others, %d have no reply in the stream %s, "+
		"%d have one the benchmark's subscription never saw %s, and %d had theirs come after the wait %s",
		n-len(missing), n, len(missing), len(unreplied), first(unreplied), len(unseen), first(unseen), len(late), first(late))
}

// storedReplies returns those of the turns whose replies the stream of
// path.replies holds, read from its start with a consumer of its own.
func storedReplies(nc *nats.Conn, path turnPath, turns []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	stream, err := js.StreamNameBySubject(ctx, path.replies)
	if err != nil {
		return nil, fmt.Errorf("the stream of %s: %w", path.replies, err)
	}
	// A partitioned stream stores a subject with its partition appended
	// (events.EnsureStream).
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubjects: []string{path.replies, path.replies + ".*"}, InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, stream, cons.CachedInfo().Name)
	}()
	want := map[string]bool{}
	for _, t := range turns {
		want[t] = true
	}
	var found []string
	for pending := cons.CachedInfo().NumPending; pending > 0; {
		if err := ctx.Err(); err != nil {
			return found, err
		}
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return found, err
		}
		read := 0
		for m := range batch.Messages() {
			read++
			if id := path.turnOf(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}); want[id] {
				found = append(found, id)
				delete(want, id)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return found, err
		}
		if read == 0 {
			return found, fmt.Errorf("the stream gave nothing for 5 s with %d replies still to read", pending)
		}
		pending -= min(pending, uint64(read))
	}
	return found, nil
}

// TestUnansweredReport: each turn missing at the end of the wait is counted
// once, in the first that applies of: answered since, a reply the stream
// holds, no reply.
func TestUnansweredReport(t *testing.T) {
	got := unansweredReport(10, []string{"d", "c", "b", "a"}, []string{"b", "c"}, []string{"b", "d"})
	want := "6 of 10 turns answered in 2 minutes; of the 4 others, 1 have no reply in the stream [d], " +
		"1 have one the benchmark's subscription never saw [b], and 2 had theirs come after the wait [a c]"
	if got != want {
		t.Errorf("report =\n%s\nwant\n%s", got, want)
	}
}
