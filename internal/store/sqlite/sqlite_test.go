package sqlite_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	msqlite "modernc.org/sqlite"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/sqlite"
	"github.com/praetorhq/praetor/internal/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, cfg sqlite.Config) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
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
		return open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "praetor.db")})
	})
}

// TestMemory checks the in-memory database, where one connection serves
// everything: it must stay alive between statements and keep its data.
func TestMemory(t *testing.T) {
	ctx := t.Context()
	db := open(t, sqlite.Config{Path: sqlite.Memory})
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := db.Tx(ctx, func(tx store.Querier) error {
		return store.CreateTenant(ctx, tx, store.Tenant{ID: "acme", Name: "Acme"})
	}); err != nil {
		t.Fatalf("CreateTenant in Tx: %v", err)
	}
	got, err := store.GetTenant(ctx, db, "acme")
	if err != nil || got.Name != "Acme" {
		t.Fatalf("GetTenant = %+v, %v; want Acme", got, err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// TestSharedFile runs two DBs on one file, as two praetor processes would:
// their writers contend for the file lock, and BEGIN IMMEDIATE with the busy
// timeout must make them take turns, losing no update and never deadlocking.
func TestSharedFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, sqlite.Config{Path: path})
	b := open(t, sqlite.Config{Path: path})
	if _, err := store.Migrate(ctx, a); err != nil {
		t.Fatal(err)
	}
	if applied, err := store.Migrate(ctx, b); err != nil || len(applied) != 0 {
		t.Fatalf("Migrate on the second handle = %v, %v; want nothing to do", applied, err)
	}
	if _, err := a.Exec(ctx, `CREATE TABLE c (k TEXT PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, `INSERT INTO c (k, n) VALUES ($1, 0)`, "x"); err != nil {
		t.Fatal(err)
	}
	const each = 25
	var wg sync.WaitGroup
	errs := make(chan error, 4*each)
	for _, db := range []*sqlite.DB{a, b, a, b} {
		wg.Go(func() {
			for range each {
				errs <- db.Tx(ctx, func(tx store.Querier) error {
					var n int64
					if err := tx.QueryRow(ctx, `SELECT n FROM c WHERE k = $1`, "x").Scan(&n); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `UPDATE c SET n = $1 WHERE k = $2`, n+1, "x")
					return err
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Tx: %v", err)
		}
	}
	var n int64
	if err := b.QueryRow(ctx, `SELECT n FROM c WHERE k = $1`, "x").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4*each {
		t.Errorf("n = %d after %d increments through two handles", n, 4*each)
	}
}

// TestTimeText checks how times are stored: fixed-width UTC text with
// microseconds, so that text order is time order.
func TestTimeText(t *testing.T) {
	ctx := t.Context()
	db := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "t.db")})
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 600_000_789, time.FixedZone("X", 3600))
	if err := store.CreateTenant(ctx, db, store.Tenant{ID: "acme", Name: "Acme", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	var text, typ string
	if err := db.QueryRow(ctx, `SELECT CAST(created_at AS TEXT), typeof(created_at) FROM tenants`).Scan(&text, &typ); err != nil {
		t.Fatal(err)
	}
	if want := "2025-01-02 02:04:05.600000+00:00"; text != want || typ != "text" {
		t.Errorf("stored %s %q, want text %q", typ, text, want)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  sqlite.Config
		want string
	}{
		{"no path", sqlite.Config{}, "Path is empty"},
		{"query in path", sqlite.Config{Path: dir + "/x.db?mode=ro"}, "plain file path"},
		{"file URI", sqlite.Config{Path: "file:" + dir + "/x.db"}, "plain file path"},
		{"negative readers", sqlite.Config{Path: dir + "/x.db", MaxReaders: -1}, "MaxReaders is -1"},
		{"tiny busy timeout", sqlite.Config{Path: dir + "/x.db", BusyTimeout: time.Microsecond}, "BusyTimeout"},
		{"not a directory", sqlite.Config{Path: dir + "/x.db/y.db"}, "x.db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not a directory" {
				// x.db exists as a file, so it cannot be a directory.
				open(t, sqlite.Config{Path: dir + "/x.db"})
			}
			db, err := sqlite.Open(t.Context(), tc.cfg)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%+v) succeeded", tc.cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%+v) = %v, want it to mention %q", tc.cfg, err, tc.want)
			}
		})
	}
}

// TestQueryRouting checks that a write sent through Query outside a
// transaction reaches the writer, and that plain reads still see it.
func TestQueryRouting(t *testing.T) {
	ctx := t.Context()
	db := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "r.db")})
	if _, err := db.Exec(ctx, `CREATE TABLE r (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO r (v) VALUES ($1) RETURNING id`,
		"  -- comment\n/* block */ WITH x AS (SELECT 1) INSERT INTO r (v) VALUES ($1) RETURNING id",
	} {
		var id int64
		if err := db.QueryRow(ctx, q, "x").Scan(&id); err != nil {
			t.Errorf("QueryRow(%q): %v", q, err)
		}
	}
	var n int64
	if err := db.QueryRow(ctx, "/* read */ select count(*) from r").Scan(&n); err != nil || n != 2 {
		t.Errorf("count = %d, %v; want 2", n, err)
	}
	// A NULL scanned into a time.Time is an error naming the way out.
	var ts time.Time
	err := db.QueryRow(ctx, `SELECT NULL`).Scan(&ts)
	if err == nil || !strings.Contains(err.Error(), "**time.Time") {
		t.Errorf("scan NULL into time.Time = %v, want an error suggesting **time.Time", err)
	}
	if errors.Is(err, store.ErrNotFound) {
		t.Errorf("scan NULL into time.Time = %v, which is not ErrNotFound", err)
	}
}

func TestCloseTwice(t *testing.T) {
	db, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestTxTakesWriteLockAtBegin checks BEGIN IMMEDIATE: a transaction holds
// the write lock from its first statement, even one that only reads, so
// another process cannot write in between and make it fail when it upgrades.
func TestTxTakesWriteLockAtBegin(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "lock.db")
	a := open(t, sqlite.Config{Path: path})
	b := open(t, sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond, MaxTxAttempts: 1})
	if _, err := a.Exec(ctx, `CREATE TABLE x (a INTEGER)`); err != nil {
		t.Fatal(err)
	}
	err := a.Tx(ctx, func(tx store.Querier) error {
		var n int64
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM x`).Scan(&n); err != nil {
			return err
		}
		if _, err := b.Exec(ctx, `INSERT INTO x (a) VALUES (1)`); err == nil {
			t.Error("another connection wrote while a transaction that had only read was open")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, `INSERT INTO x (a) VALUES (1)`); err != nil {
		t.Errorf("write after the transaction ended: %v", err)
	}
}

// TestOutboxWithoutAutoincrement checks migration 00009: the outbox gives
// ids as max(id)+1 (never twice: see store.PruneSent), so that enqueueing
// does not write sqlite_sequence, a page of the log in every transaction.
func TestOutboxWithoutAutoincrement(t *testing.T) {
	ctx := t.Context()
	db := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "praetor.db")})
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var ddl string
	if err := db.QueryRow(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'outbox'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") {
		t.Errorf("outbox: %s; want no AUTOINCREMENT", ddl)
	}
	if err := store.Enqueue(ctx, db, store.OutboxMessage{TenantID: "acme", EventID: "e1", Subject: "s", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var n int
	err := db.QueryRow(ctx, `SELECT COUNT(*) FROM sqlite_sequence WHERE name = 'outbox'`).Scan(&n)
	if err == nil && n != 0 {
		t.Errorf("sqlite_sequence has %d rows for the outbox, want none", n)
	}
}

// cancelRead ends the context of a read of TestReadsRunToTheirEnd from
// inside it, on its first row (praetor_test_cancel), so the read is running
// when it ends whatever the machine's speed.
var cancelRead atomic.Pointer[context.CancelFunc]

func init() {
	msqlite.MustRegisterScalarFunction("praetor_test_cancel", 1, func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if c := cancelRead.Swap(nil); c != nil {
			(*c)()
		}
		return args[0], nil
	})
}

