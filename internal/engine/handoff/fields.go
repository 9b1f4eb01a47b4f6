package handoff

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Constraint names an extraction field holding constraints.
type Constraint struct {
	Path string
	// Label prefixes each value ("Budget" gives "Budget: $60k").
	Label string
	// Implication is what the constraint means for the target engine.
	Implication string
}

// Fields says which extraction fields of the source engine feed which parts
// of the handoff; FromFields builds a mapper from it. Paths name fields of
// the source engine's extraction schema; list fields give one item per
// value, objects their name.
type Fields struct {
	// Decision is the decision field; Confidence its confidence (in [0, 1]
	// or on a 1-10 scale; the field's extraction confidence when absent);
	// Reasoning the fields joined into its reasoning; Options the fields of
	// the options it was made among (contracts.Decision.Options); Question
	// the field of the question it answers, and the options were ruled out
	// for (contracts.Decision.Question).
	Decision   string
	Confidence string
	Reasoning  []string
	Options    []string
	Question   string
	// QuestionCarried makes the question, when the Question field is
	// empty, the problem the session's inbound handoff carried (its pain
	// point after ProblemPrefix): the session took the problem up without
	// the user stating it again, and its decision answers it all the same.
	QuestionCarried bool

	Eliminated  []string
	Constraints []Constraint
	// Assumptions are carried forward; Risks too, flagged for review.
	Assumptions []string
	Risks       []string

	Gaps       []string
	Goals      []string
	PainPoints []string
	// Problem is the field of the problem the source session worked on,
	// the first pain point (ProblemPrefix): the target takes it up without
	// asking for it again. Causes are the fields of why it happens, pain
	// points after PainPoints' (CausePrefix).
	Problem string
	Causes  []string
	// Shortlist are the fields of the ideas the user shortlisted and goes
	// to the target to find out about, knowledge gaps after Gaps'
	// (ShortlistPrefix): what the target session is there to close, which
	// a later handoff does not carry on (CarryForward).
	Shortlist []string

	Concepts []string
	// Understood is a boolean field: true means the concepts are solidly
	// understood (basic otherwise).
	Understood      string
	PriorExperience []string
	// TechnicalLevel is a field whose value says the user's level.
	TechnicalLevel string

	OpenQuestions []string
	Sensitivities []string
}

// Generic is the context mapper of engines that register none: it maps
// what every engine's working memory has — phases, obligations, completeness
// gaps, deferred obligations, failed background research and the
// socio-emotional state — and no engine-specific field.
func Generic(in Input) contracts.EngineHandoff { return FromFields(Fields{})(in) }

