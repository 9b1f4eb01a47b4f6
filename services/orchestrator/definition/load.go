package definition

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/praetorhq/praetor/services/orchestrator/constitution"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// LoadOptions say which files make a run's definition.
type LoadOptions struct {
	// Workflow is the workflow file. Required.
	Workflow string
	// Registry, when set, replaces the workflow's agents file.
	Registry string
	// ProjectDir, when set, replaces the workflow's project directory.
	ProjectDir string
	// Organisation and Project, when set, replace the workflow's
	// constitution files of those levels (an organisation-wide file given
	// by the operator, say).
	Organisation string
	Project      string
}

// Bundle is a checked workflow with its registry, resolved task settings,
// inputs and merged constitutions: everything a run needs from files.
type Bundle struct {
	// WorkflowFile and RegistryFile are the files loaded.
	WorkflowFile string
	RegistryFile string
	// ProjectDir is the absolute project directory; file inputs are read
	// from it.
	ProjectDir string
	Workflow   *Workflow
	Registry   *Registry
	tasks      map[string]*ResolvedTask
	order      []string
}

// ResolvedTask is a task with its defaults applied and references resolved.
type ResolvedTask struct {
	// Task is the task as written.
	Task Task
	// Agent is the agent that runs it, and Spec that agent's registry entry.
	Agent string
	Spec  Agent
	Kind  engine.TaskKind
	// Retries and Timeout are in force: task, then agent (timeout only),
	// then workflow defaults, then DefaultTaskTimeout.
	Retries int
	Timeout time.Duration
	// Inputs are resolved to upstream outputs or project files.
	Inputs []Input
	// Constitution is the merge of organisation, project, workflow and task
	// rule files for this task.
	Constitution *constitution.Merged
}

// Load reads a workflow, its agent registry and its constitutions, and
// checks them together before anything runs. Every problem found is
// returned in one *ValidationError, each naming its file, its field (path,
// line and column) and the rule it breaks.
func Load(opts LoadOptions) (*Bundle, error) {
	if opts.Workflow == "" {
		return nil, errors.New("definition: no workflow file given")
	}
	wfFile := filepath.Clean(opts.Workflow)
	data, err := os.ReadFile(wfFile)
	if err != nil {
		return nil, join([]*Error{{File: wfFile, Rule: ErrMissingFile, Detail: readDetail(err)}})
	}
	pw, errs := parseWorkflow(wfFile, data)
	if pw == nil {
		return nil, join(errs)
	}
	wf := pw.wf
	base := filepath.Dir(wfFile)
	wp := &problems{file: wfFile, pos: pw.pos, errs: errs}

	b := &Bundle{WorkflowFile: wfFile, Workflow: wf, tasks: map[string]*ResolvedTask{}, order: pw.order}

	projectDir := base
	switch {
	case opts.ProjectDir != "":
		projectDir = opts.ProjectDir
	case wf.Project != "":
		projectDir = rel(base, wf.Project)
	}
	if abs, err := filepath.Abs(projectDir); err == nil {
		projectDir = abs
	}
	if st, err := os.Stat(projectDir); err != nil || !st.IsDir() {
		if opts.ProjectDir != "" {
			wp.errs = append(wp.errs, &Error{File: projectDir, Rule: ErrMissingFile, Detail: "the project directory does not exist"})
		} else {
			wp.at("project", ErrMissingFile, "project directory %s does not exist", projectDir)
		}
	}
	b.ProjectDir = projectDir

	// The registry.
	var regErrs []*Error
	switch {
	case opts.Registry != "":
		b.RegistryFile = filepath.Clean(opts.Registry)
	case wf.Agents != "":
		b.RegistryFile = rel(base, wf.Agents)
	default:
		wp.at("agents", ErrRequired, "no agent registry: set agents: to a registry file, or pass one")
	}
	if b.RegistryFile != "" {
		rdata, err := os.ReadFile(b.RegistryFile)
		switch {
		case err != nil && opts.Registry == "":
			wp.at("agents", ErrMissingFile, "registry %s: %s", b.RegistryFile, readDetail(err))
		case err != nil:
			regErrs = append(regErrs, &Error{File: b.RegistryFile, Rule: ErrMissingFile, Detail: readDetail(err)})
		default:
			var pr *parsedRegistry
			pr, regErrs = parseRegistry(b.RegistryFile, rdata)
			if pr != nil {
				b.Registry = pr.reg
			}
		}
	}

	// Constitutions: each file parsed once, reported at the field naming it.
	docs := map[string]*constitution.Document{}
	var conErrs []*Error
	loadDoc := func(level constitution.Level, file, field string, fromOpts bool) *constitution.Document {
		if file == "" {
			return nil
		}
		path := file
		if !fromOpts {
			path = rel(base, file)
		}
		key := string(level) + "\x00" + path
		if d, ok := docs[key]; ok {
			return d
		}
		docs[key] = nil
		data, err := os.ReadFile(path)
		if err != nil {
			if fromOpts {
				conErrs = append(conErrs, &Error{File: path, Rule: ErrMissingFile, Detail: readDetail(err)})
			} else {
				wp.at(field, ErrMissingFile, "constitution %s: %s", path, readDetail(err))
			}
			return nil
		}
		d, err := constitution.Parse(level, display(projectDir, path), data)
		if err != nil {
			e := &Error{File: path, Rule: ErrConstitution, Detail: err.Error()}
			var pe *constitution.ParseError
			if errors.As(err, &pe) {
				e.Line, e.Col, e.Detail = pe.Line, 1, pe.Msg
			}
			conErrs = append(conErrs, e)
			return nil
		}
		docs[key] = d
		return d
	}
	org := loadDoc(constitution.Organisation, cmp.Or(opts.Organisation, wf.Constitution.Organisation), "constitution.organisation", opts.Organisation != "")
	proj := loadDoc(constitution.Project, cmp.Or(opts.Project, wf.Constitution.Project), "constitution.project", opts.Project != "")
	wfc := loadDoc(constitution.Workflow, wf.Constitution.Workflow, "constitution.workflow", false)

	if b.Registry != nil && wf.Defaults.Agent != "" {
		if _, ok := b.Registry.Agents[wf.Defaults.Agent]; !ok {
			wp.at("defaults.agent", ErrUnknownAgent, "no agent %q in %s%s", wf.Defaults.Agent, b.RegistryFile, suggest(wf.Defaults.Agent, b.Registry.Names()))
		}
	}
	for i, t := range wf.Tasks {
		if !pw.first(t.ID, i) {
			continue
		}
		tp := fmt.Sprintf("tasks[%d]", i)
		rt := &ResolvedTask{Task: t, Agent: cmp.Or(t.Agent, wf.Defaults.Agent), Kind: engine.KindWork, Inputs: pw.inputs[t.ID]}
		if t.Kind == "approval" {
			rt.Kind = engine.KindApproval
		}
		if b.Registry != nil && t.Agent != "" {
			spec, ok := b.Registry.Agents[t.Agent]
			if !ok {
				wp.at(tp+".agent", ErrUnknownAgent, "no agent %q in %s%s (agents: %s)", t.Agent, b.RegistryFile,
					suggest(t.Agent, b.Registry.Names()), listOrNone(b.Registry.Names()))
			}
			rt.Spec = spec
		} else if b.Registry != nil {
			rt.Spec = b.Registry.Agents[rt.Agent]
		}
		if t.Retries != nil {
			rt.Retries = *t.Retries
		} else if wf.Defaults.Retries != nil {
			rt.Retries = *wf.Defaults.Retries
		}
		rt.Timeout = firstPositive(t.Timeout.D(), rt.Spec.Timeout.D(), wf.Defaults.Timeout.D(), DefaultTaskTimeout)
		for j, in := range rt.Inputs {
			if in.Kind != InputFile {
				continue
			}
			if _, err := os.Stat(filepath.Join(projectDir, filepath.FromSlash(in.File))); err != nil {
				k := slices.Index(t.Inputs, in.Spec)
				if k < 0 {
					k = j
				}
				wp.at(fmt.Sprintf("%s.inputs[%d]", tp, k), ErrMissingInput, "%s is not in the project directory %s%s",
					in.File, projectDir, producedElsewhere(wf, t, in.File))
			}
		}
		td := loadDoc(constitution.Task, t.Constitution, tp+".constitution", false)
		merged, err := constitution.Merge(org, proj, wfc, td)
		if err != nil {
			wp.at(tp+".constitution", ErrConstitution, "%v", err)
		}
		rt.Constitution = merged
		b.tasks[t.ID] = rt
	}

	all := append(append(wp.errs, regErrs...), conErrs...)
	if err := join(all); err != nil {
		return nil, err
	}
	return b, nil
}

