package definition

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/invopop/jsonschema"
	"gopkg.in/yaml.v3"
)

// Workflow is a workflow file: a DAG of agent tasks.
type Workflow struct {
	// Name identifies the workflow in runs, events and the state file.
	Name string `yaml:"name" json:"name" jsonschema:"required,pattern=^[A-Za-z0-9][A-Za-z0-9_.-]*$"`
	// Description says what the workflow is for.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Agents is the agent registry file, relative to this file. A registry
	// given to the loader replaces it.
	Agents string `yaml:"agents,omitempty" json:"agents,omitempty"`
	// Project is the project directory, relative to this file; file inputs
	// are read from it. Default: the directory of this file.
	Project string `yaml:"project,omitempty" json:"project,omitempty"`
	// Constitution names the rule files merged into every task's context.
	Constitution Constitutions `yaml:"constitution,omitempty" json:"constitution,omitempty"`
	// Defaults apply to every task that does not set its own.
	Defaults Defaults `yaml:"defaults,omitempty" json:"defaults,omitempty"`
	// Limits are the run's safety limits.
	Limits Limits `yaml:"limits,omitempty" json:"limits,omitempty"`
	// Tasks are the nodes of the DAG, in the order ties are dispatched.
	Tasks []Task `yaml:"tasks" json:"tasks" jsonschema:"required,minItems=1"`
}

// Constitutions are the rule files of the organisation, project and workflow
// levels, relative to the workflow file. Later levels override earlier ones
// rule by rule; a task's own constitution overrides them all.
type Constitutions struct {
	// Organisation is the organisation-wide rule file.
	Organisation string `yaml:"organisation,omitempty" json:"organisation,omitempty"`
	// Project is the project's rule file.
	Project string `yaml:"project,omitempty" json:"project,omitempty"`
	// Workflow is this workflow's rule file.
	Workflow string `yaml:"workflow,omitempty" json:"workflow,omitempty"`
}

// Defaults are task settings shared by the workflow's tasks.
type Defaults struct {
	// Agent runs tasks that name none.
	Agent string `yaml:"agent,omitempty" json:"agent,omitempty"`
	// Retries is how many times a failed attempt is retried. Default 0.
	Retries *int `yaml:"retries,omitempty" json:"retries,omitempty" jsonschema:"minimum=0,maximum=20"`
	// Timeout bounds one attempt of a task, when neither the task nor its
	// agent sets one. Default 10m.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// RetryBackoff is the base delay before a retry, doubled per attempt
	// with jitter. Default 1s.
	RetryBackoff Duration `yaml:"retry_backoff,omitempty" json:"retry_backoff,omitempty"`
}

// Limits are a run's safety limits.
type Limits struct {
	// MaxIterations bounds the number of dispatches of the run. Default
	// max(1000, the sum over tasks of 1+retries).
	MaxIterations int `yaml:"max_iterations,omitempty" json:"max_iterations,omitempty" jsonschema:"minimum=1"`
	// Timeout bounds the whole run. Default none.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
}

// Task is one node of the DAG.
type Task struct {
	// ID names the task: letters, digits, '_', '-' and '.'.
	ID string `yaml:"id" json:"id" jsonschema:"required,pattern=^[A-Za-z0-9][A-Za-z0-9_.-]*$"`
	// Description says what the task is.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Instructions tell the agent what to do; they head its context.
	Instructions string `yaml:"instructions,omitempty" json:"instructions,omitempty"`
	// Agent names the registry agent that runs the task (default: defaults.agent).
	Agent string `yaml:"agent,omitempty" json:"agent,omitempty"`
	// Kind is work (produce outputs) or approval (approve the upstream
	// results; a refusal fails the task). Default work.
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty" jsonschema:"enum=work,enum=approval"`
	// DependsOn lists the tasks that must complete first.
	DependsOn []string `yaml:"depends_on,omitempty" json:"depends_on,omitempty"`
	// Inputs are what the agent reads: "task-id:output" for an upstream
	// task's output, an output name declared by exactly one upstream task, or
	// a file path relative to the project directory.
	Inputs []string `yaml:"inputs,omitempty" json:"inputs,omitempty"`
	// Outputs name the files a successful attempt must produce.
	Outputs []string `yaml:"outputs,omitempty" json:"outputs,omitempty"`
	// Retries is how many times a failed attempt is retried.
	Retries *int `yaml:"retries,omitempty" json:"retries,omitempty" jsonschema:"minimum=0,maximum=20"`
	// Timeout bounds one attempt.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Constitution is the task's own rule file, relative to the workflow
	// file; it overrides every other level.
	Constitution string `yaml:"constitution,omitempty" json:"constitution,omitempty"`
}

