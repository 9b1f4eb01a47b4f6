package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/praetorhq/praetor/internal/wiring"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
// JetStream file storage, every store write. Latency is from the POST to the
// turn.responded event.
//
//	go test -run '^$' -bench TurnPath -benchtime 5000x ./cmd/praetor/
//
// paced100 and paced500 offer 100 and 500 turns/s over 250 sessions and
// report p50/p99; max
// offers turns as fast as 64 clients can post and reports turns/s. The
// postgres variants need DATABASE_URL.
func BenchmarkTurnPath(b *testing.B) {
	for _, st := range []string{"sqlite", "postgres"} {
		for _, mode := range []string{"paced100", "paced500", "max"} {
			b.Run(st+"/"+mode, func(b *testing.B) { benchTurnPath(b, st, mode) })
		}
	}
}

func benchTurnPath(b *testing.B, storeKind, mode string) {
	cfg := node.Config{HTTPAddr: "127.0.0.1:0", Available: wiring.Services(wiring.Options{}), DrainTimeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler), LLM: provider.Config{Provider: provider.Offline},
		Services: []string{"gateway", "extractor", "runner"}}
	cat, reg, err := wiring.LoadEngines(nil, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Engines, cfg.EngineRegistry = cat, reg
	natsAddr := freeAddrB(b)
	switch storeKind {
	case "sqlite":
		cfg.Dev, cfg.DataDir, cfg.NATSListen = true, b.TempDir(), natsAddr
	case "postgres":
		url := testenv.Postgres(b)
		srv, err := events.StartServer(events.ServerConfig{StoreDir: b.TempDir(), Listen: true, Port: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.Shutdown)
		cfg.NATSURL, cfg.DatabaseURL, cfg.Migrate = srv.ClientURL(), url, true
		natsAddr = srv.ClientURL()[len("nats://"):]
	}
	ready := make(chan string, 1)
	cfg.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, cfg) }()
	b.Cleanup(func() { cancel(); <-done })
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		b.Fatalf("node: %v", err)
	}
	token := ""
	if storeKind == "postgres" {
		token = benchToken(b, cfg.DatabaseURL)
	}

	// Replies arrive on the subject the gateway also listens to.
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	// A reply may arrive before its POST returns the turn id: both times are
	// kept by turn id and paired at the end.
	var (
		mu      sync.Mutex
		sent    = map[string]time.Time{}
		arrived = map[string]time.Time{}
	)
	sub, err := nc.Subscribe(contracts.TurnRespondedSpec.FilterSubject(), func(m *nats.Msg) {
		ev, err := events.Decode(m.Header, m.Data)
		if err != nil {
			return
		}
		r, err := contracts.DecodeAs[contracts.TurnResponded](ev)
		if err != nil {
			return
		}
		now := time.Now()
		mu.Lock()
		arrived[r.TurnID] = now
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })

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
	const sessions = 250
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
	turn := func(i int) {
		sid := ids[i%sessions]
		var t struct {
			TurnID string `json:"turn_id"`
		}
		t0 := time.Now()
		if err := post("/v1/sessions/"+sid+"/turns", map[string]string{"message": messages[(i/sessions)%len(messages)]}, &t); err != nil {
			b.Error(err)
			return
		}
		mu.Lock()
		sent[t.TurnID] = t0
		mu.Unlock()
	}

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	switch mode {
	case "paced100", "paced500":
		rate := 500
		if mode == "paced100" {
			rate = 100
		}
		pace := time.Second / time.Duration(rate)
		for i := range b.N {
			time.Sleep(time.Until(start.Add(time.Duration(i) * pace)))
			wg.Go(func() { turn(i) })
		}
	case "max":
		next := atomic.Int64{}
		for range 64 {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
					turn(i)
				}
			})
		}
	}
	wg.Wait()
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for answered() < b.N && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	last := start
	var lat []time.Duration
	for id, t0 := range sent {
		if t1, ok := arrived[id]; ok {
			lat = append(lat, t1.Sub(t0))
			if t1.After(last) {
				last = t1
			}
		}
	}
	b.StopTimer()
	if len(lat) < b.N {
		b.Fatalf("%d of %d turns answered", len(lat), b.N)
	}
	elapsed := last.Sub(start)
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
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

func freeAddrB(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
