package handoff

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/praetorhq/praetor/pkg/contracts"
)

// MinReasoning is the seed's bound: a decision's reasoning must be longer.
const MinReasoning = 20

// Result is the verdict of Validate.
type Result struct {
	Valid bool `json:"valid"`
	// Errors name the path in the handoff and the rule it breaks.
	Errors []string `json:"errors,omitempty"`
}

// Err returns the errors as one error, nil when valid.
func (r Result) Err() error {
	if r.Valid {
		return nil
	}
	return fmt.Errorf("invalid handoff: %s", strings.Join(r.Errors, "; "))
}

var (
	// placeholderWordsRe finds words that mark text nobody wrote.
	placeholderWordsRe = regexp.MustCompile(`(?i)\b(todo|tbd|tbc|fixme|placeholder|lorem ipsum|to be (determined|decided|defined|filled in))\b`)
	// placeholderWholeRe is text that is nothing but a stand-in.
	placeholderWholeRe = regexp.MustCompile(`(?i)^(n/?a|none|unknown|null|nil|x+|tba|same|etc)$`)
	// wordRe finds a letter or digit.
	wordRe = regexp.MustCompile(`[\pL\pN]`)
)

// IsPlaceholder reports whether text is a stand-in rather than content:
// empty or punctuation only, "N/A", "unknown", a "TODO" or "TBD" anywhere,
// "lorem ipsum", or a few words trailing off ("Phase X key outputs...").
func IsPlaceholder(text string) bool {
	t := strings.TrimSpace(text)
	core := strings.Trim(t, " .!?-_*")
	switch {
	case !wordRe.MatchString(t), placeholderWholeRe.MatchString(core), placeholderWordsRe.MatchString(t):
		return true
	case (strings.HasSuffix(t, "...") || strings.HasSuffix(t, "…")) && len(strings.Fields(t)) <= 4:
		return true
	}
	return false
}

var (
	levels        = []string{contracts.LevelLow, contracts.LevelMedium, contracts.LevelHigh}
	understanding = []string{contracts.UnderstandingBasic, contracts.UnderstandingSolid, contracts.UnderstandingExpert}
	technical     = []string{contracts.TechnicalBeginner, contracts.TechnicalIntermediate, contracts.TechnicalAdvanced, contracts.TechnicalExpert}
)

// Validate applies the seed's rules to a handoff:
//
//   - every section has its required fields: metadata (engines, date,
//     session, project, reason, a completeness score in [0, 1]), at least one
//     phase result with its name, key outputs and a completion in 0-100,
//     situation awareness (the user's confidence level), accumulated context
//     (the technical level) and relational state (trust level, rapport);
//   - each decision's reasoning is longer than 20 characters and not a
//     placeholder, and its confidence is in [0, 1];
//   - the source and target engines differ;
//   - at least one decision, constraint or knowledge gap is identified.
//
// Enumerations (levels) must be among their values.
func Validate(h contracts.EngineHandoff) Result {
	var errs []string
	bad := func(path, format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	required := func(path, v string) {
		if strings.TrimSpace(v) == "" {
			bad(path, "is required")
		}
	}
	oneOf := func(path, v string, allowed []string) {
		if !slices.Contains(allowed, v) {
			bad(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
	}

	md := h.Metadata
	required("metadata.source_engine_id", md.SourceEngineID)
	required("metadata.target_engine_id", md.TargetEngineID)
	required("metadata.session_id", md.SessionID)
	required("metadata.project_id", md.ProjectID)
	if strings.TrimSpace(md.TransitionReason) == "" || IsPlaceholder(md.TransitionReason) {
		bad("metadata.transition_reason", "is required and must not be a placeholder")
	}
	if md.HandoffDate.IsZero() {
		bad("metadata.handoff_date", "is required")
	}
	if md.TurnCount < 0 {
		bad("metadata.turn_count", "must not be negative")
	}
	if md.CompletenessScore < 0 || md.CompletenessScore > 1 || md.CompletenessScore != md.CompletenessScore {
		bad("metadata.completeness_score", "%g is not in [0, 1]", md.CompletenessScore)
	}
	if md.SourceEngineID != "" && md.SourceEngineID == md.TargetEngineID {
		bad("metadata.target_engine_id", "engine %s hands off to itself; a handoff goes to another engine", md.SourceEngineID)
	}

	if len(h.PhaseResults) == 0 {
		bad("phase_results", "at least one phase result is required")
	}
	for i, p := range h.PhaseResults {
		path := fmt.Sprintf("phase_results[%d]", i)
		required(path+".phase_name", p.PhaseName)
		if IsPlaceholder(p.KeyOutputs) {
			bad(path+".key_outputs", "%q is a placeholder; say what the phase produced", p.KeyOutputs)
		}
		if p.CompletionPercentage < 0 || p.CompletionPercentage > 100 {
			bad(path+".completion_percentage", "%d is not in 0-100", p.CompletionPercentage)
		}
	}

	al := h.ActionList
	for i, d := range al.DecisionsReached {
		path := fmt.Sprintf("action_list.decisions_reached[%d]", i)
		required(path+".decision", d.Decision)
		r := strings.TrimSpace(d.Reasoning)
		switch {
		case IsPlaceholder(r):
			bad(path+".reasoning", "%q is a placeholder; give the reasoning", d.Reasoning)
		case len([]rune(r)) <= MinReasoning:
			bad(path+".reasoning", "%d characters; more than %d are required", len([]rune(r)), MinReasoning)
		}
		if d.Confidence < 0 || d.Confidence > 1 || d.Confidence != d.Confidence {
			bad(path+".confidence", "%g is not in [0, 1]", d.Confidence)
		}
	}
	for i, o := range al.OptionsEliminated {
		required(fmt.Sprintf("action_list.options_eliminated[%d].option", i), o.Option)
	}
	for i, c := range al.ConstraintsIdentified {
		required(fmt.Sprintf("action_list.constraints_identified[%d].constraint", i), c.Constraint)
	}
	for i, a := range al.AssumptionsCarriedForward {
		required(fmt.Sprintf("action_list.assumptions_carried_forward[%d].assumption", i), a.Assumption)
	}

	sa := h.SituationAwareness
	oneOf("situation_awareness.user_confidence_level", sa.UserConfidenceLevel, levels)
	ac := h.AccumulatedContext
	oneOf("accumulated_context.technical_level", ac.TechnicalLevel, technical)
	for i, c := range ac.ConceptsTaught {
		path := fmt.Sprintf("accumulated_context.concepts_taught[%d]", i)
		required(path+".concept", c.Concept)
		oneOf(path+".understanding_level", c.UnderstandingLevel, understanding)
	}
	rs := h.RelationalState
	oneOf("relational_state.trust_level", rs.TrustLevel, levels)
	required("relational_state.rapport", rs.Rapport)

	if len(al.DecisionsReached)+len(al.ConstraintsIdentified)+len(nonEmpty(sa.KnowledgeGapsRevealed)) == 0 {
		bad("action_list", "no decision, constraint or knowledge gap identified; a handoff must carry at least one")
	}
	return Result{Valid: len(errs) == 0, Errors: errs}
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			out = append(out, x)
		}
	}
	return out
}
