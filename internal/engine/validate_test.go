package engine

import (
	"os"
	"strings"
	"testing"
)

func testRegistry(t testing.TB) *Registry {
	t.Helper()
	r := NewRegistry()
	r.RegisterTechniques("open_ended_questions", "active_listening", "summary_reflection")
	if err := r.RegisterEvaluator("always", func(*WorkingMemory) float64 { return 1 }); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterTaskHandler("research.web", "web research"); err != nil {
		t.Fatal(err)
	}
	return r
}

func minimalDef(t testing.TB) *Definition {
	t.Helper()
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def, rep := Parse("testdata/minimal.yaml", data)
	if !rep.Valid() {
		t.Fatalf("parse minimal.yaml: %v", rep.Err())
	}
	return def
}

func validateEnv(t testing.TB) ValidateEnv {
	return ValidateEnv{Registry: testRegistry(t), Engines: func(id string) bool { return id == "minimal" || id == "other" }}
}

func TestValidateMinimalIsValid(t *testing.T) {
	rep := Validate(minimalDef(t), validateEnv(t))
	if !rep.Valid() {
		t.Fatalf("minimal engine: %v", rep.Err())
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings = %v, want none", rep.Warnings)
	}
}

// An obligation may list fields and name an evaluator, which satisfies it
// too (an answer an inbound handoff carried).
func TestValidateObligationWithFieldsAndEvaluator(t *testing.T) {
	def := minimalDef(t)
	def.Obligations[1].Evaluator, def.Obligations[1].Threshold = "always", 0.7
	def.CustomEvaluators = append(def.CustomEvaluators, "always")
	rep := Validate(def, validateEnv(t))
	if !rep.Valid() || len(rep.Warnings) != 0 {
		t.Errorf("errors %v, warnings %v; want none", rep.Err(), rep.Warnings)
	}
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(d *Definition)
		wantPath string
		wantRule string
		wantMsg  string
	}{
		{
			name: "orphaned phase",
			mutate: func(d *Definition) {
				d.Phases[0].NextPhase = ""
				d.Phases[0].TransitionTriggers[0].TargetPhase = "START_B"
				d.Phases = append(d.Phases, Phase{ID: "START_B", DisplayName: "B", Order: 3,
					ModeBlend: ModeBlend{Extract: 100}, AgentInstructions: "x",
					NextPhase: "START", TransitionTriggers: []Trigger{{Condition: Condition{Type: CondTurnCount, MinTurns: 1}}}})
			},
			wantPath: "phases[1]", wantRule: "phase-graph", wantMsg: "Orphaned phase: END",
		},
		{
			name:     "missing engine id",
			mutate:   func(d *Definition) { d.EngineID = "" },
			wantPath: "engine_id", wantRule: "identity", wantMsg: "engine_id is required",
		},
		{
			name:     "bad version",
			mutate:   func(d *Definition) { d.Version = "1.0" },
			wantPath: "version", wantRule: "identity", wantMsg: "not semver",
		},
		{
			name:     "bad engine type",
			mutate:   func(d *Definition) { d.EngineType = "chatty" },
			wantPath: "engine_type", wantRule: "identity", wantMsg: "chatty",
		},
		{
			name:     "order not sequential",
			mutate:   func(d *Definition) { d.Phases[1].Order = 3 },
			wantPath: "phases", wantRule: "phase-order", wantMsg: "sequential",
		},
		{
			name:     "duplicate order",
			mutate:   func(d *Definition) { d.Phases[1].Order = 1 },
			wantPath: "phases", wantRule: "phase-order", wantMsg: "sequential",
		},
		{
			name:     "initial phase missing",
			mutate:   func(d *Definition) { d.InitialPhase = "NOWHERE" },
			wantPath: "initial_phase", wantRule: "initial-phase", wantMsg: `"NOWHERE" is not a phase`,
		},
		{
			name:     "next phase unknown",
			mutate:   func(d *Definition) { d.Phases[0].NextPhase = "LATER" },
			wantPath: "phases[0].next_phase", wantRule: "phase-ref", wantMsg: `"LATER" is not a phase`,
		},
		{
			name:     "trigger category unknown",
			mutate:   func(d *Definition) { d.Phases[0].TransitionTriggers[0].Category = "money" },
			wantPath: "phases[0].transition_triggers[0].category", wantRule: "obligation-ref", wantMsg: `"money"`,
		},
		{
			name: "trigger param of another type",
			mutate: func(d *Definition) {
				d.Phases[0].TransitionTriggers[0].MinTurns = 3
			},
			wantPath: "phases[0].transition_triggers[0].min_turns", wantRule: "condition", wantMsg: "does not apply",
		},
		{
			name: "user_request not allowed in trigger",
			mutate: func(d *Definition) {
				d.Phases[0].TransitionTriggers[0].Condition = Condition{Type: CondUserRequest, Keywords: []string{"go"}}
			},
			wantPath: "phases[0].transition_triggers[0].type", wantRule: "condition", wantMsg: "not allowed here",
		},
		{
			name: "trigger without target",
			mutate: func(d *Definition) {
				d.Phases[1].TransitionTriggers = []Trigger{{Condition: Condition{Type: CondTurnCount, MinTurns: 2}}}
			},
			wantPath: "phases[1].transition_triggers[0]", wantRule: "phase-ref", wantMsg: "no target",
		},
		{
			name:     "checkpoint obligation unknown",
			mutate:   func(d *Definition) { d.Phases[1].MandatoryCheckpoints[0].ObligationID = "nope" },
			wantPath: "phases[1].mandatory_checkpoints[0].obligation_id", wantRule: "obligation-ref", wantMsg: `"nope"`,
		},
		{
			name:     "mode blend not 100",
			mutate:   func(d *Definition) { d.Phases[0].ModeBlend.Extract = 60 },
			wantPath: "phases[0].mode_blend", wantRule: "mode-blend", wantMsg: "sums to 90%",
		},
		{
			name:     "unknown technique",
			mutate:   func(d *Definition) { d.AvailableTechniques = append(d.AvailableTechniques, "hypnosis") },
			wantPath: "available_techniques[1]", wantRule: "technique", wantMsg: `"hypnosis" is not in the technique library`,
		},
		{
			name:     "phase technique not available",
			mutate:   func(d *Definition) { d.Phases[0].ActiveTechniques = []string{"active_listening"} },
			wantPath: "phases[0].active_techniques[0]", wantRule: "technique", wantMsg: "not listed in available_techniques",
		},
		{
			name:     "obligation field unknown",
			mutate:   func(d *Definition) { d.Obligations[0].Fields = []string{"basics.missing"} },
			wantPath: "obligations[0].fields[0]", wantRule: "field-ref", wantMsg: `"basics.missing" is not in extraction_schema`,
		},
		{
			name:     "obligation without source",
			mutate:   func(d *Definition) { d.Obligations[1].Fields = nil },
			wantPath: "obligations[1]", wantRule: "obligations", wantMsg: "can never be satisfied",
		},
		{
			name:     "obligation evaluator unregistered",
			mutate:   func(d *Definition) { d.Obligations[1].Fields = nil; d.Obligations[1].Evaluator = "ghost" },
			wantPath: "obligations[1].evaluator", wantRule: "custom-evaluator", wantMsg: `"ghost" is not registered`,
		},
		{
			name:     "duplicate obligation",
			mutate:   func(d *Definition) { d.Obligations[1].ID = d.Obligations[0].ID },
			wantPath: "obligations[1].id", wantRule: "obligations", wantMsg: "already defined",
		},
		{
			name: "heuristic weights",
			mutate: func(d *Definition) {
				d.CompletenessModel.Heuristics[0].Weight = 0.6
			},
			wantPath: "completeness_model.heuristics", wantRule: "heuristic-weights", wantMsg: "sum to 0.600, want 1.0",
		},
		{
			name: "heuristic with two sources",
			mutate: func(d *Definition) {
				d.CompletenessModel.Heuristics[0].Evaluator = "always"
			},
			wantPath: "completeness_model.heuristics[0]", wantRule: "completeness-model", wantMsg: "exactly one",
		},
		{
			name:     "bad model type",
			mutate:   func(d *Definition) { d.CompletenessModel.Type = "vibes" },
			wantPath: "completeness_model.type", wantRule: "completeness-model", wantMsg: `"vibes"`,
		},
		{
			name:     "ready threshold",
			mutate:   func(d *Definition) { d.CompletenessModel.ReadyThreshold = 0 },
			wantPath: "completeness_model.ready_threshold", wantRule: "completeness-model", wantMsg: "(0, 1]",
		},
		{
			name:     "context allocation",
			mutate:   func(d *Definition) { d.ContextConfig.Allocation.BackgroundIntelligence = 0.05 },
			wantPath: "context_config.allocation", wantRule: "context-allocation", wantMsg: "sums to 85%",
		},
		{
			name:     "information ratio",
			mutate:   func(d *Definition) { d.InformationRatio = InformationRatio{User: 70, System: 20} },
			wantPath: "information_ratio", wantRule: "information-ratio", wantMsg: "= 90, want 100",
		},
		{
			name: "exit target not registered",
			mutate: func(d *Definition) {
				d.ExitTransitions = []ExitTransition{{TargetEngine: "elsewhere", Reason: "r",
					Conditions: []Condition{{Type: CondCompletenessScore, MinCompleteness: 0.9}}}}
			},
			wantPath: "exit_transitions[0].target_engine", wantRule: "exit-transition", wantMsg: `"elsewhere" is not a registered engine`,
		},
		{
			name: "exit to self",
			mutate: func(d *Definition) {
				d.ExitTransitions = []ExitTransition{{TargetEngine: "minimal", Reason: "r",
					Conditions: []Condition{{Type: CondCompletenessScore, MinCompleteness: 0.9}}}}
			},
			wantPath: "exit_transitions[0].target_engine", wantRule: "exit-transition", wantMsg: "self-transition",
		},
		{
			name: "task handler unregistered",
			mutate: func(d *Definition) {
				d.BackgroundTasks = []BackgroundTask{{TaskID: "research", DisplayName: "R", Handler: "research.nope",
					EstimatedDuration: Duration(30e9), Trigger: TaskTrigger{Type: TaskTriggerLowConfidence, Threshold: 0.6},
					FailureStrategy: FailureStrategy{Type: FailureProceedWithGap}}}
			},
			wantPath: "background_tasks[0].handler", wantRule: "task-handler", wantMsg: `"research.nope" is not registered`,
		},
		{
			name: "retry without max retries",
			mutate: func(d *Definition) {
				d.BackgroundTasks = []BackgroundTask{{TaskID: "research", DisplayName: "R", Handler: "research.web",
					EstimatedDuration: Duration(30e9), Trigger: TaskTrigger{Type: TaskTriggerLowConfidence, Threshold: 0.6},
					FailureStrategy: FailureStrategy{Type: FailureRetry}}}
			},
			wantPath: "background_tasks[0].failure_strategy.max_retries", wantRule: "failure-strategy", wantMsg: "max_retries",
		},
		{
			name: "stall with negative max retries",
			mutate: func(d *Definition) {
				d.BackgroundTasks = []BackgroundTask{{TaskID: "research", DisplayName: "R", Handler: "research.web",
					EstimatedDuration: Duration(30e9), Trigger: TaskTrigger{Type: TaskTriggerLowConfidence, Threshold: 0.6},
					BlockPhaseTransition: true, FailureStrategy: FailureStrategy{Type: FailureStall, MaxRetries: new(-1)}}}
			},
			wantPath: "background_tasks[0].failure_strategy.max_retries", wantRule: "failure-strategy", wantMsg: "must not be negative",
		},
		{
			name: "stall falling back to a stall",
			mutate: func(d *Definition) {
				d.BackgroundTasks = []BackgroundTask{{TaskID: "research", DisplayName: "R", Handler: "research.web",
					EstimatedDuration: Duration(30e9), Trigger: TaskTrigger{Type: TaskTriggerLowConfidence, Threshold: 0.6},
					BlockPhaseTransition: true, FailureStrategy: FailureStrategy{Type: FailureStall, MaxRetries: new(2), Then: FailureStall}}}
			},
			wantPath: "background_tasks[0].failure_strategy.then", wantRule: "failure-strategy", wantMsg: "what a stall falls back to",
		},
		{
			name:     "custom evaluator unregistered",
			mutate:   func(d *Definition) { d.CustomEvaluators = []string{"ghost"} },
			wantPath: "custom_evaluators[0]", wantRule: "custom-evaluator", wantMsg: `"ghost" is not registered`,
		},
		{
			name:     "template does not parse",
			mutate:   func(d *Definition) { d.SystemPromptTemplate = "Hello {{.EngineName" },
			wantPath: "system_prompt_template", wantRule: "system-prompt", wantMsg: "does not parse",
		},
		{
			name:     "template unknown field",
			mutate:   func(d *Definition) { d.SystemPromptTemplate = "Hello {{.Nope}}" },
			wantPath: "system_prompt_template", wantRule: "system-prompt", wantMsg: "does not render",
		},
		{
			name:     "template ranges over a number",
			mutate:   func(d *Definition) { d.SystemPromptTemplate = "{{range 100000000000}}x{{end}}" },
			wantPath: "system_prompt_template", wantRule: "system-prompt", wantMsg: "range must iterate over a field",
		},
		{
			name:     "cue pattern does not compile",
			mutate:   func(d *Definition) { d.ExtractionSchema.Fields[0].Cues.Patterns = []string{"(unclosed"} },
			wantPath: "extraction_schema.fields[0].cues.patterns[0]", wantRule: "cues", wantMsg: "does not compile",
		},
		{
			name:     "duplicate field path",
			mutate:   func(d *Definition) { d.ExtractionSchema.Fields[1].Path = "basics.goal" },
			wantPath: "extraction_schema.fields[1].path", wantRule: "extraction-schema", wantMsg: "already defined",
		},
		{
			name:     "min items of a field that is no list",
			mutate:   func(d *Definition) { d.ExtractionSchema.Fields[0].MinItems = 3 },
			wantPath: "extraction_schema.fields[0].min_items", wantRule: "extraction-schema", wantMsg: "counts the items of an array",
		},
		{
			name:     "sidebar category unknown",
			mutate:   func(d *Definition) { d.SidebarConfig.StaticSections[0].ObligationCategories = []string{"x"} },
			wantPath: "sidebar_config.static_sections[0].obligation_categories[0]", wantRule: "obligation-ref", wantMsg: `"x"`,
		},
		{
			name:     "phase indicator label unknown",
			mutate:   func(d *Definition) { d.SidebarConfig.PhaseIndicator.Labels["GONE"] = "Gone" },
			wantPath: "sidebar_config.phase_indicator.labels.GONE", wantRule: "phase-ref", wantMsg: "not a phase",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := minimalDef(t)
			tt.mutate(def)
			rep := Validate(def, validateEnv(t))
			for _, e := range rep.Errors {
				if e.Path == tt.wantPath && e.Rule == tt.wantRule && strings.Contains(e.Message, tt.wantMsg) {
					return
				}
			}
			t.Errorf("errors = %v, want one at %s [%s] containing %q", rep.Errors, tt.wantPath, tt.wantRule, tt.wantMsg)
		})
	}
}

