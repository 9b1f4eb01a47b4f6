package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/testenv"
)

// TestSilentServer: a database that stops answering without closing its
// connections (a partition, a frozen host: packets dropped, no reset) fails
// the statements waiting on it within about TCPUserTimeout, not after the
// kernel's minutes of retransmissions and keepalive probes, and serves again
// once it answers; a statement that runs long on a server that answers is
// not cut short.
func TestSilentServer(t *testing.T) {
	const userTimeout = 2 * time.Second
	sentAfterCut := func(t *testing.T, p *partition, db *postgres.DB) error {
		p.cut(t)
		return db.Tx(context.Background(), func(tx store.Querier) error {
			_, err := tx.Exec(context.Background(), `INSERT INTO silent VALUES (1)`)
			return err
		})
	}
	for _, tc := range []struct {
		name string
		cfg  func(url string) postgres.Config
		// cut has the server go silent while db waits on a statement.
		cut func(t *testing.T, p *partition, db *postgres.DB) error
	}{
		{
			"statement sent after the cut",
			func(url string) postgres.Config { return postgres.Config{URL: url, TCPUserTimeout: userTimeout} },
			sentAfterCut,
		},
		{
			"statement running when cut",
			func(url string) postgres.Config { return postgres.Config{URL: url, TCPUserTimeout: userTimeout} },
			func(t *testing.T, p *partition, db *postgres.DB) error {
				// The server's reply is all that is left to come: only
				// the keepalive probes find the server gone.
				go func() {
					p.waitRunning(t, "/* running */")
					p.cut(t)
				}()
				_, err := db.Exec(context.Background(), `/* running */ SELECT pg_sleep(30)`)
				return err
			},
		},
		{
			"the URL's tcp_user_timeout",
			func(url string) postgres.Config {
				sep := " " // keyword=value
				if strings.Contains(url, "://") {
					sep = "&" // after testenv's search_path
				}
				return postgres.Config{URL: url + sep + "tcp_user_timeout=" + strconv.Itoa(int(userTimeout.Milliseconds())), TCPUserTimeout: time.Hour}
			},
			sentAfterCut,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := testenv.Postgres(t)
			p := newPartition(t, url)
			cfg := tc.cfg(url)
			cfg.MaxConns = 2
			db, err := postgres.Open(t.Context(), postgres.WithDial(cfg, p.dial))
			if err != nil {
				t.Fatal(err)
			}
			stuck := false
			t.Cleanup(func() {
				if !stuck { // Close would wait for the stuck connection
					db.Close()
				}
			})
			if _, err := db.Exec(t.Context(), `CREATE TABLE silent (n INT)`); err != nil {
				t.Fatal(err)
			}

			errc := make(chan error, 1)
			go func() { errc <- tc.cut(t, p, db) }()
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("the statement succeeded with the server cut off")
				}
			case <-time.After(3 * userTimeout):
				stuck = true
				t.Fatalf("the statement still waits %s after the server went silent (TCP user timeout %s)", 3*userTimeout, userTimeout)
			}

			p.resume(t)
			// The pool dropped the dead connection and dials a new one.
			if _, err := db.Exec(t.Context(), `INSERT INTO silent VALUES (2)`); err != nil {
				t.Fatalf("once the server answers again: %v", err)
			}
		})
	}

	t.Run("long statement on a server that answers", func(t *testing.T) {
		url := testenv.Postgres(t)
		p := newPartition(t, url)
		db, err := postgres.Open(t.Context(), postgres.WithDial(
			postgres.Config{URL: url, MaxConns: 2, TCPUserTimeout: userTimeout}, p.dial))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Exec(t.Context(), `SELECT pg_sleep(3 * $1::float8)`, userTimeout.Seconds()); err != nil {
			t.Errorf("a statement three times as long as TCPUserTimeout: %v", err)
		}
	})
}

// partition is a network of its own (a Linux network namespace) between a
// test's connections and the database: a proxy listens in it and forwards
// to the database, and cut takes its loopback interface down, so that what
// the connections send goes nowhere and nothing comes back, with no reset:
// a partition. It needs CAP_SYS_ADMIN; the test is skipped without.
type partition struct {
	ln     net.Listener
	target string
	ctl    int         // a socket in the namespace, to set its interface's flags
	run    chan func() // run on the thread in the namespace
	url    string

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newPartition(t *testing.T, url string) *partition {
	t.Helper()
	pc, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	p := &partition{target: net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))), run: make(chan func()), url: url}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, in the namespace, ends with the
		// goroutine. What it creates (sockets) stays in the namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- fmt.Errorf("unshare a network namespace: %w", err)
			return
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			ready <- err
			return
		}
		p.ctl = fd
		if err := p.setUp(true); err != nil {
			unix.Close(fd)
			ready <- err
			return
		}
		if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			unix.Close(fd)
			ready <- err
			return
		}
		ready <- nil
		for f := range p.run {
			f()
		}
	}()
	if err := <-ready; err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("a partition needs CAP_SYS_ADMIN (root): %v", err)
		}
		t.Fatal(err)
	}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		p.ln.Close()
		close(p.run)
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		unix.Close(p.ctl)
	})
	return p
}

// accept forwards each connection to the database, both ways, until one
// side closes.
func (p *partition) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target) // from the test's network
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		for _, d := range [][2]net.Conn{{c, u}, {u, c}} {
			p.wg.Go(func() {
				_, _ = io.Copy(d[0], d[1])
				d[0].Close()
				d[1].Close()
			})
		}
	}
}

// dial dials the proxy, whatever addr, from inside the namespace, with d.
func (p *partition) dial(ctx context.Context, d *net.Dialer, network, _ string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	res := make(chan result, 1)
	p.run <- func() {
		c, err := d.DialContext(ctx, network, p.ln.Addr().String())
		res <- result{c, err}
	}
	r := <-res
	return r.c, r.err
}

// setUp sets the namespace's loopback interface up, or down.
func (p *partition) setUp(up bool) error {
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(p.ctl, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo's flags: %w", err)
	}
	flags := ifr.Uint16() &^ unix.IFF_UP
	if up {
		flags |= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(p.ctl, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set lo's flags: %w", err)
	}
	return nil
}

func (p *partition) cut(t *testing.T) {
	if err := p.setUp(false); err != nil {
		t.Errorf("cut: %v", err)
	}
}

func (p *partition) resume(t *testing.T) {
	if err := p.setUp(true); err != nil {
		t.Errorf("resume: %v", err)
	}
}

// waitRunning waits for the server to run a statement that begins with
// marker, asking it on a connection of its own.
func (p *partition) waitRunning(t *testing.T, marker string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, p.url)
	if err != nil {
		t.Errorf("wait for %s: %v", marker, err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for ctx.Err() == nil {
		res := conn.ExecParams(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND starts_with(query, $1)`,
			[][]byte{[]byte(marker)}, nil, nil, nil).Read()
		if res.Err != nil {
			t.Errorf("wait for %s: %v", marker, res.Err)
			return
		}
		if len(res.Rows) == 1 && string(res.Rows[0][0]) != "0" {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Errorf("the server did not run %s within 30s", marker)
}