// FromFields returns the mapper that fills the framework's parts of a
// handoff (metadata, phase results, trust and rapport, deferred obligations,
// open gaps) and the engine's parts from the fields f names.
func FromFields(f Fields) Mapper {
	return func(in Input) contracts.EngineHandoff {
		m, def := in.Memory, in.Source
		h := contracts.EngineHandoff{
			Metadata: contracts.HandoffMetadata{
				SourceEngineID: def.EngineID, SourceEngineName: def.Name, TargetEngineID: in.TargetEngineID,
				HandoffDate: in.Now.UTC(), SessionID: m.SessionID, ProjectID: m.ProjectID, TurnCount: m.TurnNumber,
				CompletenessScore: engine.Clamp01(m.Completeness.Overall), TransitionReason: in.Reason,
			},
			PhaseResults: phaseResults(def, m),
		}
		al := &h.ActionList
		al.DecisionsReached, al.OptionsEliminated = []contracts.Decision{}, []contracts.EliminatedOption{}
		al.ConstraintsIdentified, al.AssumptionsCarriedForward = []contracts.IdentifiedConstraint{}, []contracts.CarriedAssumption{}

		confidence, question := 0.0, strings.Join(values(m, f.Question), "; ")
		if question == "" && f.QuestionCarried {
			question = carriedProblem(m)
		}
		if f.Decision != "" {
			if d := strings.Join(values(m, f.Decision), ", "); d != "" {
				confidence = decisionConfidence(m, f)
				al.DecisionsReached = append(al.DecisionsReached, contracts.Decision{Decision: d, Confidence: confidence,
					Reasoning: strings.Join(valuesOf(m, f.Reasoning), "; "), Key: def.EngineID + "/" + f.Decision,
					Options: valuesOf(m, f.Options), Question: question})
			}
		}
		for _, o := range valuesOf(m, f.Eliminated) {
			al.OptionsEliminated = append(al.OptionsEliminated,
				contracts.EliminatedOption{Option: o, Reasons: []string{}, Question: question})
		}
		for _, c := range f.Constraints {
			for _, v := range values(m, c.Path) {
				text := v
				if c.Label != "" {
					text = c.Label + ": " + v
				}
				al.ConstraintsIdentified = append(al.ConstraintsIdentified, contracts.IdentifiedConstraint{Constraint: text, Implication: c.Implication})
			}
		}
		for _, a := range valuesOf(m, f.Assumptions) {
			al.AssumptionsCarriedForward = append(al.AssumptionsCarriedForward, contracts.CarriedAssumption{Assumption: a})
		}
		for _, r := range valuesOf(m, f.Risks) {
			al.AssumptionsCarriedForward = append(al.AssumptionsCarriedForward,
				contracts.CarriedAssumption{Assumption: "Risk: " + r, WarrantsReview: true})
		}

		sa := &h.SituationAwareness
		sa.UserConfidenceLevel = confidenceLevel(len(al.DecisionsReached) > 0, confidence, m.SocioEmotional)
		sa.KnowledgeGapsRevealed = append(valuesOf(m, f.Gaps), prefixed(ShortlistPrefix, valuesOf(m, f.Shortlist))...)
		for _, id := range m.BackgroundTasks.Gaps {
			sa.KnowledgeGapsRevealed = append(sa.KnowledgeGapsRevealed, ResearchGapPrefix+taskName(def, id))
		}
		if len(sa.KnowledgeGapsRevealed) == 0 {
			// No gap in the user's knowledge was recorded: what the source
			// engine could not settle is the gap the target inherits.
			sa.KnowledgeGapsRevealed = openRequired(m)
		}
		sa.UserGoals = valuesOf(m, f.Goals)
		sa.KeyPainPoints = slices.Concat(prefixed(ProblemPrefix, values(m, f.Problem)), valuesOf(m, f.PainPoints),
			prefixed(CausePrefix, valuesOf(m, f.Causes)))

		ac := &h.AccumulatedContext
		level := contracts.UnderstandingBasic
		if f.Understood != "" && isTrue(m, f.Understood) {
			level = contracts.UnderstandingSolid
		}
		ac.ConceptsTaught = []contracts.TaughtConcept{}
		for _, c := range valuesOf(m, f.Concepts) {
			ac.ConceptsTaught = append(ac.ConceptsTaught, contracts.TaughtConcept{Concept: c, UnderstandingLevel: level})
		}
		ac.PriorExperience = valuesOf(m, f.PriorExperience)
		ac.TechnicalLevel = technicalLevel(strings.Join(values(m, f.TechnicalLevel), " "))

		rs := &h.RelationalState
		rs.TrustLevel = trustLevel(m.SocioEmotional.Trust)
		rs.Rapport = rapport(m.SocioEmotional)
		rs.OpenQuestions = valuesOf(m, f.OpenQuestions)
		rs.Sensitivities = valuesOf(m, f.Sensitivities)
		for _, id := range deferred(m) {
			d := id
			if o, ok := def.Obligation(id); ok {
				d = strings.TrimSuffix(o.Description, ".")
			}
			rs.OpenQuestions = append(rs.OpenQuestions, PutOffPrefix+d)
			rs.Sensitivities = append(rs.Sensitivities, NotYetPrefix+d)
		}
		if m.SocioEmotional.Friction >= 0.3 {
			rs.Sensitivities = append(rs.Sensitivities, Impatient)
		}
		for _, p := range [](*[]string){&sa.KnowledgeGapsRevealed, &sa.UserGoals, &sa.KeyPainPoints, &ac.PriorExperience,
			&rs.OpenQuestions, &rs.Sensitivities} {
			if *p == nil {
				*p = []string{}
			}
		}
		return h
	}
}

