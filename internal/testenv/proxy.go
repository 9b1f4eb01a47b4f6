package testenv

import (
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Proxy forwards TCP connections to a server and can cut it off, as a
// server that went away: while down its port refuses connections (the
// listener is closed) and every connection it had is cut; back up, it
// listens on the same port again, so clients keep their address.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener // nil while down
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards each connection to
// target (host:port); it is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: proxy to %s: %v", target, err)
	}
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept(ln)
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port, the same while it is down and after.
func (p *Proxy) Addr() string { return p.addr }

// SetDown cuts the server off (true): the connections are cut and the port
// refuses new ones. SetDown(false) listens on the port again. Either is a
// no-op when the proxy is already so. Call it from the test's goroutine: a
// port taken by another process in between fails the test.
func (p *Proxy) SetDown(down bool) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if down {
		p.cutLocked()
		return
	}
	if p.ln != nil {
		return
	}
	// The port was ours a moment ago; another socket may hold it briefly.
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.ln = ln
			p.wg.Add(1)
			go p.accept(ln)
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("testenv: proxy to %s: listen on %s again: %v", p.target, p.addr, err)
}

// cutLocked closes the listener and every connection.
func (p *Proxy) cutLocked() {
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed: down, or the test ended
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln {
			// Cut off while dialing: this connection is cut with the rest.
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
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
	p.mu.Lock()
	p.closed = true
	p.cutLocked()
	p.mu.Unlock()
	p.wg.Wait()
}

// PostgresProxy is Postgres(t) reached through a Proxy: the connection
// string it returns names the proxy's address in place of the server's, so
// the test can cut its database off (SetDown) as a database host that went
// down, and bring it back.
func PostgresProxy(t testing.TB) (string, *Proxy) {
	t.Helper()
	dsn := Postgres(t)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("testenv: PostgreSQL connection string: %v", err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Fatalf("testenv: PostgreSQL at the socket %s: a proxy needs a TCP address (host=127.0.0.1)", cfg.Host)
	}
	p := NewProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	host, port, _ := net.SplitHostPort(p.Addr())
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("testenv: PostgreSQL connection string: %v", err)
		}
		u.Host = p.Addr()
		return u.String(), p
	}
	// keyword=value: a later keyword overrides an earlier one.
	return dsn + " host=" + host + " port=" + port, p
}
