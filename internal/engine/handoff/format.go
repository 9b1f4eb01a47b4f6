package handoff

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/praetorhq/praetor/pkg/contracts"
)

// Lines of the executive summary. Title is also how a reader of the
// assembled context (the offline reply skill) finds the handoff.
const (
	Rule  = "═══════════════════════════════════════════════════════════"
	Title = "HANDOFF CONTEXT — READ THIS FIRST"
)

// QuestionLine opens the line under a decision or an option ruled out
// that says the question it answers.
const QuestionLine = "  Question: "

// ChosenTwice reports, of a choice among choices, whether it is there more
// than once (case and spaces aside): one choice made for two questions,
// which is told apart by its question where it is listed.
func ChosenTwice(choices []string) func(choice string) bool {
	key := func(c string) string { return strings.ToLower(strings.TrimSpace(c)) }
	n := make(map[string]int, len(choices))
	for _, c := range choices {
		n[key(c)]++
	}
	return func(c string) bool { return n[key(c)] > 1 }
}

// Section titles of the executive summary.
const (
	SectionDecisions   = "DECISIONS REACHED"
	SectionEliminated  = "OPTIONS ELIMINATED"
	SectionConstraints = "CONSTRAINTS IDENTIFIED"
	SectionGaps        = "KNOWLEDGE GAPS"
	SectionConcepts    = "CONCEPTS TAUGHT"
	SectionAssumptions = "ASSUMPTIONS CARRIED FORWARD"
	SectionGoals       = "USER GOALS"
	SectionPainPoints  = "PAIN POINTS"
	SectionOpen        = "OPEN QUESTIONS"
	SectionSensitive   = "SENSITIVITIES"
	SectionPhases      = "PHASES"
	SectionProfile     = "USER PROFILE"
)

// maxLine bounds one item of the summary, so a long extracted value cannot
// crowd out the rest.
const maxLine = 300

// Format renders a handoff as the seed's executive summary, for the top of
// the receiving engine's context: the engines, session and reason, then the
// decisions reached, options eliminated, constraints and knowledge gaps,
// the concepts taught, and the user profile. Sections the seed's example
// leaves out but the I-PASS check asks the receiver to acknowledge
// (assumptions, goals, pain points, open questions, sensitivities) and the
// phase results come before the profile; empty sections are left out.
// targetName is the receiving engine's display name ("" shows its id).
func Format(h contracts.EngineHandoff, targetName string) string {
	md := h.Metadata
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		line("─── %s ───", title)
		for _, it := range items {
			b.WriteString(it + "\n")
		}
	}
	bullets := func(xs []string) []string {
		var out []string
		for _, x := range nonEmpty(xs) {
			out = append(out, "• "+clip(x))
		}
		return out
	}

	line("%s", Rule)
	line("%s", Title)
	line("%s", Rule)
	line("Source: %s → Target: %s", cmp.Or(md.SourceEngineName, md.SourceEngineID), cmp.Or(targetName, md.TargetEngineID))
	line("Session: %s | Project: %s | Turns: %d | Completeness: %.2f", md.SessionID, md.ProjectID, md.TurnCount, md.CompletenessScore)
	line("Transition Reason: %s", oneLine(md.TransitionReason))

	var items []string
	for _, d := range h.ActionList.DecisionsReached {
		items = append(items, fmt.Sprintf("✓ Chose %q (confidence: %.2f)", oneLine(d.Decision), d.Confidence))
		if strings.TrimSpace(d.Question) != "" {
			// Several decisions of one engine answer different questions.
			items = append(items, QuestionLine+clip(d.Question))
		}
		items = append(items, "  Reasoning: "+clip(d.Reasoning))
	}
	section(SectionDecisions, items)
	items = nil
	for _, o := range h.ActionList.OptionsEliminated {
		it := "✗ " + clip(o.Option)
		if rs := nonEmpty(o.Reasons); len(rs) > 0 {
			it += " — " + clip(strings.Join(rs, ", "))
		}
		items = append(items, it)
		if strings.TrimSpace(o.Question) != "" {
			// Ruled out for one question, it may be chosen for another.
			items = append(items, QuestionLine+clip(o.Question))
		}
	}
	section(SectionEliminated, items)
	items = nil
	for _, c := range h.ActionList.ConstraintsIdentified {
		it := "• " + clip(c.Constraint)
		if strings.TrimSpace(c.Implication) != "" {
			it += " → " + clip(c.Implication)
		}
		items = append(items, it)
	}
	section(SectionConstraints, items)
	section(SectionGaps, bullets(h.SituationAwareness.KnowledgeGapsRevealed))
	items = nil
	for _, c := range h.AccumulatedContext.ConceptsTaught {
		items = append(items, fmt.Sprintf("• %s (%s understanding)", clip(c.Concept), c.UnderstandingLevel))
	}
	section(SectionConcepts, items)
	items = nil
	for _, a := range h.ActionList.AssumptionsCarriedForward {
		it := "• " + clip(a.Assumption)
		if a.WarrantsReview {
			it += " (review it)"
		}
		items = append(items, it)
	}
	section(SectionAssumptions, items)
	section(SectionGoals, bullets(h.SituationAwareness.UserGoals))
	section(SectionPainPoints, bullets(h.SituationAwareness.KeyPainPoints))
	section(SectionOpen, bullets(h.RelationalState.OpenQuestions))
	section(SectionSensitive, bullets(h.RelationalState.Sensitivities))
	items = nil
	for _, p := range h.PhaseResults {
		it := fmt.Sprintf("• %s (%d%%): %s", p.PhaseName, p.CompletionPercentage, clip(p.KeyOutputs))
		if gs := nonEmpty(p.RemainingGaps); len(gs) > 0 {
			it += " | remaining: " + clip(strings.Join(gs, ", "))
		}
		items = append(items, it)
	}
	section(SectionPhases, items)

	line("─── %s ───", SectionProfile)
	line("Technical Level: %s", title(h.AccumulatedContext.TechnicalLevel))
	if pe := nonEmpty(h.AccumulatedContext.PriorExperience); len(pe) > 0 {
		line("Prior Experience: %s", clip(strings.Join(pe, "; ")))
	}
	line("Confidence: %s", title(h.SituationAwareness.UserConfidenceLevel))
	line("Trust: %s", title(h.RelationalState.TrustLevel))
	line("Rapport: %s", oneLine(h.RelationalState.Rapport))
	b.WriteString(Rule)
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > maxLine {
		return string(r[:maxLine]) + "…"
	}
	return s
}

func title(s string) string {
	if s == "" {
		return "Unknown"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