// producedElsewhere hints at a missing depends_on when another task
// declares the missing file as an output.
func producedElsewhere(wf *Workflow, t Task, file string) string {
	for _, o := range wf.Tasks {
		if o.ID != t.ID && slices.Contains(o.Outputs, file) {
			return fmt.Sprintf("; task %q declares it as an output: add %q to depends_on", o.ID, o.ID)
		}
	}
	return ""
}

// LoadRegistry reads and checks an agent registry file.
func LoadRegistry(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, join([]*Error{{File: path, Rule: ErrMissingFile, Detail: readDetail(err)}})
	}
	return ParseRegistry(path, data)
}

// Plan is the engine plan of the bundle: tasks in dependency order.
func (b *Bundle) Plan() engine.Plan {
	p := engine.Plan{Tasks: make([]engine.PlanTask, 0, len(b.order))}
	for _, id := range b.order {
		t := b.tasks[id]
		p.Tasks = append(p.Tasks, engine.PlanTask{
			ID: id, Agent: t.Agent, Kind: t.Kind,
			DependsOn: slices.Clone(t.Task.DependsOn), Outputs: slices.Clone(t.Task.Outputs),
			Retries: t.Retries, Timeout: engine.Duration(t.Timeout),
		})
	}
	return p
}

// Limits are the engine limits of the bundle.
func (b *Bundle) Limits() engine.Limits {
	return engine.Limits{
		MaxIterations: b.Workflow.Limits.MaxIterations,
		Timeout:       engine.Duration(b.Workflow.Limits.Timeout),
		RetryBackoff:  engine.Duration(firstPositive(b.Workflow.Defaults.RetryBackoff.D(), DefaultRetryBackoff)),
	}
}

// Task returns a resolved task by id.
func (b *Bundle) Task(id string) (*ResolvedTask, bool) {
	t, ok := b.tasks[id]
	return t, ok
}

// Tasks returns the resolved tasks in dependency order.
func (b *Bundle) Tasks() []*ResolvedTask {
	out := make([]*ResolvedTask, len(b.order))
	for i, id := range b.order {
		out[i] = b.tasks[id]
	}
	return out
}

// InputPath is the absolute path of a file input.
func (b *Bundle) InputPath(in Input) string {
	return filepath.Join(b.ProjectDir, filepath.FromSlash(in.File))
}

// RegistryDir is the directory relative paths of the registry resolve from.
func (b *Bundle) RegistryDir() string { return filepath.Dir(b.RegistryFile) }

func rel(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, filepath.FromSlash(p))
}

// display names a file relative to the project directory when it can, so a
// rendered context does not depend on where the orchestrator was started.
func display(projectDir, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	if r, err := filepath.Rel(projectDir, abs); err == nil {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(path)
}

func readDetail(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}
