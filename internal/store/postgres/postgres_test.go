package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/storetest"
	"github.com/praetorhq/praetor/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), postgres.Config{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.DB {
		return open(t, testenv.Postgres(t))
	})
}

// TestMigrateConcurrently starts several replicas on one schema at once: the
// migration lock must let one apply each version and the others find it done.
func TestMigrateConcurrently(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const replicas = 4
	applied := make([][]int64, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		db := open(t, url)
		wg.Go(func() { applied[i], errs[i] = store.Migrate(ctx, db) })
	}
	wg.Wait()
	total := map[int64]int{}
	for i := range replicas {
		if errs[i] != nil {
			t.Errorf("replica %d: Migrate: %v", i, errs[i])
		}
		for _, v := range applied[i] {
			total[v]++
		}
	}
	st, err := store.Status(ctx, open(t, url))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if !s.Applied || total[s.Version] != 1 {
			t.Errorf("migration %d: applied %v, by %d replicas; want applied by exactly one", s.Version, s.Applied, total[s.Version])
		}
	}
}

// TestSearchPath checks that the tables go to the schema the URL names, so
// several tests or deployments can share one database.
func TestSearchPath(t *testing.T) {
	ctx := t.Context()
	a, b := open(t, testenv.Postgres(t)), open(t, testenv.Postgres(t))
	if _, err := store.Migrate(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTenant(ctx, a, store.Tenant{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Status(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Applied {
			t.Errorf("migration %d is applied in the other schema", s.Version)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  postgres.Config
		want string
	}{
		{"no URL", postgres.Config{}, "URL is empty"},
		{"bad URL", postgres.Config{URL: "postgres://u:secret@host:notaport/db"}, "parse URL"},
		{"bad pool size", postgres.Config{URL: "postgres://localhost/db", MaxConns: -1}, "MaxConns is -1"},
		{"bad TCP user timeout", postgres.Config{URL: "postgres://localhost/db", TCPUserTimeout: -time.Second}, "TCPUserTimeout is -1s"},
		{"bad tcp_user_timeout", postgres.Config{URL: "postgres://u:secret@localhost/db?tcp_user_timeout=30s"}, "tcp_user_timeout"},
		{"nobody listening", postgres.Config{URL: "postgres://u:secret@127.0.0.1:1/db?sslmode=disable", ConnectTimeout: 5 * time.Second}, "connect to 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := postgres.Open(t.Context(), tc.cfg)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%+v) succeeded", tc.cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open = %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Open's error shows the password: %v", err)
			}
		})
	}
}

// TestLargeInEveryExecMode writes and reads store.Large and LargeBytes in
// each of pgx's query exec modes (a URL may choose one, say for PgBouncer):
// in the modes that do not ask the server for the parameters' types, a
// []byte goes as bytea, which a JSON column refuses.
func TestLargeInEveryExecMode(t *testing.T) {
	base := testenv.Postgres(t)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			sep := "?"
			if strings.Contains(base, "?") {
				sep = "&"
			}
			db := open(t, base+sep+"default_query_exec_mode="+mode)
			table := "large_" + mode
			if _, err := db.Exec(t.Context(), `CREATE TABLE `+table+` (tenant_id TEXT NOT NULL, k TEXT NOT NULL,
				s TEXT NULL, j JSON NULL, bin BYTEA NULL, PRIMARY KEY (tenant_id, k))`); err != nil {
				t.Fatal(err)
			}
			storetest.RunLarge(t, db, table)
		})
	}
}

