// Package storetest is the conformance suite of the store port: every
// adapter's tests call Run, so both adapters answer the same SQL the same way
// (placeholders, NULLs, times, JSON, transactions under concurrency) and the
// store's own tables behave alike on both.
package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
)

// Run runs the suite. open returns a new, empty database for the test it is
// given, closed by open's own t.Cleanup; subtests run in parallel, each on a
// database of its own.
func Run(t *testing.T, open func(t *testing.T) store.DB) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, db store.DB)
	}{
		{"Placeholders", testPlaceholders},
		{"Nulls", testNulls},
		{"TimeRoundTrip", testTimeRoundTrip},
		{"TimeOrder", testTimeOrder},
		{"JSONRoundTrip", testJSONRoundTrip},
		{"BoolAndBytes", testBoolAndBytes},
		{"Large", testLarge},
		{"ErrNotFound", testErrNotFound},
		{"ExecRowsAffected", testExecRowsAffected},
		{"TxCommit", testTxCommit},
		{"TxRollback", testTxRollback},
		{"TxPanic", testTxPanic},
		{"TxFirstStatement", testTxFirstStatement},
		{"TxUncommittedInvisible", testTxUncommittedInvisible},
		{"TxConcurrentIncrements", testTxConcurrentIncrements},
		{"Tenants", testTenants},
		{"Tokens", testTokens},
		{"Inbox", testInbox},
		{"InboxInTx", testInboxInTx},
		{"MarkHandledAll", testMarkHandledAll},
		{"MarkHandledWith", testMarkHandledWith},
		{"PostgresEnqueue", testPostgresEnqueue},
		{"OutboxEnqueue", testOutboxEnqueue},
		{"OutboxUnsentOn", testOutboxUnsentOn},
		{"OutboxMarkSentAndPrune", testOutboxMarkSentAndPrune},
		{"OutboxNeverGivesAnIdTwice", testOutboxNeverGivesAnIdTwice},
		{"TryLock", testTryLock},
	}
	t.Run("Migrate", func(t *testing.T) {
		t.Parallel()
		testMigrate(t, open(t))
	})
	t.Run("MigratedByANewerBuild", func(t *testing.T) {
		t.Parallel()
		testMigratedByANewerBuild(t, open(t))
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			migrate(t, db)
			scratch(t, db)
			tt.fn(t, db)
		})
	}
}

// ctx returns a context that ends with the test, and within a minute: a
// deadlock fails the test instead of hanging the run.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func migrate(t *testing.T, db store.DB) {
	t.Helper()
	if _, err := store.Migrate(ctx(t), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
}

// scratch creates the table the suite's own SQL runs against, in each
// dialect's types for time and JSON.
func scratch(t *testing.T, db store.DB) {
	t.Helper()
	ts, js := "TIMESTAMP", "TEXT"
	if db.Dialect() == store.Postgres {
		ts, js = "TIMESTAMPTZ", "JSONB"
	}
	ddl := `CREATE TABLE kv (
		tenant_id TEXT NOT NULL,
		k TEXT NOT NULL,
		n BIGINT NOT NULL DEFAULT 0,
		s TEXT NULL,
		b BOOLEAN NULL,
		ts ` + ts + ` NULL,
		j ` + js + ` NULL,
		bin ` + map[store.Dialect]string{store.Postgres: "BYTEA", store.SQLite: "BLOB"}[db.Dialect()] + ` NULL,
		PRIMARY KEY (tenant_id, k)
	)`
	if _, err := db.Exec(ctx(t), ddl); err != nil {
		t.Fatalf("create scratch table: %v", err)
	}
}

func mustExec(t *testing.T, q store.Querier, query string, args ...any) int64 {
	t.Helper()
	n, err := q.Exec(ctx(t), query, args...)
	if err != nil {
		t.Fatalf("Exec(%s): %v", query, err)
	}
	return n
}

// counter reads kv.n of a key, or -1 when the row is missing.
func counter(t *testing.T, q store.Querier, k string) int64 {
	t.Helper()
	var n int64
	err := q.QueryRow(ctx(t), `SELECT n FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", k).Scan(&n)
	if errors.Is(err, store.ErrNotFound) {
		return -1
	}
	if err != nil {
		t.Fatalf("read counter %s: %v", k, err)
	}
	return n
}

func testMigrate(t *testing.T, db store.DB) {
	c := ctx(t)
	before, err := store.Status(c, db)
	if err != nil {
		t.Fatalf("Status before Migrate: %v", err)
	}
	if len(before) == 0 {
		t.Fatal("Status lists no migrations")
	}
	var want []int64
	for _, s := range before {
		if s.Applied {
			t.Errorf("migration %d %s applied before Migrate", s.Version, s.Name)
		}
		want = append(want, s.Version)
	}
	applied, err := store.Migrate(c, db)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if !slices.Equal(applied, want) {
		t.Errorf("Migrate applied %v, want %v", applied, want)
	}
	again, err := store.Migrate(c, db)
	if err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if len(again) != 0 {
		t.Errorf("Migrate again applied %v, want nothing", again)
	}
	after, err := store.Status(c, db)
	if err != nil {
		t.Fatalf("Status after Migrate: %v", err)
	}
	for _, s := range after {
		if !s.Applied || s.AppliedAt.IsZero() {
			t.Errorf("migration %d %s: applied %v at %v after Migrate", s.Version, s.Name, s.Applied, s.AppliedAt)
		}
	}
	// The tables are there and empty.
	tenants, err := store.ListTenants(c, db)
	if err != nil || len(tenants) != 0 {
		t.Errorf("ListTenants on a new database = %v, %v; want none", tenants, err)
	}
}

// testMigratedByANewerBuild: a database a newer build migrated (one
// migration more) is listed as such, and neither migrated nor passed as up
// to date: an older build rolled back onto it started ready and failed
// every query touching the newer schema.
func testMigratedByANewerBuild(t *testing.T, db store.DB) {
	c := ctx(t)
	migrate(t, db)
	known, err := store.Status(c, db)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if err := store.CheckNotNewer(known); err != nil {
		t.Fatalf("CheckNotNewer of a database this build migrated: %v", err)
	}
	newest := known[len(known)-1].Version
	future := newest + 1
	mustExec(t, db, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, $2)`, future, true)

	status, err := store.Status(c, db)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if len(status) != len(known)+1 {
		t.Fatalf("Status lists %d migrations, want %d: %+v", len(status), len(known)+1, status)
	}
	last := status[len(status)-1]
	if last.Version != future || !last.Newer || !last.Applied || last.AppliedAt.IsZero() {
		t.Errorf("Status's last = %+v, want version %d applied by a newer build, with its time", last, future)
	}
	for _, s := range status[:len(known)] {
		if s.Newer {
			t.Errorf("Status lists %s (known to this build) as newer", s.Name)
		}
	}
	want := fmt.Sprintf("%05d", future)
	err = store.CheckNotNewer(status)
	var ne *store.NewerError
	if !errors.As(err, &ne) || !slices.Equal(ne.Versions, []int64{future}) || ne.Newest != newest {
		t.Fatalf("CheckNotNewer = %v, want a NewerError of %d above %d", err, future, newest)
	}
	for _, part := range []string{want, fmt.Sprintf("up to %05d", newest), "newer build", "restore the database"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("CheckNotNewer's error %q does not say %q", err, part)
		}
	}
	applied, err := store.Migrate(c, db)
	if !errors.As(err, &ne) || !slices.Equal(ne.Versions, []int64{future}) {
		t.Errorf("Migrate = %v, %v; want a NewerError of %d", applied, err, future)
	}
}

