package definition

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Defaults applied when a workflow sets none.
const (
	// DefaultTaskTimeout bounds an attempt when no task, agent or workflow
	// default sets a timeout: every attempt has a bound, so a hung agent
	// cannot hold a run forever.
	DefaultTaskTimeout = 10 * time.Minute
	// DefaultRetryBackoff is the base delay before a retry.
	DefaultRetryBackoff = time.Second
	// MaxTimeout is the longest timeout accepted; longer is almost surely a
	// unit mistake ("3600h").
	MaxTimeout = 7 * 24 * time.Hour
	// MaxRetries is the most retries a task may ask for.
	MaxRetries = 20
)

var (
	idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	idHint    = "letters, digits, '_', '-' and '.', starting with a letter or digit"
)

// InputKind says where an input comes from.
type InputKind string

// Input kinds.
const (
	InputFile   InputKind = "file"
	InputOutput InputKind = "output"
)

// Input is a resolved task input.
type Input struct {
	// Spec is the input as written.
	Spec string    `json:"spec"`
	Kind InputKind `json:"kind"`
	// Task and Output name an upstream output.
	Task   string `json:"task,omitempty"`
	Output string `json:"output,omitempty"`
	// File is a path relative to the project directory (slash-separated).
	File string `json:"file,omitempty"`
}

// parsedWorkflow is a workflow with what the checks learned about it.
type parsedWorkflow struct {
	wf     *Workflow
	pos    positions
	index  map[string]int // task id -> position in wf.Tasks (first occurrence)
	inputs map[string][]Input
	order  []string // dependency order; nil when there is a cycle
}

// ParseWorkflow parses and checks a workflow file on its own: structure,
// ids, dependencies, cycles, inputs that name tasks, outputs, retries and
// durations. Checks that need other files (agents in the registry, input
// and constitution files on disk) are Load's.
func ParseWorkflow(file string, data []byte) (*Workflow, error) {
	pw, errs := parseWorkflow(file, data)
	if err := join(errs); err != nil {
		return nil, err
	}
	return pw.wf, nil
}

func parseWorkflow(file string, data []byte) (*parsedWorkflow, []*Error) {
	wf := &Workflow{}
	pos, errs := decodeStrict(file, data, wf)
	if len(errs) > 0 {
		return nil, errs
	}
	pw := &parsedWorkflow{wf: wf, pos: pos, index: map[string]int{}, inputs: map[string][]Input{}}
	p := &problems{file: file, pos: pos}
	pw.check(p)
	return pw, p.errs
}

