package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// ValidateEnv is what a definition is validated against.
type ValidateEnv struct {
	// Registry holds the custom evaluators, task handlers and technique ids
	// the engine may name. A nil registry knows nothing.
	Registry *Registry
	// Engines reports whether an engine id is registered, for exit
	// transition targets. Nil skips that check (with a warning).
	Engines func(id string) bool
}

var (
	engineIDRe  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	phaseIDRe   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	snakeIDRe   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	fieldPathRe = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	semverRe    = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// Validate runs every check of the seed's validateEngineConfig on a
// definition: identity fields, a phase graph reachable from the initial
// phase with no orphans, sequential phase order, obligation and field
// references, a well-formed completeness model whose heuristic weights sum to
// 1.0, a context allocation of ≈100%, an information ratio of 100, exit
// transition targets that are registered engines, known technique ids, and
// registered task handlers and custom evaluators. Errors block loading;
// warnings do not.
func Validate(def *Definition, env ValidateEnv) Report {
	if env.Registry == nil {
		env.Registry = NewRegistry()
	}
	v := &validator{def: def, env: env, referenced: map[string]bool{}}
	v.identity()
	v.extractionSchema()
	v.obligations()
	v.phases()
	v.completeness()
	v.backgroundTasks()
	v.taskSettings()
	v.blockingTasks()
	v.contextConfig()
	v.informationRatio()
	v.sidebar()
	v.techniques()
	v.exitTransitions()
	v.systemPrompt()
	v.customEvaluators()
	return v.rep
}

type validator struct {
	def        *Definition
	env        ValidateEnv
	rep        Report
	referenced map[string]bool // evaluator names used anywhere
}

func (v *validator) errorf(path, rule, format string, args ...any) {
	v.rep.Add(Issue{Severity: SeverityError, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) warnf(path, rule, format string, args ...any) {
	v.rep.Add(Issue{Severity: SeverityWarning, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) identity() {
	d := v.def
	switch {
	case d.EngineID == "":
		v.errorf("engine_id", "identity", "engine_id is required")
	case !engineIDRe.MatchString(d.EngineID):
		v.errorf("engine_id", "identity", "engine_id %q must be lowercase letters, digits and dashes, starting with a letter", d.EngineID)
	}
	if strings.TrimSpace(d.Name) == "" {
		v.errorf("name", "identity", "name is required")
	}
	if strings.TrimSpace(d.Description) == "" {
		v.errorf("description", "identity", "description is required")
	}
	switch {
	case d.Version == "":
		v.errorf("version", "identity", "version is required (semver, e.g. 1.0.0)")
	case !semverRe.MatchString(d.Version):
		v.errorf("version", "identity", "version %q is not semver (MAJOR.MINOR.PATCH)", d.Version)
	}
	switch d.EngineType {
	case ExtractDominant, InformDominant, Balanced:
	case "":
		v.errorf("engine_type", "identity", "engine_type is required: extract-dominant, inform-dominant or balanced")
	default:
		v.errorf("engine_type", "identity", "engine_type %q is not extract-dominant, inform-dominant or balanced", d.EngineType)
	}
}

func (v *validator) hasCategory(c string) bool {
	for _, o := range v.def.Obligations {
		if o.Category == c {
			return true
		}
	}
	return false
}

// evaluator checks a referenced evaluator name.
func (v *validator) evaluator(path, name string) {
	if name == "" {
		v.errorf(path, "custom-evaluator", "evaluator name is required")
		return
	}
	v.referenced[name] = true
	if _, ok := v.env.Registry.Evaluator(name); !ok {
		v.errorf(path, "custom-evaluator", "custom evaluator %q is not registered", name)
	}
}

// condition checks one condition; allowed lists the types valid where it is.
func (v *validator) condition(path string, c Condition, allowed ...ConditionType) {
	if !slices.Contains(allowed, c.Type) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		if c.Type == "" {
			v.errorf(join(path, "type"), "condition", "type is required: one of %s", strings.Join(names, ", "))
		} else {
			v.errorf(join(path, "type"), "condition", "condition type %q is not allowed here; use one of %s", c.Type, strings.Join(names, ", "))
		}
		return
	}
	set := map[string]bool{
		"category": c.Category != "", "min_satisfaction_rate": c.MinSatisfactionRate != 0,
		"min_turns": c.MinTurns != 0, "min_completeness": c.MinCompleteness != 0,
		"evaluator_name": c.EvaluatorName != "", "threshold": c.Threshold != 0, "keywords": len(c.Keywords) > 0,
	}
	uses := map[ConditionType][]string{
		CondObligationSatisfaction: {"category", "min_satisfaction_rate"},
		CondTurnCount:              {"min_turns"},
		CondCompletenessScore:      {"min_completeness"},
		CondCustomEvaluator:        {"evaluator_name", "threshold"},
		CondUserRequest:            {"keywords"},
	}[c.Type]
	for _, k := range sortedKeys(set) {
		if set[k] && !slices.Contains(uses, k) {
			v.errorf(join(path, k), "condition", "%s does not apply to a %s condition (it uses %s)", k, c.Type, strings.Join(uses, ", "))
		}
	}
	switch c.Type {
	case CondObligationSatisfaction:
		if c.Category == "" {
			v.errorf(join(path, "category"), "obligation-ref", "category is required")
		} else if !v.hasCategory(c.Category) {
			v.errorf(join(path, "category"), "obligation-ref", "no obligation has category %q (categories: %s)", c.Category, strings.Join(v.def.Categories(), ", "))
		}
		if c.MinSatisfactionRate <= 0 || c.MinSatisfactionRate > 1 {
			v.errorf(join(path, "min_satisfaction_rate"), "condition", "min_satisfaction_rate must be in (0, 1], got %g", c.MinSatisfactionRate)
		}
	case CondTurnCount:
		if c.MinTurns < 1 {
			v.errorf(join(path, "min_turns"), "condition", "min_turns must be at least 1, got %d", c.MinTurns)
		}
	case CondCompletenessScore:
		if c.MinCompleteness <= 0 || c.MinCompleteness > 1 {
			v.errorf(join(path, "min_completeness"), "condition", "min_completeness must be in (0, 1], got %g", c.MinCompleteness)
		}
	case CondCustomEvaluator:
		v.evaluator(join(path, "evaluator_name"), c.EvaluatorName)
		if c.Threshold < 0 || c.Threshold > 1 {
			v.errorf(join(path, "threshold"), "condition", "threshold must be in [0, 1], got %g", c.Threshold)
		} else if c.Threshold == 0 {
			v.warnf(join(path, "threshold"), "condition", "threshold 0 always holds")
		}
	case CondUserRequest:
		if len(c.Keywords) == 0 {
			v.errorf(join(path, "keywords"), "condition", "keywords are required")
		}
		for i, k := range c.Keywords {
			if strings.TrimSpace(k) == "" {
				v.errorf(fmt.Sprintf("%s.keywords[%d]", path, i), "condition", "keyword is empty")
			}
		}
	}
}

var phaseConditions = []ConditionType{CondObligationSatisfaction, CondTurnCount, CondCompletenessScore, CondCustomEvaluator}

func (v *validator) phases() {
	d := v.def
	if len(d.Phases) == 0 {
		v.errorf("phases", "phases", "at least one phase is required")
		return
	}
	ids := map[string]int{}
	for i, p := range d.Phases {
		path := fmt.Sprintf("phases[%d]", i)
		switch {
		case p.ID == "":
			v.errorf(join(path, "id"), "phases", "id is required")
		case !phaseIDRe.MatchString(p.ID):
			v.errorf(join(path, "id"), "phases", "phase id %q must be letters, digits and underscores", p.ID)
		}
		if j, dup := ids[p.ID]; dup && p.ID != "" {
			v.errorf(join(path, "id"), "phases", "phase %q is already defined at phases[%d]", p.ID, j)
		} else {
			ids[p.ID] = i
		}
		if strings.TrimSpace(p.DisplayName) == "" {
			v.errorf(join(path, "display_name"), "phases", "display_name is required")
		}
	}
	for i, p := range d.Phases {
		path := fmt.Sprintf("phases[%d]", i)
		if p.NextPhase != "" {
			if _, ok := ids[p.NextPhase]; !ok {
				v.errorf(join(path, "next_phase"), "phase-ref", "next_phase %q is not a phase", p.NextPhase)
			} else if p.NextPhase == p.ID {
				v.errorf(join(path, "next_phase"), "phase-ref", "next_phase of %q is itself", p.ID)
			}
		}
		for j, c := range p.EntryConditions {
			v.condition(fmt.Sprintf("%s.entry_conditions[%d]", path, j), c, phaseConditions...)
		}
		for j, t := range p.TransitionTriggers {
			tp := fmt.Sprintf("%s.transition_triggers[%d]", path, j)
			v.condition(tp, t.Condition, phaseConditions...)
			target := cmpOr(t.TargetPhase, p.NextPhase)
			switch {
			case target == "":
				v.errorf(tp, "phase-ref", "trigger has no target: set target_phase, or next_phase on phase %q", p.ID)
			case t.TargetPhase != "":
				if _, ok := ids[t.TargetPhase]; !ok {
					v.errorf(join(tp, "target_phase"), "phase-ref", "target_phase %q is not a phase", t.TargetPhase)
				} else if t.TargetPhase == p.ID {
					v.errorf(join(tp, "target_phase"), "phase-ref", "target_phase of a %q trigger is %q itself", p.ID, p.ID)
				}
			}
		}
		if p.NextPhase != "" && len(p.TransitionTriggers) == 0 {
			v.warnf(join(path, "next_phase"), "phases", "phase %q has a next_phase but no transition_triggers, so it never advances", p.ID)
		}
		for j, c := range p.MandatoryCheckpoints {
			cp := fmt.Sprintf("%s.mandatory_checkpoints[%d]", path, j)
			if c.ObligationID == "" {
				v.errorf(join(cp, "obligation_id"), "obligation-ref", "obligation_id is required")
			} else if _, ok := d.Obligation(c.ObligationID); !ok {
				v.errorf(join(cp, "obligation_id"), "obligation-ref", "checkpoint obligation %q is not an obligation", c.ObligationID)
			}
			if !c.Required {
				v.warnf(join(cp, "required"), "phases", "checkpoint %q is not required, so it never blocks a transition", c.ObligationID)
			}
		}
		for j, c := range p.FocusCategories {
			if !v.hasCategory(c) {
				v.errorf(fmt.Sprintf("%s.focus_categories[%d]", path, j), "obligation-ref", "no obligation has category %q", c)
			}
		}
		if sum := p.ModeBlend.Sum(); sum != 100 {
			v.errorf(join(path, "mode_blend"), "mode-blend", "mode blend of %q sums to %d%%, want 100%%", p.ID, sum)
		}
		for _, m := range Modes() {
			if p.ModeBlend.Get(m) < 0 {
				v.errorf(join(join(path, "mode_blend"), string(m)), "mode-blend", "%s is negative", m)
			}
		}
		if p.ActiveTechniques != nil && len(p.ActiveTechniques) == 0 {
			// Written empty (active_techniques: []), not left out: the
			// phase activates no technique, which an author may have
			// meant as all of available_techniques.
			v.warnf(join(path, "active_techniques"), "technique", "phase %q lists no active_techniques, so no technique "+
				"is used in it (an empty list is not all of available_techniques): list some, or leave the key out", p.ID)
		}
		for j, t := range p.ActiveTechniques {
			tp := fmt.Sprintf("%s.active_techniques[%d]", path, j)
			if !v.env.Registry.HasTechnique(t) {
				v.errorf(tp, "technique", "technique %q is not in the technique library", t)
			} else if !slices.Contains(d.AvailableTechniques, t) {
				v.errorf(tp, "technique", "technique %q is not listed in available_techniques", t)
			}
		}
		if strings.TrimSpace(p.AgentInstructions) == "" {
			v.warnf(join(path, "agent_instructions"), "phases", "phase %q has no agent_instructions", p.ID)
		}
	}
	v.phaseOrder()
	if d.InitialPhase == "" {
		v.errorf("initial_phase", "initial-phase", "initial_phase is required")
		return
	}
	start, ok := d.Phase(d.InitialPhase)
	if !ok {
		v.errorf("initial_phase", "initial-phase", "initial_phase %q is not a phase", d.InitialPhase)
		return
	}
	if start.Order != 1 {
		v.warnf("initial_phase", "initial-phase", "initial_phase %q has order %d, not 1", start.ID, start.Order)
	}
	v.phaseGraph()
}

func (v *validator) phaseOrder() {
	orders := make([]int, 0, len(v.def.Phases))
	for _, p := range v.def.Phases {
		orders = append(orders, p.Order)
	}
	sorted := slices.Clone(orders)
	sort.Ints(sorted)
	for i, o := range sorted {
		if o != i+1 {
			v.errorf("phases", "phase-order", "phase order must be sequential 1..%d without gaps or repeats, got %v", len(sorted), orders)
			return
		}
	}
	for i, p := range v.def.Phases {
		if p.Order != i+1 {
			v.warnf(fmt.Sprintf("phases[%d].order", i), "phase-order", "phase %q has order %d but is listed at position %d", p.ID, p.Order, i+1)
		}
	}
}

// phaseGraph walks the edges (next_phase and trigger targets) from the
// initial phase; every phase it does not reach is an orphan.
func (v *validator) phaseGraph() {
	d := v.def
	edges := map[string][]string{}
	for _, p := range d.Phases {
		if p.NextPhase != "" {
			edges[p.ID] = append(edges[p.ID], p.NextPhase)
		}
		for _, t := range p.TransitionTriggers {
			if t.TargetPhase != "" {
				edges[p.ID] = append(edges[p.ID], t.TargetPhase)
			}
		}
	}
	seen := map[string]bool{d.InitialPhase: true}
	queue := []string{d.InitialPhase}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, n := range edges[cur] {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	for i, p := range d.Phases {
		if p.ID != "" && !seen[p.ID] {
			v.errorf(fmt.Sprintf("phases[%d]", i), "phase-graph", "Orphaned phase: %s", p.ID)
		}
	}
}

func (v *validator) obligations() {
	d := v.def
	if len(d.Obligations) == 0 {
		v.errorf("obligations", "obligations", "at least one obligation is required")
		return
	}
	ids := map[string]int{}
	usedFields := map[string]bool{}
	for i, o := range d.Obligations {
		path := fmt.Sprintf("obligations[%d]", i)
		switch {
		case o.ID == "":
			v.errorf(join(path, "id"), "obligations", "id is required")
		case !snakeIDRe.MatchString(o.ID):
			v.errorf(join(path, "id"), "obligations", "obligation id %q must be snake_case", o.ID)
		}
		if j, dup := ids[o.ID]; dup && o.ID != "" {
			v.errorf(join(path, "id"), "obligations", "obligation %q is already defined at obligations[%d]", o.ID, j)
		} else {
			ids[o.ID] = i
		}
		if o.Category == "" {
			v.errorf(join(path, "category"), "obligations", "category is required")
		}
		if strings.TrimSpace(o.Description) == "" {
			v.errorf(join(path, "description"), "obligations", "description is required")
		}
		switch o.Priority {
		case "", PriorityCritical, PriorityHigh, PriorityMedium, PriorityLow:
		default:
			v.errorf(join(path, "priority"), "obligations", "priority %q is not critical, high, medium or low", o.Priority)
		}
		if len(o.Fields) == 0 && o.Evaluator == "" {
			v.errorf(path, "obligations", "obligation %q needs fields (extraction paths) or an evaluator, or it can never be satisfied", o.ID)
		}
		for j, f := range o.Fields {
			usedFields[f] = true
			if _, ok := d.Field(f); !ok {
				v.errorf(fmt.Sprintf("%s.fields[%d]", path, j), "field-ref", "field %q is not in extraction_schema", f)
			}
		}
		if o.MinFields > len(o.Fields) {
			v.errorf(join(path, "min_fields"), "obligations", "min_fields %d is more than the %d fields listed", o.MinFields, len(o.Fields))
		}
		if o.Evaluator != "" {
			v.evaluator(join(path, "evaluator"), o.Evaluator)
		} else if o.Threshold != 0 {
			v.errorf(join(path, "threshold"), "obligations", "threshold applies only with an evaluator")
		}
	}
	for i, f := range d.ExtractionSchema.Fields {
		if f.Required && !usedFields[f.Path] {
			v.warnf(fmt.Sprintf("extraction_schema.fields[%d]", i), "field-ref", "required field %q is not listed by any obligation", f.Path)
		}
	}
}

func (v *validator) completeness() {
	m := v.def.CompletenessModel
	const path = "completeness_model"
	if !slices.Contains(CompletenessModelTypes(), m.Type) {
		names := make([]string, 0, 7)
		for _, t := range CompletenessModelTypes() {
			names = append(names, string(t))
		}
		v.errorf(join(path, "type"), "completeness-model", "type %q is not one of %s", m.Type, strings.Join(names, ", "))
	}
	if m.ReadyThreshold <= 0 || m.ReadyThreshold > 1 {
		v.errorf(join(path, "ready_threshold"), "completeness-model", "ready_threshold must be in (0, 1], got %g", m.ReadyThreshold)
	}
	ids := map[string]bool{}
	sum := 0.0
	for i, h := range m.Heuristics {
		hp := fmt.Sprintf("%s.heuristics[%d]", path, i)
		if h.ID == "" {
			v.errorf(join(hp, "id"), "completeness-model", "id is required")
		} else if ids[h.ID] {
			v.errorf(join(hp, "id"), "completeness-model", "heuristic %q is defined twice", h.ID)
		}
		ids[h.ID] = true
		if h.Weight < 0 || h.Weight > 1 {
			v.errorf(join(hp, "weight"), "completeness-model", "weight must be in [0, 1], got %g", h.Weight)
		}
		sum += h.Weight
		n := 0
		for _, s := range []string{h.Category, h.Evaluator, h.FieldPrefix, h.Signal} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			v.errorf(hp, "completeness-model", "heuristic %q must set exactly one of category, evaluator, field_prefix, signal (has %d)", h.ID, n)
		}
		if h.Category != "" && !v.hasCategory(h.Category) {
			v.errorf(join(hp, "category"), "obligation-ref", "no obligation has category %q", h.Category)
		}
		if h.Evaluator != "" {
			v.evaluator(join(hp, "evaluator"), h.Evaluator)
		}
		if h.FieldPrefix != "" && len(FieldsUnder(v.def, h.FieldPrefix)) == 0 {
			v.errorf(join(hp, "field_prefix"), "field-ref", "no extraction field is under %q", h.FieldPrefix)
		}
		if h.Signal != "" && h.Signal != SignalSaturation {
			v.errorf(join(hp, "signal"), "completeness-model", "signal %q is not known (signals: %s)", h.Signal, SignalSaturation)
		}
	}
	if len(m.Heuristics) > 0 && math.Abs(sum-1) > 0.001 {
		v.errorf(join(path, "heuristics"), "heuristic-weights", "heuristic weights sum to %.3f, want 1.0", sum)
	}
	if m.Type == ModelDecisionReadiness && len(m.Heuristics) == 0 {
		v.warnf(join(path, "heuristics"), "completeness-model", "decision-readiness without heuristics scores obligation categories only")
	}
	if len(m.Levels) > 0 && m.Type != ModelMaturity {
		v.warnf(join(path, "levels"), "completeness-model", "levels apply to the maturity model only")
	}
	for i := 1; i < len(m.Levels); i++ {
		if m.Levels[i].MinScore <= m.Levels[i-1].MinScore {
			v.errorf(fmt.Sprintf("%s.levels[%d].min_score", path, i), "completeness-model", "levels must have increasing min_score")
		}
	}
	if m.SaturationWindow < 0 {
		v.errorf(join(path, "saturation_window"), "completeness-model", "saturation_window must not be negative")
	}
}

// FieldsUnder returns the schema fields whose path is prefix or starts with
// prefix + ".", in schema order.
func FieldsUnder(def *Definition, prefix string) []*FieldDefinition {
	var out []*FieldDefinition
	for i := range def.ExtractionSchema.Fields {
		f := &def.ExtractionSchema.Fields[i]
		if f.Path == prefix || strings.HasPrefix(f.Path, prefix+".") {
			out = append(out, f)
		}
	}
	return out
}

func (v *validator) backgroundTasks() {
	ids := map[string]bool{}
	for i, t := range v.def.BackgroundTasks {
		path := fmt.Sprintf("background_tasks[%d]", i)
		switch {
		case t.TaskID == "":
			v.errorf(join(path, "task_id"), "background-task", "task_id is required")
		case !snakeIDRe.MatchString(t.TaskID):
			v.errorf(join(path, "task_id"), "background-task", "task_id %q must be snake_case", t.TaskID)
		case ids[t.TaskID]:
			v.errorf(join(path, "task_id"), "background-task", "task %q is defined twice", t.TaskID)
		}
		ids[t.TaskID] = true
		if t.DisplayName == "" {
			v.errorf(join(path, "display_name"), "background-task", "display_name is required")
		}
		if t.Handler == "" {
			v.errorf(join(path, "handler"), "task-handler", "handler is required")
		} else if !v.env.Registry.HasTaskHandler(t.Handler) {
			v.errorf(join(path, "handler"), "task-handler", "task handler %q is not registered%s", t.Handler, v.handlerHint(t.Handler))
		}
		tp := join(path, "trigger")
		tr := t.Trigger
		for j, id := range tr.ObligationIDs {
			if _, ok := v.def.Obligation(id); !ok {
				v.errorf(fmt.Sprintf("%s.obligation_ids[%d]", tp, j), "obligation-ref", "obligation %q is not an obligation", id)
			}
		}
		switch tr.Type {
		case TaskTriggerLowConfidence:
			if tr.Threshold <= 0 || tr.Threshold > 1 {
				v.errorf(join(tp, "threshold"), "background-task", "low_confidence needs threshold in (0, 1], got %g", tr.Threshold)
			}
		case TaskTriggerObligationStatus:
			if len(tr.ObligationIDs) == 0 {
				v.errorf(join(tp, "obligation_ids"), "background-task", "obligation_status needs obligation_ids")
			}
			switch tr.Status {
			case "", StatusPending, StatusPartial, StatusSatisfied, StatusDeferred:
			default:
				v.errorf(join(tp, "status"), "background-task", "status %q is not pending, partial, satisfied or deferred", tr.Status)
			}
		case TaskTriggerCustom:
			v.evaluator(join(tp, "evaluator"), tr.Evaluator)
		default:
			v.errorf(join(tp, "type"), "background-task", "trigger type %q is not low_confidence, obligation_status or custom", tr.Type)
		}
		fp := join(path, "failure_strategy")
		fs := t.FailureStrategy
		switch fs.Type {
		case FailureRetry:
			if fs.MaxRetries == nil || *fs.MaxRetries < 1 {
				v.errorf(join(fp, "max_retries"), "failure-strategy", "retry needs max_retries of at least 1")
			}
			switch fs.Then {
			case "", FailureDegrade, FailureStall, FailureProceedWithGap:
			default:
				v.errorf(join(fp, "then"), "failure-strategy", "then %q is not degrade, stall or proceed-with-gap", fs.Then)
			}
		case FailureStall:
			if fs.MaxRetries != nil && *fs.MaxRetries < 0 {
				v.errorf(join(fp, "max_retries"), "failure-strategy", "max_retries must not be negative")
			}
			switch fs.Then {
			case "", FailureDegrade, FailureProceedWithGap:
			default:
				v.errorf(join(fp, "then"), "failure-strategy", "then %q is not degrade or proceed-with-gap (what a stall falls back to)", fs.Then)
			}
		case FailureDegrade, FailureProceedWithGap:
			if (fs.MaxRetries != nil && *fs.MaxRetries != 0) || fs.Then != "" {
				v.errorf(fp, "failure-strategy", "max_retries and then apply to the retry and stall strategies only")
			}
		default:
			v.errorf(join(fp, "type"), "failure-strategy", "failure strategy %q is not retry, degrade, stall or proceed-with-gap", fs.Type)
		}
		if fs.Type == FailureDegrade && fs.DegradedBehavior == "" {
			v.warnf(join(fp, "degraded_behavior"), "failure-strategy", "degrade without degraded_behavior gives the agent no guidance")
		}
		if fs.Type == FailureStall && !t.BlockPhaseTransition {
			v.warnf(join(path, "block_phase_transition"), "failure-strategy", "stall is meant to block progress; set block_phase_transition: true")
		}
	}
}

func (v *validator) contextConfig() {
	c := v.def.ContextConfig
	const path = "context_config"
	if c.MaxTokens < 256 {
		v.errorf(join(path, "max_tokens"), "context-config", "max_tokens must be at least 256, got %d", c.MaxTokens)
	}
	a := c.Allocation
	for _, e := range []struct {
		name string
		x    float64
	}{{"obligations", a.Obligations}, {"conversation_history", a.ConversationHistory},
		{"background_intelligence", a.BackgroundIntelligence}, {"extraction_summary", a.ExtractionSummary}} {
		if name, x := e.name, e.x; x < 0 || x > 1 {
			v.errorf(join(join(path, "allocation"), name), "context-allocation", "%s must be a fraction in [0, 1], got %g", name, x)
		}
	}
	if sum := a.Sum(); math.Abs(sum-1) > 0.01 {
		v.errorf(join(path, "allocation"), "context-allocation", "context allocation sums to %.0f%%, want ≈100%% (fractions summing to 1.0)", sum*100)
	}
	if a.ConversationHistory == 0 {
		v.warnf(join(join(path, "allocation"), "conversation_history"), "context-allocation", "no budget for conversation history")
	}
	switch c.CompressionStrategy {
	case "", CompressSummarizeOld, CompressSlidingWindow, CompressExtractive:
	default:
		v.errorf(join(path, "compression_strategy"), "context-config", "compression_strategy %q is not summarize_old, sliding_window or extractive", c.CompressionStrategy)
	}
	switch c.Encoding {
	case "", "cl100k_base", "o200k_base", "p50k_base", "r50k_base":
	default:
		v.errorf(join(path, "encoding"), "context-config", "encoding %q is not cl100k_base, o200k_base, p50k_base or r50k_base", c.Encoding)
	}
	if c.RecentTurnsKept < 0 || c.CheckpointEveryTurns < 0 {
		v.errorf(path, "context-config", "recent_turns_kept and checkpoint_every_turns must not be negative")
	}
}

func (v *validator) informationRatio() {
	r := v.def.InformationRatio
	const path = "information_ratio"
	if r.User < 0 || r.System < 0 || r.User+r.System != 100 {
		v.errorf(path, "information-ratio", "information ratio user %d + system %d = %d, want 100", r.User, r.System, r.User+r.System)
		return
	}
	switch v.def.EngineType {
	case ExtractDominant:
		if r.User <= r.System {
			v.warnf(path, "information-ratio", "an extract-dominant engine usually has user > system, got %d:%d", r.User, r.System)
		}
	case InformDominant:
		if r.System <= r.User {
			v.warnf(path, "information-ratio", "an inform-dominant engine usually has system > user, got %d:%d", r.User, r.System)
		}
	}
}

func (v *validator) sidebar() {
	s := v.def.SidebarConfig
	const path = "sidebar_config"
	ids := map[string]bool{}
	section := func(sp string, sec SidebarSection) {
		if sec.ID == "" {
			v.errorf(join(sp, "id"), "sidebar", "id is required")
		} else if ids[sec.ID] {
			v.errorf(join(sp, "id"), "sidebar", "section %q is defined twice", sec.ID)
		}
		ids[sec.ID] = true
		if sec.Title == "" {
			v.errorf(join(sp, "title"), "sidebar", "title is required")
		}
		if len(sec.ObligationCategories) == 0 {
			v.errorf(join(sp, "obligation_categories"), "sidebar", "obligation_categories are required")
		}
		for j, c := range sec.ObligationCategories {
			if !v.hasCategory(c) {
				v.errorf(fmt.Sprintf("%s.obligation_categories[%d]", sp, j), "obligation-ref", "no obligation has category %q", c)
			}
		}
	}
	for i, sec := range s.StaticSections {
		section(fmt.Sprintf("%s.static_sections[%d]", path, i), sec)
	}
	for i, ds := range s.DynamicSections {
		dp := fmt.Sprintf("%s.dynamic_sections[%d]", path, i)
		section(join(dp, "section"), ds.Section)
		v.condition(join(dp, "appears_when"), ds.AppearsWhen, phaseConditions...)
		for j, p := range ds.Phases {
			if _, ok := v.def.Phase(p); !ok {
				v.errorf(fmt.Sprintf("%s.phases[%d]", dp, j), "phase-ref", "%q is not a phase", p)
			}
		}
	}
	for _, k := range sortedKeys(s.PhaseIndicator.Labels) {
		if _, ok := v.def.Phase(k); !ok {
			v.errorf(join(join(path, "phase_indicator.labels"), k), "phase-ref", "label for %q, which is not a phase", k)
		}
	}
}

func (v *validator) techniques() {
	seen := map[string]bool{}
	for i, t := range v.def.AvailableTechniques {
		p := fmt.Sprintf("available_techniques[%d]", i)
		if !v.env.Registry.HasTechnique(t) {
			v.errorf(p, "technique", "technique %q is not in the technique library", t)
		}
		if seen[t] {
			v.warnf(p, "technique", "technique %q is listed twice", t)
		}
		seen[t] = true
	}
}

func (v *validator) exitTransitions() {
	for i, x := range v.def.ExitTransitions {
		path := fmt.Sprintf("exit_transitions[%d]", i)
		switch {
		case x.TargetEngine == "":
			v.errorf(join(path, "target_engine"), "exit-transition", "target_engine is required")
		case x.TargetEngine == v.def.EngineID:
			v.errorf(join(path, "target_engine"), "exit-transition", "exit transition targets the engine itself (self-transition)")
		case v.env.Engines == nil:
			v.warnf(join(path, "target_engine"), "exit-transition", "target engine %q not checked: no engine registry given", x.TargetEngine)
		case !v.env.Engines(x.TargetEngine):
			v.errorf(join(path, "target_engine"), "exit-transition", "exit transition target %q is not a registered engine", x.TargetEngine)
		}
		if len(x.Conditions) == 0 {
			v.errorf(join(path, "conditions"), "exit-transition", "at least one condition is required")
		}
		for j, c := range x.Conditions {
			v.condition(fmt.Sprintf("%s.conditions[%d]", path, j), c,
				CondObligationSatisfaction, CondTurnCount, CondCompletenessScore, CondCustomEvaluator, CondUserRequest)
		}
		if strings.TrimSpace(x.Reason) == "" {
			v.errorf(join(path, "reason"), "exit-transition", "reason is required")
		}
	}
}

func (v *validator) systemPrompt() {
	if strings.TrimSpace(v.def.SystemPromptTemplate) == "" {
		v.errorf("system_prompt_template", "system-prompt", "system_prompt_template is required")
		return
	}
	t, err := compileTemplate(v.def.EngineID, v.def.SystemPromptTemplate)
	if err != nil {
		v.errorf("system_prompt_template", "system-prompt", "template does not parse: %v", err)
		return
	}
	w := &cappedWriter{limit: maxPromptBytes}
	if err := t.Execute(w, samplePromptData(v.def)); err != nil {
		v.errorf("system_prompt_template", "system-prompt", "template does not render: %v", err)
		return
	}
	v.def.tmpl = t
}

func (v *validator) extractionSchema() {
	s := v.def.ExtractionSchema
	const path = "extraction_schema.fields"
	if len(s.Fields) == 0 {
		v.errorf(path, "extraction-schema", "at least one field is required")
		return
	}
	paths := map[string]int{}
	for i, f := range s.Fields {
		fp := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case f.Path == "":
			v.errorf(join(fp, "path"), "extraction-schema", "path is required")
		case !fieldPathRe.MatchString(f.Path):
			v.errorf(join(fp, "path"), "extraction-schema", "path %q must be dot-separated snake_case segments", f.Path)
		}
		if j, dup := paths[f.Path]; dup && f.Path != "" {
			v.errorf(join(fp, "path"), "extraction-schema", "field %q is already defined at %s[%d]", f.Path, path, j)
		} else {
			paths[f.Path] = i
		}
		if f.DisplayName == "" {
			v.errorf(join(fp, "display_name"), "extraction-schema", "display_name is required")
		}
		if f.Description == "" {
			v.errorf(join(fp, "description"), "extraction-schema", "description is required")
		}
		switch f.ValueType {
		case TypeString, TypeNumber, TypeBoolean, TypeArray, TypeObject:
		default:
			v.errorf(join(fp, "value_type"), "extraction-schema", "value_type %q is not string, number, boolean, array or object", f.ValueType)
		}
		if f.ConfidenceThreshold < 0 || f.ConfidenceThreshold > 1 {
			v.errorf(join(fp, "confidence_threshold"), "extraction-schema", "confidence_threshold must be in [0, 1], got %g", f.ConfidenceThreshold)
		}
		switch {
		case f.MinItems < 0:
			v.errorf(join(fp, "min_items"), "extraction-schema", "min_items must be 0 or more, got %d", f.MinItems)
		case f.MinItems > 0 && f.ValueType != TypeArray:
			v.errorf(join(fp, "min_items"), "extraction-schema", "min_items counts the items of an array; this field's value_type is %s", f.ValueType)
		}
		v.cues(join(fp, "cues"), f)
	}
	// A field must not be both a leaf and the parent of another field.
	for i, f := range s.Fields {
		for _, g := range s.Fields {
			if f.Path != "" && strings.HasPrefix(g.Path, f.Path+".") {
				v.errorf(fmt.Sprintf("%s[%d].path", path, i), "extraction-schema", "field %q is also the parent of %q", f.Path, g.Path)
				break
			}
		}
	}
}

func (v *validator) cues(path string, f FieldDefinition) {
	c := f.Cues
	if c.Empty() {
		v.warnf(path, "cues", "field %q has no cues: the offline provider cannot extract it", f.Path)
	}
	for i, k := range c.Keywords {
		if strings.TrimSpace(k) == "" {
			v.errorf(fmt.Sprintf("%s.keywords[%d]", path, i), "cues", "keyword is empty")
		}
	}
	for i, p := range c.Patterns {
		if _, err := regexp.Compile(p); err != nil {
			v.errorf(fmt.Sprintf("%s.patterns[%d]", path, i), "cues", "pattern does not compile: %v", err)
		}
	}
	for i, cv := range c.Values {
		vp := fmt.Sprintf("%s.values[%d]", path, i)
		if len(cv.When) == 0 {
			v.errorf(join(vp, "when"), "cues", "when needs at least one word")
		}
		if !valueFits(f.ValueType, cv.Value) {
			v.errorf(join(vp, "value"), "cues", "value %v does not fit value_type %s", cv.Value, f.ValueType)
		}
	}
	if c.Confidence < 0 || c.Confidence > 1 {
		v.errorf(join(path, "confidence"), "cues", "confidence must be in [0, 1]")
	}
}

// valueFits reports whether a literal cue value has the field's JSON type.
func valueFits(t ValueType, x any) bool {
	b, err := json.Marshal(x)
	if err != nil {
		return false
	}
	var j any
	if json.Unmarshal(b, &j) != nil {
		return false
	}
	switch j.(type) {
	case string:
		return t == TypeString || t == TypeArray
	case float64:
		return t == TypeNumber
	case bool:
		return t == TypeBoolean
	case []any:
		return t == TypeArray
	case map[string]any:
		return t == TypeObject
	}
	return false
}

func (v *validator) customEvaluators() {
	declared := map[string]bool{}
	for i, name := range v.def.CustomEvaluators {
		p := fmt.Sprintf("custom_evaluators[%d]", i)
		if declared[name] {
			v.warnf(p, "custom-evaluator", "custom evaluator %q is declared twice", name)
		}
		declared[name] = true
		if _, ok := v.env.Registry.Evaluator(name); !ok {
			v.errorf(p, "custom-evaluator", "custom evaluator %q is not registered", name)
		}
	}
	for _, name := range sortedKeys(v.referenced) {
		if !declared[name] {
			v.warnf("custom_evaluators", "custom-evaluator", "evaluator %q is used but not declared in custom_evaluators", name)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TaskAttemptCap is the longest one attempt of a background task runs: the
// background service's per-attempt cap (its Config.MaxTimeout default). An
// attempt's timeout is its estimated duration times the runner's timeout
// factor, cut to this cap.
const TaskAttemptCap = 10 * time.Minute

// taskSettings checks the durations and numbers of the background tasks,
// and the fallbacks that leave the agent without guidance.
func (v *validator) taskSettings() {
	for i, t := range v.def.BackgroundTasks {
		path := fmt.Sprintf("background_tasks[%d]", i)
		ep := join(path, "estimated_duration")
		switch {
		case t.EstimatedDuration == 0 && !v.present(ep):
			v.errorf(ep, "background-task", "estimated_duration is required (e.g. 30s)")
		case t.EstimatedDuration <= 0:
			v.errorf(ep, "background-task", "estimated_duration must be positive (e.g. 30s), got %s", t.EstimatedDuration.D())
		case t.EstimatedDuration.D() > TaskAttemptCap:
			v.warnf(ep, "background-task", "estimated_duration %s is above the background service's per-attempt cap of %s: "+
				"every attempt is cut off at %s, so the task fails before its estimate", t.EstimatedDuration.D(), TaskAttemptCap, TaskAttemptCap)
		}
		if mt := t.Trigger.MinTurn; mt < 0 {
			v.errorf(join(path, "trigger.min_turn"), "background-task", "min_turn must not be negative, got %d", mt)
		}
		fp := join(path, "failure_strategy")
		fs := t.FailureStrategy
		rp := join(fp, "retry_delay")
		switch {
		case fs.RetryDelay < 0:
			v.errorf(rp, "failure-strategy", "retry_delay must be positive, got %s", fs.RetryDelay.D())
		case fs.RetryDelay == 0 && v.present(rp):
			v.errorf(rp, "failure-strategy", "retry_delay must be positive, or leave it out for the default 5s")
		}
		if (fs.Type == FailureRetry || fs.Type == FailureStall) && fs.Then == FailureDegrade && fs.DegradedBehavior == "" {
			v.warnf(join(fp, "degraded_behavior"), "failure-strategy",
				"%s falling back to degrade without degraded_behavior gives the agent no guidance once the retries are spent", fs.Type)
		}
	}
}

// present reports whether path was written in the definition's file: there
// a zero duration is not the same as one left out. A definition not loaded
// from a file has nothing written.
func (v *validator) present(path string) bool {
	_, ok := v.def.positions[path]
	return ok
}

// handlerHint is what an unknown task handler's error adds: the nearest
// registered handler, and every one.
func (v *validator) handlerHint(name string) string {
	names := v.env.Registry.TaskHandlers()
	if len(names) == 0 {
		return "; no task handlers are registered"
	}
	return suggestName(name, names) + "; registered: " + strings.Join(names, ", ")
}

// blockingTasks warns of a task that blocks phase transitions but can never
// hold the phase it belongs to: a turn changes phase (steps 6-7) before it
// starts tasks (step 8), so a task whose trigger first holds on the very
// turn its phase's transition fires starts after the phase has moved on.
// It is conservative: the trigger is obligation_status on satisfied
// obligations; the task's phase is the first phase, in order, that works
// on one of their categories; and that phase's transition is sure to fire
// once they are satisfied (an obligation_satisfaction trigger they reach
// alone, every required checkpoint among them, and no entry condition on
// the way that could hold it).
func (v *validator) blockingTasks() {
	d := v.def
	for i, t := range d.BackgroundTasks {
		tr := t.Trigger
		if !t.BlockPhaseTransition || tr.Type != TaskTriggerObligationStatus || tr.Status != StatusSatisfied || len(tr.ObligationIDs) == 0 {
			continue
		}
		var cats []string
		known := true
		for _, id := range tr.ObligationIDs {
			o, ok := d.Obligation(id)
			if !ok {
				known = false
				break
			}
			cats = append(cats, o.Category)
		}
		if !known {
			continue
		}
		p := v.workingPhase(cats)
		if p == nil {
			continue
		}
		if k, ok := v.firesWhenSatisfied(p, tr.ObligationIDs); ok {
			v.warnf(join(fmt.Sprintf("background_tasks[%d]", i), "trigger"), "background-task",
				"task %q blocks phase transitions, but its trigger (%s satisfied) first holds on the turn phase %q's "+
					"transition_triggers[%d] fires, and tasks start after the phase has changed: it never holds %q; "+
					"trigger it earlier (status: partial, or an obligation of an earlier phase)",
				t.TaskID, strings.Join(tr.ObligationIDs, ", "), p.ID, k, p.ID)
		}
	}
}

// workingPhase is the first phase, in order, whose focus includes one of
// cats: where obligations of those categories are asked for first.
func (v *validator) workingPhase(cats []string) *Phase {
	var first *Phase
	for i := range v.def.Phases {
		p := &v.def.Phases[i]
		if first != nil && p.Order >= first.Order {
			continue
		}
		for _, c := range v.def.PhaseFocus(p) {
			if slices.Contains(cats, c) {
				first = p
				break
			}
		}
	}
	return first
}

// firesWhenSatisfied reports whether p's transition surely fires on the turn
// the obligations ids are all satisfied, and by which trigger: one of its
// obligation_satisfaction triggers reaches its rate with them alone, every
// required checkpoint of p is among them, and no trigger up to that one
// leads to a phase with entry conditions (which could hold the transition).
func (v *validator) firesWhenSatisfied(p *Phase, ids []string) (int, bool) {
	for _, c := range p.MandatoryCheckpoints {
		if c.Required && !slices.Contains(ids, c.ObligationID) {
			return 0, false
		}
	}
	for k, t := range p.TransitionTriggers {
		target := cmpOr(t.TargetPhase, p.NextPhase)
		if target == "" {
			continue // never fires
		}
		dst, ok := v.def.Phase(target)
		if !ok || len(dst.EntryConditions) > 0 {
			return 0, false
		}
		if t.Type != CondObligationSatisfaction || t.MinSatisfactionRate <= 0 {
			continue
		}
		total, mine := 0, 0
		for _, o := range v.def.Obligations {
			if o.Category == t.Category {
				total++
				if slices.Contains(ids, o.ID) {
					mine++
				}
			}
		}
		if total > 0 && float64(mine)/float64(total)+1e-9 >= t.MinSatisfactionRate {
			return k, true
		}
	}
	return 0, false
}