func testPlaceholders(t *testing.T, db store.DB) {
	// $3 before $1, $2 twice: each adapter must bind by number, not by order
	// of appearance.
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, n, s) VALUES ($3, $2, $1, $2)`, 7, "key-a", "t1")
	var (
		k, s string
		n    int64
	)
	err := db.QueryRow(ctx(t), `SELECT k, n, s FROM kv WHERE tenant_id = $2 AND k = $1 AND s = $1`, "key-a", "t1").Scan(&k, &n, &s)
	if err != nil {
		t.Fatalf("select by reordered, repeated placeholders: %v", err)
	}
	if k != "key-a" || n != 7 || s != "key-a" {
		t.Errorf("got (%q, %d, %q), want (key-a, 7, key-a)", k, n, s)
	}
	// $10 must not be read as $1 followed by a 0.
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "key-b", 10)
	for _, tc := range []struct {
		n    int64
		want int64
	}{{10, 1}, {1, 0}} {
		args := []any{"t1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "key-b", tc.n}
		var got int64
		err := db.QueryRow(ctx(t), `SELECT COUNT(*) FROM kv WHERE tenant_id = $1 AND k IN ($2, $3, $4, $5, $6, $7, $8, $9) AND n = $10`, args...).Scan(&got)
		if err != nil {
			t.Fatalf("select with ten placeholders: %v", err)
		}
		if got != tc.want {
			t.Errorf("rows with n = $10 = %d: %d, want %d", tc.n, got, tc.want)
		}
	}
}

func testNulls(t *testing.T, db store.DB) {
	var nilString *string
	var nilTime *time.Time
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, s, b, ts, j, bin) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		"t1", "null", nilString, nil, nilTime, nil, []byte(nil))
	var (
		s   *string
		b   *bool
		ts  *time.Time
		ns  sql.NullString
		nb  sql.NullBool
		nt  sql.NullTime
		bin []byte
	)
	s2, ts2 := new(string), new(time.Time) // non-nil before the scan: NULL must reset them
	err := db.QueryRow(ctx(t), `SELECT s, b, ts, s, b, ts, bin, s, ts FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", "null").
		Scan(&s, &b, &ts, &ns, &nb, &nt, &bin, &s2, &ts2)
	if err != nil {
		t.Fatalf("scan NULLs: %v", err)
	}
	if s != nil || b != nil || ts != nil || s2 != nil || ts2 != nil {
		t.Errorf("pointers after scanning NULL: %v %v %v %v %v, want all nil", s, b, ts, s2, ts2)
	}
	if ns.Valid || nb.Valid || nt.Valid {
		t.Errorf("sql.Null* after scanning NULL: %+v %+v %+v, want invalid", ns, nb, nt)
	}
	if bin != nil {
		t.Errorf("[]byte after scanning NULL = %v, want nil", bin)
	}
	// And the same destinations take values.
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	mustExec(t, db, `UPDATE kv SET s = $3, b = $4, ts = $5 WHERE tenant_id = $1 AND k = $2`, "t1", "null", "x", true, &at)
	err = db.QueryRow(ctx(t), `SELECT s, b, ts, s, b, ts FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", "null").
		Scan(&s, &b, &ts, &ns, &nb, &nt)
	if err != nil {
		t.Fatalf("scan values into nullable destinations: %v", err)
	}
	if s == nil || *s != "x" || b == nil || !*b || ts == nil || !ts.Equal(at) {
		t.Errorf("pointers = %v %v %v, want x true %v", s, b, ts, at)
	}
	if ns.String != "x" || !ns.Valid || !nb.Bool || !nb.Valid || !nt.Time.Equal(at) || !nt.Valid {
		t.Errorf("sql.Null* = %+v %+v %+v, want x true %v", ns, nb, nt, at)
	}
	// IS NULL with a NULL parameter compares as SQL does: never equal.
	var count int64
	if err := db.QueryRow(ctx(t), `SELECT COUNT(*) FROM kv WHERE s = $1`, nilString).Scan(&count); err != nil {
		t.Fatalf("count by NULL: %v", err)
	}
	if count != 0 {
		t.Errorf("rows equal to NULL = %d, want 0", count)
	}
}

func testTimeRoundTrip(t *testing.T, db store.DB) {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	cases := []struct {
		name string
		in   time.Time
	}{
		{"nanoseconds in another zone", time.Date(2024, 2, 29, 23, 59, 58, 123456789, zone)},
		{"whole second UTC", time.Date(2030, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"microseconds local", time.Date(2001, 7, 4, 12, 30, 0, 1000, time.Local)},
		{"before 1970", time.Date(1969, 7, 20, 20, 17, 40, 999999000, time.UTC)},
	}
	for i, tc := range cases {
		k := fmt.Sprintf("time-%d", i)
		mustExec(t, db, `INSERT INTO kv (tenant_id, k, ts) VALUES ($1, $2, $3)`, "t1", k, tc.in)
		var got time.Time
		if err := db.QueryRow(ctx(t), `SELECT ts FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", k).Scan(&got); err != nil {
			t.Fatalf("%s: scan: %v", tc.name, err)
		}
		want := tc.in.UTC().Truncate(time.Microsecond)
		if !got.Equal(want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, want)
		}
		if got.Location() != time.UTC {
			t.Errorf("%s: got location %v, want UTC", tc.name, got.Location())
		}
		// The same time as a parameter finds the row.
		var found string
		if err := db.QueryRow(ctx(t), `SELECT k FROM kv WHERE ts = $1`, tc.in).Scan(&found); err != nil || found != k {
			t.Errorf("%s: select by the time = %q, %v; want %s", tc.name, found, err, k)
		}
	}
}

func testTimeOrder(t *testing.T, db store.DB) {
	base := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	// Fractions of different lengths and a time in another zone: order and
	// range comparisons must follow the instants, not the text.
	times := []time.Time{
		base.Add(500 * time.Millisecond),
		base,
		base.Add(123 * time.Microsecond),
		base.Add(time.Second).In(time.FixedZone("UTC-08", -8*3600)),
		base.Add(120 * time.Millisecond),
	}
	for i, ts := range times {
		mustExec(t, db, `INSERT INTO kv (tenant_id, k, ts) VALUES ($1, $2, $3)`, "t1", fmt.Sprint(i), ts)
	}
	rows, err := db.Query(ctx(t), `SELECT k, ts FROM kv WHERE tenant_id = $1 ORDER BY ts`, "t1")
	if err != nil {
		t.Fatalf("query by time: %v", err)
	}
	defer rows.Close()
	var order []string
	var last time.Time
	for rows.Next() {
		var (
			k  string
			ts time.Time
		)
		if err := rows.Scan(&k, &ts); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if ts.Location() != time.UTC {
			t.Errorf("row %s: location %v, want UTC", k, ts.Location())
		}
		if ts.Before(last) {
			t.Errorf("row %s at %v after a row at %v", k, ts, last)
		}
		last = ts
		order = append(order, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	if want := []string{"1", "2", "4", "0", "3"}; !slices.Equal(order, want) {
		t.Errorf("ORDER BY ts = %v, want %v", order, want)
	}
	var n int64
	if err := db.QueryRow(ctx(t), `SELECT COUNT(*) FROM kv WHERE ts > $1 AND ts < $2`,
		base, base.Add(time.Second)).Scan(&n); err != nil {
		t.Fatalf("count in range: %v", err)
	}
	if n != 3 {
		t.Errorf("rows strictly between base and base+1s = %d, want 3", n)
	}
	// An aggregate has no declared type: it must still scan into a time.
	var maxTS time.Time
	if err := db.QueryRow(ctx(t), `SELECT MAX(ts) FROM kv WHERE tenant_id = $1`, "t1").Scan(&maxTS); err != nil {
		t.Fatalf("scan MAX(ts): %v", err)
	}
	if want := base.Add(time.Second); !maxTS.Equal(want) || maxTS.Location() != time.UTC {
		t.Errorf("MAX(ts) = %v, want %v in UTC", maxTS, want)
	}
}

func testJSONRoundTrip(t *testing.T, db store.DB) {
	in := map[string]any{"a": []any{1.0, 2.0}, "b": "x ü \"q\"", "c": nil, "d": map[string]any{"e": true}}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, j) VALUES ($1, $2, $3)`, "t1", "json", string(raw))
	var (
		asBytes  []byte
		asString string
	)
	if err := db.QueryRow(ctx(t), `SELECT j, j FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", "json").Scan(&asBytes, &asString); err != nil {
		t.Fatalf("scan JSON: %v", err)
	}
	for name, got := range map[string][]byte{"[]byte": asBytes, "string": []byte(asString)} {
		var out map[string]any
		if err := json.Unmarshal(got, &out); err != nil {
			t.Errorf("JSON scanned as %s does not decode: %v (%s)", name, err, got)
			continue
		}
		if !reflect.DeepEqual(out, in) {
			t.Errorf("JSON scanned as %s = %v, want %v", name, out, in)
		}
	}
}