func (pw *parsedWorkflow) check(p *problems) {
	wf := pw.wf
	switch {
	case wf.Name == "":
		p.at("name", ErrRequired, "give the workflow a name")
	case !idPattern.MatchString(wf.Name):
		p.at("name", ErrInvalidValue, "%q: use %s", wf.Name, idHint)
	}
	checkRetries(p, "defaults.retries", wf.Defaults.Retries)
	checkDuration(p, "defaults.timeout", wf.Defaults.Timeout)
	checkDuration(p, "defaults.retry_backoff", wf.Defaults.RetryBackoff)
	checkDuration(p, "limits.timeout", wf.Limits.Timeout)
	if wf.Limits.MaxIterations < 0 {
		p.at("limits.max_iterations", ErrInvalidValue, "%d: must be at least 1", wf.Limits.MaxIterations)
	}
	if len(wf.Tasks) == 0 {
		p.at("tasks", ErrRequired, "a workflow needs at least one task")
		return
	}

	// Ids first: every later check refers to tasks by id.
	for i, t := range wf.Tasks {
		tp := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.ID == "":
			p.at(tp+".id", ErrRequired, "every task needs an id")
			continue
		case !idPattern.MatchString(t.ID):
			p.at(tp+".id", ErrInvalidValue, "%q: use %s", t.ID, idHint)
		}
		if first, dup := pw.index[t.ID]; dup {
			p.at(tp+".id", ErrDuplicateID, "%q is already the id of tasks[%d] (line %d)", t.ID, first, p.pos.value(fmt.Sprintf("tasks[%d].id", first)).line)
			continue
		}
		pw.index[t.ID] = i
	}
	ids := make([]string, 0, len(pw.index))
	for i, t := range wf.Tasks {
		if pw.first(t.ID, i) {
			ids = append(ids, t.ID)
		}
	}

	depsOK := true
	for i, t := range wf.Tasks {
		tp := fmt.Sprintf("tasks[%d]", i)
		if t.Agent == "" && wf.Defaults.Agent == "" {
			p.at(tp, ErrRequired, "task %q names no agent: set agent (or defaults.agent)", t.ID)
		}
		if t.Kind != "" && t.Kind != "work" && t.Kind != "approval" {
			p.at(tp+".kind", ErrInvalidValue, "%q: kind is work or approval", t.Kind)
		}
		checkRetries(p, tp+".retries", t.Retries)
		checkDuration(p, tp+".timeout", t.Timeout)
		seen := map[string]bool{}
		for j, d := range t.DependsOn {
			dp := fmt.Sprintf("%s.depends_on[%d]", tp, j)
			switch {
			case seen[d]:
				p.at(dp, ErrInvalidValue, "%q is listed twice", d)
			case d == t.ID:
				p.at(dp, ErrCycle, "%s -> %s: a task cannot depend on itself", d, d)
				depsOK = false
			default:
				if _, ok := pw.index[d]; !ok {
					p.at(dp, ErrUnknownDependency, "no task %q%s", d, suggest(d, ids))
					depsOK = false
				}
			}
			seen[d] = true
		}
		outs := map[string]bool{}
		for j, o := range t.Outputs {
			op := fmt.Sprintf("%s.outputs[%d]", tp, j)
			if err := checkRelPath(o); err != "" {
				p.at(op, ErrInvalidValue, "output %q: %s", o, err)
			} else if strings.Contains(o, ":") {
				p.at(op, ErrInvalidValue, "output %q: ':' is reserved for task:output references", o)
			}
			if outs[o] {
				p.at(op, ErrInvalidValue, "output %q is listed twice", o)
			}
			outs[o] = true
		}
	}
	if !depsOK {
		return
	}
	if cycles := pw.cycles(); len(cycles) > 0 {
		for _, c := range cycles {
			i := pw.index[c[0]]
			j := slices.Index(wf.Tasks[i].DependsOn, c[1])
			p.at(fmt.Sprintf("tasks[%d].depends_on[%d]", i, j), ErrCycle,
				"%s (each task depends on the next)", strings.Join(c, " -> "))
		}
		return
	}
	pw.order = pw.topoOrder()
	for i, t := range wf.Tasks {
		if pw.first(t.ID, i) {
			pw.inputs[t.ID] = pw.resolveInputs(p, i)
		}
	}
}

