package testenv

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// echoServer answers each line with itself until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// echo sends a line through c and reads it back.
func echo(c net.Conn, line string) error {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return errors.New("echoed " + got)
	}
	return nil
}

func TestProxy(t *testing.T) {
	p := NewProxy(t, echoServer(t))
	dial := func() (net.Conn, error) {
		c, err := net.Dial("tcp", p.Addr())
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			// A guard against a hang, not a measure: a cut connection
			// answers at once.
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		}
		return c, err
	}

	open, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(open, "up"); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	addr := p.Addr()
	p.SetDown(true)
	p.SetDown(true)
	var buf [1]byte
	if _, err := open.Read(buf[:]); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an open connection while down: read err = %v, want it cut", err)
	}
	if _, err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a new connection while down: %v, want connection refused", err)
	}

	p.SetDown(false)
	p.SetDown(false)
	if p.Addr() != addr {
		t.Errorf("back up on %s, want %s", p.Addr(), addr)
	}
	again, err := dial()
	if err != nil {
		t.Fatalf("a new connection once back up: %v", err)
	}
	if err := echo(again, "again"); err != nil {
		t.Errorf("through the proxy once back up: %v", err)
	}
}

// A database reached through PostgresProxy answers while the proxy is up
// and is refused while it is down.
func TestPostgresProxy(t *testing.T) {
	dsn, p := PostgresProxy(t)
	ping := func() error {
		return withConn(dsn, func(ctx context.Context, c *pgx.Conn) error { return c.Ping(ctx) })
	}
	if err := ping(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.SetDown(true)
	if err := ping(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("with the proxy down: %v, want connection refused", err)
	}
	p.SetDown(false)
	if err := ping(); err != nil {
		t.Errorf("through the proxy once back up: %v", err)
	}
}
