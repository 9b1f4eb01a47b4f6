package store

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// migrationName is what goose reads a version from; the name after it says
// what the migration does.
var migrationName = regexp.MustCompile(`^(\d{5})_[a-z0-9_]+\.sql$`)

// TestMigrationFolders checks that both dialects have the same migrations,
// each a well-named, forward-only goose file: an engineer who adds a table
// for one adapter and forgets the other finds out here, not in production.
func TestMigrationFolders(t *testing.T) {
	names := map[Dialect][]string{}
	for _, d := range []Dialect{Postgres, SQLite} {
		fsys, err := Migrations(d)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := fs.ReadDir(fsys, ".")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !migrationName.MatchString(name) {
				t.Errorf("migrations/%s/%s: want NNNNN_what.sql (five digits, lower case)", d, name)
				continue
			}
			body, err := fs.ReadFile(fsys, name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(body), "-- +goose Up") {
				t.Errorf("migrations/%s/%s has no '-- +goose Up' line", d, name)
			}
			if strings.Contains(string(body), "-- +goose Down") {
				t.Errorf("migrations/%s/%s has a Down section: migrations are forward-only", d, name)
			}
			names[d] = append(names[d], name)
		}
		if len(names[d]) == 0 {
			t.Errorf("migrations/%s is empty", d)
		}
	}
	if !slices.Equal(names[Postgres], names[SQLite]) {
		t.Errorf("migration files differ between dialects:\npostgres: %v\nsqlite:   %v\nadd each migration to both folders with the same number and name", names[Postgres], names[SQLite])
	}
	versions := map[string]string{}
	for _, n := range names[Postgres] {
		v := migrationName.FindStringSubmatch(n)[1]
		if other, ok := versions[v]; ok {
			t.Errorf("migrations %s and %s share version %s: take the next free number", other, n, v)
		}
		versions[v] = n
	}
	if _, err := Migrations("oracle"); err == nil {
		t.Error("Migrations(oracle) succeeded")
	}
}
