package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/services/orchestrator/filestore"
)

// praetor workflow run with the --run-id of a run the store has is a usage
// error (exit 2) naming the run, and leaves that run's recorded workflow
// as it was: it exited 1, as a failed run does, after recording the new
// workflow as the old run's source.
func TestWorkflowRunRefusesATakenRunID(t *testing.T) {
	state := t.TempDir()
	examples := filepath.Join("..", "..", "examples", "workflows")
	if out, err := exec.Command(binary, "workflow", "run", "--state-dir", state, "--run-id", "taken",
		filepath.Join(examples, "diamond.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	out, err := exec.Command(binary, "workflow", "run", "--state-dir", state, "--run-id", "taken",
		filepath.Join(examples, "failing.yaml")).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("run with a taken --run-id: %v, want exit 2\n%s", err, out)
	}
	for _, want := range []string{"run already exists", "run taken of workflow diamond (COMPLETED)", "another --run-id"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	fs, err := filestore.New(filestore.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	src, err := fileRuns{fs}.source(t.Context(), "taken")
	if err != nil || filepath.Base(src.Workflow) != "diamond.yaml" {
		t.Fatalf("the run's source is now %+v (%v), want its diamond.yaml", src, err)
	}
}