// phaseResults reports each phase left and the current one: its
// completeness when it ended (now, for the current phase), the fields
// extracted during it, and its focus obligations still open.
func phaseResults(def *engine.Definition, m *engine.WorkingMemory) []contracts.PhaseResult {
	recs := append(slices.Clone(m.Phase.History), engine.PhaseRecord{PhaseID: m.Phase.Current,
		EnteredAtTurn: m.Phase.EnteredAtTurn, ExitedAtTurn: m.TurnNumber, Completeness: m.Completeness.Overall})
	out := make([]contracts.PhaseResult, 0, len(recs))
	for _, r := range recs {
		pr := contracts.PhaseResult{PhaseName: r.PhaseID, RemainingGaps: []string{},
			CompletionPercentage: int(math.Round(engine.Clamp01(r.Completeness) * 100))}
		var outputs []string
		for _, fd := range def.ExtractionSchema.Fields {
			x, ok := m.Extraction.Fields[fd.Path]
			if !ok || x.IsNull() || !slices.ContainsFunc(x.ExtractedFromTurns, func(t int) bool {
				return t > r.EnteredAtTurn && t <= r.ExitedAtTurn
			}) {
				continue
			}
			outputs = append(outputs, fmt.Sprintf("%s: %s", cmp.Or(fd.DisplayName, fd.Path), short(render(x.Value), 60)))
		}
		switch {
		case len(outputs) == 0:
			pr.KeyOutputs = fmt.Sprintf("Nothing new was captured in %d turns", max(r.ExitedAtTurn-r.EnteredAtTurn, 0))
		case len(outputs) > 6:
			pr.KeyOutputs = strings.Join(outputs[:6], "; ") + fmt.Sprintf("; and %d more", len(outputs)-6)
		default:
			pr.KeyOutputs = strings.Join(outputs, "; ")
		}
		if p, ok := def.Phase(r.PhaseID); ok {
			focus := def.PhaseFocus(p)
			for _, o := range m.Obligations.Items {
				if slices.Contains(focus, o.Category) && o.Status != engine.StatusSatisfied && o.Status != engine.StatusDeferred {
					pr.RemainingGaps = append(pr.RemainingGaps, strings.TrimSuffix(o.Description, "."))
				}
			}
		}
		out = append(out, pr)
	}
	return out
}

// OpenPrefix starts each of a handoff's knowledge gaps that is a required
// obligation of the source left open; PutOffPrefix each open question, and
// NotYetPrefix each sensitivity, that is an obligation the user put off.
// ProblemPrefix starts the pain point that is the problem the source
// session worked on, CausePrefix each that says why it happens, and
// ShortlistPrefix each knowledge gap that is an idea the user shortlisted
// to explore (Fields' Problem, Causes and Shortlist). ResearchGapPrefix
// starts each knowledge gap that is a background task of the source that
// did not complete.
const (
	OpenPrefix      = "Still open: "
	PutOffPrefix    = "Put off by the user: "
	NotYetPrefix    = "The user preferred not to answer yet: "
	ProblemPrefix   = "Problem: "
	CausePrefix     = "Root cause: "
	ShortlistPrefix = "Shortlisted idea to explore: "

	ResearchGapPrefix = "Background research did not complete: "
)

// framings are the prefixes the mappers frame an element with.
var framings = []string{OpenPrefix, PutOffPrefix, NotYetPrefix, ProblemPrefix, CausePrefix, ShortlistPrefix, ResearchGapPrefix}

// unframed is text without the prefix a mapper framed it with, if any:
// what the element says ("the pause button", not "Shortlisted idea to
// explore: the pause button").
func unframed(text string) string {
	for _, p := range framings {
		if rest, ok := strings.CutPrefix(text, p); ok {
			return rest
		}
	}
	return text
}

// carriedProblem is the problem the session's inbound handoff carried
// (Problem), "" for none.
func carriedProblem(m *engine.WorkingMemory) string {
	inbound, ok := contracts.DecodeHandoff(m.InboundHandoff)
	if !ok {
		return ""
	}
	return Problem(inbound)
}

// Problem is the problem a handoff marks as the one its source session
// worked on: its first pain point after ProblemPrefix, trimmed; "" for
// none. Its other pain points (a cost, a root cause, a users' pain) are no
// such problem.
func Problem(h contracts.EngineHandoff) string {
	for _, p := range h.SituationAwareness.KeyPainPoints {
		if problem, ok := strings.CutPrefix(p, ProblemPrefix); ok && strings.TrimSpace(problem) != "" {
			return strings.TrimSpace(problem)
		}
	}
	return ""
}

// Impatient is the sensitivity of a session whose user grew impatient with
// its questions (friction).
const Impatient = "The user grew impatient with questions; do not ask again for what is known"

// prefixed is items, each after prefix; empty, not nil, for none.
func prefixed(prefix string, items []string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, prefix+it)
	}
	return out
}

