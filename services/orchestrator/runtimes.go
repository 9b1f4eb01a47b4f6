package orchestrator

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

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
