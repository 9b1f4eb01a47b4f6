package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseReportsUnknownKeysWithPathAndPosition(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Misspell a key inside the first trigger of the first phase.
	bad := strings.Replace(string(data), "        category: basics\n", "        categroy: basics\n", 1)
	_, rep := Parse("engines/bad.yaml", []byte(bad))
	if rep.Valid() {
		t.Fatal("valid = true, want an unknown-key error")
	}
	e := rep.Errors[0]
	if e.File != "engines/bad.yaml" || e.Path != "phases[0].transition_triggers[0].categroy" || e.Rule != "unknown-key" {
		t.Errorf("issue = %+v", e)
	}
	if e.Pos.Line != 15 || e.Pos.Column != 9 {
		t.Errorf("pos = %d:%d, want 15:9", e.Pos.Line, e.Pos.Column)
	}
	if !strings.Contains(e.Message, `did you mean "category"`) {
		t.Errorf("message %q does not suggest the right key", e.Message)
	}
	if got := e.String(); !strings.HasPrefix(got, "engines/bad.yaml:15:9: phases[0].transition_triggers[0].categroy: unknown key") {
		t.Errorf("String() = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		wantRule string
		wantPath string
		wantLine int
		wantMsg  string
	}{
		{name: "empty", yaml: "", wantRule: "empty", wantMsg: "empty"},
		{name: "comment only", yaml: "# nothing\n", wantRule: "empty", wantMsg: "empty"},
		{name: "syntax", yaml: "engine_id: x\nphases: [\n", wantRule: "yaml-syntax", wantLine: 2},
		{name: "not a mapping", yaml: "- a\n- b\n", wantRule: "type", wantMsg: "want a mapping"},
		{name: "wrong scalar type", yaml: "engine_id: x\nphases:\n  - id: A\n    order: first\n", wantRule: "type",
			wantPath: "phases[0].order", wantLine: 4, wantMsg: "want an integer"},
		{name: "list expected", yaml: "available_techniques: active_listening\n", wantRule: "type",
			wantPath: "available_techniques", wantLine: 1, wantMsg: "want a list"},
		{name: "duplicate key", yaml: "name: a\nname: b\n", wantRule: "duplicate-key", wantPath: "name", wantLine: 2},
		{name: "two documents", yaml: "name: a\n---\nname: b\n", wantRule: "one-document"},
		{name: "bad duration", yaml: "background_tasks:\n  - estimated_duration: soon\n", wantRule: "type", wantPath: "background_tasks[0].estimated_duration", wantLine: 2, wantMsg: "not a duration"},
		{name: "unknown top key", yaml: "engine_idd: x\n", wantRule: "unknown-key", wantPath: "engine_idd", wantLine: 1,
			wantMsg: `did you mean "engine_id"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, rep := Parse("f.yaml", []byte(tt.yaml))
			if rep.Valid() {
				t.Fatalf("valid = true (def %+v), want error", def)
			}
			if def != nil {
				t.Errorf("def = %+v, want nil on error", def)
			}
			e := rep.Errors[0]
			if e.Rule != tt.wantRule || e.File != "f.yaml" {
				t.Errorf("issue = %+v, want rule %s", e, tt.wantRule)
			}
			if tt.wantPath != "" && e.Path != tt.wantPath {
				t.Errorf("path = %q, want %q", e.Path, tt.wantPath)
			}
			if tt.wantLine != 0 && e.Pos.Line != tt.wantLine {
				t.Errorf("line = %d, want %d (%v)", e.Pos.Line, tt.wantLine, e)
			}
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tt.wantMsg)
			}
		})
	}
}

// A syntax error is placed on the line where it is, 1-based, and with no
// column, which the parser does not give: yaml.v3 itself places a tab at the
// line where the scalar before it began and counts its parser's lines from
// 0.
func TestParseLocatesSyntaxErrors(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	edit := func(line int, f func(string) string) string {
		out := slices.Clone(lines)
		out[line-1] = f(out[line-1])
		return strings.Join(out, "")
	}
	tabbed := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "    order: 2") }) + 1
	braced := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "mode_blend: {validate: 100}") }) + 1
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{name: "tab", yaml: edit(tabbed, func(l string) string { return "\t" + l }),
			want: fmt.Sprintf("f.yaml:%d: found a tab character that violates indentation [yaml-syntax]", tabbed)},
		{name: "unclosed brace", yaml: edit(braced, func(l string) string { return strings.TrimSuffix(l, "}\n") + "\n" }),
			want: fmt.Sprintf("f.yaml:%d: did not find expected ',' or '}' [yaml-syntax]", braced)},
		{name: "first line", yaml: "\tengine_id: x\n", want: "f.yaml:1: found character that cannot start any token [yaml-syntax]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, rep := Parse("f.yaml", []byte(tt.yaml))
			if len(rep.Errors) != 1 {
				t.Fatalf("errors = %v, want one", rep.Errors)
			}
			if got := rep.Errors[0].String(); got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseFollowsAliasesAndMergeKeys(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "    mode_blend: {extract: 70, validate: 20, explore: 10}\n",
		"    mode_blend: &blend {extract: 70, validate: 20, explore: 10}\n", 1)
	src = strings.Replace(src, "    mode_blend: {validate: 100}\n", "    mode_blend:\n      <<: *blend\n", 1)
	def, rep := Parse("f.yaml", []byte(src))
	if !rep.Valid() {
		t.Fatalf("parse: %v", rep.Err())
	}
	if got := def.Phases[1].ModeBlend; got.Extract != 70 || got.Validate != 20 {
		t.Errorf("merged blend = %+v", got)
	}
}

func TestLoadLocatesValidationErrors(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "min_satisfaction_rate: 0.5", "min_satisfaction_rate: 1.5", 1)
	fsys := fstest.MapFS{
		"good.yaml":  {Data: data},
		"bad.yml":    {Data: []byte(strings.Replace(bad, "engine_id: minimal", "engine_id: other", 1))},
		"notes.txt":  {Data: []byte("ignored")},
		"sub/x.yaml": {Data: []byte("ignored: true")},
	}
	cat, rep, err := Load(testRegistry(t), Source{FS: fsys, Dir: ".", Label: "engines"})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Issues) != len(rep.Errors) {
		t.Fatalf("err = %#v, want *InvalidError with the report's errors", err)
	}
	e := rep.Errors[0]
	if e.File != "engines/bad.yml" || e.Path != "phases[0].transition_triggers[0].min_satisfaction_rate" || e.Pos.Line != 16 {
		t.Errorf("issue = %v", e)
	}
	if got := cat.IDs(); len(got) != 1 || got[0] != "minimal" {
		t.Errorf("catalog = %v, want only the valid engine", got)
	}
}

func TestLoadRejectsDuplicateEngines(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"a.yaml": {Data: data}, "b.yaml": {Data: data}}
	_, rep, err := Load(testRegistry(t), Source{FS: fsys, Dir: "."})
	if err == nil {
		t.Fatal("err = nil, want duplicate-engine")
	}
	if rep.Errors[0].Rule != "duplicate-engine" || rep.Errors[0].File != "b.yaml" || !strings.Contains(rep.Errors[0].Message, "a.yaml") {
		t.Errorf("issue = %v", rep.Errors[0])
	}
}

func TestLaterSourceOverridesEngine(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := []byte(strings.Replace(string(data), "name: ", "name: Overridden ", 1))
	shipped := Source{FS: fstest.MapFS{"minimal.yaml": {Data: data}}, Dir: ".", Label: "shipped"}
	custom := Source{FS: fstest.MapFS{"minimal.yaml": {Data: changed}}, Dir: ".", Label: "custom"}
	cat, rep, err := Load(testRegistry(t), shipped, custom)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if len(rep.Warnings) == 0 || rep.Warnings[0].Rule != "override-engine" || rep.Warnings[0].File != "custom/minimal.yaml" {
		t.Fatalf("warnings = %v, want an override-engine warning on the later file", rep.Warnings)
	}
	def, ok := cat.Get("minimal")
	if !ok || !strings.HasPrefix(def.Name, "Overridden ") {
		t.Fatalf("catalog holds %+v, want the later source's engine", def)
	}
	// The overridden engine stays at its version, for a replay of a
	// session that ran it; the same version overridden is the later one.
	if v, ok := cat.Version("minimal", def.Version); !ok || v != def || !slices.Equal(cat.Versions("minimal"), []string{def.Version}) {
		t.Errorf("Version(minimal, %s) = %v, %t; versions %v; want the later source's alone", def.Version, v, ok, cat.Versions("minimal"))
	}
	bumped := Source{FS: fstest.MapFS{"minimal.yaml": {Data: []byte(strings.Replace(string(changed), "\nversion: 1.0.0", "\nversion: 1.1.0", 1))}},
		Dir: ".", Label: "bumped"}
	cat, _, err = Load(testRegistry(t), shipped, bumped)
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := cat.Get("minimal")
	first, ok := cat.Version("minimal", "1.0.0")
	if latest.Version != "1.1.0" || !ok || strings.HasPrefix(first.Name, "Overridden ") ||
		!slices.Equal(cat.Versions("minimal"), []string{"1.0.0", "1.1.0"}) {
		t.Errorf("after a new version: Get gives %s, Version(1.0.0) %v %t, versions %v", latest.Version, first, ok, cat.Versions("minimal"))
	}

	// The same file again (praetor validate engines/ in the repository)
	// overrides nothing worth a warning.
	same := Source{FS: fstest.MapFS{"minimal.yaml": {Data: data}}, Dir: ".", Label: "again"}
	if _, rep, err := Load(testRegistry(t), shipped, same); err != nil || len(rep.Warnings) != 0 {
		t.Errorf("the same engine again: warnings %v, %v; want none", rep.Warnings, err)
	}
}

func TestLoadDirSource(t *testing.T) {
	cat, rep, err := Load(testRegistry(t), DirSource("testdata"))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings = %v", rep.Warnings)
	}
	def, ok := cat.Get("minimal")
	if !ok || def.File() != "testdata/minimal.yaml" {
		t.Fatalf("get minimal = %v, %v", def, ok)
	}
	got, err := def.RenderSystemPrompt(PromptData{EngineName: "Minimal", PhaseName: "Start"})
	if err != nil || got != "You are Minimal in phase Start." {
		t.Errorf("prompt = %q, %v", got, err)
	}
}

// A directory that cannot be read is named by its own path, not by "."
// (its path inside the DirFS), and its error is the file system's.
func TestLoadNamesTheDirectoryItCannotRead(t *testing.T) {
	nope := filepath.Join(t.TempDir(), "nope")
	_, _, err := Load(testRegistry(t), DirSource(nope))
	if want := "load engines: " + nope + ": no such file or directory"; err == nil || err.Error() != want {
		t.Fatalf("load error = %v, want %s", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
}

// A file with an unknown key still has the rest of it checked: one round of
// fixes, not one per kind of error. Such a file is not loaded.
func TestLoadReportsUnknownKeysWithTheOtherErrors(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "name: ", "nmae: typo\nname: ", 1)
	broken = strings.Replace(broken, "engine_id: minimal", "engine_id: Not An Id", 1)
	src := Source{FS: fstest.MapFS{"minimal.yaml": {Data: []byte(broken)}}, Dir: ".", Label: "custom"}
	cat, rep, err := Load(testRegistry(t), src)
	if err == nil {
		t.Fatal("loaded a file with errors")
	}
	rules := map[string]bool{}
	for _, i := range rep.Errors {
		rules[i.Rule] = true
	}
	if !rules["unknown-key"] || len(rules) < 2 {
		t.Errorf("errors %v, want the unknown key and the invalid engine_id", rep.Errors)
	}
	if _, ok := cat.Get("Not An Id"); ok {
		t.Error("the broken engine was loaded")
	}
}

// A definition's digest follows what it defines: comments and layout leave
// it, an edit changes it.
func TestDigestFollowsTheDefinition(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	digest := func(data []byte) string {
		t.Helper()
		cat, _, err := Load(testRegistry(t), Source{FS: fstest.MapFS{"minimal.yaml": {Data: data}}, Dir: "."})
		if err != nil {
			t.Fatal(err)
		}
		def, _ := cat.Get("minimal")
		return def.Digest()
	}
	first := digest(data)
	commented := digest([]byte("# the minimal engine\n\n" + string(data) + "\n# end\n"))
	edited := digest([]byte(strings.Replace(string(data), "name: ", "name: Edited ", 1)))
	if len(first) != 64 || commented != first || edited == first {
		t.Errorf("digests: %q, commented %q, edited %q; want the first two equal and the edit another", first, commented, edited)
	}
}
