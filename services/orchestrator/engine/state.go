package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// StateVersion is the version of the state schema, the seed's "version".
const StateVersion = "1"

// RunStatus is the status of a run.
type RunStatus string

// Run statuses. A run is RUNNING from Start until Finalize.
const (
	RunRunning   RunStatus = "RUNNING"
	RunCompleted RunStatus = "COMPLETED"
	RunFailed    RunStatus = "FAILED"
)

// TaskStatus is the status of one task of a run.
type TaskStatus string

// Task statuses: PENDING until dispatched, RUNNING while an attempt is out,
// then COMPLETED or FAILED. A retryable failure with attempts left returns
// the task to PENDING.
const (
	TaskPending   TaskStatus = "PENDING"
	TaskRunning   TaskStatus = "RUNNING"
	TaskCompleted TaskStatus = "COMPLETED"
	TaskFailed    TaskStatus = "FAILED"
)

// Terminal reports whether the status is final.
func (s TaskStatus) Terminal() bool { return s == TaskCompleted || s == TaskFailed }

// TaskKind says what a task asks of its agent.
type TaskKind string

// Task kinds. A work task produces outputs; an approval task asks its agent
// (often a human behind a command) to approve what upstream tasks produced,
// and fails when it is rejected.
const (
	KindWork     TaskKind = "work"
	KindApproval TaskKind = "approval"
)

// Duration is a time.Duration written in JSON as a Go duration string
// ("1m30s"), which is readable in the state file and canonical.
type Duration time.Duration