// Reads outside transactions do not start under a context that has ended,
// and once started run to their end: the context's end does not interrupt
// them (see DB.read). Writes outside transactions still end with theirs.
func TestReadsRunToTheirEnd(t *testing.T) {
	db := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "u.db")})
	if _, err := db.Exec(t.Context(), `CREATE TABLE u (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := db.Exec(ended, `INSERT INTO u (v) VALUES (1)`); !errors.Is(err, context.Canceled) {
		t.Errorf("Exec under an ended context = %v, want context.Canceled", err)
	}
	if _, err := db.Query(ended, `SELECT v FROM u`); !errors.Is(err, context.Canceled) {
		t.Errorf("Query under an ended context = %v, want context.Canceled", err)
	}
	var n int64
	if err := db.QueryRow(ended, `SELECT count(*) FROM u`).Scan(&n); !errors.Is(err, context.Canceled) {
		t.Errorf("QueryRow under an ended context = %v, want context.Canceled", err)
	}
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM u`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows = %d, %v; want 0: the insert ran under an ended context", n, err)
	}

	// A read of 200,000 rows whose context ends on its first row still
	// returns its answer, through QueryRow and through Query.
	const count = `SELECT count(praetor_test_cancel(i)) FROM
		(WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200000) SELECT i FROM c)`
	ctx, cancel := context.WithCancel(t.Context())
	cancelRead.Store(&cancel)
	if err := db.QueryRow(ctx, count).Scan(&n); err != nil || n != 200000 {
		t.Errorf("QueryRow: count = %d, %v; want 200000 though the context ended meanwhile", n, err)
	}
	if ctx.Err() == nil {
		t.Fatal("the read did not end its context")
	}
	ctx, cancel = context.WithCancel(t.Context())
	cancelRead.Store(&cancel)
	rows, err := db.Query(ctx, count)
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			t.Error(err)
		}
	}
	if err := rows.Err(); err != nil || n != 200000 || ctx.Err() == nil {
		t.Errorf("Query: count = %d, %v (context %v); want 200000 though the context ended meanwhile", n, err, ctx.Err())
	}
	rows.Close()
}

