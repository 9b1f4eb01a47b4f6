package postgres

import (
	"testing"

	"github.com/praetorhq/praetor/internal/testenv"
)

// A setting the server does not have (tcp_user_timeout on PostgreSQL 11)
// is left out; the others are set, and the connection works.
func TestSetSettingsSkipsWhatTheServerLacks(t *testing.T) {
	db, err := Open(t.Context(), Config{URL: testenv.Postgres(t), MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(t.Context(), setSettings([]setting{{"tcp_keepalives_count", 7}, {"tcp_no_such_setting", 1}})); err != nil {
		t.Fatalf("a setting the server lacks fails the statement: %v", err)
	}
	var count string
	if err := conn.QueryRow(t.Context(), "SHOW tcp_keepalives_count").Scan(&count); err != nil || count != "7" {
		t.Errorf("tcp_keepalives_count = %q (%v), want 7", count, err)
	}
}