// The seed's first key scenario: a phase no edge leads to is rejected with
// "Orphaned phase: PHASE_C".
func TestValidateRejectsOrphanedPhase(t *testing.T) {
	def := minimalDef(t)
	def.Phases = []Phase{
		{ID: "PHASE_A", DisplayName: "A", Order: 1, NextPhase: "PHASE_B", ModeBlend: ModeBlend{Extract: 100},
			TransitionTriggers: []Trigger{{Condition: Condition{Type: CondTurnCount, MinTurns: 1}}}},
		{ID: "PHASE_C", DisplayName: "C", Order: 2, ModeBlend: ModeBlend{Extract: 100}},
		{ID: "PHASE_B", DisplayName: "B", Order: 3, ModeBlend: ModeBlend{Extract: 100}},
	}
	def.InitialPhase = "PHASE_A"
	def.SidebarConfig.PhaseIndicator.Labels = nil
	rep := Validate(def, validateEnv(t))
	if rep.Valid() {
		t.Fatal("valid = true, want false")
	}
	msgs := rep.ErrorMessages()
	found := false
	for _, m := range msgs {
		if m == "Orphaned phase: PHASE_C" {
			found = true
		}
		if strings.Contains(m, "PHASE_B") || strings.Contains(m, "PHASE_A") {
			t.Errorf("unexpected error about a reachable phase: %q", m)
		}
	}
	if !found {
		t.Errorf("errors = %q, want to contain %q", msgs, "Orphaned phase: PHASE_C")
	}
}

