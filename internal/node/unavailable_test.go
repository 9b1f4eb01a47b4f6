package node_test

import (
	"context"
	"testing"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store/testdb"
)

// On PostgreSQL the services are told which failures of the store mean the
// database is down; on dev's SQLite, which has no outage of its own, none.
func TestStoreUnavailable(t *testing.T) {
	if un := (node.Deps{DB: testdb.SQLite(t)}).StoreUnavailable(); un != nil {
		t.Error("SQLite: StoreUnavailable is set, want nil")
	}
	db, proxy := testdb.PostgresBehindProxy(t)
	un := (node.Deps{DB: db}).StoreUnavailable()
	if un == nil {
		t.Fatal("PostgreSQL: StoreUnavailable is nil")
	}
	proxy.SetDown(true)
	_, err := db.Exec(context.Background(), `SELECT 1`)
	if err == nil || !un(err) {
		t.Errorf("PostgreSQL down: %v, StoreUnavailable says %v, want true", err, err != nil && un(err))
	}
	proxy.SetDown(false)
	_, err = db.Exec(context.Background(), `SELECT nope`)
	if err == nil || un(err) {
		t.Errorf("a bad statement: %v, StoreUnavailable says %v, want an error, not unavailable", err, err != nil && un(err))
	}
}