func testBoolAndBytes(t *testing.T, db store.DB) {
	bin := []byte{0, 1, 2, 0xff, 0, 'x'}
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, b, bin) VALUES ($1, $2, $3, $4)`, "t1", "yes", true, bin)
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, b, bin) VALUES ($1, $2, $3, $4)`, "t1", "no", false, []byte{})
	for _, tc := range []struct {
		k   string
		b   bool
		bin []byte
	}{{"yes", true, bin}, {"no", false, nil}} {
		var (
			b   bool
			got []byte
		)
		if err := db.QueryRow(ctx(t), `SELECT b, bin FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", tc.k).Scan(&b, &got); err != nil {
			t.Fatalf("scan %s: %v", tc.k, err)
		}
		if b != tc.b || len(got) != len(tc.bin) || string(got) != string(tc.bin) {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", tc.k, b, got, tc.b, tc.bin)
		}
	}
	var k string
	if err := db.QueryRow(ctx(t), `SELECT k FROM kv WHERE b = $1`, false).Scan(&k); err != nil || k != "no" {
		t.Errorf("select by bool parameter = %q, %v; want no", k, err)
	}
}

// testLarge writes store.Large and store.LargeBytes values, which an
// adapter may keep compressed, and reads back what was written: text into
// text and JSON columns, bytes into a bytes column, NULL for nil.
func testLarge(t *testing.T, db store.DB) {
	RunLarge(t, db, "kv")
}

// RunLarge is the Large case of the suite, on a table shaped like the
// suite's kv (tenant_id, k, and the columns s TEXT, j JSON or JSONB, bin
// bytes), for an adapter's own tests to run in other settings (PostgreSQL's
// query exec modes).
func RunLarge(t *testing.T, db store.DB, table string) {
	var doc strings.Builder
	doc.WriteString(`{"history": [`)
	for i := range 400 {
		fmt.Fprintf(&doc, `{"role": "user", "content": "turn %d: we sell bread to cafés \"à la\" carte"}, `, i)
	}
	doc.WriteString(`{}]}`)
	noise := Incompressible(6000)
	zeros := make([]byte, 8000)
	zeros[0], zeros[7999] = 0xff, 0xfe
	for _, tc := range []struct {
		name string
		col  string // s (text), j (JSON) or bin (bytes)
		v    []byte
	}{
		{"nil text", "s", nil},
		{"nil JSON", "j", nil},
		{"nil bytes", "bin", nil},
		{"empty", "s", []byte{}},
		{"small text", "s", []byte("hello")},
		{"large text", "s", []byte(doc.String())},
		{"small JSON", "j", []byte(`{"a": 1}`)},
		{"large JSON", "j", []byte(doc.String())},
		{"incompressible bytes", "bin", noise},
		{"compressible bytes", "bin", zeros},
		{"small non-UTF-8 bytes", "bin", []byte{0xff, 0xfe, 0}},
		{"bytes that look packed", "bin", []byte{0xff, 'S', '2', 0x01, 'x'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := strings.ReplaceAll(tc.name, " ", "-")
			// arg and dest are the value as the column's kind of Large.
			arg, dest, got := any(store.Large(tc.v)), any(new(store.Large)), func() []byte { return nil }
			if tc.col == "bin" {
				b := new(store.LargeBytes)
				*b = store.LargeBytes("not scanned") // a NULL must reset it
				arg, dest, got = store.LargeBytes(tc.v), b, func() []byte { return *b }
			} else {
				l := dest.(*store.Large)
				*l = store.Large("not scanned")
				got = func() []byte { return *l }
			}
			mustExec(t, db, `INSERT INTO `+table+` (tenant_id, k, `+tc.col+`) VALUES ($1, $2, $3)`, "t1", k, arg)
			var isNull bool
			if err := db.QueryRow(ctx(t), `SELECT `+tc.col+`, `+tc.col+` IS NULL FROM `+table+` WHERE tenant_id = $1 AND k = $2`,
				"t1", k).Scan(dest, &isNull); err != nil {
				t.Fatalf("scan: %v", err)
			}
			if isNull != (tc.v == nil) {
				t.Errorf("IS NULL = %v, want %v", isNull, tc.v == nil)
			}
			sameLarge(t, tc.col, got(), tc.v)
			// And in a transaction, through Query.
			err := db.Tx(ctx(t), func(tx store.Querier) error {
				mustExec(t, tx, `UPDATE `+table+` SET `+tc.col+` = $3 WHERE tenant_id = $1 AND k = $2`, "t1", k, arg)
				rows, err := tx.Query(ctx(t), `SELECT `+tc.col+` FROM `+table+` WHERE tenant_id = $1 AND k = $2`, "t1", k)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					if err := rows.Scan(dest); err != nil {
						return err
					}
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatalf("in a transaction: %v", err)
			}
			sameLarge(t, tc.col, got(), tc.v)
		})
	}
}

// Incompressible returns n bytes no compressor shrinks: a xorshift stream.
func Incompressible(n int) []byte {
	b := make([]byte, n)
	x := uint64(88172645463325252)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// sameLarge checks a Large read back: byte for byte, but for JSON, which
// PostgreSQL's JSONB keeps in a form of its own, compared as JSON.
func sameLarge(t *testing.T, col string, got, want []byte) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("read back nil %v, want nil %v", got == nil, want == nil)
	}
	if col == "j" && want != nil {
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("read back JSON that does not decode (%v): %.80q", err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("read back other JSON (%d bytes, want %d)", len(got), len(want))
		}
		return
	}
	if string(got) != string(want) {
		t.Errorf("read back %d bytes, want the %d written", len(got), len(want))
	}
}

func testErrNotFound(t *testing.T, db store.DB) {
	var n int64
	err := db.QueryRow(ctx(t), `SELECT n FROM kv WHERE tenant_id = $1`, "nobody").Scan(&n)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("QueryRow on no rows: %v, want ErrNotFound", err)
	}
	err = db.Tx(ctx(t), func(tx store.Querier) error {
		return tx.QueryRow(ctx(t), `SELECT n FROM kv WHERE tenant_id = $1`, "nobody").Scan(&n)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("QueryRow on no rows in Tx: %v, want ErrNotFound", err)
	}
	if _, err := store.GetTenant(ctx(t), db, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTenant(nobody): %v, want ErrNotFound", err)
	}
	// A bad query is an error, and not ErrNotFound.
	err = db.QueryRow(ctx(t), `SELECT no_such_column FROM kv`).Scan(&n)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("QueryRow of a bad query: %v, want an error other than ErrNotFound", err)
	}
}

func testExecRowsAffected(t *testing.T, db store.DB) {
	for _, k := range []string{"a", "b", "c"} {
		if n := mustExec(t, db, `INSERT INTO kv (tenant_id, k) VALUES ($1, $2)`, "t1", k); n != 1 {
			t.Errorf("INSERT affected %d rows, want 1", n)
		}
	}
	if n := mustExec(t, db, `INSERT INTO kv (tenant_id, k) VALUES ($1, $2) ON CONFLICT (tenant_id, k) DO NOTHING`, "t1", "a"); n != 0 {
		t.Errorf("INSERT ... ON CONFLICT DO NOTHING on a taken key affected %d rows, want 0", n)
	}
	if n := mustExec(t, db, `UPDATE kv SET n = n + 1 WHERE tenant_id = $1 AND k IN ($2, $3)`, "t1", "a", "b"); n != 2 {
		t.Errorf("UPDATE affected %d rows, want 2", n)
	}
	if n := mustExec(t, db, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3) ON CONFLICT (tenant_id, k) DO UPDATE SET n = excluded.n`, "t1", "c", 9); n != 1 {
		t.Errorf("upsert affected %d rows, want 1", n)
	}
	if got := counter(t, db, "c"); got != 9 {
		t.Errorf("n after upsert = %d, want 9", got)
	}
	var got string
	if err := db.QueryRow(ctx(t), `INSERT INTO kv (tenant_id, k) VALUES ($1, $2) RETURNING k`, "t1", "d").Scan(&got); err != nil || got != "d" {
		t.Errorf("INSERT ... RETURNING outside Tx = %q, %v; want d", got, err)
	}
	if n := mustExec(t, db, `DELETE FROM kv WHERE tenant_id = $1`, "t1"); n != 4 {
		t.Errorf("DELETE affected %d rows, want 4", n)
	}
}

