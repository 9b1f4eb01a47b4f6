// Package memtest holds the test helpers of the memory service: the
// relational store on both adapters, an embedded NATS with the catalog
// streams, a TCP proxy that can cut a server off, and polling.
package memtest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// Ctx is a context that ends with the test (at most after two minutes).
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Logger is discarded unless PRAETOR_TEST_LOG is set (debug, info, warn,
// error), then text on stderr. t.Log is avoided: goroutines that outlive a
// test would make it panic.
func Logger(testing.TB) *slog.Logger {
	v := os.Getenv("PRAETOR_TEST_LOG")
	if v == "" {
		return slog.New(slog.DiscardHandler)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(v))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Tenant creates a tenant.
func Tenant(t testing.TB, db store.DB, id string) {
	t.Helper()
	if err := store.CreateTenant(context.Background(), db, store.Tenant{ID: id, Name: id}); err != nil {
		t.Fatal(err)
	}
}

// NATS starts an embedded JetStream server with the catalog streams
// (ordered ones with 4 partitions).
func NATS(t testing.TB) *events.Server {
	t.Helper()
	srv := eventstest.StartServer(t)
	bus := Bus(t, srv)
	if err := node.Provision(Ctx(t), bus, node.StreamSettings{Partitions: 4, Replicas: 1, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// Bus opens a bus on a new connection, closed when the test ends.
func Bus(t testing.TB, srv *events.Server) *events.Bus {
	t.Helper()
	nc := eventstest.Connect(t, srv)
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject, Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bus.Close(ctx)
	})
	return bus
}

// WaitFor polls cond every 10ms until it holds, failing the test after d.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		<-tick.C
	}
}

// Proxy forwards TCP connections to a server and can cut it off: while
// down it refuses new connections and has closed every open one, as a
// server that went away does.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target; it is
// closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDown cuts the server off (true) or lets connections through again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.SetDown(true)
	p.wg.Wait()
}