// cycles finds the dependency cycles, each as a closed path "a b c a" where
// each task depends on the next, starting from the cycle's task that comes
// first in the file. Each cycle is reported once.
func (pw *parsedWorkflow) cycles() [][]string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var (
		stack []string
		found [][]string
		seen  = map[string]bool{}
	)
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range pw.wf.Tasks[pw.index[id]].DependsOn {
			switch color[d] {
			case white:
				visit(d)
			case grey:
				k := slices.Index(stack, d)
				cyc := append(slices.Clone(stack[k:]), d)
				cyc = pw.rotate(cyc)
				key := strings.Join(cyc, " ")
				if !seen[key] {
					seen[key] = true
					found = append(found, cyc)
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for i, t := range pw.wf.Tasks {
		if pw.first(t.ID, i) && color[t.ID] == white {
			visit(t.ID)
		}
	}
	return found
}

// rotate starts a closed cycle at its task that comes first in the file, so
// the report does not depend on where the search happened to enter it.
func (pw *parsedWorkflow) rotate(cyc []string) []string {
	open := cyc[:len(cyc)-1]
	best := 0
	for i, id := range open {
		if pw.index[id] < pw.index[open[best]] {
			best = i
		}
	}
	out := append(slices.Clone(open[best:]), open[:best]...)
	return append(out, out[0])
}

// topoOrder is Kahn's algorithm, always taking the ready task that comes
// first in the file, so ties are dispatched in definition order.
func (pw *parsedWorkflow) topoOrder() []string {
	tasks := pw.wf.Tasks
	done := map[string]bool{}
	var order []string
	for len(order) < len(pw.index) {
		progressed := false
		for i, t := range tasks {
			if !pw.first(t.ID, i) || done[t.ID] {
				continue
			}
			ready := true
			for _, d := range t.DependsOn {
				if !done[d] {
					ready = false
					break
				}
			}
			if ready {
				done[t.ID] = true
				order = append(order, t.ID)
				progressed = true
				break
			}
		}
		if !progressed {
			return nil // unreachable: cycles are rejected before
		}
	}
	return order
}

// first reports whether tasks[i] is the task with this id (not a task without
// an id, nor a duplicate).
func (pw *parsedWorkflow) first(id string, i int) bool {
	k, ok := pw.index[id]
	return ok && k == i
}

// upstream returns the transitive dependencies of a task.
func (pw *parsedWorkflow) upstream(id string) map[string]bool {
	up := map[string]bool{}
	var mark func(string)
	mark = func(x string) {
		for _, d := range pw.wf.Tasks[pw.index[x]].DependsOn {
			if !up[d] {
				up[d] = true
				mark(d)
			}
		}
	}
	mark(id)
	return up
}

func (pw *parsedWorkflow) resolveInputs(p *problems, i int) []Input {
	t := pw.wf.Tasks[i]
	up := pw.upstream(t.ID)
	var out []Input
	for j, spec := range t.Inputs {
		ip := fmt.Sprintf("tasks[%d].inputs[%d]", i, j)
		if spec == "" {
			p.at(ip, ErrBadInput, "empty input")
			continue
		}
		if task, output, ok := strings.Cut(spec, ":"); ok {
			if k, known := pw.index[task]; known {
				if !up[task] {
					p.at(ip, ErrBadInput, "%q: task %q is not upstream of %q: add it to depends_on", spec, task, t.ID)
					continue
				}
				if !slices.Contains(pw.wf.Tasks[k].Outputs, output) {
					p.at(ip, ErrBadInput, "%q: task %q declares no output %q (it declares: %s)",
						spec, task, output, listOrNone(pw.wf.Tasks[k].Outputs))
					continue
				}
				out = append(out, Input{Spec: spec, Kind: InputOutput, Task: task, Output: output})
				continue
			}
		}
		// A bare name declared as an output by exactly one upstream task is
		// that output (the seed's inputs: [requirements.md]).
		var producers []string
		for _, u := range pw.wf.Tasks {
			if up[u.ID] && slices.Contains(u.Outputs, spec) && !slices.Contains(producers, u.ID) {
				producers = append(producers, u.ID)
			}
		}
		switch len(producers) {
		case 1:
			out = append(out, Input{Spec: spec, Kind: InputOutput, Task: producers[0], Output: spec})
			continue
		case 0:
		default:
			p.at(ip, ErrBadInput, "%q is an output of several upstream tasks (%s): write task-id:%s",
				spec, strings.Join(producers, ", "), spec)
			continue
		}
		if err := checkRelPath(spec); err != "" {
			p.at(ip, ErrBadInput, "file %q: %s", spec, err)
			continue
		}
		out = append(out, Input{Spec: spec, Kind: InputFile, File: path.Clean(spec)})
	}
	return out
}

// checkRelPath accepts a relative, slash-separated path that stays inside
// its base directory.
func checkRelPath(s string) string {
	switch {
	case s == "":
		return "empty path"
	case strings.Contains(s, "\\"):
		return "use '/' to separate directories"
	case path.IsAbs(s):
		return "must be relative to the project directory"
	}
	c := path.Clean(s)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "must stay inside the project directory"
	}
	if c == "." {
		return "names a directory, not a file"
	}
	return ""
}

func checkRetries(p *problems, at string, r *int) {
	if r != nil && (*r < 0 || *r > MaxRetries) {
		p.at(at, ErrInvalidValue, "%d: retries must be between 0 and %d", *r, MaxRetries)
	}
}

func checkDuration(p *problems, at string, d Duration) {
	if _, set := p.pos.values[at]; !set {
		return
	}
	switch {
	case d <= 0:
		p.at(at, ErrBadDuration, "%s: must be positive", d.D())
	case d.D() > MaxTimeout:
		p.at(at, ErrBadDuration, "%s is longer than %s: check the unit", d.D(), MaxTimeout)
	}
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
