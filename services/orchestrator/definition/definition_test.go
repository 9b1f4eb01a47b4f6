package definition

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/orchestrator/constitution"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

const registryYAML = `agents:
  writer:
    kind: mock
  reviewer:
    kind: mock
    timeout: 2m
`

// project writes files (name -> content) into a temporary directory and
// returns it.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadErr(t *testing.T, workflow string, extra map[string]string) []*Error {
	t.Helper()
	files := map[string]string{"wf.yaml": workflow, "agents.yaml": registryYAML, "brief.md": "the brief"}
	for k, v := range extra {
		files[k] = v
	}
	dir := project(t, files)
	_, err := Load(LoadOptions{Workflow: filepath.Join(dir, "wf.yaml")})
	if err == nil {
		t.Fatal("Load accepted an invalid definition")
	}
	probs := Problems(err)
	if len(probs) == 0 {
		t.Fatalf("Load error %v carries no problems", err)
	}
	// Show paths relative to the temp dir, so expectations are stable.
	for _, p := range probs {
		if r, rerr := filepath.Rel(dir, p.File); rerr == nil {
			p.File = r
		}
	}
	return probs
}

func TestLoadReportsFileFieldAndRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		workflow string
		extra    map[string]string
		file     string
		rule     error
		path     string
		line     int
		col      int
		detail   string
	}{
		{
			name: "unknown dependency",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: design
    agent: writer
  - id: build
    agent: writer
    depends_on: [desing]
`,
			rule: ErrUnknownDependency, path: "tasks[1].depends_on[0]", line: 8, col: 18,
			detail: `no task "desing" (did you mean "design"?)`,
		},
		{
			name: "cycle named in full",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    depends_on: [b]
  - id: b
    agent: writer
    depends_on: [c]
  - id: c
    agent: writer
    depends_on: [a]
`,
			rule: ErrCycle, path: "tasks[0].depends_on[0]", line: 6, col: 18,
			detail: "a -> b -> c -> a (each task depends on the next)",
		},
		{
			name: "self dependency",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    depends_on: [a]
`,
			rule: ErrCycle, path: "tasks[0].depends_on[0]", line: 6, col: 18, detail: "a -> a",
		},
		{
			name: "duplicate id",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
  - id: a
    agent: writer
`,
			rule: ErrDuplicateID, path: "tasks[1].id", line: 6, col: 9, detail: `"a" is already the id of tasks[0] (line 4)`,
		},
		{
			name: "unknown agent",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writter
`,
			rule: ErrUnknownAgent, path: "tasks[0].agent", line: 5, col: 12, detail: `did you mean "writer"?`,
		},
		{
			name: "missing input file",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    inputs: [brief.md, notes.md]
`,
			rule: ErrMissingInput, path: "tasks[0].inputs[1]", line: 6, col: 24, detail: "notes.md is not in the project directory",
		},
		{
			name: "missing input produced by a task not depended on",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    outputs: [spec.md]
  - id: b
    agent: writer
    inputs: [spec.md]
`,
			rule: ErrMissingInput, path: "tasks[1].inputs[0]", line: 9, col: 14, detail: `task "a" declares it as an output: add "a" to depends_on`,
		},
		{
			name: "unknown key with suggestion",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    retires: 2
`,
			rule: ErrUnknownKey, path: "tasks[0].retires", line: 6, col: 5, detail: `did you mean "retries"?`,
		},
		{
			name: "timeout without unit",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    timeout: 30
`,
			rule: ErrBadDuration, path: "tasks[0].timeout", line: 6, col: 14, detail: "30 has no unit",
		},
		{
			name: "timeout not a duration",
			workflow: `name: wf
agents: agents.yaml
limits:
  timeout: soon
tasks:
  - id: a
    agent: writer
`,
			rule: ErrBadDuration, path: "limits.timeout", line: 4, col: 12, detail: `"soon" is not a duration`,
		},
		{
			name: "negative timeout",
			workflow: `name: wf
agents: agents.yaml
defaults:
  timeout: -5s
tasks:
  - id: a
    agent: writer
`,
			rule: ErrBadDuration, path: "defaults.timeout", line: 4, col: 12, detail: "must be positive",
		},
		{
			name: "huge timeout",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    timeout: 3600h
`,
			rule: ErrBadDuration, path: "tasks[0].timeout", line: 6, col: 14, detail: "check the unit",
		},
		{
			name: "wrong type",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    retries: three
`,
			rule: ErrType, path: "tasks[0].retries", line: 6, col: 14, detail: `must be an integer, not a string ("three")`,
		},
		{
			name: "retries out of range",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    retries: 99
`,
			rule: ErrInvalidValue, path: "tasks[0].retries", line: 6, col: 14, detail: "between 0 and 20",
		},
		{
			name: "duplicate key",
			workflow: `name: wf
agents: agents.yaml
name: again
tasks:
  - id: a
    agent: writer
`,
			rule: ErrDuplicateKey, path: "name", line: 3, col: 1, detail: "already set at line 1",
		},
		{
			name: "input from a task that is not upstream",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    outputs: [x.md]
  - id: b
    agent: writer
    inputs: ["a:x.md"]
`,
			rule: ErrBadInput, path: "tasks[1].inputs[0]", line: 9, col: 14, detail: `task "a" is not upstream of "b": add it to depends_on`,
		},
		{
			name: "input of an undeclared output",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    outputs: [x.md]
  - id: b
    agent: writer
    depends_on: [a]
    inputs: ["a:y.md"]
`,
			rule: ErrBadInput, path: "tasks[1].inputs[0]", line: 10, col: 14, detail: `declares no output "y.md" (it declares: x.md)`,
		},
		{
			name: "ambiguous bare input",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    outputs: [x.md]
  - id: b
    agent: writer
    outputs: [x.md]
  - id: c
    agent: writer
    depends_on: [a, b]
    inputs: [x.md]
`,
			rule: ErrBadInput, path: "tasks[2].inputs[0]", line: 13, col: 14, detail: "several upstream tasks (a, b): write task-id:x.md",
		},
		{
			name: "input outside the project",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    inputs: [../secret.txt]
`,
			rule: ErrBadInput, path: "tasks[0].inputs[0]", line: 6, col: 14, detail: "must stay inside the project directory",
		},
		{
			name: "missing constitution",
			workflow: `name: wf
agents: agents.yaml
constitution:
  project: rules/project.md
tasks:
  - id: a
    agent: writer
`,
			rule: ErrMissingFile, path: "constitution.project", line: 4, col: 12, detail: "no such file",
		},
		{
			name: "bad constitution",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    constitution: task.md
`,
			extra: map[string]string{"task.md": "# Rules\nno headings here\n"},
			file:  "task.md", rule: ErrConstitution, line: 1, col: 1, detail: "no rules",
		},
		{
			name: "missing registry",
			workflow: `name: wf
agents: nowhere.yaml
tasks:
  - id: a
    agent: writer
`,
			rule: ErrMissingFile, path: "agents", line: 2, col: 9, detail: "no such file",
		},
		{
			name: "no agent",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
`,
			rule: ErrRequired, path: "tasks[0]", line: 4, col: 5, detail: `task "a" names no agent`,
		},
		{
			name: "no tasks",
			workflow: `name: wf
agents: agents.yaml
tasks: []
`,
			rule: ErrRequired, path: "tasks", line: 3, col: 8, detail: "at least one task",
		},
		{
			name: "bad kind",
			workflow: `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: writer
    kind: review
`,
			rule: ErrInvalidValue, path: "tasks[0].kind", line: 6, col: 11, detail: "work or approval",
		},
		{
			name:     "syntax error",
			workflow: "name: wf\ntasks:\n  - id: [a\n",
			rule:     ErrSyntax, line: 3, detail: "did not find expected",
		},
		{
			// yaml.v3 says line 4, where the scalar before the tab began.
			name:     "tab",
			workflow: "name: wf\nagents: agents.yaml\ntasks:\n  - id: a\n\t agent: writer\n",
			rule:     ErrSyntax, line: 5, detail: "found a tab character",
		},
		{
			name: "registry problem",
			workflow: `name: wf
agents: bad-agents.yaml
tasks:
  - id: a
    agent: writer
`,
			extra: map[string]string{"bad-agents.yaml": "agents:\n  writer:\n    kind: comand\n"},
			file:  "bad-agents.yaml", rule: ErrInvalidValue, path: "agents.writer.kind", line: 3, col: 11, detail: `did you mean "command"?`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			probs := loadErr(t, tc.workflow, tc.extra)
			var found *Error
			for _, p := range probs {
				if errors.Is(p, tc.rule) {
					found = p
					break
				}
			}
			if found == nil {
				t.Fatalf("no %q problem among %v", tc.rule, probs)
			}
			wantFile := tc.file
			if wantFile == "" {
				wantFile = "wf.yaml"
			}
			if found.File != wantFile || found.Path != tc.path || found.Line != tc.line || found.Col != tc.col {
				t.Fatalf("problem at %s %s %d:%d, want %s %s %d:%d (%v)", found.File, found.Path, found.Line, found.Col,
					wantFile, tc.path, tc.line, tc.col, found)
			}
			if !strings.Contains(found.Detail, tc.detail) {
				t.Fatalf("detail %q does not contain %q", found.Detail, tc.detail)
			}
		})
	}
}

