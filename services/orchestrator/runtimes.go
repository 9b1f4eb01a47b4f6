package orchestrator

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/command"
	"github.com/praetorhq/praetor/services/orchestrator/agent/llmagent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/mock"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
)

// RuntimeDeps are what agents of some kinds need.
type RuntimeDeps struct {
	// LLM serves llm agents; required when the registry has one.
	LLM llm.Client
	// TenantID is recorded on LLM calls.
	TenantID string
	// Logger receives command agents' logs. Default: discard.
	Logger *slog.Logger
	// RegistryDir resolves the relative path and work_dir of command
	// agents (CommandPath); normally the registry file's directory.
	RegistryDir string
	// AttemptsDir, when set, makes command agents' attempts durable there
	// (command.Config.AttemptsDir): an attempt in flight when the process
	// died runs on, and a resumed run collects it instead of running it
	// again.
	AttemptsDir string
}

// BuildRuntimes returns a router with the runtime of every agent of reg.
func BuildRuntimes(reg *definition.Registry, deps RuntimeDeps) (*agent.Router, error) {
	runtimes := make(map[string]agent.Runtime, len(reg.Agents))
	for _, name := range reg.Names() {
		a := reg.Agents[name]
		var (
			rt  agent.Runtime
			err error
		)
		switch a.Kind {
		case definition.KindMock:
			rt, err = mockRuntime(a.Mock)
		case definition.KindLLM:
			if deps.LLM == nil {
				return nil, fmt.Errorf("agent %s is an llm agent, but no LLM client is configured", name)
			}
			s := a.LLM
			if s == nil {
				s = &definition.LLMSettings{}
			}
			rt, err = llmagent.New(llmagent.Config{Client: deps.LLM, Model: s.Model, System: s.System,
				Temperature: s.Temperature, MaxTokens: s.MaxTokens, TenantID: deps.TenantID})
		case definition.KindCommand:
			c := a.Command
			if c == nil {
				return nil, fmt.Errorf("agent %s has no command settings", name)
			}
			workDir := c.WorkDir
			if workDir != "" && !filepath.IsAbs(workDir) {
				workDir = filepath.Join(deps.RegistryDir, workDir)
			}
			var path string
			if path, err = CommandPath(deps.RegistryDir, c.Path); err != nil {
				break
			}
			rt, err = command.New(command.Config{Path: path, Args: c.Args, Env: c.Env, PassEnv: c.PassEnv,
				WorkDir: workDir, StdoutOutput: c.StdoutOutput, MaxOutputBytes: c.MaxOutputBytes, Logger: deps.Logger,
				AttemptsDir: deps.AttemptsDir})
		default:
			err = fmt.Errorf("unknown kind %q", a.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		runtimes[name] = rt
	}
	return agent.NewRouter(runtimes), nil
}

// CommandPath is the executable a command agent's path: names, by the
// registry's rule: a path with a slash, or one starting with ".", is
// relative to the registry's directory and made absolute (the command runs
// in a directory of its own, and "./x.sh" must not become the bare "x.sh");
// a bare name ("python3") stays bare, looked up in PATH when the agent runs.
func CommandPath(registryDir, path string) (string, error) {
	if filepath.IsAbs(path) || (!strings.ContainsRune(path, '/') && !strings.HasPrefix(path, ".")) {
		return path, nil
	}
	abs, err := filepath.Abs(filepath.Join(registryDir, path))
	if err != nil {
		return "", fmt.Errorf("command path %s: %w", path, err)
	}
	return abs, nil
}

// CheckCommands reports each command agent that the workflow's tasks use
// and whose executable cannot run on this host: a path (resolved by
// CommandPath) that does not exist or is not executable, or a bare name on
// no directory of PATH. Every problem is a *definition.Error at the agent's
// command.path, in one *definition.ValidationError, as Load reports its
// own. Load does not check this: an agent may run on another host, where
// the executable is.
func CheckCommands(b *definition.Bundle) error {
	used := map[string]bool{}
	for _, t := range b.Tasks() {
		used[t.Agent] = true
	}
	var problems []*definition.Error
	for _, name := range b.Registry.Names() {
		a := b.Registry.Agents[name]
		if !used[name] || a.Kind != definition.KindCommand || a.Command == nil {
			continue
		}
		path, err := CommandPath(b.RegistryDir(), a.Command.Path)
		if err == nil {
			_, err = command.Resolve(path)
		}
		if err == nil {
			continue
		}
		e := &definition.Error{File: b.RegistryFile, Path: "agents." + name + ".command.path", Rule: definition.ErrInvalidValue,
			Detail: fmt.Sprintf("agent %s: %v", name, err)}
		for _, rule := range []error{command.ErrNotFound, command.ErrNotExecutable} {
			if !errors.Is(err, rule) {
				continue
			}
			where := path
			switch {
			case !strings.ContainsRune(path, '/'):
				where = fmt.Sprintf("%q is on no directory of $PATH", path)
			case path != a.Command.Path:
				where = fmt.Sprintf("%s resolves to %s (relative to the registry's directory)", a.Command.Path, path)
			}
			e.Rule, e.Detail = rule, fmt.Sprintf("agent %s: %s", name, where)
		}
		problems = append(problems, e)
	}
	if len(problems) == 0 {
		return nil
	}
	if data, err := os.ReadFile(b.RegistryFile); err == nil {
		for _, e := range problems {
			e.Line, e.Col = valuePosition(data, strings.Split(e.Path, ".")...)
		}
		slices.SortStableFunc(problems, func(a, b *definition.Error) int { return cmp.Compare(a.Line, b.Line) })
	}
	return &definition.ValidationError{Errors: problems}
}

// valuePosition is the line and column of the value at keys in a YAML
// document (zero when there is none).
func valuePosition(data []byte, keys ...string) (line, col int) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0, 0
	}
	n := doc.Content[0]
	for _, k := range keys {
		var next *yaml.Node
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
				}
			}
		}
		if next == nil {
			return 0, 0
		}
		n = next
	}
	return n.Line, n.Column
}

func mockRuntime(s *definition.MockSettings) (*mock.Runtime, error) {
	if s == nil {
		return mock.New(mock.Config{}), nil
	}
	def, err := mockOutcome(s.MockOutcome)
	if err != nil {
		return nil, err
	}
	cfg := mock.Config{Default: def, Tasks: map[string]mock.Outcome{}}
	for task, o := range s.Tasks {
		if cfg.Tasks[task], err = mockOutcome(o); err != nil {
			return nil, fmt.Errorf("task %s: %w", task, err)
		}
	}
	return mock.New(cfg), nil
}

func mockOutcome(o definition.MockOutcome) (mock.Outcome, error) {
	if o.Handover != nil {
		// YAML decoding can produce values JSON cannot hold (map[any]any);
		// check now rather than at the first dispatch.
		if _, err := json.Marshal(o.Handover); err != nil {
			return mock.Outcome{}, fmt.Errorf("mock handover: %w", err)
		}
	}
	return mock.Outcome{Outputs: o.Outputs, Handover: o.Handover, Fail: o.Fail,
		FailAttempts: o.FailAttempts, Reject: o.Reject, Delay: o.Delay.D()}, nil
}
