package definition

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/praetorhq/praetor/pkg/contracts"
)

// Agent kinds: the runtime adapters.
const (
	KindMock    = "mock"
	KindLLM     = "llm"
	KindCommand = "command"
)

// agentPattern keeps agent names valid as NATS subject tokens, since an
// agent names the worker pool its tasks are dispatched to.
var agentPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

type parsedRegistry struct {
	reg *Registry
	pos positions
}

// ParseRegistry parses and checks an agent registry file.
func ParseRegistry(file string, data []byte) (*Registry, error) {
	pr, errs := parseRegistry(file, data)
	if err := join(errs); err != nil {
		return nil, err
	}
	return pr.reg, nil
}

func parseRegistry(file string, data []byte) (*parsedRegistry, []*Error) {
	reg := &Registry{}
	pos, errs := decodeStrict(file, data, reg)
	if len(errs) > 0 {
		return nil, errs
	}
	p := &problems{file: file, pos: pos}
	if len(reg.Agents) == 0 {
		p.at("agents", ErrRequired, "a registry needs at least one agent")
	}
	for _, name := range reg.Names() {
		a := reg.Agents[name]
		ap := joinKey("agents", name)
		switch {
		case !agentPattern.MatchString(name):
			p.atKey(ap, ErrInvalidValue, "agent name %q: use 1-128 letters, digits, '_' and '-' (it names a worker pool in subjects)", name)
		case name == contracts.TaskKindBackground:
			// Its tasks would go to the background service's pool, which
			// would answer them (unknown handler) as the attempt's answer.
			p.atKey(ap, ErrInvalidValue, "agent name %q is the background service's worker pool: choose another name", name)
		}
		checkDuration(p, ap+".timeout", a.Timeout)
		given := map[string]bool{KindMock: a.Mock != nil, KindLLM: a.LLM != nil, KindCommand: a.Command != nil}
		switch a.Kind {
		case "":
			p.at(ap, ErrRequired, "agent %q needs a kind: mock, llm or command", name)
			continue
		case KindMock, KindLLM, KindCommand:
		default:
			p.at(ap+".kind", ErrInvalidValue, "%q: kind is mock, llm or command%s", a.Kind,
				suggest(a.Kind, []string{KindMock, KindLLM, KindCommand}))
			continue
		}
		for _, other := range []string{KindMock, KindLLM, KindCommand} {
			if other != a.Kind && given[other] {
				p.atKey(ap+"."+other, ErrInvalidValue, "%s settings on a %s agent: move them, or set kind: %s", other, a.Kind, other)
			}
		}
		switch a.Kind {
		case KindCommand:
			if a.Command == nil || a.Command.Path == "" {
				p.at(ap+".command.path", ErrRequired, "a command agent needs command.path, the executable to run")
			}
			if a.Command != nil {
				for i, v := range a.Command.PassEnv {
					if v == "" || strings.ContainsAny(v, "= ") {
						p.at(fmt.Sprintf("%s.command.pass_env[%d]", ap, i), ErrInvalidValue, "%q is not a variable name", v)
					}
				}
				for k := range a.Command.Env {
					if strings.HasPrefix(k, "PRAETOR_") {
						p.atKey(joinKey(ap+".command.env", k), ErrInvalidValue, "%s: PRAETOR_* variables are set by the orchestrator", k)
					}
				}
			}
		case KindLLM:
			if a.LLM != nil && a.LLM.Temperature != nil && (*a.LLM.Temperature < 0 || *a.LLM.Temperature > 2) {
				p.at(ap+".llm.temperature", ErrInvalidValue, "%g: temperature is between 0 and 2", *a.LLM.Temperature)
			}
		case KindMock:
			if a.Mock != nil {
				checkMock(p, ap+".mock", a.Mock.MockOutcome)
				for task, o := range a.Mock.Tasks {
					checkMock(p, joinKey(ap+".mock.tasks", task), o)
				}
			}
		}
	}
	return &parsedRegistry{reg: reg, pos: pos}, p.errs
}

func checkMock(p *problems, at string, o MockOutcome) {
	if o.FailAttempts < 0 {
		p.at(at+".fail_attempts", ErrInvalidValue, "%d: must not be negative", o.FailAttempts)
	}
	if o.Fail != "" && o.FailAttempts > 0 {
		p.at(at+".fail_attempts", ErrInvalidValue, "fail already fails every attempt: set one of fail and fail_attempts")
	}
	checkDuration(p, at+".delay", o.Delay)
}

// Names returns the agent names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.Agents))
	for n := range r.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
