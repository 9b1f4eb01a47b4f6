package engines_test

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
)

var freeze = flag.Bool("freeze", false, "write history/ENGINE_ID@VERSION.yaml for each engine file whose version has none")

const freezeCommand = "go test ./engines -run TestReleasedVersionsAreFrozen -freeze"

// Every shipped engine file is the frozen copy of its version: a version,
// once released, never changes, so that the sessions recorded on it replay
// with the copy (and their recorded digest is its digest). An edit takes a
// new version, frozen in turn; the engine file's version is the newest.
func TestReleasedVersionsAreFrozen(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no engine files (%v)", err)
	}
	newest := map[string]string{}
	for _, file := range files {
		def := parse(t, file)
		newest[def.EngineID] = def.Version
		frozen := filepath.Join("history", def.EngineID+"@"+def.Version+".yaml")
		if _, err := os.Stat(frozen); errors.Is(err, fs.ErrNotExist) {
			if *freeze {
				data, err := os.ReadFile(file)
				if err == nil {
					err = os.WriteFile(frozen, data, 0o644)
				}
				if err == nil {
					err = appendDigest(filepath.Base(frozen), def.Digest())
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("froze %s %s as engines/%s", def.EngineID, def.Version, frozen)
				continue
			}
			t.Errorf("engines/%s is at version %s, which has no frozen copy: freeze it (%s) and commit engines/%s "+
				"and engines/history/digests.txt", file, def.Version, freezeCommand, frozen)
			continue
		}
		if got := parse(t, frozen); got.Digest() != def.Digest() {
			t.Errorf("engines/%s differs from engines/%s, the frozen copy of its version %s, with which the sessions recorded "+
				"on %s replay: leave the copy as it is, set a new `version` in engines/%s (%s), and freeze it (%s)",
				file, frozen, def.Version, def.Version, file, nextVersions(def.Version), freezeCommand)
		}
	}
	copies, err := filepath.Glob(filepath.Join("history", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := readDigests(t)
	for _, frozen := range copies {
		id, version, ok := engine.FrozenName(filepath.Base(frozen))
		if !ok {
			t.Errorf("engines/%s is not named ENGINE_ID@VERSION.yaml", frozen)
			continue
		}
		// The sessions recorded on a version recorded its digest: a
		// replay tells the definition they ran by it.
		if got, want := parse(t, frozen).Digest(), pinned[filepath.Base(frozen)]; got != want {
			t.Errorf("engines/%s has digest %s, and %s was recorded when it was frozen (engines/%s): "+
				"a frozen copy never changes, nor does how a definition hashes (the JSON of internal/engine's types), "+
				"or every session recorded on it is told it ran another definition", frozen, got, orNone(want), digestsFile)
		}
		if v, ok := newest[id]; ok && semverLess(v, version) {
			t.Errorf("engines/%s is newer than the engine file's version %s: new sessions start on the engine file's; "+
				"give it a version above every frozen one", frozen, v)
		}
	}
}

// The shipped catalog holds each engine once, as its engine file, and
// every frozen version besides, with no warning: the copies are neither
// duplicates nor overrides.
func TestShippedCatalogHoldsTheFrozenVersions(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	cat, rep, err := builtin.Load(reg)
	if err != nil || len(rep.Warnings) != 0 {
		t.Fatalf("load: %v; warnings %v", err, rep.Warnings)
	}
	files, _ := filepath.Glob("*.yaml")
	var ids []string
	for _, file := range files {
		def := parse(t, file)
		ids = append(ids, def.EngineID)
		got, ok := cat.Get(def.EngineID)
		if !ok || got.File() != "praetor:engines/"+file || got.Version != def.Version {
			t.Errorf("Get(%s) = %v, %t; want engines/%s at %s", def.EngineID, got, ok, file, def.Version)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(cat.IDs(), ids) || len(cat.All()) != len(ids) {
		t.Errorf("catalog ids %v (%d engines), want each engine once: %v", cat.IDs(), len(cat.All()), ids)
	}
	copies, _ := filepath.Glob(filepath.Join("history", "*.yaml"))
	for _, frozen := range copies {
		id, version, _ := engine.FrozenName(filepath.Base(frozen))
		revs := cat.Revisions(id, version)
		want := parse(t, frozen).Digest()
		if !slices.ContainsFunc(revs, func(d *engine.Definition) bool { return d.Digest() == want }) {
			t.Errorf("the catalog has no %s %s of engines/%s's digest (versions %v)", id, version, frozen, cat.Versions(id))
		}
	}
}

// digestsFile pins the digest of each frozen copy, "NAME DIGEST" a line,
// as it was when the copy was frozen.
var digestsFile = filepath.Join("history", "digests.txt")

func readDigests(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(digestsFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if name, digest, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[name] = digest
		}
	}
	return out
}

func appendDigest(name, digest string) error {
	f, err := os.OpenFile(digestsFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(name + " " + digest + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func parse(t *testing.T, file string) *engine.Definition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	def, rep := engine.Parse(file, data)
	if def == nil {
		t.Fatalf("%s: %v", file, rep.Err())
	}
	return def
}

// nextVersions names the versions an edit of version v may take.
func nextVersions(v string) string {
	n := semverNumbers(v)
	return strings.Join([]string{
		strconv.Itoa(n[0]) + "." + strconv.Itoa(n[1]) + "." + strconv.Itoa(n[2]+1) + " for a fix",
		strconv.Itoa(n[0]) + "." + strconv.Itoa(n[1]+1) + ".0 for a change",
		strconv.Itoa(n[0]+1) + ".0.0 for a change of what it asks",
	}, ", ")
}

// semverLess orders MAJOR.MINOR.PATCH versions; a pre-release comes before
// its release.
func semverLess(a, b string) bool {
	na, nb := semverNumbers(a), semverNumbers(b)
	if c := slices.Compare(na[:], nb[:]); c != 0 {
		return c < 0
	}
	return strings.Contains(a, "-") && !strings.Contains(b, "-")
}

func semverNumbers(v string) [3]int {
	var n [3]int
	core, _, _ := strings.Cut(v, "+")
	core, _, _ = strings.Cut(core, "-")
	for i, part := range strings.SplitN(core, ".", 3) {
		n[i], _ = strconv.Atoi(part)
	}
	return n
}