// openRequired lists the required obligations not yet satisfied.
func openRequired(m *engine.WorkingMemory) []string {
	out := []string{}
	for _, o := range m.Obligations.Items {
		if o.Required && o.Status != engine.StatusSatisfied && o.Status != engine.StatusDeferred {
			out = append(out, OpenPrefix+strings.TrimSuffix(o.Description, "."))
		}
	}
	return out
}

func deferred(m *engine.WorkingMemory) []string {
	ids := make([]string, 0, len(m.Extraction.Deferred))
	for id := range m.Extraction.Deferred {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func taskName(def *engine.Definition, id string) string {
	for _, t := range def.BackgroundTasks {
		if t.TaskID == id {
			return cmp.Or(t.DisplayName, id)
		}
	}
	return id
}

func decisionConfidence(m *engine.WorkingMemory, f Fields) float64 {
	if f.Confidence != "" {
		var x float64
		if m.Extraction.Decode(f.Confidence, &x) {
			if x > 1 {
				x /= 10 // a 1-10 scale
			}
			return round4(engine.Clamp01(x))
		}
	}
	if fd, ok := m.Extraction.Get(f.Decision); ok {
		return round4(engine.Clamp01(fd.Confidence))
	}
	return 0
}

// confidenceLevel follows the seed: high above 0.8 for a decision, medium
// otherwise, and low when the user is at odds with the conversation.
func confidenceLevel(decided bool, confidence float64, se engine.SocioEmotional) string {
	switch {
	case decided && confidence > 0.8:
		return contracts.LevelHigh
	case se.Friction >= 0.5 || se.Trust < 0.35:
		return contracts.LevelLow
	}
	return contracts.LevelMedium
}

// trustLevel follows the seed: high above 0.7, and low below 0.35.
func trustLevel(trust float64) string {
	switch {
	case trust > 0.7:
		return contracts.LevelHigh
	case trust < 0.35:
		return contracts.LevelLow
	}
	return contracts.LevelMedium
}

func rapport(se engine.SocioEmotional) string {
	switch {
	case se.Friction >= 0.4:
		return "Strained: the user showed frustration"
	case se.Rapport >= 0.6 && se.Friction < 0.2:
		return "Collaborative and engaged"
	}
	return "Cordial and businesslike"
}

// technicalLevel reads a free-text level ("non-technical", "developer",
// "mostly paper") into the handoff's scale; intermediate when unknown.
func technicalLevel(v string) string {
	v = strings.ToLower(v)
	switch {
	case v == "":
		return contracts.TechnicalIntermediate
	case strings.Contains(v, "expert"):
		return contracts.TechnicalExpert
	case strings.Contains(v, "advanced"), strings.Contains(v, "developer"), strings.Contains(v, "engineer"),
		strings.Contains(v, "fully digital"), strings.Contains(v, "high"):
		return contracts.TechnicalAdvanced
	case strings.Contains(v, "beginner"), strings.Contains(v, "not technical"), strings.Contains(v, "non-technical"),
		strings.Contains(v, "paper"), strings.Contains(v, "low"), strings.Contains(v, "basic"):
		return contracts.TechnicalBeginner
	}
	return contracts.TechnicalIntermediate
}

func isTrue(m *engine.WorkingMemory, path string) bool {
	var b bool
	return m.Extraction.Decode(path, &b) && b
}

// valuesOf is values of each path, in order, without repeats.
func valuesOf(m *engine.WorkingMemory, paths []string) []string {
	out := []string{}
	for _, p := range paths {
		for _, v := range values(m, p) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// values returns a field's value as text items: a list gives one item per
// element, an object its name (or its first text member), a scalar itself.
func values(m *engine.WorkingMemory, path string) []string {
	if path == "" {
		return nil
	}
	f, ok := m.Extraction.Get(path)
	if !ok || f.IsNull() {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(f.Value, &list) == nil {
		var out []string
		for _, x := range list {
			if s := render(x); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	if s := render(f.Value); s != "" {
		return []string{s}
	}
	return nil
}

// render turns a JSON value into text for people.
func render(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return strings.TrimSpace(string(raw))
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			b, _ := json.Marshal(e)
			if s := render(b); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		for _, k := range []string{"name", "option", "title", "value", "label", "text"} {
			if s, ok := x[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, ok := x[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
	}
	return strings.TrimSpace(string(raw))
}

func short(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
