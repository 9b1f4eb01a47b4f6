package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A directory holding an engine and the frozen copy of its older version
// (ENGINE_ID@VERSION.yaml, as engines/history holds the shipped ones)
// validates clean and lists the engine once: the copy is no duplicate. It
// used to be reported as one, and the directory refused.
func TestValidateTakesFrozenVersions(t *testing.T) {
	minimal, err := os.ReadFile("../../internal/engine/testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := func(version string) []byte {
		s := strings.Replace(string(minimal), "engine_id: minimal", "engine_id: mine", 1)
		return []byte(strings.Replace(s, "\nversion: 1.0.0\n", "\nversion: "+version+"\n", 1))
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"mine.yaml": at("1.1.0"), "mine@1.0.0.yaml": at("1.0.0")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, arg := range []string{dir, "../../engines/history"} {
		out, err := exec.Command(binary, "validate", arg).CombinedOutput()
		if want := "0 errors, 0 warnings; engines loaded: business-profile, exploration, ideation, "; err != nil ||
			!strings.Contains(string(out), want) {
			t.Errorf("validate %s: %v, want %q\n%s", arg, err, want, out)
		}
		if arg == dir && !strings.Contains(string(out), "ideation, mine, project-discovery\n") {
			t.Errorf("validate %s lists mine other than once:\n%s", arg, out)
		}
	}

	// A copy that is not the version its name says is refused.
	if err := os.WriteFile(filepath.Join(dir, "mine@2.0.0.yaml"), at("1.0.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "validate", dir)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "mine@2.0.0.yaml") || !strings.Contains(string(out), "[frozen-name]") {
		t.Errorf("validate of a misnamed frozen copy: exit %d, want 1 and a frozen-name error\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

// An engine whose only file is a frozen version (mine@1.0.0.yaml) is
// loaded for replays alone: validate says so, and how to name the file for
// sessions to start on it, where it listed the loaded engines without it
// and reported nothing.
func TestValidateSaysAFrozenVersionAloneStartsNoSession(t *testing.T) {
	minimal, err := os.ReadFile("../../internal/engine/testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := strings.Replace(string(minimal), "engine_id: minimal", "engine_id: mine", 1)
	if err := os.WriteFile(filepath.Join(dir, "mine@1.0.0.yaml"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "validate", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mine@1.0.0.yaml") || !strings.Contains(string(out), "[frozen-only]") ||
		!strings.Contains(string(out), "mine.yaml") || !strings.Contains(string(out), "0 errors, 1 warning;") {
		t.Errorf("validate of a frozen version alone: %v, want a frozen-only warning naming mine.yaml\n%s", err, out)
	}
}
