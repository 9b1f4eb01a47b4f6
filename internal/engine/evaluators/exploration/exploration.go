// Package exploration holds the custom evaluators of the exploration
// engine (engines/exploration.yaml), registered by name: the seed's 13,
// and problemCarried. They read the engine's extraction fields by path,
// and the session's inbound handoff; each returns a score in [0,1].
//
// Unlike the framework, these functions know one engine's schema: that is
// what custom evaluators are for.
package exploration

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Field paths of the exploration extraction schema the evaluators read.
const (
	FieldKnowledgeGaps    = "initial_state.knowledge_gaps"
	FieldResearchNotes    = "solution_landscape.research_notes"
	FieldOptions          = "solution_landscape.options"
	FieldPros             = "solution_landscape.option_pros"
	FieldCons             = "solution_landscape.option_cons"
	FieldReactions        = "solution_landscape.reactions"
	FieldPrecedents       = "solution_landscape.precedents"
	FieldConcepts         = "understanding.concepts_taught"
	FieldTeachBack        = "understanding.teach_back"
	FieldTeachBackPassed  = "understanding.teach_back_passed"
	FieldMisconceptions   = "understanding.misconceptions"
	FieldMisconceptionsOK = "understanding.misconceptions_corrected"
	FieldConstraints      = "decision.constraints"
	FieldTradeoffs        = "decision.tradeoffs"
	FieldRisks            = "decision.risks"
	FieldDecision         = "decision.decision_made"
	FieldReasoning        = "decision.reasoning"
)

// Evaluators returns the evaluators by name.
func Evaluators() map[string]engine.Evaluator {
	return map[string]engine.Evaluator{
		"problemCarried":                 ProblemCarried,
		"knowledgeGapsIdentified":        KnowledgeGapsIdentified,
		"backgroundResearchAvailable":    BackgroundResearchAvailable,
		"userDemonstratesUnderstanding":  UserDemonstratesUnderstanding,
		"solutionLandscapeCoverage":      SolutionLandscapeCoverage,
		"decisionMade":                   DecisionMade,
		"atLeastOneTeachBackPassed":      AtLeastOneTeachBackPassed,
		"noUncorrectedMisconceptions":    NoUncorrectedMisconceptions,
		"decisionCapturedWithReasoning":  DecisionCapturedWithReasoning,
		"evaluateSolutionSpaceAwareness": EvaluateSolutionSpaceAwareness,
		"evaluateTradeoffUnderstanding":  EvaluateTradeoffUnderstanding,
		"evaluateConstraintAwareness":    EvaluateConstraintAwareness,
		"evaluatePrecedentExposure":      EvaluatePrecedentExposure,
		"evaluateRiskIdentification":     EvaluateRiskIdentification,
	}
}

// count is the number of items of a list field (1 for a scalar value).
func count(m *engine.WorkingMemory, path string) int {
	f, ok := m.Extraction.Get(path)
	if !ok || f.IsNull() {
		return 0
	}
	var xs []any
	if m.Extraction.Decode(path, &xs) {
		return len(xs)
	}
	return 1
}

func isTrue(m *engine.WorkingMemory, path string) bool {
	var b bool
	return m.Extraction.Decode(path, &b) && b
}

func ratio(n, want int) float64 { return math.Min(float64(n)/float64(want), 1) }

// KnowledgeGapsIdentified: two knowledge gaps named make 1.0, one 0.5.
func KnowledgeGapsIdentified(m *engine.WorkingMemory) float64 {
	return ratio(count(m, FieldKnowledgeGaps), 2)
}

// ProblemCarried is 1.0 when the inbound handoff carries the problem to
// explore: the pain point marked as the problem (handoff.ProblemPrefix:
// the problem ideation framed, the core problem project discovery
// captured), or the question a decision carried along a chain of engines
// answered. Other pain points (a cost, a root cause, a business's
// bottleneck) are no problem to explore. The handoff at the top of the context gives
// it, so the user is not asked for it again. A session of memory version 2
// or earlier counts nothing carried (0), as the builds it started on did:
// its engine named no evaluator there, and its turns on a later version
// must ask what they asked.
func ProblemCarried(m *engine.WorkingMemory) float64 {
	if m.SchemaVersion < 3 {
		return 0
	}
	h, ok := contracts.DecodeHandoff(m.InboundHandoff)
	if !ok {
		return 0
	}
	if handoff.Problem(h) != "" ||
		slices.ContainsFunc(h.ActionList.DecisionsReached, func(d contracts.Decision) bool { return nonBlank(d.Question) }) {
		return 1
	}
	return 0
}

func nonBlank(s string) bool { return strings.TrimSpace(s) != "" }

