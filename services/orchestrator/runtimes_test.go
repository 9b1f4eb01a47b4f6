package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
)

func TestCommandPath(t *testing.T) {
	// t.Chdir: not parallel.
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, tc := range []struct{ dir, path, want string }{
		{"/reg", "python3", "python3"}, // bare: looked up in PATH
		{"/reg", "/usr/bin/env", "/usr/bin/env"},
		{"/reg", "scripts/a.sh", "/reg/scripts/a.sh"},
		{"/reg", "./a.sh", "/reg/a.sh"},
		{"/reg", "../bin/a", "/bin/a"},
		{"/reg", ".hidden", "/reg/.hidden"},
		{".", "./a.sh", filepath.Join(cwd, "a.sh")}, // not the bare "a.sh"
		{"agents", "scripts/a.sh", filepath.Join(cwd, "agents", "scripts", "a.sh")},
	} {
		got, err := orchestrator.CommandPath(tc.dir, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("CommandPath(%q, %q) = %q, %v; want %q", tc.dir, tc.path, got, err, tc.want)
		}
	}
}

// A command agent's relative path is relative to its registry's directory
// however that directory was named: "./step.sh" beside a registry given as
// "agents.yaml" (directory ".") was looked up in PATH as "step.sh".
func TestBuildRuntimesRelativeCommandPaths(t *testing.T) {
	// t.Chdir: not parallel.
	root := t.TempDir()
	t.Chdir(root)
	step := "#!/bin/sh\nfor out in $PRAETOR_OUTPUTS; do echo \"# $out\" > \"$out\"; done\n"
	for _, f := range []string{"step.sh", filepath.Join("agents", "step.sh"), filepath.Join("agents", "scripts", "step.sh")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(step), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, registryDir, path, attempts string }{
		{"./ beside a registry in the current directory", ".", "./step.sh", ""},
		{"./ beside a registry in the current directory, durable", ".", "./step.sh", "state1/attempts"},
		{"a relative registry directory", "agents", "scripts/step.sh", ""},
		{"a relative registry directory, durable", "agents", "./step.sh", "state2/attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &definition.Registry{Agents: map[string]definition.Agent{
				"step": {Kind: definition.KindCommand, Command: &definition.CommandSettings{Path: tc.path}}}}
			router, err := orchestrator.BuildRuntimes(reg, orchestrator.RuntimeDeps{RegistryDir: tc.registryDir, AttemptsDir: tc.attempts})
			if err != nil {
				t.Fatal(err)
			}
			task := agent.Task{RunID: "r", TaskID: "t", DispatchID: "r/t/1", Attempt: 1, Agent: "step", Outputs: []string{"out.md"}}
			res, err := router.Dispatch(context.Background(), task, agent.Context{})
			if err != nil {
				t.Fatalf("dispatch: %v", err)
			}
			if got := string(res.Outputs["out.md"]); got != "# out.md\n" {
				t.Fatalf("out.md = %q", got)
			}
		})
	}
}