func TestValidateWarnings(t *testing.T) {
	def := minimalDef(t)
	def.ExtractionSchema.Fields[1].Cues = Cues{}
	def.Phases[1].AgentInstructions = ""
	rep := Validate(def, validateEnv(t))
	if !rep.Valid() {
		t.Fatalf("warnings must not be errors: %v", rep.Err())
	}
	want := map[string]bool{"extraction_schema.fields[1].cues": false, "phases[1].agent_instructions": false}
	for _, w := range rep.Warnings {
		if w.Severity != SeverityWarning {
			t.Errorf("warning %v has severity %s", w, w.Severity)
		}
		if _, ok := want[w.Path]; ok {
			want[w.Path] = true
		}
	}
	for p, seen := range want {
		if !seen {
			t.Errorf("no warning at %s; warnings = %v", p, rep.Warnings)
		}
	}
}

// A phase written with active_techniques: [] uses no technique, which its
// author may have meant as all of available_techniques: a warning, at the
// key's line, where it was accepted silently. A phase that leaves the key
// out (minimal.yaml's END) is not warned of.
func TestValidateWarnsOfEmptyActiveTechniques(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "    mode_blend: {validate: 100}\n",
		"    mode_blend: {validate: 100}\n    active_techniques: []\n", 1))
	def, rep := Parse("testdata/minimal.yaml", data)
	if !rep.Valid() || def.Phases[1].ActiveTechniques == nil {
		t.Fatalf("parse: %v, END's active_techniques %#v", rep.Err(), def.Phases[1].ActiveTechniques)
	}
	rep = Validate(def, validateEnv(t))
	if !rep.Valid() {
		t.Fatalf("an empty active_techniques is an error, want a warning: %v", rep.Err())
	}
	const path = "phases[1].active_techniques"
	if len(rep.Warnings) != 1 || rep.Warnings[0].Path != path || rep.Warnings[0].Rule != "technique" ||
		!strings.Contains(rep.Warnings[0].Message, `phase "END" lists no active_techniques`) {
		t.Fatalf("warnings = %v, want one technique warning at %s", rep.Warnings, path)
	}
	if pos := def.PosOf(path); pos.Line != 27 {
		t.Errorf("the warning's position is %v, want line 27, the key's", pos)
	}
}