// Registry is an agent registry file: the agents tasks may name.
type Registry struct {
	// Agents maps an agent name to its runtime.
	Agents map[string]Agent `yaml:"agents" json:"agents" jsonschema:"required"`
}

// Agent is one agent of a registry: which runtime adapter runs it, and how.
type Agent struct {
	// Kind is the runtime adapter: mock (records calls, answers from its
	// settings), llm (a chat completion through the LLM port) or command (an
	// external agent CLI).
	Kind string `yaml:"kind" json:"kind" jsonschema:"required,enum=mock,enum=llm,enum=command"`
	// Description says what the agent is good at.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Timeout bounds one attempt of the agent's tasks unless a task sets its own.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Mock holds the settings of a mock agent.
	Mock *MockSettings `yaml:"mock,omitempty" json:"mock,omitempty"`
	// LLM holds the settings of an llm agent.
	LLM *LLMSettings `yaml:"llm,omitempty" json:"llm,omitempty"`
	// Command holds the settings of a command agent.
	Command *CommandSettings `yaml:"command,omitempty" json:"command,omitempty"`
}

// MockOutcome is what a mock agent answers.
type MockOutcome struct {
	// Outputs gives the content of outputs by name; a declared output not
	// listed gets a generated placeholder.
	Outputs map[string]string `yaml:"outputs,omitempty" json:"outputs,omitempty"`
	// Handover is handed to downstream tasks.
	Handover map[string]any `yaml:"handover,omitempty" json:"handover,omitempty"`
	// Fail makes every attempt fail with this message.
	Fail string `yaml:"fail,omitempty" json:"fail,omitempty"`
	// FailAttempts makes the first n attempts fail (retryably), then succeed.
	FailAttempts int `yaml:"fail_attempts,omitempty" json:"fail_attempts,omitempty" jsonschema:"minimum=0"`
	// Reject makes an approval task refuse with this reason.
	Reject string `yaml:"reject,omitempty" json:"reject,omitempty"`
	// Delay holds each attempt this long (or until cancelled).
	Delay Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
}

// MockSettings configure a mock agent: a default outcome and per-task ones.
type MockSettings struct {
	MockOutcome `yaml:",inline" json:",inline"`
	// Tasks override the outcome for given task ids.
	Tasks map[string]MockOutcome `yaml:"tasks,omitempty" json:"tasks,omitempty"`
}

// LLMSettings configure an llm agent.
type LLMSettings struct {
	// Model overrides the LLM client's default model.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// System is the agent's system prompt, before the constitution.
	System string `yaml:"system,omitempty" json:"system,omitempty"`
	// Temperature overrides the provider default.
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty" jsonschema:"minimum=0,maximum=2"`
	// MaxTokens bounds the answer; zero means the provider default.
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty" jsonschema:"minimum=0"`
}

// CommandSettings configure a command agent: an external CLI that reads the
// assembled context on stdin and writes each declared output to a file of
// that name in its working directory.
type CommandSettings struct {
	// Path is the executable: a bare name (no slash) is looked up in PATH;
	// a path with a slash or a leading "." is relative to the registry
	// file's directory.
	Path string `yaml:"path" json:"path" jsonschema:"required"`
	// Args are its arguments.
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Env sets environment variables for it.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// PassEnv names variables of the orchestrator's environment passed
	// through (API keys, say). Others are not: only PATH, HOME, TMPDIR,
	// LANG and the PRAETOR_* task variables are set.
	PassEnv []string `yaml:"pass_env,omitempty" json:"pass_env,omitempty"`
	// WorkDir is where per-attempt working directories are made, relative to
	// the registry file. Default: the system temporary directory.
	WorkDir string `yaml:"work_dir,omitempty" json:"work_dir,omitempty"`
	// StdoutOutput names a declared output taken from the command's
	// standard output, for CLIs that print their answer.
	StdoutOutput string `yaml:"stdout_output,omitempty" json:"stdout_output,omitempty"`
	// MaxOutputBytes bounds each output. Default 8 MiB.
	MaxOutputBytes int64 `yaml:"max_output_bytes,omitempty" json:"max_output_bytes,omitempty" jsonschema:"minimum=0"`
}

// Duration is a Go duration string in YAML and JSON ("30s", "5m", "1h30m").
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// JSONSchema describes the duration string for editors.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		Description: "A duration such as 30s, 5m or 1h30m.",
		Examples:    []any{"30s", "5m", "1h30m"},
	}
}
