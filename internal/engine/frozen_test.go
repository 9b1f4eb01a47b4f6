package engine

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// minimalAt is testdata/minimal.yaml at version, its name prefixed with
// name.
func minimalAt(t *testing.T, version, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), "\nversion: 1.0.0\n", "\nversion: "+version+"\n", 1)
	return []byte(strings.Replace(s, "\nname: ", "\nname: "+name, 1))
}

// A frozen version (ENGINE_ID@VERSION.yaml) beside its engine's file is
// loaded at its version only: new sessions start on the file's version, a
// replay finds the frozen one, and neither is a duplicate of the other. A
// file edited without a new version and its frozen copy are both loaded,
// told apart by digest.
func TestFrozenVersionsAreLoadedBesideTheirEngine(t *testing.T) {
	src := Source{FS: fstest.MapFS{
		"minimal.yaml":               {Data: minimalAt(t, "1.1.0", "Newest ")},
		"history/minimal@1.0.0.yaml": {Data: minimalAt(t, "1.0.0", "First ")},
		"history/minimal@1.1.0.yaml": {Data: minimalAt(t, "1.1.0", "Released ")},
	}, Dir: ".", Label: "shipped", Files: []string{"minimal.yaml", "history/minimal@1.0.0.yaml", "history/minimal@1.1.0.yaml"}}
	cat, rep, err := Load(testRegistry(t), src)
	if err != nil || len(rep.Warnings) != 0 {
		t.Fatalf("load: %v; errors %v, warnings %v", err, rep.Errors, rep.Warnings)
	}
	newest, ok := cat.Get("minimal")
	if !ok || newest.Version != "1.1.0" || !strings.HasPrefix(newest.Name, "Newest ") {
		t.Fatalf("Get(minimal) = %v, %t; want the engine file at 1.1.0", newest, ok)
	}
	if !slices.Equal(cat.IDs(), []string{"minimal"}) || cat.Len() != 1 || len(cat.All()) != 1 {
		t.Errorf("catalog ids %v, len %d; want minimal once", cat.IDs(), cat.Len())
	}
	first, ok := cat.Version("minimal", "1.0.0")
	if !ok || !strings.HasPrefix(first.Name, "First ") || !slices.Equal(cat.Versions("minimal"), []string{"1.0.0", "1.1.0"}) {
		t.Errorf("Version(minimal, 1.0.0) = %v, %t, versions %v; want the frozen one", first, ok, cat.Versions("minimal"))
	}
	// The engine file's 1.1.0 differs from its frozen copy: Version gives
	// the file's, Revisions both.
	if v, _ := cat.Version("minimal", "1.1.0"); v != newest {
		t.Errorf("Version(minimal, 1.1.0) = %v, want the engine file's", v)
	}
	revs := cat.Revisions("minimal", "1.1.0")
	if len(revs) != 2 || revs[0] != newest || !strings.HasPrefix(revs[1].Name, "Released ") || revs[1].Digest() == newest.Digest() {
		t.Errorf("Revisions(minimal, 1.1.0) = %v, want the engine file's, then the frozen copy", revs)
	}
	if revs := cat.Revisions("minimal", "1.0.0"); len(revs) != 1 || revs[0] != first {
		t.Errorf("Revisions(minimal, 1.0.0) = %v, want the frozen copy alone", revs)
	}
	if revs := cat.Revisions("minimal", "2.0.0"); revs != nil {
		t.Errorf("Revisions(minimal, 2.0.0) = %v, want none", revs)
	}

	// A directory of frozen copies alone (praetor validate
	// engines/history, --engines-dir of one) holds versions, no engine to
	// start.
	history := Source{FS: fstest.MapFS{
		"minimal@1.0.0.yaml": {Data: minimalAt(t, "1.0.0", "")},
		"minimal@1.1.0.yaml": {Data: minimalAt(t, "1.1.0", "")},
	}, Dir: ".", Label: "history"}
	cat, rep, err = Load(testRegistry(t), history)
	if err != nil || len(rep.Warnings) != 0 {
		t.Fatalf("load of frozen copies: %v; errors %v, warnings %v", err, rep.Errors, rep.Warnings)
	}
	if _, ok := cat.Get("minimal"); ok || !slices.Equal(cat.Versions("minimal"), []string{"1.0.0", "1.1.0"}) {
		t.Errorf("frozen copies alone: Get found it %t, versions %v; want no engine, both versions", ok, cat.Versions("minimal"))
	}
}

// A frozen file must define the engine and version its name says: a copy
// misnamed would replay the sessions of another version.
func TestFrozenVersionMustMatchItsName(t *testing.T) {
	src := Source{FS: fstest.MapFS{"minimal@1.0.0.yaml": {Data: minimalAt(t, "1.2.0", "")}}, Dir: ".", Label: "history"}
	cat, rep, err := Load(testRegistry(t), src)
	if err == nil || len(rep.Errors) != 1 || rep.Errors[0].Rule != "frozen-name" || rep.Errors[0].File != "history/minimal@1.0.0.yaml" ||
		!strings.Contains(rep.Errors[0].Message, "minimal 1.2.0") {
		t.Fatalf("load of a misnamed frozen copy: %v; errors %v, want one frozen-name error", err, rep.Errors)
	}
	if v := cat.Versions("minimal"); len(v) != 0 {
		t.Errorf("versions %v, want the misnamed copy not loaded", v)
	}
}

func TestFrozenName(t *testing.T) {
	for _, tt := range []struct {
		name, id, version string
		ok                bool
	}{
		{"exploration@1.0.0.yaml", "exploration", "1.0.0", true},
		{"exploration@1.2.3-rc.1.yml", "exploration", "1.2.3-rc.1", true},
		{"exploration.yaml", "", "", false},
		{"exploration@1.0.0.json", "", "", false},
		{"@1.0.0.yaml", "", "", false},
		{"exploration@.yaml", "", "", false},
	} {
		id, version, ok := FrozenName(tt.name)
		if id != tt.id || version != tt.version || ok != tt.ok {
			t.Errorf("FrozenName(%q) = %q, %q, %t; want %q, %q, %t", tt.name, id, version, ok, tt.id, tt.version, tt.ok)
		}
	}
}