// TestFailedCommitLeavesTheWriterClean: a COMMIT that fails can leave its
// transaction open in SQLite (a deferred foreign key that does not hold);
// the driver then rolls it back (modernc's tx.Commit checks
// sqlite3_get_autocommit), so the writer connection goes back to the pool
// clean. Were it not, every later BEGIN on the one writer would fail, or run
// inside the failed transaction, for as long as the process lives.
func TestFailedCommitLeavesTheWriterClean(t *testing.T) {
	ctx := t.Context()
	db := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "fk.db")})
	for _, q := range []string{
		`CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	err := db.Tx(ctx, func(tx store.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO child (id, parent) VALUES (1, 42)`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("commit of a child without its parent = %v, want a foreign key error", err)
	}
	for i := range 3 {
		if err := db.Tx(ctx, func(tx store.Querier) error {
			_, err := tx.Exec(ctx, `INSERT INTO parent (id) VALUES ($1)`, i)
			return err
		}); err != nil {
			t.Fatalf("transaction %d after the failed commit: %v", i, err)
		}
	}
	var parents, children int64
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM parent), (SELECT count(*) FROM child)`).Scan(&parents, &children); err != nil {
		t.Fatal(err)
	}
	if parents != 3 || children != 0 {
		t.Errorf("%d parents and %d children, want 3 and none: the failed transaction's row must not commit", parents, children)
	}
}