func TestValidateIsDeterministic(t *testing.T) {
	def := minimalDef(t)
	def.ContextConfig.Allocation = Allocation{Obligations: -1, ConversationHistory: 2}
	def.Phases[0].ModeBlend = ModeBlend{}
	first := Validate(def, validateEnv(t))
	for range 20 {
		again := Validate(minimalDefWith(t, func(d *Definition) {
			d.ContextConfig.Allocation = Allocation{Obligations: -1, ConversationHistory: 2}
			d.Phases[0].ModeBlend = ModeBlend{}
		}), validateEnv(t))
		if len(again.Errors) != len(first.Errors) {
			t.Fatalf("got %d errors, then %d", len(first.Errors), len(again.Errors))
		}
		for i := range again.Errors {
			if again.Errors[i] != first.Errors[i] {
				t.Fatalf("error %d differs between runs: %v vs %v", i, again.Errors[i], first.Errors[i])
			}
		}
	}
}

func minimalDefWith(t testing.TB, f func(*Definition)) *Definition {
	d := minimalDef(t)
	f(d)
	return d
}

// withTask parses minimal.yaml with one background task appended, written
// as YAML so that what is left out differs from what is written as zero.
func withTask(t *testing.T, task string) *Definition {
	t.Helper()
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def, rep := Parse("testdata/minimal.yaml", []byte(string(data)+"background_tasks:\n  - "+
		strings.ReplaceAll(strings.TrimSpace(task), "\n", "\n    ")+"\n"))
	if !rep.Valid() {
		t.Fatalf("parse: %v", rep.Err())
	}
	return def
}

