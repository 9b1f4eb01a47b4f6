package orchestrator

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Settings configure the orchestrator and agent-worker services of a node
// (praetor serve --services orchestrator,agent-worker, and praetor dev),
// from PRAETOR_WORKFLOW_* environment variables.
type Settings struct {
	// WorkflowDir roots the workflow and registry files that run requests
	// name; a request may not leave it (PRAETOR_WORKFLOW_DIR). Default ".".
	WorkflowDir string
	// Registry is the agent registry file the agent-worker pool serves
	// (PRAETOR_WORKFLOW_REGISTRY). Without it the pool serves nothing and
	// says so.
	Registry string
	// Agents limits the pool to these agents of the registry
	// (PRAETOR_WORKFLOW_AGENTS, comma-separated). Default: all of them.
	Agents []string
	// Pool prefixes the durable consumer of each agent the pool serves,
	// <Pool>-<agent> (PRAETOR_WORKFLOW_POOL). Default "agent-worker".
	Pool string
	// Workers is how many attempts of each agent a pool process runs at
	// once (PRAETOR_WORKFLOW_WORKERS). Default 8.
	Workers int
	// MaxParallel bounds the attempts in flight per run
	// (PRAETOR_WORKFLOW_MAX_PARALLEL). Default 8.
	MaxParallel int
	// AttemptsDir keeps command agents' attempts durable on this host
	// (PRAETOR_WORKFLOW_ATTEMPTS_DIR). Default: none.
	AttemptsDir string
	// AttemptsKeep is how long the agent-worker keeps an ended attempt's
	// directory under AttemptsDir (PRAETOR_WORKFLOW_ATTEMPTS_KEEP): long
	// enough for a stopped orchestrator to come back and collect it.
	// Default 7 days; at least an hour.
	AttemptsKeep time.Duration
	// Lease is how long an orchestrator holds a run without renewing it
	// before another takes it over (PRAETOR_WORKFLOW_LEASE). Default 30s.
	Lease time.Duration
}

// WithDefaults fills the defaults.
func (s Settings) WithDefaults() Settings {
	s.WorkflowDir = cmp.Or(s.WorkflowDir, ".")
	s.Pool = cmp.Or(s.Pool, "agent-worker")
	s.Workers = cmp.Or(s.Workers, 8)
	s.MaxParallel = cmp.Or(s.MaxParallel, 8)
	s.Lease = cmp.Or(s.Lease, 30*time.Second)
	s.AttemptsKeep = cmp.Or(s.AttemptsKeep, 7*24*time.Hour)
	return s
}

// Environment variables of the settings.
const (
	EnvWorkflowDir  = "PRAETOR_WORKFLOW_DIR"
	EnvRegistry     = "PRAETOR_WORKFLOW_REGISTRY"
	EnvAgents       = "PRAETOR_WORKFLOW_AGENTS"
	EnvPool         = "PRAETOR_WORKFLOW_POOL"
	EnvWorkers      = "PRAETOR_WORKFLOW_WORKERS"
	EnvMaxParallel  = "PRAETOR_WORKFLOW_MAX_PARALLEL"
	EnvAttemptsDir  = "PRAETOR_WORKFLOW_ATTEMPTS_DIR"
	EnvLease        = "PRAETOR_WORKFLOW_LEASE"
	EnvAttemptsKeep = "PRAETOR_WORKFLOW_ATTEMPTS_KEEP"
)

// Variables are the environment variables SettingsFromEnv reads, with what
// each sets and its default: praetor serve --help and dev --help list them
// from here.
var Variables = []Variable{
	{EnvWorkflowDir, `directory of the workflow and registry files run requests name; a request may not leave it (default ".")`},
	{EnvRegistry, "agent registry file the agent-worker pool serves (default: none, the pool serves nothing)"},
	{EnvAgents, "comma-separated agents of the registry the pool serves (default: all)"},
	{EnvPool, `prefix of the pool's durable consumers, <pool>-<agent> (default "agent-worker")`},
	{EnvWorkers, "attempts of each agent a pool process runs at once (default 8)"},
	{EnvMaxParallel, "attempts in flight per run (default 8)"},
	{EnvAttemptsDir, "directory keeping command agents' attempts durable on this host (default: none)"},
	{EnvAttemptsKeep, "how long an ended attempt's directory is kept there, at least 1h (default 168h)"},
	{EnvLease, "how long an orchestrator holds a run without renewing it before another takes it over, at least 3s (default 30s)"},
}

// Variable is an environment variable of the settings.
type Variable struct {
	Name string
	// Help says what it sets, for a command's help.
	Help string
}

// SettingsFromEnv reads the settings; a value that does not parse is an
// error naming its variable.
func SettingsFromEnv(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	s := Settings{WorkflowDir: get(EnvWorkflowDir), Registry: get(EnvRegistry), Pool: get(EnvPool), AttemptsDir: get(EnvAttemptsDir)}
	for _, a := range strings.Split(get(EnvAgents), ",") {
		if a = strings.TrimSpace(a); a != "" {
			s.Agents = append(s.Agents, a)
		}
	}
	var errs []error
	positive := func(k string, into *int) {
		if v := get(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", k, v))
				return
			}
			*into = n
		}
	}
	positive(EnvWorkers, &s.Workers)
	positive(EnvMaxParallel, &s.MaxParallel)
	if v := get(EnvLease); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 3*time.Second {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration of at least 3s, such as 30s", EnvLease, v))
		}
		s.Lease = d
	}
	if v := get(EnvAttemptsKeep); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration of at least 1h, such as 168h", EnvAttemptsKeep, v))
		}
		s.AttemptsKeep = d
	}
	return s.WithDefaults(), errors.Join(errs...)
}