func TestErrorMessageFormat(t *testing.T) {
	t.Parallel()
	probs := loadErr(t, `name: wf
agents: agents.yaml
tasks:
  - id: design
    agent: writer
  - id: build
    agent: writer
    depends_on: [desing]
`, nil)
	want := `wf.yaml:8:18: tasks[1].depends_on[0]: unknown dependency: no task "desing" (did you mean "design"?)`
	if got := probs[0].Error(); got != want {
		t.Fatalf("message\n got %s\nwant %s", got, want)
	}
}

// A syntax error has a line and no column (the parser gives none), and
// says its line once.
func TestSyntaxErrorMessageFormat(t *testing.T) {
	t.Parallel()
	probs := loadErr(t, "name: wf\nagents: agents.yaml\ntasks:\n  - id: a\n\t agent: writer\n", nil)
	want := "wf.yaml:5: invalid YAML: found a tab character that violates indentation"
	if got := probs[0].Error(); got != want {
		t.Fatalf("message\n got %s\nwant %s", got, want)
	}
}

func TestAllProblemsReportedAtOnce(t *testing.T) {
	t.Parallel()
	probs := loadErr(t, `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: nobody
    inputs: [missing.md]
    timeout: 0s
  - id: b
    agent: writer
    colour: red
`, nil)
	var rules []string
	for _, p := range probs {
		rules = append(rules, p.Rule.Error())
	}
	// colour stops the structural pass; fix it and the rest shows.
	if len(probs) != 1 || !errors.Is(probs[0], ErrUnknownKey) {
		t.Fatalf("problems = %v, want the unknown key alone (structure first)", rules)
	}
	probs = loadErr(t, `name: wf
agents: agents.yaml
tasks:
  - id: a
    agent: nobody
    inputs: [missing.md]
    timeout: 0s
`, nil)
	rules = rules[:0]
	for _, p := range probs {
		rules = append(rules, p.Rule.Error())
	}
	if got := strings.Join(rules, ","); got != "unknown agent,missing input file,bad duration" {
		t.Fatalf("rules = %s, want all three problems in line order", got)
	}
	err := &ValidationError{Errors: probs}
	if !errors.Is(err, ErrUnknownAgent) || !errors.Is(err, ErrMissingInput) {
		t.Fatal("errors.Is does not find the rules of a ValidationError")
	}
	if !strings.HasPrefix(err.Error(), "3 problems in workflow definition:\n  wf.yaml:5:12: tasks[0].agent: unknown agent") {
		t.Fatalf("message = %s", err)
	}
}

func TestRegistryProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		rule       error
		path       string
	}{
		{"no agents", "agents: {}\n", ErrRequired, "agents"},
		{"no kind", "agents:\n  a:\n    description: x\n", ErrRequired, "agents.a"},
		{"command without path", "agents:\n  a:\n    kind: command\n", ErrRequired, "agents.a.command.path"},
		{"settings of another kind", "agents:\n  a:\n    kind: mock\n    llm:\n      model: x\n", ErrInvalidValue, "agents.a.llm"},
		{"unknown key", "agents:\n  a:\n    kind: mock\n    mock:\n      outptus: {}\n", ErrUnknownKey, "agents.a.mock.outptus"},
		{"temperature", "agents:\n  a:\n    kind: llm\n    llm:\n      temperature: 3\n", ErrInvalidValue, "agents.a.llm.temperature"},
		{"reserved env", "agents:\n  a:\n    kind: command\n    command:\n      path: x\n      env:\n        PRAETOR_TASK_ID: y\n", ErrInvalidValue, "agents.a.command.env.PRAETOR_TASK_ID"},
		{"bad agent name", "agents:\n  \"a b\":\n    kind: mock\n", ErrInvalidValue, `agents["a b"]`},
		{"agent name with a dot", "agents:\n  a.b:\n    kind: mock\n", ErrInvalidValue, `agents["a.b"]`},
		{"agent named as the background service's pool", "agents:\n  background:\n    kind: mock\n", ErrInvalidValue, `agents.background`},
		{"fail and fail_attempts", "agents:\n  a:\n    kind: mock\n    mock:\n      tasks:\n        t1:\n          fail: x\n          fail_attempts: 2\n", ErrInvalidValue, "agents.a.mock.tasks.t1.fail_attempts"},
		{"agent timeout", "agents:\n  a:\n    kind: mock\n    timeout: 1\n", ErrBadDuration, "agents.a.timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRegistry("r.yaml", []byte(tc.yaml))
			probs := Problems(err)
			if len(probs) == 0 {
				t.Fatalf("ParseRegistry accepted %q", tc.yaml)
			}
			if !errors.Is(probs[0], tc.rule) || probs[0].Path != tc.path || probs[0].File != "r.yaml" || probs[0].Line == 0 {
				t.Fatalf("problem = %v (path %q), want %v at %s with a line", probs[0], probs[0].Path, tc.rule, tc.path)
			}
		})
	}
}