// MarshalJSON writes the duration as a string. Its text (digits, '.',
// '-', unit letters, 'µ') needs no escaping, so it is quoted as it is: a
// state's plan holds one per task, written with every snapshot.
func (d Duration) MarshalJSON() ([]byte, error) {
	s := time.Duration(d).String()
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Plan is the static shape of a run: its tasks in dependency order (each
// task after all of its dependencies; ties in definition order). Transitions
// never change it.
type Plan struct {
	Tasks []PlanTask `json:"tasks"`
}

// PlanTask is one task of a plan.
type PlanTask struct {
	ID    string   `json:"id"`
	Agent string   `json:"agent"`
	Kind  TaskKind `json:"kind"`
	// DependsOn lists the tasks that must be COMPLETED before this one runs.
	DependsOn []string `json:"depends_on,omitempty"`
	// Outputs names what a successful attempt must produce.
	Outputs []string `json:"outputs,omitempty"`
	// Retries is how many more attempts a retryable failure gets.
	Retries int `json:"retries"`
	// Timeout bounds one attempt.
	Timeout Duration `json:"timeout"`
}

// Task returns the plan's task with the given id.
func (p Plan) Task(id string) (PlanTask, bool) {
	for _, t := range p.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return PlanTask{}, false
}

// Limits are a run's safety limits and retry policy.
type Limits struct {
	// MaxIterations bounds the number of dispatches (attempts) of the whole
	// run. Zero means max(1000, the sum of every task's 1+retries), so a
	// large DAG is not cut short by a limit meant to catch loops.
	MaxIterations int `json:"max_iterations"`
	// Timeout bounds the run from its start; zero means none (each attempt is
	// still bounded by its task's timeout).
	Timeout Duration `json:"timeout"`
	// RetryBackoff is the base delay before a retry: attempt n waits
	// RetryBackoff*2^(n-1), capped at MaxRetryBackoff, with equal jitter drawn
	// from the seeded random source. Zero retries at once.
	RetryBackoff Duration `json:"retry_backoff"`
	// MaxRetryBackoff caps the delay; zero means 5m.
	MaxRetryBackoff Duration `json:"max_retry_backoff"`
}

const (
	defaultMaxIterations   = 1000
	defaultMaxRetryBackoff = Duration(5 * time.Minute)
)

func (l Limits) withDefaults(p Plan) Limits {
	if l.MaxIterations == 0 {
		sum := 0
		for _, t := range p.Tasks {
			sum += 1 + t.Retries
		}
		l.MaxIterations = max(defaultMaxIterations, sum)
	}
	if l.MaxRetryBackoff == 0 {
		l.MaxRetryBackoff = defaultMaxRetryBackoff
	}
	return l
}

// TaskState is the changing part of one task. Its first five fields are the
// seed's state file schema.
type TaskState struct {
	Status      TaskStatus `json:"status"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	// Outputs names the outputs of the completed task, in declared order.
	Outputs []string `json:"outputs"`
	// Iterations counts the attempts dispatched so far.
	Iterations int `json:"iterations"`
	// DispatchID identifies the current (or last) attempt; a re-dispatch of
	// the same attempt after a restart reuses it so workers can deduplicate.
	DispatchID string `json:"dispatch_id,omitempty"`
	// RetryAt is when a task waiting after a retryable failure may run again.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Handover is what the completed task hands to the tasks after it (a
	// JSON object, canonical).
	Handover json.RawMessage `json:"handover,omitempty"`
	// Error is the last failure, kept until the task completes.
	Error *TaskError `json:"error,omitempty"`
}

// ErrorKind classifies a task failure.
type ErrorKind string

// Error kinds the executor reports.
const (
	ErrorAgent     ErrorKind = "agent"     // the runtime returned an error
	ErrorOutput    ErrorKind = "output"    // an output is missing or malformed
	ErrorTimeout   ErrorKind = "timeout"   // the attempt exceeded its timeout
	ErrorHook      ErrorKind = "hook"      // a pre- or post-task hook rejected it
	ErrorRejected  ErrorKind = "rejected"  // an approval was refused
	ErrorAborted   ErrorKind = "aborted"   // the run stopped it (run timeout)
	ErrorInternal  ErrorKind = "internal"  // the executor could not prepare it
	ErrorTransport ErrorKind = "transport" // the dispatch could not be delivered
)

// TaskError describes a failed attempt.
type TaskError struct {
	Kind    ErrorKind `json:"kind"`
	Message string    `json:"message"`
	// Retryable is false when another attempt cannot help.
	Retryable bool `json:"retryable"`
	// Attempt is the attempt that failed.
	Attempt int `json:"attempt"`
}

func (e *TaskError) String() string {
	return fmt.Sprintf("%s: %s (attempt %d)", e.Kind, e.Message, e.Attempt)
}

// ArtifactKind says where an artifact came from.
type ArtifactKind string

// Artifact kinds: a task's output (keyed "task:name"), or a value stored by
// ANNOTATE (keyed by the annotation key, which never holds a colon).
const (
	ArtifactOutput     ArtifactKind = "output"
	ArtifactAnnotation ArtifactKind = "annotation"
)

// Artifact is an entry of the run's artifact map.
type Artifact struct {
	Kind ArtifactKind `json:"kind"`
	// Task is the task that produced the output, or that a hook annotated.
	Task string `json:"task,omitempty"`
	// Name, Path, SHA256 and Size describe an output; the content lives in an
	// artifact store and is verified against SHA256 when read.
	Name   string `json:"name,omitempty"`
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Value is an annotation's value (canonical JSON).
	Value json.RawMessage `json:"value,omitempty"`
	At    time.Time       `json:"at"`
}

// OutputRef points at one output's content in an artifact store.
type OutputRef struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// State is a run's whole state. Its JSON form is the CLI state file; the
// fields version, workflow, project, started_at and tasks (status,
// started_at, completed_at, outputs, iterations) follow the seed's schema.
//
// A State is an immutable value: transitions return a new one and leave
// theirs untouched, and successive states share what did not change (task
// states, the artifact map). Read a state freely, from any goroutine; to
// change one outside the transitions, Clone it first.
type State struct {
	Version    string     `json:"version"`
	RunID      string     `json:"run_id"`
	Workflow   string     `json:"workflow"`
	Project    string     `json:"project"`
	StartedAt  time.Time  `json:"started_at"`
	Status     RunStatus  `json:"status"`
	FinishedAt *time.Time `json:"finished_at"`
	// Error says why a FAILED run failed.
	Error string `json:"error,omitempty"`
	Seed  int64  `json:"seed"`
	// Seq is the sequence number of the last event applied.
	Seq int64 `json:"seq"`
	// LogHash chains the SHA-256 of every event so far: h(n) =
	// sha256(h(n-1) || canonical(event n)).
	LogHash string `json:"log_hash"`
	// Iterations counts the dispatches of the run, for MaxIterations.
	Iterations int    `json:"iterations"`
	Limits     Limits `json:"limits"`
	Plan       Plan   `json:"plan"`
	// Tasks holds each task's state by id. The TaskStates are shared between
	// successive states (a transition replaces the one it changes): read
	// them, never write through the pointers. Clone gives a copy to change.
	Tasks     map[string]*TaskState `json:"tasks"`
	Artifacts map[string]Artifact   `json:"artifacts"`
}

// Clone returns a deep copy the caller may change freely.
func (s State) Clone() State {
	c := s
	c.FinishedAt = clonePtr(s.FinishedAt)
	c.Plan.Tasks = make([]PlanTask, len(s.Plan.Tasks))
	for i, t := range s.Plan.Tasks {
		t.DependsOn = slices.Clone(t.DependsOn)
		t.Outputs = slices.Clone(t.Outputs)
		c.Plan.Tasks[i] = t
	}
	c.Tasks = make(map[string]*TaskState, len(s.Tasks))
	for id, t := range s.Tasks {
		if t != nil {
			v := t.clone()
			c.Tasks[id] = &v
		}
	}
	c.Artifacts = make(map[string]Artifact, len(s.Artifacts))
	for k, a := range s.Artifacts {
		a.Value = slices.Clone(a.Value)
		c.Artifacts[k] = a
	}
	return c
}

func (t TaskState) clone() TaskState {
	t.StartedAt = clonePtr(t.StartedAt)
	t.CompletedAt = clonePtr(t.CompletedAt)
	t.RetryAt = clonePtr(t.RetryAt)
	t.Outputs = slices.Clone(t.Outputs)
	t.Handover = slices.Clone(t.Handover)
	if t.Error != nil {
		e := *t.Error
		t.Error = &e
	}
	return t
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// task returns a copy of a task's state, to change and put back with put.
func (s State) task(id string) TaskState {
	if t := s.Tasks[id]; t != nil {
		return *t
	}
	return TaskState{}
}

// Validate reports the first way s is not a state the transitions could have
// produced from a valid start: the checks seed 004 runs on an engine's
// initial state, for a state loaded from a file or a store.
func (s State) Validate() error {
	var problems []string
	if s.Version != StateVersion {
		problems = append(problems, fmt.Sprintf("version is %q, want %q", s.Version, StateVersion))
	}
	if s.RunID == "" {
		problems = append(problems, "run_id is empty")
	}
	switch s.Status {
	case RunRunning, RunCompleted, RunFailed:
	default:
		problems = append(problems, fmt.Sprintf("status %q is not RUNNING, COMPLETED or FAILED", s.Status))
	}
	if err := s.Plan.validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if s.Tasks == nil {
		problems = append(problems, "tasks is missing")
	}
	if s.Artifacts == nil {
		problems = append(problems, "artifacts is missing")
	}
	for _, t := range s.Plan.Tasks {
		ts, ok := s.Tasks[t.ID]
		if !ok || ts == nil {
			problems = append(problems, fmt.Sprintf("tasks has no entry for planned task %q", t.ID))
			continue
		}
		switch ts.Status {
		case TaskPending, TaskRunning, TaskCompleted, TaskFailed:
		default:
			problems = append(problems, fmt.Sprintf("tasks.%s.status %q is not a task status", t.ID, ts.Status))
		}
		if ts.Status == TaskRunning && ts.DispatchID == "" {
			problems = append(problems, fmt.Sprintf("tasks.%s is RUNNING without a dispatch_id", t.ID))
		}
	}
	if len(s.Tasks) != len(s.Plan.Tasks) {
		problems = append(problems, fmt.Sprintf("tasks has %d entries for %d planned tasks", len(s.Tasks), len(s.Plan.Tasks)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidState, strings.Join(problems, "; "))
	}
	return nil
}

// validate checks a plan: ids unique and non-empty, dependencies known and
// earlier in the list (which also rules out cycles), kinds known, retries
// and timeouts sane.
func (p Plan) validate() error {
	if len(p.Tasks) == 0 {
		return fmt.Errorf("plan has no tasks")
	}
	seen := make(map[string]bool, len(p.Tasks))
	for i, t := range p.Tasks {
		if t.ID == "" {
			return fmt.Errorf("plan.tasks[%d] has no id", i)
		}
		if seen[t.ID] {
			return fmt.Errorf("plan.tasks[%d]: duplicate task id %q", i, t.ID)
		}
		for _, d := range t.DependsOn {
			if !seen[d] {
				return fmt.Errorf("plan.tasks[%d] (%s): dependency %q is not an earlier task (plans are in dependency order)", i, t.ID, d)
			}
		}
		if t.Kind != KindWork && t.Kind != KindApproval {
			return fmt.Errorf("plan.tasks[%d] (%s): kind %q is not work or approval", i, t.ID, t.Kind)
		}
		if t.Agent == "" {
			return fmt.Errorf("plan.tasks[%d] (%s) has no agent", i, t.ID)
		}
		if t.Retries < 0 {
			return fmt.Errorf("plan.tasks[%d] (%s): retries %d is negative", i, t.ID, t.Retries)
		}
		if t.Timeout <= 0 {
			return fmt.Errorf("plan.tasks[%d] (%s): timeout must be positive", i, t.ID)
		}
		if strings.ContainsAny(t.ID, ":/ ") {
			return fmt.Errorf("plan.tasks[%d]: task id %q holds ':', '/' or a space", i, t.ID)
		}
		seen[t.ID] = true
	}
	return nil
}

// Upstream returns every task that id depends on, directly or through other
// tasks, in plan order. It indexes the plan first; to ask about many tasks
// of one plan, use a PlanIndex.
func (p Plan) Upstream(id string) []string { return NewPlanIndex(p).Upstream(id) }

// PlanIndex finds the tasks of one plan by id in constant time, where
// Plan.Task scans the plan: on a large plan asked about every task (context
// assembly looks up each task's upstream tasks) the scans add up to
// O(tasks²).
type PlanIndex struct {
	plan Plan
	pos  map[string]int
}

// NewPlanIndex indexes a plan. Plans never change, so neither does the
// index.
func NewPlanIndex(p Plan) *PlanIndex {
	pos := make(map[string]int, len(p.Tasks))
	for i, t := range p.Tasks {
		if _, dup := pos[t.ID]; !dup {
			pos[t.ID] = i // the first, as Plan.Task finds it
		}
	}
	return &PlanIndex{plan: p, pos: pos}
}

// Task returns the plan's task with the given id.
func (x *PlanIndex) Task(id string) (PlanTask, bool) {
	i, ok := x.pos[id]
	if !ok {
		return PlanTask{}, false
	}
	return x.plan.Tasks[i], true
}

// Upstream returns every task that id depends on, directly or through other
// tasks, in plan order.
func (x *PlanIndex) Upstream(id string) []string {
	need := map[int]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		t, ok := x.Task(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		if !ok {
			continue
		}
		for _, d := range t.DependsOn {
			if i, ok := x.pos[d]; ok && !need[i] {
				need[i] = true
				stack = append(stack, d)
			}
		}
	}
	at := make([]int, 0, len(need))
	for i := range need {
		at = append(at, i)
	}
	slices.Sort(at)
	out := make([]string, len(at))
	for k, i := range at {
		out[k] = x.plan.Tasks[i].ID
	}
	return out
}

// DispatchID is the id of one attempt of one task of a run. It is derived,
// not random, so a restarted orchestrator re-dispatches an in-flight attempt
// under the same id and a worker that deduplicates by id runs it once.
func DispatchID(runID, taskID string, attempt int) string {
	return fmt.Sprintf("%s/%s/%d", runID, taskID, attempt)
}