// TestTransactionsGiveTheirConnectionsBack: a transaction begun with its
// first statement holds a connection from then on; however it ends (its
// first statement failing, an error, a panic, its goroutine ending), the
// connection goes back to the pool.
func TestTransactionsGiveTheirConnectionsBack(t *testing.T) {
	// Not open's: its Close would wait for a leaked connection for good.
	db, err := postgres.Open(t.Context(), postgres.Config{URL: testenv.Postgres(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // no wait for good on a leaked pool
	defer cancel()
	leaked := false
	ends := map[string]func(tx store.Querier) error{
		"failed first statement": func(tx store.Querier) error {
			_, err := tx.Exec(ctx, `SELECT * FROM no_such_table`)
			return err
		},
		"error after a statement": func(tx store.Querier) error {
			var one int
			if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
				return err
			}
			return errors.New("handler failed")
		},
		"rows closed unread": func(tx store.Querier) error {
			rows, err := tx.Query(ctx, `SELECT generate_series(1, 10)`)
			if err != nil {
				return err
			}
			rows.Close()
			return errors.New("handler failed")
		},
		"panic": func(tx store.Querier) error {
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
				return err
			}
			panic("handler panicked")
		},
		"goroutine ended": func(tx store.Querier) error {
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
				return err
			}
			runtime.Goexit()
			return nil
		},
	}
	for name, fn := range ends {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { _ = recover() }()
			_ = db.Tx(ctx, fn)
		}()
		<-done
		if n := db.Pool().Stat().AcquiredConns(); n != 0 && !leaked {
			t.Errorf("after a transaction ended by %s, %d connections are still held, want 0", name, n)
			leaked = true
		}
	}
	if !leaked {
		_ = db.Close()
	}
}

// The server's end of each connection gets the bound of the client's
// (Config.TCPUserTimeout): a replica cut off mid-work does not leave its
// session and its locks (the relay's advisory lock) to the server's kernel
// keepalive, two hours. The URL's own settings win, and a bound of 0 leaves
// the server's defaults.
func TestServerEndHasTheBound(t *testing.T) {
	url := testenv.Postgres(t)
	with := func(params string) string {
		if strings.Contains(url, "?") {
			return url + "&" + params
		}
		return url + "?" + params
	}
	show := func(db *postgres.DB) []string {
		t.Helper()
		var out []string
		for _, name := range []string{"tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout"} {
			var v string
			if err := db.Pool().QueryRow(t.Context(), "SHOW "+name).Scan(&v); err != nil {
				t.Fatalf("SHOW %s: %v", name, err)
			}
			out = append(out, v)
		}
		return out
	}
	defaults := show(open(t, with("tcp_user_timeout=0")))
	for _, tc := range []struct {
		name string
		db   *postgres.DB
		want []string
	}{
		{"the default bound", open(t, url), []string{"15", "3", "5", "30000"}},
		{"the URL's bound", open(t, with("tcp_user_timeout=20000")), []string{"10", "2", "5", "20000"}},
		{"the URL's keepalive", open(t, with("tcp_keepalives_idle=7")), []string{"7", "3", "5", "30000"}},
		{"the URL's options", open(t, with("options=-c%20tcp_keepalives_idle%3D7%20--tcp-user-timeout%3D20000")), []string{"7", "3", "5", "20000"}},
	} {
		if got := show(tc.db); !slices.Equal(got, tc.want) {
			t.Errorf("%s: the server's keepalive idle, interval, count and user timeout are %q, want %q", tc.name, got, tc.want)
		}
	}
	if slices.Equal(defaults, []string{"15", "3", "5", "30000"}) {
		t.Errorf("with tcp_user_timeout=0 the server's settings are %q: ours, not its defaults", defaults)
	}
}

// TestUnixSocket connects through a Unix socket (host=/var/run/postgresql,
// a server on the same host): the socket has no TCP options to set, and
// the connection is made without them.
func TestUnixSocket(t *testing.T) {
	url := testenv.Postgres(t)
	pc, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	// A directory of its own, short enough for a socket's path.
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port := strconv.Itoa(int(pc.Port))
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+port))
	if err != nil {
		t.Fatal(err)
	}
	// Forward each connection to the test's server, both ways.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", net.JoinHostPort(pc.Host, port))
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			for _, d := range [][2]net.Conn{{c, u}, {u, c}} {
				wg.Go(func() {
					_, _ = io.Copy(d[0], d[1])
					d[0].Close()
					d[1].Close()
				})
			}
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})

	if strings.Contains(url, "://") {
		u, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = ""
		q := u.Query()
		q.Set("host", dir)
		q.Set("port", port)
		u.RawQuery = q.Encode()
		url = u.String()
	} else {
		url += " host=" + dir + " port=" + port
	}
	var one int
	if err := open(t, url).Pool().QueryRow(t.Context(), `SELECT 1`).Scan(&one); err != nil {
		t.Fatalf("through the socket in %s: %v", dir, err)
	}
}