func TestValidateBackgroundTaskSettings(t *testing.T) {
	const base = "task_id: research\ndisplay_name: R\nhandler: research.web\ntrigger: {type: low_confidence, threshold: 0.5}\n"
	for _, tc := range []struct {
		name, task                  string
		severity                    Severity
		wantPath, wantRule, wantMsg string
	}{
		{"negative retry delay", base + "estimated_duration: 30s\nfailure_strategy: {type: retry, max_retries: 2, retry_delay: -5s}",
			SeverityError, "background_tasks[0].failure_strategy.retry_delay", "failure-strategy", "retry_delay must be positive, got -5s"},
		{"zero retry delay", base + "estimated_duration: 30s\nfailure_strategy: {type: retry, max_retries: 2, retry_delay: 0s}",
			SeverityError, "background_tasks[0].failure_strategy.retry_delay", "failure-strategy", "leave it out for the default 5s"},
		{"retry then degrade without guidance", base + "estimated_duration: 30s\nfailure_strategy: {type: retry, max_retries: 2, then: degrade}",
			SeverityWarning, "background_tasks[0].failure_strategy.degraded_behavior", "failure-strategy", "no guidance"},
		{"estimated duration above the attempt cap", base + "estimated_duration: 15m\nfailure_strategy: {type: proceed-with-gap}",
			SeverityWarning, "background_tasks[0].estimated_duration", "background-task", "per-attempt cap of 10m0s"},
		{"estimated duration left out", base + "failure_strategy: {type: proceed-with-gap}",
			SeverityError, "background_tasks[0].estimated_duration", "background-task", "estimated_duration is required"},
		{"estimated duration zero", base + "estimated_duration: 0s\nfailure_strategy: {type: proceed-with-gap}",
			SeverityError, "background_tasks[0].estimated_duration", "background-task", "must be positive"},
		{"negative min turn", "task_id: research\ndisplay_name: R\nhandler: research.web\nestimated_duration: 30s\n" +
			"trigger: {type: low_confidence, threshold: 0.5, min_turn: -1}\nfailure_strategy: {type: proceed-with-gap}",
			SeverityError, "background_tasks[0].trigger.min_turn", "background-task", "min_turn must not be negative"},
		{"unknown handler gets the nearest", "task_id: research\ndisplay_name: R\nhandler: research.wbe\nestimated_duration: 30s\n" +
			"trigger: {type: low_confidence, threshold: 0.5}\nfailure_strategy: {type: proceed-with-gap}",
			SeverityError, "background_tasks[0].handler", "task-handler", `"research.wbe" is not registered (did you mean "research.web"?); registered: research.web`},
		{"unknown handler far from any", "task_id: research\ndisplay_name: R\nhandler: market.analysis\nestimated_duration: 30s\n" +
			"trigger: {type: low_confidence, threshold: 0.5}\nfailure_strategy: {type: proceed-with-gap}",
			SeverityError, "background_tasks[0].handler", "task-handler", `"market.analysis" is not registered; registered: research.web`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Validate(withTask(t, tc.task), validateEnv(t))
			issues := rep.Errors
			if tc.severity == SeverityWarning {
				issues = rep.Warnings
			}
			for _, is := range issues {
				if is.Path == tc.wantPath && is.Rule == tc.wantRule && strings.Contains(is.Message, tc.wantMsg) {
					return
				}
			}
			t.Errorf("no %s at %s [%s] containing %q; errors %v, warnings %v", tc.severity, tc.wantPath, tc.wantRule, tc.wantMsg,
				rep.Errors, rep.Warnings)
		})
	}
}

