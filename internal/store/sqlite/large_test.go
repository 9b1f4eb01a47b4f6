package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/sqlite"
	"github.com/praetorhq/praetor/internal/store/storetest"
)

// TestLargeStoredForm checks what a store.Large becomes in the file: JSON
// of kilobytes compressed into a BLOB, small or incompressible values as
// they are (JSON as TEXT), values written before there was compression
// read as they are, and a damaged compressed value an error, not garbage.
func TestLargeStoredForm(t *testing.T) {
	ctx := t.Context()
	db := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "l.db")})
	if _, err := db.Exec(ctx, `CREATE TABLE l (k TEXT PRIMARY KEY, v TEXT NULL)`); err != nil {
		t.Fatal(err)
	}
	doc := `{"history":[` + strings.Repeat(`{"role":"user","content":"we bake bread"},`, 300) + `{}]}`
	noise := storetest.Incompressible(4096)
	for _, tc := range []struct {
		k       string
		v       store.Large
		typ     string
		smaller bool // stored in fewer bytes than written
	}{
		{"doc", store.Large(doc), "blob", true},
		{"small", store.Large(`{"a":1}`), "text", false},
		{"noise", noise, "blob", false},
	} {
		if _, err := db.Exec(ctx, `INSERT INTO l (k, v) VALUES ($1, $2)`, tc.k, tc.v); err != nil {
			t.Fatal(err)
		}
		var (
			typ string
			n   int
			got store.Large
		)
		if err := db.QueryRow(ctx, `SELECT typeof(v), length(CAST(v AS BLOB)), v FROM l WHERE k = $1`, tc.k).Scan(&typ, &n, &got); err != nil {
			t.Fatal(err)
		}
		if typ != tc.typ || (n < len(tc.v)) != tc.smaller || string(got) != string(tc.v) {
			t.Errorf("%s: stored as %s of %d bytes (read back equal: %v), want %s, smaller than %d: %v",
				tc.k, typ, n, string(got) == string(tc.v), tc.typ, len(tc.v), tc.smaller)
		}
		if tc.k == "doc" && n > len(tc.v)/4 {
			t.Errorf("doc of %d bytes stored in %d: want at least 4 times smaller", len(tc.v), n)
		}
	}

	// A value written as plain text, as before store.Large, reads as it is.
	if _, err := db.Exec(ctx, `INSERT INTO l (k, v) VALUES ($1, $2)`, "legacy", doc); err != nil {
		t.Fatal(err)
	}
	var got store.Large
	if err := db.QueryRow(ctx, `SELECT v FROM l WHERE k = $1`, "legacy").Scan(&got); err != nil || string(got) != doc {
		t.Errorf("legacy text read back equal: %v, error %v", string(got) == doc, err)
	}

	// A compressed value cut short fails to read.
	if _, err := db.Exec(ctx, `UPDATE l SET v = substr(v, 1, 40) WHERE k = $1`, "doc"); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT v FROM l WHERE k = $1`, "doc").Scan(&got); err == nil {
		t.Errorf("a truncated compressed value read back as %d bytes, want an error", len(got))
	}
}
