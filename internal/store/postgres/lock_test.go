package postgres_test

import (
	"net/url"
	"testing"

	"github.com/praetorhq/praetor/internal/testenv"
)

// A process that opened its store before its schema existed (current_schema()
// was NULL then, so the lock key was taken with an empty schema) and a
// process that opened it after both work on the same tables once the schema
// is there: they must take the same relay lock, or both relays lead.
func TestLockKeyFollowsASchemaCreatedAfterOpen(t *testing.T) {
	base := testenv.Postgres(t)
	admin := open(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Skipf("DATABASE_URL is not a URL: %v", err)
	}
	late := u.Query().Get("search_path") + "_late"
	q := u.Query()
	q.Set("search_path", late)
	u.RawQuery = q.Encode()

	early := open(t, u.String()) // the schema does not exist yet
	if _, err := admin.Exec(t.Context(), "CREATE SCHEMA "+late); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(t.Context(), "DROP SCHEMA IF EXISTS "+late+" CASCADE") })
	after := open(t, u.String())

	var s1, s2 string
	if err := early.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&s1); err != nil {
		t.Fatal(err)
	}
	if err := after.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&s2); err != nil {
		t.Fatal(err)
	}
	if s1 != s2 {
		t.Skipf("the two stores work in schemas %q and %q", s1, s2)
	}

	unlock, ok, err := early.TryLock(t.Context(), "outbox-relay")
	if err != nil || !ok {
		t.Fatalf("first TryLock = %v, %v", ok, err)
	}
	defer unlock()
	unlock2, ok2, err := after.TryLock(t.Context(), "outbox-relay")
	if err != nil {
		t.Fatal(err)
	}
	if ok2 {
		unlock2()
		t.Errorf("both stores of schema %s hold the relay lock: the key of the store opened before the schema existed names no schema", s1)
	}
}