// The settings a task may leave out, or write as they are meant, give no
// issue: a left-out retry_delay is the default 5s.
func TestValidateBackgroundTaskSettingsAccepted(t *testing.T) {
	for _, task := range []string{
		"task_id: research\ndisplay_name: R\nhandler: research.web\nestimated_duration: 10m\n" +
			"trigger: {type: low_confidence, threshold: 0.5, min_turn: 2}\nfailure_strategy: {type: retry, max_retries: 2}",
		"task_id: research\ndisplay_name: R\nhandler: research.web\nestimated_duration: 30s\n" +
			"trigger: {type: low_confidence, threshold: 0.5}\n" +
			"failure_strategy: {type: retry, max_retries: 2, retry_delay: 2s, then: degrade, degraded_behavior: Go on without it.}",
	} {
		rep := Validate(withTask(t, task), validateEnv(t))
		if !rep.Valid() || len(rep.Warnings) != 0 {
			t.Errorf("task %q: errors %v, warnings %v; want none", task, rep.Err(), rep.Warnings)
		}
	}
}

// A task that blocks phase transitions, triggered by the obligation whose
// satisfaction also moves its phase on, starts only after the phase has
// moved (tasks start at step 8, after the transition at 6-7): it is warned
// of; one that can start first is not.
func TestValidateBlockingTaskTriggeredByTheTransition(t *testing.T) {
	task := func(status ObligationStatusValue, block bool, ids ...string) func(*Definition) {
		return func(d *Definition) {
			d.BackgroundTasks = []BackgroundTask{{TaskID: "research", DisplayName: "R", Handler: "research.web",
				EstimatedDuration: Duration(30e9), BlockPhaseTransition: block,
				Trigger:         TaskTrigger{Type: TaskTriggerObligationStatus, ObligationIDs: ids, Status: status},
				FailureStrategy: FailureStrategy{Type: FailureProceedWithGap}}}
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Definition)
		warn   bool
	}{
		// START moves on at 50% of basics: goal_known alone reaches it.
		{"trigger reaches the transition's rate", task(StatusSatisfied, true, "goal_known"), true},
		{"every obligation the rate needs", func(d *Definition) {
			task(StatusSatisfied, true, "goal_known", "name_known")(d)
			d.Phases[0].TransitionTriggers[0].MinSatisfactionRate = 1
		}, true},
		{"not blocking", task(StatusSatisfied, false, "goal_known"), false},
		{"triggered on partial, earlier", task(StatusPartial, true, "goal_known"), false},
		{"the rate needs another obligation too", func(d *Definition) {
			task(StatusSatisfied, true, "goal_known")(d)
			d.Phases[0].TransitionTriggers[0].MinSatisfactionRate = 1
		}, false},
		{"a checkpoint outside the trigger holds the phase", func(d *Definition) {
			task(StatusSatisfied, true, "goal_known")(d)
			d.Phases[0].MandatoryCheckpoints = []Checkpoint{{ObligationID: "name_known", Required: true}}
		}, false},
		{"an entry condition may hold the transition", func(d *Definition) {
			task(StatusSatisfied, true, "goal_known")(d)
			d.Phases[1].EntryConditions = []Condition{{Type: CondTurnCount, MinTurns: 3}}
		}, false},
		{"the phase moves on by turn count", func(d *Definition) {
			task(StatusSatisfied, true, "goal_known")(d)
			d.Phases[0].TransitionTriggers[0].Condition = Condition{Type: CondTurnCount, MinTurns: 3}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Validate(minimalDefWith(t, tc.mutate), validateEnv(t))
			if !rep.Valid() {
				t.Fatalf("errors: %v", rep.Err())
			}
			var got *Issue
			for i, w := range rep.Warnings {
				if w.Path == "background_tasks[0].trigger" && w.Rule == "background-task" {
					got = &rep.Warnings[i]
				}
			}
			switch {
			case tc.warn && got == nil:
				t.Errorf("no warning at background_tasks[0].trigger; warnings %v", rep.Warnings)
			case tc.warn && (!strings.Contains(got.Message, `phase "START"`) || !strings.Contains(got.Message, "trigger it earlier")):
				t.Errorf("warning %q does not name the phase and the fix", got.Message)
			case !tc.warn && got != nil:
				t.Errorf("warning %v, want none", *got)
			}
		})
	}
}