func testTxCommit(t *testing.T, db store.DB) {
	err := db.Tx(ctx(t), func(tx store.Querier) error {
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "commit", 1)
		// The transaction sees its own writes, on SQLite too.
		if got := counter(t, tx, "commit"); got != 1 {
			t.Errorf("in Tx, counter = %d, want 1", got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Tx: %v", err)
	}
	if got := counter(t, db, "commit"); got != 1 {
		t.Errorf("after commit, counter = %d, want 1", got)
	}
}

func testTxRollback(t *testing.T, db store.DB) {
	boom := errors.New("boom")
	err := db.Tx(ctx(t), func(tx store.Querier) error {
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "rollback", 1)
		return fmt.Errorf("handler: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want fn's error", err)
	}
	if got := counter(t, db, "rollback"); got != -1 {
		t.Errorf("after rollback, the row is there (n = %d)", got)
	}
	// A failed statement fails the transaction, and nothing of it stays.
	err = db.Tx(ctx(t), func(tx store.Querier) error {
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "rollback", 1)
		_, err := tx.Exec(ctx(t), `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "rollback", 2)
		return err
	})
	if err == nil {
		t.Fatal("Tx with a duplicate key committed")
	}
	if got := counter(t, db, "rollback"); got != -1 {
		t.Errorf("after a failed statement, the row is there (n = %d)", got)
	}
}

// testTxFirstStatement: whatever a transaction's first statement is (on
// PostgreSQL it travels with the begin), its result and its failure are the
// statement's, the transaction is serializable, and a failed first
// statement leaves nothing behind, connections included.
func testTxFirstStatement(t *testing.T, db store.DB) {
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "taken", 1)
	// More failed first statements than the pool has connections: each
	// must give its connection back.
	for i := range 12 {
		err := db.Tx(ctx(t), func(tx store.Querier) error {
			_, err := tx.Exec(ctx(t), `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "taken", 2)
			return err
		})
		if err == nil {
			t.Fatalf("try %d: a first statement inserting a duplicate key committed", i)
		}
		err = db.Tx(ctx(t), func(tx store.Querier) error {
			var n int64
			return tx.QueryRow(ctx(t), `SELECT n FROM no_such_table WHERE k = $1`, "x").Scan(&n)
		})
		if err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("try %d: a first query on a missing table gave %v, want its error", i, err)
		}
	}
	if got := counter(t, db, "taken"); got != 1 {
		t.Errorf("after the failed transactions, counter = %d, want 1", got)
	}

	// A first query's rows, then more statements in the same transaction.
	err := db.Tx(ctx(t), func(tx store.Querier) error {
		rows, err := tx.Query(ctx(t), `SELECT k, n FROM kv WHERE tenant_id = $1 ORDER BY k`, "t1")
		if err != nil {
			return err
		}
		var keys []string
		for rows.Next() {
			var k string
			var n int64
			if err := rows.Scan(&k, &n); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if !slices.Equal(keys, []string{"taken"}) {
			t.Errorf("first query read %v, want [taken]", keys)
		}
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "after-query", 3)
		return nil
	})
	if err != nil {
		t.Fatalf("Tx with a first query: %v", err)
	}
	if got := counter(t, db, "after-query"); got != 3 {
		t.Errorf("after a first query and an insert, counter = %d, want 3", got)
	}

	// A first single-row query finding nothing: ErrNotFound, and the
	// transaction goes on.
	err = db.Tx(ctx(t), func(tx store.Querier) error {
		if got := counter(t, tx, "missing"); got != -1 {
			t.Errorf("first read of a missing row = %d, want -1 (ErrNotFound)", got)
		}
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "after-miss", 4)
		return nil
	})
	if err != nil || counter(t, db, "after-miss") != 4 {
		t.Fatalf("Tx after a first read that found nothing: %v, counter %d", err, counter(t, db, "after-miss"))
	}

	// No statement at all, and an error before any.
	if err := db.Tx(ctx(t), func(store.Querier) error { return nil }); err != nil {
		t.Errorf("an empty Tx = %v, want nil", err)
	}
	early := errors.New("early")
	if err := db.Tx(ctx(t), func(store.Querier) error { return early }); !errors.Is(err, early) {
		t.Errorf("Tx failing before its first statement = %v, want its error", err)
	}

	if db.Dialect() == store.Postgres {
		err := db.Tx(ctx(t), func(tx store.Querier) error {
			var level string
			if err := tx.QueryRow(ctx(t), `SHOW transaction_isolation`).Scan(&level); err != nil {
				return err
			}
			if level != "serializable" {
				t.Errorf("a transaction's first statement runs at %q, want serializable", level)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func testTxPanic(t *testing.T, db store.DB) {
	type marker struct{}
	func() {
		defer func() {
			if p := recover(); p != (marker{}) {
				t.Errorf("recovered %v, want the panic of fn", p)
			}
		}()
		_ = db.Tx(ctx(t), func(tx store.Querier) error {
			mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "panic", 1)
			panic(marker{})
		})
		t.Error("Tx returned after fn panicked")
	}()
	if got := counter(t, db, "panic"); got != -1 {
		t.Errorf("after a panic, the row is there (n = %d)", got)
	}
	// The connection went back clean: the database still writes.
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "after", 2)
	if err := db.Tx(ctx(t), func(tx store.Querier) error {
		_, err := tx.Exec(ctx(t), `UPDATE kv SET n = 3 WHERE tenant_id = $1 AND k = $2`, "t1", "after")
		return err
	}); err != nil {
		t.Fatalf("Tx after a panic: %v", err)
	}
	if got := counter(t, db, "after"); got != 3 {
		t.Errorf("counter after = %d, want 3", got)
	}
}

func testTxUncommittedInvisible(t *testing.T, db store.DB) {
	err := db.Tx(ctx(t), func(tx store.Querier) error {
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, $3)`, "t1", "pending", 1)
		// A read outside the transaction runs elsewhere and must not see it.
		if got := counter(t, db, "pending"); got != -1 {
			t.Errorf("a read outside the Tx sees its uncommitted row (n = %d)", got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Tx: %v", err)
	}
	if got := counter(t, db, "pending"); got != 1 {
		t.Errorf("after commit, counter = %d, want 1", got)
	}
}

func testTxConcurrentIncrements(t *testing.T, db store.DB) {
	const workers, each = 8, 5
	mustExec(t, db, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, 0)`, "t1", "counter")
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				// Read, then write what was read plus one: without isolation,
				// two transactions read the same n and one increment is lost.
				errs <- db.Tx(c, func(tx store.Querier) error {
					var n int64
					if err := tx.QueryRow(c, `SELECT n FROM kv WHERE tenant_id = $1 AND k = $2`, "t1", "counter").Scan(&n); err != nil {
						return err
					}
					_, err := tx.Exec(c, `UPDATE kv SET n = $1 WHERE tenant_id = $2 AND k = $3`, n+1, "t1", "counter")
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
	if got := counter(t, db, "counter"); got != workers*each {
		t.Errorf("counter = %d after %d increments: updates were lost", got, workers*each)
	}
}

func testTenants(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, tn := range []store.Tenant{
		{ID: "zeta", Name: "Zeta Inc", CreatedAt: at},
		{ID: "acme", Name: "Acme", CreatedAt: at.Add(time.Hour)},
	} {
		if err := store.CreateTenant(c, db, tn); err != nil {
			t.Fatalf("CreateTenant(%s): %v", tn.ID, err)
		}
	}
	got, err := store.GetTenant(c, db, "acme")
	if err != nil {
		t.Fatalf("GetTenant: %v", err)
	}
	if want := (store.Tenant{ID: "acme", Name: "Acme", CreatedAt: at.Add(time.Hour)}); got != want {
		t.Errorf("GetTenant = %+v, want %+v", got, want)
	}
	err = store.CreateTenant(c, db, store.Tenant{ID: "acme", Name: "Other"})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateTenant of a taken id: %v, want ErrConflict", err)
	}
	list, err := store.ListTenants(c, db)
	if err != nil {
		t.Fatalf("ListTenants: %v", err)
	}
	var ids []string
	for _, tn := range list {
		ids = append(ids, tn.ID)
	}
	if want := []string{"acme", "zeta"}; !slices.Equal(ids, want) {
		t.Errorf("ListTenants ids = %v, want %v", ids, want)
	}
	if list[0].Name != "Acme" {
		t.Errorf("ListTenants kept the first name? got %q, want Acme", list[0].Name)
	}
	for _, bad := range []store.Tenant{
		{ID: "", Name: "x"},
		{ID: "a.b", Name: "x"},
		{ID: "a b", Name: "x"},
		{ID: "ok", Name: ""},
		{ID: "ok", Name: strings.Repeat("n", 201)},
	} {
		err := store.CreateTenant(c, db, bad)
		if err == nil {
			t.Errorf("CreateTenant(%+v) succeeded, want a validation error", bad)
		} else if errors.Is(err, store.ErrConflict) {
			t.Errorf("CreateTenant(%+v): %v, want a validation error", bad, err)
		}
	}
	if _, err := store.GetTenant(c, db, "ok"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an invalid tenant was stored: GetTenant(ok) = %v", err)
	}
}

func testTokens(t *testing.T, db store.DB) {
	c := ctx(t)
	for _, id := range []string{"acme", "zeta"} {
		if err := store.CreateTenant(c, db, store.Tenant{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	secret, tok, err := store.CreateToken(c, db, "acme", "ci", nil)
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if !strings.HasPrefix(secret, store.TokenPrefix) || len(secret) < len(store.TokenPrefix)+40 {
		t.Errorf("secret %q: want %s and at least 40 random characters", secret, store.TokenPrefix)
	}
	if tok.TenantID != "acme" || tok.Name != "ci" || tok.ID == "" || tok.ExpiresAt != nil || tok.RevokedAt != nil {
		t.Errorf("CreateToken returned %+v", tok)
	}

	// What is stored is the hash, never the secret.
	var hash string
	if err := db.QueryRow(c, `SELECT token_hash FROM api_tokens WHERE id = $1`, tok.ID).Scan(&hash); err != nil {
		t.Fatalf("read token_hash: %v", err)
	}
	if hash != store.HashToken(secret) || len(hash) != 64 {
		t.Errorf("token_hash = %q, want the SHA-256 hex of the secret", hash)
	}
	var leaks int64
	if err := db.QueryRow(c, `SELECT COUNT(*) FROM api_tokens WHERE id = $1 OR name = $1 OR token_hash = $1 OR tenant_id = $1`, secret).Scan(&leaks); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 {
		t.Errorf("the secret is stored in api_tokens (%d rows)", leaks)
	}

	got, err := store.Authenticate(c, db, secret, now)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if got.ID != tok.ID || got.TenantID != "acme" || !got.CreatedAt.Equal(tok.CreatedAt) {
		t.Errorf("Authenticate = %+v, want %+v", got, tok)
	}

	expiry := now.Add(time.Hour)
	expSecret, expTok, err := store.CreateToken(c, db, "acme", "short", &expiry)
	if err != nil {
		t.Fatalf("CreateToken with expiry: %v", err)
	}
	if expTok.ExpiresAt == nil || !expTok.ExpiresAt.Equal(expiry.Truncate(time.Microsecond)) {
		t.Errorf("ExpiresAt = %v, want %v", expTok.ExpiresAt, expiry)
	}
	if _, err := store.Authenticate(c, db, expSecret, expiry.Add(-time.Second)); err != nil {
		t.Errorf("Authenticate before expiry: %v", err)
	}
	other, otherTok, err := store.CreateToken(c, db, "zeta", "z", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.RevokeToken(c, db, "zeta", otherTok.ID, now); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if err := store.RevokeToken(c, db, "zeta", otherTok.ID, now.Add(time.Hour)); err != nil {
		t.Errorf("RevokeToken again: %v", err)
	}

	for _, tc := range []struct {
		name     string
		secret   string
		at       time.Time
		reason   store.TokenReason
		notFound bool
	}{
		{"unknown", store.TokenPrefix + "nosuchsecret", now, store.TokenUnknown, true},
		{"malformed", "Bearer " + secret, now, store.TokenUnknown, true},
		{"empty", "", now, store.TokenUnknown, true},
		{"expired at the instant", expSecret, expiry, store.TokenExpired, false},
		{"expired after", expSecret, expiry.Add(time.Minute), store.TokenExpired, false},
		{"revoked", other, now, store.TokenRevoked, false},
	} {
		_, err := store.Authenticate(c, db, tc.secret, tc.at)
		var te *store.TokenError
		if !errors.As(err, &te) || te.Reason != tc.reason {
			t.Errorf("%s: Authenticate = %v, want a TokenError %s", tc.name, err, tc.reason)
			continue
		}
		if !errors.Is(err, store.ErrUnauthenticated) {
			t.Errorf("%s: %v is not ErrUnauthenticated", tc.name, err)
		}
		if errors.Is(err, store.ErrNotFound) != tc.notFound {
			t.Errorf("%s: errors.Is(%v, ErrNotFound) = %v, want %v", tc.name, err, !tc.notFound, tc.notFound)
		}
	}

	// Tenants are isolated: acme cannot revoke zeta's token, nor a missing one.
	if err := store.RevokeToken(c, db, "acme", otherTok.ID, now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeToken of another tenant's token: %v, want ErrNotFound", err)
	}
	if _, _, err := store.CreateToken(c, db, "nobody", "x", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateToken for a missing tenant: %v, want ErrNotFound", err)
	}
	if _, _, err := store.CreateToken(c, db, "acme", "", nil); err == nil {
		t.Error("CreateToken with an empty name succeeded")
	}
	list, err := store.ListTokens(c, db, "zeta")
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if len(list) != 1 || list[0].ID != otherTok.ID || list[0].RevokedAt == nil || !list[0].RevokedAt.Equal(now.Truncate(time.Microsecond)) {
		t.Errorf("ListTokens(zeta) = %+v, want its token revoked at %v (the first revocation)", list, now)
	}
	if list, err := store.ListTokens(c, db, "acme"); err != nil || len(list) != 2 {
		t.Errorf("ListTokens(acme) = %d tokens, %v; want 2", len(list), err)
	}
}

func testInbox(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		consumer, event string
		at              time.Time
		first           bool
	}{
		{"runner", "e1", at, true},
		{"runner", "e1", at.Add(time.Hour), false}, // redelivery
		{"extractor", "e1", at, true},              // another consumer of the same event
		{"runner", "e2", at.Add(2 * time.Hour), true},
	} {
		first, err := store.MarkHandled(c, db, "acme", tc.consumer, tc.event, tc.at)
		if err != nil {
			t.Fatalf("MarkHandled(%s, %s): %v", tc.consumer, tc.event, err)
		}
		if first != tc.first {
			t.Errorf("MarkHandled(%s, %s) first = %v, want %v", tc.consumer, tc.event, first, tc.first)
		}
	}
	if _, err := store.MarkHandled(c, db, "acme", "", "e3", at); err == nil {
		t.Error("MarkHandled with no consumer succeeded")
	}
	n, err := store.PruneInbox(c, db, at.Add(time.Hour))
	if err != nil {
		t.Fatalf("PruneInbox: %v", err)
	}
	if n != 2 {
		t.Errorf("PruneInbox removed %d rows, want 2 (runner/e1 and extractor/e1)", n)
	}
	if first, err := store.MarkHandled(c, db, "acme", "runner", "e2", at); err != nil || first {
		t.Errorf("after pruning, MarkHandled(runner, e2) = %v, %v; want false: it is newer", first, err)
	}
}

func testInboxInTx(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	// The handler fails after marking: the mark is rolled back with its
	// effect, so the redelivery is handled as a first delivery.
	failed := errors.New("handler failed")
	err := db.Tx(c, func(tx store.Querier) error {
		first, err := store.MarkHandled(c, tx, "acme", "runner", "e1", at)
		if err != nil || !first {
			t.Errorf("MarkHandled in Tx = %v, %v; want first", first, err)
		}
		mustExec(t, tx, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, 1)`, "t1", "effect")
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("Tx = %v, want the handler's error", err)
	}
	handle := func() (bool, error) {
		var first bool
		err := db.Tx(c, func(tx store.Querier) error {
			var err error
			if first, err = store.MarkHandled(c, tx, "acme", "runner", "e1", at); err != nil || !first {
				return err
			}
			_, err = tx.Exec(c, `INSERT INTO kv (tenant_id, k, n) VALUES ($1, $2, 1)`, "t1", "effect")
			return err
		})
		return first, err
	}
	if first, err := handle(); err != nil || !first {
		t.Fatalf("first handling after a rollback = %v, %v; want first", first, err)
	}
	if first, err := handle(); err != nil || first {
		t.Fatalf("redelivery = %v, %v; want not first and no error", first, err)
	}
	if got := counter(t, db, "effect"); got != 1 {
		t.Errorf("effect applied %d times, want once", got)
	}
}

// testMarkHandledWith: the inbox row and the events of a handling, at the
// end of its transaction; a second handling of the event enqueues nothing,
// with or without events, and a rolled-back one leaves neither.
func testMarkHandledWith(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	msg := func(id string) store.OutboxMessage {
		return store.OutboxMessage{TenantID: "acme", EventID: id, Subject: "s." + id, Header: map[string][]string{"k": {"v"}},
			Data: []byte(`{"id":"` + id + `"}`)}
	}
	handle := func(eventID string, fail bool, msgs ...store.OutboxMessage) (first bool, err error) {
		err = db.Tx(c, func(tx store.Querier) error {
			if first, err = store.MarkHandledWith(c, tx, db.Dialect(), "acme", "runner", eventID, at, msgs); err != nil {
				return err
			}
			if fail {
				return errors.New("handler failed")
			}
			return nil
		})
		if fail && err != nil {
			err = nil
		}
		return first, err
	}
	check := func(what string, first, want bool, err error) {
		t.Helper()
		if err != nil || first != want {
			t.Errorf("%s: first = %v, %v; want %v", what, first, err, want)
		}
	}
	first, err := handle("e1", true, msg("o1"))
	check("a handling rolled back", first, true, err)
	first, err = handle("e1", false, msg("o1"), msg("o2"))
	check("the handling after the rollback", first, true, err)
	first, err = handle("e1", false, msg("o3"))
	check("a second handling", first, false, err)
	first, err = handle("e2", false)
	check("a handling with no events", first, true, err)
	first, err = handle("e2", false, msg("o4"))
	check("a second handling, with events", first, false, err)

	rows, err := store.Unsent(c, db, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range rows {
		ids = append(ids, m.EventID)
		if m.EventID == "o1" && (m.Subject != "s.o1" || string(m.Data) != `{"id":"o1"}` || !slices.Equal(m.Header["k"], []string{"v"})) {
			t.Errorf("o1 enqueued as %+v", m)
		}
	}
	if want := []string{"o1", "o2"}; !slices.Equal(ids, want) {
		t.Errorf("outbox holds %v, want %v (the first handling's events, in order)", ids, want)
	}
	for _, id := range []string{"e1", "e2"} {
		if done, err := store.Handled(c, db, "runner", id); err != nil || !done {
			t.Errorf("Handled(%s) = %v, %v; want true", id, done, err)
		}
	}
}

func testMarkHandledAll(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	reply := func(id string) *store.OutboxMessage {
		return &store.OutboxMessage{TenantID: "acme", EventID: id, Subject: "praetor.task.completed.acme." + id,
			Header: map[string][]string{"Nats-Msg-Id": {id}}, Data: []byte(`{"id":"` + id + `"}`), CreatedAt: at}
	}
	h := func(consumer, event string, emit *store.OutboxMessage) store.Handling {
		return store.Handling{TenantID: "acme", Consumer: consumer, EventID: event, Emit: emit}
	}
	first, err := store.MarkHandledAll(c, db, at, []store.Handling{
		h("worker", "d1", reply("a1")), h("worker", "d2", reply("a2")), h("worker", "d3", nil), h("other", "d1", reply("o1")),
	})
	if err != nil {
		t.Fatalf("MarkHandledAll: %v", err)
	}
	if want := []bool{true, true, true, true}; !slices.Equal(first, want) {
		t.Errorf("first = %v, want %v", first, want)
	}
	// A redelivery of d1 and d3, a new d4, and d4 again in the same batch:
	// only d4's first handling is first, and only its message is enqueued.
	first, err = store.MarkHandledAll(c, db, at.Add(time.Hour), []store.Handling{
		h("worker", "d1", reply("a1-again")), h("worker", "d4", reply("a4")), h("worker", "d3", reply("a3-late")), h("worker", "d4", reply("a4-twice")),
	})
	if err != nil {
		t.Fatalf("MarkHandledAll, second batch: %v", err)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(first, want) {
		t.Errorf("second batch first = %v, want %v", first, want)
	}
	got, err := store.Unsent(c, db, 100)
	if err != nil {
		t.Fatalf("Unsent: %v", err)
	}
	ids := eventIDs(got)
	if want := []string{"a1", "a2", "o1", "a4"}; !slices.Equal(ids, want) {
		t.Fatalf("outbox = %v, want %v (the messages of first handlings, in order)", ids, want)
	}
	want := *reply("a1")
	want.ID = got[0].ID
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("outbox[0] = %+v, want %+v", got[0], want)
	}
	for _, k := range [][2]string{{"worker", "d1"}, {"worker", "d3"}, {"worker", "d4"}, {"other", "d1"}} {
		if ok, err := store.Handled(c, db, k[0], k[1]); err != nil || !ok {
			t.Errorf("Handled(%s, %s) = %v, %v; want true", k[0], k[1], ok, err)
		}
	}
	if ok, _ := store.Handled(c, db, "other", "d2"); ok {
		t.Error("Handled(other, d2) = true: another consumer's row")
	}
	if first, err := store.MarkHandledAll(c, db, at, nil); err != nil || first != nil {
		t.Errorf("MarkHandledAll(nothing) = %v, %v", first, err)
	}
	if _, err := store.MarkHandledAll(c, db, at, []store.Handling{h("worker", "d9", nil), {TenantID: "acme", EventID: "d10"}}); err == nil {
		t.Error("MarkHandledAll with no consumer succeeded")
	}
	if _, err := store.MarkHandledAll(c, db, at, []store.Handling{h("worker", "d11", &store.OutboxMessage{TenantID: "acme", EventID: "x"})}); err == nil {
		t.Error("MarkHandledAll with a message without subject succeeded")
	}
	if ok, _ := store.Handled(c, db, "worker", "d9"); ok {
		t.Error("a rejected batch marked d9 handled")
	}
}

// PostgresEnqueue is Enqueue as part of a larger statement: its rows go
// in, in order, only where its condition holds.
func testPostgresEnqueue(t *testing.T, db store.DB) {
	if db.Dialect() != store.Postgres {
		t.Skip("PostgreSQL only")
	}
	c := ctx(t)
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	msg := func(id string) store.OutboxMessage {
		return store.OutboxMessage{TenantID: "acme", EventID: id, Subject: "praetor.x." + id,
			Header: map[string][]string{"Nats-Msg-Id": {id}, "X-Multi": {"a", "b"}}, Data: []byte(id), CreatedAt: at}
	}
	run := func(cond string, msgs ...store.OutboxMessage) {
		t.Helper()
		q, args, err := store.PostgresEnqueue(msgs, 2, cond)
		if err != nil {
			t.Fatalf("PostgresEnqueue: %v", err)
		}
		var one int
		if err := db.QueryRow(c, `WITH gate AS (SELECT $1::int AS n), ins AS (`+q+`) SELECT n FROM gate`, append([]any{1}, args...)...).Scan(&one); err != nil || one != 1 {
			t.Fatalf("statement with PostgresEnqueue = %d, %v", one, err)
		}
	}
	run(`EXISTS (SELECT 1 FROM gate WHERE n = 1)`, msg("e3"), msg("e1"), msg("e2"), msg("e1"))
	run(`EXISTS (SELECT 1 FROM gate WHERE n = 2)`, msg("e4"))
	run(`true`, msg("e2"), store.OutboxMessage{TenantID: "acme", EventID: "e5", Subject: "s"})
	got, err := store.Unsent(c, db, 10)
	if err != nil {
		t.Fatal(err)
	}
	ids := eventIDs(got)
	if want := []string{"e3", "e1", "e2", "e5"}; !slices.Equal(ids, want) {
		t.Fatalf("outbox = %v, want %v (in order, each once, none where the condition failed)", ids, want)
	}
	want := msg("e3")
	want.ID = got[0].ID
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("outbox[0] = %+v, want %+v", got[0], want)
	}
	if e5 := got[3]; e5.Header != nil || e5.Data != nil || e5.CreatedAt.IsZero() {
		t.Errorf("a message without header and data came back as %+v", e5)
	}
	if _, _, err := store.PostgresEnqueue([]store.OutboxMessage{{TenantID: "acme", Subject: "s"}}, 1, "true"); err == nil {
		t.Error("PostgresEnqueue without an event id succeeded")
	}
}

// testOutboxUnsentOn: an event is behind the others of its subject while
// they are unsent, in outbox order up to the limit; its own row, other
// subjects and sent rows do not count.
func testOutboxUnsentOn(t *testing.T, db store.DB) {
	c := ctx(t)
	msg := func(id, subject string) store.OutboxMessage {
		return store.OutboxMessage{TenantID: "acme", EventID: id, Subject: subject, Data: []byte(`{}`)}
	}
	if err := store.Enqueue(c, db, msg("a1", "s.a"), msg("b1", "s.b"), msg("a0", "s.a"), msg("a3", "s.a")); err != nil {
		t.Fatal(err)
	}
	check := func(subject, id string, limit int, want ...string) {
		t.Helper()
		got, err := store.UnsentOn(c, db, subject, id, limit)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("UnsentOn(%s, %s, %d) = %v, %v; want %v", subject, id, limit, got, err, want)
		}
	}
	check("s.a", "a2", 8, "a1", "a0", "a3") // all ahead of it, in outbox order
	check("s.a", "a2", 2, "a1", "a0")       // the first two
	check("s.a", "a0", 8, "a1", "a3")       // not itself
	check("s.c", "c1", 8)                   // nothing on that subject
	if err := store.MarkSentEvents(c, db, []string{"a1", "a3"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	check("s.a", "a2", 8, "a0") // a1 and a3 are published
	check("s.a", "a0", 8)
	check("s.b", "b2", 8, "b1")
}

func testOutboxEnqueue(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	msg := func(id string) store.OutboxMessage {
		return store.OutboxMessage{
			TenantID:  "acme",
			EventID:   id,
			Subject:   "praetor.turn.received.acme." + id,
			Header:    map[string][]string{"Nats-Msg-Id": {id}, "ce-type": {"dev.praetor.turn.received.v1"}, "X-Multi": {"a", "b"}},
			Data:      []byte(`{"id":"` + id + `"}`),
			CreatedAt: at,
		}
	}
	if err := store.Enqueue(c, db, msg("e1"), msg("e2"), msg("e1")); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	// A re-run of the handler in a transaction enqueues the same ids again,
	// plus a new one.
	if err := db.Tx(c, func(tx store.Querier) error {
		return store.Enqueue(c, tx, msg("e2"), msg("e3"), store.OutboxMessage{TenantID: "zeta", EventID: "e4", Subject: "s"})
	}); err != nil {
		t.Fatalf("Enqueue in Tx: %v", err)
	}
	got, err := store.Unsent(c, db, 10)
	if err != nil {
		t.Fatalf("Unsent: %v", err)
	}
	var ids []string
	for i, m := range got {
		ids = append(ids, m.EventID)
		if i > 0 && m.ID <= got[i-1].ID {
			t.Errorf("Unsent not in id order: %d after %d", m.ID, got[i-1].ID)
		}
		if m.SentAt != nil {
			t.Errorf("unsent %s has SentAt %v", m.EventID, m.SentAt)
		}
	}
	if want := []string{"e1", "e2", "e3", "e4"}; !slices.Equal(ids, want) {
		t.Fatalf("Unsent event ids = %v, want %v (each once, in enqueue order)", ids, want)
	}
	want := msg("e1")
	want.ID = got[0].ID
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("Unsent[0] = %+v, want %+v", got[0], want)
	}
	if e4 := got[3]; e4.Header != nil || e4.Data != nil || e4.TenantID != "zeta" || e4.CreatedAt.IsZero() {
		t.Errorf("a message without header and data came back as %+v, want nil header and data and a creation time", e4)
	}
	limited, err := store.Unsent(c, db, 2)
	if err != nil || len(limited) != 2 || limited[0].EventID != "e1" || limited[1].EventID != "e2" {
		t.Errorf("Unsent(limit 2) = %v, %v; want e1, e2", limited, err)
	}
	if _, err := store.Unsent(c, db, 0); err == nil {
		t.Error("Unsent(limit 0) succeeded")
	}
	// Marked sent, a message leaves the outbox, but for the one with the
	// highest id, which stays, marked (see testOutboxNeverGivesAnIdTwice).
	if err := store.MarkSent(c, db, []int64{got[0].ID, got[3].ID}, time.Now()); err != nil {
		t.Fatal(err)
	}
	rows := func(cond string, id int64) int {
		t.Helper()
		var n int
		if err := db.QueryRow(c, `SELECT COUNT(*) FROM outbox WHERE id = $1 AND `+cond, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows("true", got[0].ID); n != 0 {
		t.Errorf("e1 marked sent: %d rows left, want it deleted", n)
	}
	if n := rows("sent_at IS NOT NULL", got[3].ID); n != 1 {
		t.Errorf("e4, the highest id, marked sent: %d rows marked sent, want it kept, marked", n)
	}
	// DeleteOutbox takes an unsent message, never a sent one: e4, below the
	// highest once another is enqueued, stays.
	if err := store.Enqueue(c, db, msg("e5")); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteOutbox(c, db, got[3].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := rows("true", got[3].ID); n != 1 {
		t.Fatalf("DeleteOutbox of a sent message: %d rows left, want it kept", n)
	}
	// The next mark deletes e4 with its own message.
	if err := store.MarkSent(c, db, []int64{got[2].ID}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := rows("true", got[3].ID); n != 0 {
		t.Errorf("e4, marked and no longer the highest: %d rows left after the next mark, want it deleted", n)
	}
	after, err := store.UnsentAfter(c, db, got[0].ID, 10)
	if err != nil || len(after) != 2 || after[0].EventID != "e2" || after[1].EventID != "e5" {
		t.Errorf("UnsentAfter(e1's id) = %v, %v; want e2, e5", after, err)
	}
	if err := store.Enqueue(c, db, store.OutboxMessage{TenantID: "acme", Subject: "s"}); err == nil {
		t.Error("Enqueue without an event id succeeded")
	}
}

func testOutboxMarkSentAndPrune(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	var msgs []store.OutboxMessage
	for i := range 5 {
		msgs = append(msgs, store.OutboxMessage{TenantID: "acme", EventID: fmt.Sprint("e", i), Subject: "s", Data: []byte{byte(i)}, CreatedAt: at})
	}
	if err := store.Enqueue(c, db, msgs...); err != nil {
		t.Fatal(err)
	}
	all, err := store.Unsent(c, db, 100)
	if err != nil || len(all) != 5 {
		t.Fatalf("Unsent = %d messages, %v; want 5", len(all), err)
	}
	sentAt := at.Add(time.Minute)
	if err := store.MarkSent(c, db, []int64{all[0].ID, all[2].ID, 987654321}, sentAt); err != nil {
		t.Fatalf("MarkSent: %v", err)
	}
	// Marking again, like an unknown id, is no error.
	if err := store.MarkSent(c, db, []int64{all[0].ID}, sentAt.Add(time.Hour)); err != nil {
		t.Fatalf("MarkSent again: %v", err)
	}
	if err := store.MarkSent(c, db, nil, sentAt); err != nil {
		t.Fatalf("MarkSent of nothing: %v", err)
	}
	// By event id, as a handler that published its own events marks them;
	// unknown event ids are ignored.
	if err := store.MarkSentEvents(c, db, []string{"e1", "no-such-event"}, sentAt); err != nil {
		t.Fatalf("MarkSentEvents: %v", err)
	}
	rest, err := store.Unsent(c, db, 100)
	if err != nil {
		t.Fatal(err)
	}
	ids := eventIDs(rest)
	if want := []string{"e3", "e4"}; !slices.Equal(ids, want) {
		t.Errorf("Unsent after MarkSent = %v, want %v", ids, want)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(c, `SELECT COUNT(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The outbox holds only what is unsent: the sent ones are gone.
	if n := count(); n != 2 {
		t.Errorf("the outbox holds %d messages after three of five were marked sent, want 2", n)
	}
	// Many ids at once (more than one batch), the highest id among them.
	var many []store.OutboxMessage
	for i := range 1001 {
		many = append(many, store.OutboxMessage{TenantID: "acme", EventID: fmt.Sprint("m", i), Subject: "s", CreatedAt: at})
	}
	if err := db.Tx(c, func(tx store.Querier) error { return store.Enqueue(c, tx, many...) }); err != nil {
		t.Fatal(err)
	}
	unsent, err := store.Unsent(c, db, 2000)
	if err != nil || len(unsent) != 1003 {
		t.Fatalf("Unsent = %d messages, %v; want 1003", len(unsent), err)
	}
	var manyIDs []int64
	for _, m := range unsent[2:] {
		manyIDs = append(manyIDs, m.ID)
	}
	markedAt := sentAt.Add(time.Hour)
	if err := store.MarkSent(c, db, manyIDs, markedAt); err != nil {
		t.Fatalf("MarkSent of %d ids: %v", len(manyIDs), err)
	}
	if left, err := store.Unsent(c, db, 2000); err != nil || len(left) != 2 {
		t.Errorf("Unsent after marking %d = %d, %v; want 2", len(manyIDs), len(left), err)
	}
	// The highest, m1000, stays marked so that no id is given again: the
	// prune keeps it too.
	if n := count(); n != 3 {
		t.Errorf("the outbox holds %d messages, want 3: e3, e4 and m1000 marked sent", n)
	}
	if n, err := store.PruneSent(c, db, at.Add(24*time.Hour)); err != nil || n != 0 {
		t.Errorf("PruneSent with the highest id the only one marked = %d, %v; want 0", n, err)
	}
	// Pruned event ids do not come back when enqueued again by a late re-run:
	// that is the stream's duplicate window's job, not the outbox's. Here we
	// only check that ids keep growing.
	if err := store.Enqueue(c, db, store.OutboxMessage{TenantID: "acme", EventID: "late", Subject: "s", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	left, err := store.Unsent(c, db, 100)
	if err != nil || len(left) != 3 || left[2].EventID != "late" || left[2].ID <= unsent[len(unsent)-1].ID {
		t.Errorf("a new message = %+v, %v; want a higher id than every earlier one", left, err)
	}
	// Only messages marked before the cut go; unsent ones stay whatever
	// their age.
	if n, err := store.PruneSent(c, db, markedAt); err != nil || n != 0 {
		t.Errorf("PruneSent before m1000's mark = %d, %v; want 0", n, err)
	}
	if n, err := store.PruneSent(c, db, at.Add(24*time.Hour)); err != nil || n != 1 {
		t.Errorf("PruneSent once a later message exists = %d, %v; want 1 (m1000)", n, err)
	}
	if n := count(); n != 3 {
		t.Errorf("after pruning the outbox holds %d messages, want the 3 unsent", n)
	}
}

// testOutboxNeverGivesAnIdTwice deletes the message with the highest id the
// ways the relay does (dead-lettered, pruned): no new message takes its id,
// so a mark or a delete by that id cannot fall on a new one.
func testOutboxNeverGivesAnIdTwice(t *testing.T, db store.DB) {
	c := ctx(t)
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	enqueue := func(id string) store.OutboxMessage {
		t.Helper()
		if err := store.Enqueue(c, db, store.OutboxMessage{TenantID: "acme", EventID: id, Subject: "s", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		all, err := store.Unsent(c, db, 100)
		if err != nil || len(all) == 0 || all[len(all)-1].EventID != id {
			t.Fatalf("Unsent after enqueueing %s = %+v, %v", id, all, err)
		}
		return all[len(all)-1]
	}
	enqueue("a")
	x := enqueue("x")
	// Dead-lettered, x is the highest: marked sent, not deleted.
	if err := store.DeleteOutbox(c, db, x.ID, at); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(c, `SELECT COUNT(*) FROM outbox WHERE id = $1 AND sent_at IS NOT NULL`, x.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the highest message dead-lettered: %d sent rows of its id, %v; want it kept, marked sent", n, err)
	}
	y := enqueue("y")
	if y.ID <= x.ID {
		t.Fatalf("a message enqueued after the highest was dead-lettered got id %d, want above %d", y.ID, x.ID)
	}
	// What a relay still holding x does next touches nothing of y.
	if err := store.MarkSent(c, db, []int64{x.ID}, at); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteOutbox(c, db, x.ID, at); err != nil {
		t.Fatal(err)
	}
	if all, err := store.Unsent(c, db, 100); err != nil || len(all) != 2 || all[1].EventID != "y" {
		t.Fatalf("Unsent = %+v, %v; want a and y", all, err)
	}
	// Below the highest, an unsent dead letter is deleted.
	a, err := store.Unsent(c, db, 1)
	if err != nil || len(a) != 1 || a[0].EventID != "a" {
		t.Fatalf("Unsent(1) = %+v, %v; want a", a, err)
	}
	if err := store.DeleteOutbox(c, db, a[0].ID, at); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(c, `SELECT COUNT(*) FROM outbox WHERE id = $1`, a[0].ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("an unsent dead letter below the highest: %d rows left, %v; want it deleted", n, err)
	}
	// Everything sent and old: the prune keeps the highest; the next
	// message still gets a new id.
	if err := store.MarkSent(c, db, []int64{y.ID}, at); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PruneSent(c, db, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(c, `SELECT COUNT(*) FROM outbox WHERE id = $1`, y.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after pruning everything sent: %d rows of the highest id, %v; want it kept", n, err)
	}
	if z := enqueue("z"); z.ID <= y.ID {
		t.Fatalf("after a prune of everything, a new message got id %d, want above %d", z.ID, y.ID)
	}
}

func testTryLock(t *testing.T, db store.DB) {
	c := ctx(t)
	name := "storetest-" + t.Name()
	unlock, ok, err := db.TryLock(c, name)
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v; want the lock", ok, err)
	}
	// Held across statements and transactions, exclusive while held.
	if _, err := db.Exec(c, `CREATE TABLE IF NOT EXISTS lock_probe (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, ok2, err := db.TryLock(c, name); err != nil || ok2 {
		t.Fatalf("a second TryLock while held = %v, %v; want refused", ok2, err)
	}
	other, ok3, err := db.TryLock(c, name+"-other")
	if err != nil || !ok3 {
		t.Fatalf("another lock name = %v, %v; want it free", ok3, err)
	}
	other()
	unlock()
	unlock() // twice is harmless
	again, ok, err := db.TryLock(c, name)
	if err != nil || !ok {
		t.Fatalf("TryLock after unlock = %v, %v; want the lock", ok, err)
	}
	again()
}

// eventIDs returns the event ids of outbox messages, in order.
func eventIDs(ms []store.OutboxMessage) []string {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.EventID)
	}
	return ids
}