func TestLoadBundle(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{
		"flows/wf.yaml": `name: sdd
agents: ../agents.yaml
project: ..
constitution:
  organisation: ../rules/org.md
  workflow: ../rules/wf.md
defaults:
  retries: 1
  timeout: 1m
limits:
  max_iterations: 50
  timeout: 1h
tasks:
  - id: d
    agent: writer
    depends_on: [b, c]
    inputs: ["b:b.md", c.md]
  - id: a
    agent: writer
    inputs: [brief.md]
    outputs: [a.md]
  - id: b
    agent: reviewer
    depends_on: [a]
    inputs: [a.md]
    outputs: [b.md]
    retries: 3
  - id: c
    agent: writer
    kind: approval
    depends_on: [a]
    outputs: [c.md]
    timeout: 30s
    constitution: ../rules/c.md
`,
		"agents.yaml":  registryYAML,
		"brief.md":     "brief",
		"rules/org.md": "## Language {#lang}\nBritish.\n",
		"rules/wf.md":  "## Tests\nFirst.\n",
		"rules/c.md":   "## Language {#lang}\nPlain.\n",
	})
	b, err := Load(LoadOptions{Workflow: filepath.Join(dir, "flows", "wf.yaml")})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.ProjectDir != dir {
		t.Fatalf("ProjectDir = %s, want %s", b.ProjectDir, dir)
	}
	p := b.Plan()
	var order []string
	for _, pt := range p.Tasks {
		order = append(order, pt.ID)
	}
	if got := strings.Join(order, ","); got != "a,b,c,d" {
		t.Fatalf("plan order = %s, want a,b,c,d (dependency order, ties by file order)", got)
	}
	want := engine.PlanTask{ID: "c", Agent: "writer", Kind: engine.KindApproval, DependsOn: []string{"a"},
		Outputs: []string{"c.md"}, Retries: 1, Timeout: engine.Duration(30 * time.Second)}
	if !reflect.DeepEqual(p.Tasks[2], want) {
		t.Fatalf("plan task c = %+v, want %+v", p.Tasks[2], want)
	}
	if p.Tasks[1].Retries != 3 || p.Tasks[1].Timeout != engine.Duration(2*time.Minute) {
		t.Fatalf("task b = %+v: want its own retries and its agent's timeout", p.Tasks[1])
	}
	if p.Tasks[0].Timeout != engine.Duration(time.Minute) {
		t.Fatalf("task a timeout = %v, want the workflow default", p.Tasks[0].Timeout)
	}
	l := b.Limits()
	if l.MaxIterations != 50 || l.Timeout != engine.Duration(time.Hour) || l.RetryBackoff != engine.Duration(DefaultRetryBackoff) {
		t.Fatalf("limits = %+v", l)
	}
	d, _ := b.Task("d")
	wantInputs := []Input{
		{Spec: "b:b.md", Kind: InputOutput, Task: "b", Output: "b.md"},
		{Spec: "c.md", Kind: InputOutput, Task: "c", Output: "c.md"},
	}
	if !reflect.DeepEqual(d.Inputs, wantInputs) {
		t.Fatalf("d inputs = %+v", d.Inputs)
	}
	a, _ := b.Task("a")
	if a.Inputs[0].Kind != InputFile || b.InputPath(a.Inputs[0]) != filepath.Join(dir, "brief.md") {
		t.Fatalf("a inputs = %+v", a.Inputs)
	}
	c, _ := b.Task("c")
	lang := c.Constitution.Rules[0]
	if lang.Body != "Plain." || lang.Source.Level != constitution.Task || lang.Source.File != "rules/c.md" ||
		len(lang.Overrides) != 1 || lang.Overrides[0].File != "rules/org.md" {
		t.Fatalf("c's lang rule = %+v", lang)
	}
	if len(c.Constitution.Rules) != 2 || len(a.Constitution.Rules) != 2 || a.Constitution.Rules[0].Body != "British." {
		t.Fatalf("constitutions: a %+v, c %+v", a.Constitution.Rules, c.Constitution.Rules)
	}
}