// BackgroundResearchAvailable: 1.0 when research notes were captured or a
// background task completed with a result.
func BackgroundResearchAvailable(m *engine.WorkingMemory) float64 {
	if count(m, FieldResearchNotes) > 0 {
		return 1
	}
	for _, t := range m.BackgroundTasks.Completed {
		if len(t.Result) > 0 {
			return 1
		}
	}
	return 0
}

// UserDemonstratesUnderstanding: 1.0 after a passed teach-back, 0.5 for a
// teach-back attempt, otherwise up to 0.3 for concepts taught.
func UserDemonstratesUnderstanding(m *engine.WorkingMemory) float64 {
	switch {
	case isTrue(m, FieldTeachBackPassed):
		return 1
	case m.Extraction.Has(FieldTeachBack):
		return 0.5
	}
	return 0.3 * ratio(count(m, FieldConcepts), 3)
}

// SolutionLandscapeCoverage follows the seed: options covered over
// max(options, 3) — at least three options are expected — where an option
// counts as covered as far as pros, cons and the user's reactions have been
// explored.
func SolutionLandscapeCoverage(m *engine.WorkingMemory) float64 {
	n := count(m, FieldOptions)
	if n == 0 {
		return 0
	}
	aspects := 0.0
	for _, p := range []string{FieldPros, FieldCons, FieldReactions} {
		if count(m, p) > 0 {
			aspects++
		}
	}
	return float64(n) / math.Max(float64(n), 3) * aspects / 3
}

// DecisionMade: 1.0 when a decision is recorded (the seed's example).
func DecisionMade(m *engine.WorkingMemory) float64 {
	if m.Extraction.Has(FieldDecision) {
		return 1
	}
	return 0
}

// AtLeastOneTeachBackPassed: 1.0 after a passed teach-back.
func AtLeastOneTeachBackPassed(m *engine.WorkingMemory) float64 {
	if isTrue(m, FieldTeachBackPassed) {
		return 1
	}
	return 0
}

// NoUncorrectedMisconceptions: 1.0 unless misconceptions were noted and not
// marked corrected.
func NoUncorrectedMisconceptions(m *engine.WorkingMemory) float64 {
	if count(m, FieldMisconceptions) == 0 || isTrue(m, FieldMisconceptionsOK) {
		return 1
	}
	return 0
}

// DecisionCapturedWithReasoning: 1.0 for a decision with reasoning of more
// than 20 characters (the handoff's rule), 0.5 for a bare decision.
func DecisionCapturedWithReasoning(m *engine.WorkingMemory) float64 {
	if !m.Extraction.Has(FieldDecision) {
		return 0
	}
	if len(strings.TrimSpace(m.Extraction.String(FieldReasoning))) > 20 {
		return 1
	}
	return 0.5
}

// EvaluateSolutionSpaceAwareness: mostly how many options the user knows
// (three for full marks), partly the concepts taught (two).
func EvaluateSolutionSpaceAwareness(m *engine.WorkingMemory) float64 {
	return round4(0.7*ratio(count(m, FieldOptions), 3) + 0.3*ratio(count(m, FieldConcepts), 2))
}

// EvaluateTradeoffUnderstanding: tradeoffs weighed (two for half marks) and
// pros and cons explored.
func EvaluateTradeoffUnderstanding(m *engine.WorkingMemory) float64 {
	s := 0.5 * ratio(count(m, FieldTradeoffs), 2)
	if count(m, FieldPros) > 0 {
		s += 0.25
	}
	if count(m, FieldCons) > 0 {
		s += 0.25
	}
	return s
}

// EvaluateConstraintAwareness: two constraints known make 1.0, whether the
// user named them here or the session's inbound handoff carried them (a
// budget captured in project discovery is as known as one said here).
func EvaluateConstraintAwareness(m *engine.WorkingMemory) float64 {
	var named []string
	var xs []any
	if m.Extraction.Decode(FieldConstraints, &xs) {
		for _, x := range xs {
			named = append(named, fmt.Sprint(x))
		}
	} else if count(m, FieldConstraints) > 0 {
		named = append(named, string(m.Extraction.Fields[FieldConstraints].Value))
	}
	if h, ok := contracts.DecodeHandoff(m.InboundHandoff); ok {
		for _, c := range h.ActionList.ConstraintsIdentified {
			named = append(named, c.Constraint)
		}
	}
	known := map[string]bool{}
	for _, c := range named {
		if c = strings.ToLower(strings.Join(strings.Fields(c), " ")); c != "" {
			known[c] = true
		}
	}
	return ratio(len(known), 2)
}

// EvaluatePrecedentExposure: two precedents discussed make 1.0.
func EvaluatePrecedentExposure(m *engine.WorkingMemory) float64 {
	return ratio(count(m, FieldPrecedents), 2)
}

// EvaluateRiskIdentification: two risks named make 1.0.
func EvaluateRiskIdentification(m *engine.WorkingMemory) float64 {
	return ratio(count(m, FieldRisks), 2)
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