func TestLoadOptionsOverride(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{
		"wf.yaml":     "name: wf\nagents: agents.yaml\ntasks:\n  - id: a\n    agent: other\n    inputs: [in.txt]\n",
		"agents.yaml": registryYAML,
		"alt.yaml":    "agents:\n  other:\n    kind: mock\n",
		"p2/in.txt":   "x",
		"org.md":      "## Rule\ntext\n",
	})
	b, err := Load(LoadOptions{Workflow: filepath.Join(dir, "wf.yaml"), Registry: filepath.Join(dir, "alt.yaml"),
		ProjectDir: filepath.Join(dir, "p2"), Organisation: filepath.Join(dir, "org.md")})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	a, _ := b.Task("a")
	if a.Spec.Kind != KindMock || a.Constitution.Rules[0].Source.Level != constitution.Organisation {
		t.Fatalf("task a = %+v", a)
	}
	_, err = Load(LoadOptions{Workflow: filepath.Join(dir, "wf.yaml"), Registry: filepath.Join(dir, "none.yaml")})
	if probs := Problems(err); len(probs) == 0 || !strings.HasSuffix(probs[0].File, "none.yaml") || !errors.Is(probs[0], ErrMissingFile) {
		t.Fatalf("missing registry from options: %v", err)
	}
}

func FuzzParseWorkflow(f *testing.F) {
	f.Add([]byte("name: wf\ntasks:\n  - id: a\n    agent: x\n    depends_on: [b]\n  - id: b\n    agent: x\n    depends_on: [a]\n"))
	f.Add([]byte("name: wf\ntasks:\n  - id: a\n    timeout: 5m\n    inputs: [\"a:b\", ../x]\n"))
	f.Add([]byte("tasks: &x\n  - *x\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		wf, err := ParseWorkflow("f.yaml", data)
		if err != nil {
			if len(Problems(err)) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		if wf.Name == "" || len(wf.Tasks) == 0 {
			t.Fatalf("accepted a workflow without name or tasks: %+v", wf)
		}
	})
}

func FuzzParseRegistry(f *testing.F) {
	f.Add([]byte(registryYAML))
	f.Add([]byte("agents:\n  a:\n    kind: command\n    command: {path: x, env: {A: b}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := ParseRegistry("r.yaml", data)
		if err != nil {
			if len(Problems(err)) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		if len(reg.Agents) == 0 {
			t.Fatal("accepted a registry without agents")
		}
	})
}
