package handoff_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/pkg/contracts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var at = time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)

// makeHandoff is the seed's example handoff (Exploration → Project
// Discovery), edited by edit.
func makeHandoff(edit func(*contracts.EngineHandoff)) contracts.EngineHandoff {
	h := contracts.EngineHandoff{
		Metadata: contracts.HandoffMetadata{SourceEngineID: "exploration", SourceEngineName: "Exploration Engine",
			TargetEngineID: "project-discovery", HandoffDate: at, SessionID: "sess_abc123", ProjectID: "proj_xyz789",
			TurnCount: 15, CompletenessScore: 0.75, TransitionReason: "User reached decision and ready to define requirements"},
		PhaseResults: []contracts.PhaseResult{{PhaseName: "DELIBERATION", CompletionPercentage: 75,
			KeyOutputs: "Decision: Custom Web App; Constraints: budget and timeline", RemainingGaps: []string{}}},
		ActionList: contracts.ActionList{
			DecisionsReached: []contracts.Decision{{Decision: "Custom Web App", Confidence: 0.85,
				Reasoning: "Full control over the product, better long-term TCO at scale"}},
			OptionsEliminated: []contracts.EliminatedOption{
				{Option: "WordPress", Reasons: []string{"Not flexible enough", "vendor lock-in concerns"}},
				{Option: "No-Code Platform", Reasons: []string{"Scalability limitations"}}},
			ConstraintsIdentified: []contracts.IdentifiedConstraint{
				{Constraint: "Budget: $50k-$75k initial build"}, {Constraint: "Timeline: 6 months to MVP"},
				{Constraint: "Must integrate with Stripe and QuickBooks"}},
			AssumptionsCarriedForward: []contracts.CarriedAssumption{},
		},
		SituationAwareness: contracts.SituationAwareness{UserConfidenceLevel: contracts.LevelHigh,
			KnowledgeGapsRevealed: []string{"User unclear on hosting requirements", "Unsure about authentication approach (OAuth vs custom)"},
			UserGoals:             []string{}, KeyPainPoints: []string{}},
		AccumulatedContext: contracts.AccumulatedContext{ConceptsTaught: []contracts.TaughtConcept{
			{Concept: "API Design", UnderstandingLevel: contracts.UnderstandingSolid},
			{Concept: "Database Normalization", UnderstandingLevel: contracts.UnderstandingBasic},
			{Concept: "Microservices vs Monolith", UnderstandingLevel: contracts.UnderstandingSolid}},
			PriorExperience: []string{}, TechnicalLevel: contracts.TechnicalIntermediate},
		RelationalState: contracts.RelationalState{TrustLevel: contracts.LevelHigh, Rapport: "Collaborative and engaged",
			OpenQuestions: []string{}, Sensitivities: []string{}},
	}
	if edit != nil {
		edit(&h)
	}
	return h
}

// The seed's validation rules, each broken once.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*contracts.EngineHandoff)
		want string // an error containing this; empty: valid
	}{
		{"the seed's example", nil, ""},
		{"only a gap", func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached, h.ActionList.ConstraintsIdentified = nil, nil
		}, ""},
		{"nothing identified", func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached, h.ActionList.ConstraintsIdentified = nil, nil
			h.SituationAwareness.KnowledgeGapsRevealed = []string{" "}
		}, "no decision, constraint or knowledge gap"},
		{"short reasoning", func(h *contracts.EngineHandoff) { h.ActionList.DecisionsReached[0].Reasoning = "It is cheaper." },
			"decisions_reached[0].reasoning: 14 characters; more than 20 are required"},
		{"reasoning of exactly 20", func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached[0].Reasoning = strings.Repeat("a", 20)
		}, "more than 20"},
		{"placeholder reasoning", func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached[0].Reasoning = "TODO: fill in the reasoning later on"
		}, "placeholder"},
		{"dots for reasoning", func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached[0].Reasoning = "......................."
		}, "placeholder"},
		{"confidence above 1", func(h *contracts.EngineHandoff) { h.ActionList.DecisionsReached[0].Confidence = 8.5 },
			"confidence: 8.5 is not in [0, 1]"},
		{"negative confidence", func(h *contracts.EngineHandoff) { h.ActionList.DecisionsReached[0].Confidence = -0.1 }, "confidence"},
		{"self transition", func(h *contracts.EngineHandoff) { h.Metadata.TargetEngineID = "exploration" }, "hands off to itself"},
		{"no metadata", func(h *contracts.EngineHandoff) { h.Metadata = contracts.HandoffMetadata{} },
			"metadata.source_engine_id: is required"},
		{"no phase results", func(h *contracts.EngineHandoff) { h.PhaseResults = nil }, "phase_results: at least one"},
		{"placeholder key outputs", func(h *contracts.EngineHandoff) { h.PhaseResults[0].KeyOutputs = "Phase X key outputs..." },
			"key_outputs"},
		{"no situation awareness", func(h *contracts.EngineHandoff) {
			h.SituationAwareness.UserConfidenceLevel = ""
		}, "situation_awareness.user_confidence_level"},
		{"no accumulated context", func(h *contracts.EngineHandoff) { h.AccumulatedContext = contracts.AccumulatedContext{} },
			"accumulated_context.technical_level"},
		{"an unknown understanding", func(h *contracts.EngineHandoff) {
			h.AccumulatedContext.ConceptsTaught[0].UnderstandingLevel = "great"
		}, "concepts_taught[0].understanding_level"},
		{"no relational state", func(h *contracts.EngineHandoff) { h.RelationalState = contracts.RelationalState{} },
			"relational_state.trust_level"},
		{"completeness out of range", func(h *contracts.EngineHandoff) { h.Metadata.CompletenessScore = 75 }, "completeness_score"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := handoff.Validate(makeHandoff(tt.edit))
			joined := strings.Join(r.Errors, "\n")
			switch {
			case tt.want == "" && (!r.Valid || r.Err() != nil):
				t.Fatalf("errors = %v, want valid", r.Errors)
			case tt.want != "" && (r.Valid || !strings.Contains(joined, tt.want) || r.Err() == nil):
				t.Fatalf("result = %+v, want an error containing %q", r, tt.want)
			}
		})
	}
}

func TestIsPlaceholder(t *testing.T) {
	for text, want := range map[string]bool{
		"": true, "   ": true, "...": true, "N/A": true, "n/a.": true, "TBD": true, "unknown": true, "-": true,
		"lorem ipsum dolor sit amet": true, "Phase X key outputs...": true, "todo: write it": true,
		"Full control over the product, better long-term TCO at scale...": false,
		"It is cheap and fast to start":                                   false,
		"The team knows Azure":                                            false,
	} {
		if got := handoff.IsPlaceholder(text); got != want {
			t.Errorf("IsPlaceholder(%q) = %t, want %t", text, got, want)
		}
	}
}

// The executive summary, pinned by a golden file: the seed's layout, and
// the sections the I-PASS check asks for.
func TestFormat(t *testing.T) {
	h := makeHandoff(func(h *contracts.EngineHandoff) {
		h.RelationalState.Sensitivities = []string{"The budget is tight"}
		h.ActionList.AssumptionsCarriedForward = []contracts.CarriedAssumption{{Assumption: "Risk: hosting costs", WarrantsReview: true}}
	})
	got := handoff.Format(h, "Project Requirements Discovery")
	path := filepath.Join("testdata", "format.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/engine/handoff -update writes it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("summary changed (run with -update if on purpose):\n%s", got)
	}
	lines := strings.Split(got, "\n")
	if lines[0] != handoff.Rule || lines[1] != handoff.Title || lines[len(lines)-1] != handoff.Rule {
		t.Errorf("the summary is not framed by the seed's title block:\n%s", got)
	}
	order := []string{"Source: Exploration Engine → Target: Project Requirements Discovery",
		"Session: sess_abc123 | Project: proj_xyz789 | Turns: 15 | Completeness: 0.75",
		"─── DECISIONS REACHED ───", `✓ Chose "Custom Web App" (confidence: 0.85)`,
		"─── OPTIONS ELIMINATED ───", "✗ WordPress — Not flexible enough, vendor lock-in concerns",
		"─── CONSTRAINTS IDENTIFIED ───", "• Budget: $50k-$75k initial build",
		"─── KNOWLEDGE GAPS ───", "• User unclear on hosting requirements",
		"─── CONCEPTS TAUGHT ───", "• API Design (solid understanding)",
		"─── SENSITIVITIES ───", "─── USER PROFILE ───", "Technical Level: Intermediate", "Confidence: High", "Trust: High",
		"Rapport: Collaborative and engaged"}
	at := -1
	for _, want := range order {
		i := slices.Index(lines, want)
		if i <= at {
			t.Fatalf("%q missing or out of the seed's order in:\n%s", want, got)
		}
		at = i
	}
	if strings.Contains(got, "\n\n") {
		t.Error("the summary has a blank line; the context assembler separates sections with them")
	}
}

// Decisions of one engine along a chain answer different questions: the
// summary says which each answers, and which an option was ruled out for,
// when they record it (a custom build ruled out for the booking system may
// be chosen to take payments).
func TestFormatSaysWhatEachDecisionAnswers(t *testing.T) {
	h := makeHandoff(func(h *contracts.EngineHandoff) {
		h.ActionList.DecisionsReached = []contracts.Decision{
			{Decision: "off-the-shelf tool", Question: "Which booking system should we use for classes?", Confidence: 0.8, Reasoning: "ready now"},
			{Decision: "Stripe", Question: "How do we take card payments?", Confidence: 0.9, Reasoning: "fees"},
			{Decision: "Custom Web App", Confidence: 0.85, Reasoning: "flexible"},
		}
		h.ActionList.OptionsEliminated = []contracts.EliminatedOption{
			{Option: "A custom build", Reasons: []string{"too slow"}, Question: "Which booking system should we use for classes?"},
			{Option: "WordPress", Reasons: []string{"lock-in"}},
		}
	})
	lines := strings.Split(handoff.Format(h, "Project Requirements Discovery"), "\n")
	for _, want := range [][2]string{
		{`✓ Chose "off-the-shelf tool" (confidence: 0.80)`, "  Question: Which booking system should we use for classes?"},
		{`✓ Chose "Stripe" (confidence: 0.90)`, "  Question: How do we take card payments?"},
		{`✓ Chose "Custom Web App" (confidence: 0.85)`, "  Reasoning: flexible"},
		{"✗ A custom build — too slow", "  Question: Which booking system should we use for classes?"},
		{"✗ WordPress — lock-in", "─── CONSTRAINTS IDENTIFIED ───"},
	} {
		i := slices.Index(lines, want[0])
		if i < 0 || i+1 >= len(lines) || lines[i+1] != want[1] {
			t.Errorf("want %q followed by %q in:\n%s", want[0], want[1], strings.Join(lines, "\n"))
		}
	}
}

func TestVerifyIPASS(t *testing.T) {
	receiver := handoff.Receiver{EngineID: "project-discovery", ProjectID: "proj_xyz789"}
	onlyDecision := makeHandoff(func(h *contracts.EngineHandoff) {
		h.ActionList.ConstraintsIdentified = nil
		h.SituationAwareness.KnowledgeGapsRevealed = nil
	})
	full := makeHandoff(func(h *contracts.EngineHandoff) {
		h.RelationalState.Sensitivities = []string{"The budget is tight"}
	})
	tests := []struct {
		name      string
		h         contracts.EngineHandoff
		reply     string
		receiver  handoff.Receiver
		verified  bool
		decisions float64 // want DecisionsAcknowledged > this
	}{
		// The seed's scenario.
		{"the seed's acknowledgment", onlyDecision, "Great! You decided on a Custom Web App. Let's define the requirements...",
			receiver, true, 0.5},
		{"everything acknowledged, with inflections", full,
			"Welcome over from exploration. You chose a custom web app; the budget of $50k-$75k for the initial build, " +
				"6 months to the MVP timeline and integrating Stripe and QuickBooks are noted. We still need to settle hosting " +
				"requirements and the authentication approach (OAuth or custom). I know the budget is tight.",
			receiver, true, 0.5},
		{"a reply that ignores the handoff", full, "Hello! What would you like to build today?", receiver, false, -1},
		{"half is not more than half", makeHandoff(func(h *contracts.EngineHandoff) {
			h.ActionList.ConstraintsIdentified = []contracts.IdentifiedConstraint{{Constraint: "Timeline: 6 months to MVP"}}
			h.SituationAwareness.KnowledgeGapsRevealed = nil
		}), "So, a custom web app it is.", receiver, false, 0.5},
		{"the wrong engine", onlyDecision, "You decided on a Custom Web App.",
			handoff.Receiver{EngineID: "ideation", ProjectID: "proj_xyz789"}, false, 0.5},
		{"the wrong project", onlyDecision, "You decided on a Custom Web App.",
			handoff.Receiver{EngineID: "project-discovery", ProjectID: "other"}, false, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := handoff.Verify(tt.h, tt.reply, tt.receiver)
			if v.Verified != tt.verified {
				t.Fatalf("verified = %t, want %t: %+v", v.Verified, tt.verified, v.Details)
			}
			if tt.decisions >= 0 && v.Details.DecisionsAcknowledged <= tt.decisions {
				t.Errorf("decisions acknowledged = %v, want > %v", v.Details.DecisionsAcknowledged, tt.decisions)
			}
			if v.Score < 0 || v.Score > 1 || (tt.verified && v.Score < 0.5) {
				t.Errorf("score = %v", v.Score)
			}
			for _, e := range v.Details.Elements {
				for _, k := range e.Keywords {
					if len([]rune(k)) <= 3 || k != strings.ToLower(k) {
						t.Errorf("keyword %q of %q is not a keyword", k, e.Text)
					}
				}
			}
		})
	}
	v := handoff.Verify(full, "Hello! What would you like to build today?", receiver)
	if !v.Details.IdentityMatch || !v.Details.ProjectMatch || v.Details.OverallAcknowledgment != 0 ||
		v.Details.Components[handoff.KindSensitivity].Total != 1 || len(v.Details.Elements) != 7 {
		t.Errorf("details of an unacknowledged handoff = %+v", v.Details)
	}
}

func TestKeywordsAndJaccard(t *testing.T) {
	if got := handoff.Keywords("The user is unclear on the hosting requirements, and THE hosting costs."); !slices.Equal(got,
		[]string{"unclear", "hosting", "requirements", "costs"}) {
		t.Errorf("keywords = %v", got)
	}
	set := func(xs ...string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	if j := handoff.Jaccard(set("a", "b", "c"), set("b", "c", "d")); j != 0.5 {
		t.Errorf("jaccard = %v, want 0.5", j)
	}
}

func TestMapperRegistry(t *testing.T) {
	cat := enginetest.Shipped(t)
	m := handoff.Builtin()
	// Every exit transition the shipped engines declare has its own mapper.
	if missing := m.Unmapped(cat.All()); len(missing) != 0 {
		t.Errorf("exit transitions without a context mapper: %v", missing)
	}
	var declared []string
	for _, d := range cat.All() {
		for _, x := range d.ExitTransitions {
			declared = append(declared, handoff.Name(d.EngineID, x.TargetEngine))
		}
	}
	slices.Sort(declared)
	if !slices.Equal(declared, m.Names()) {
		t.Errorf("mappers %v for the declared transitions %v", m.Names(), declared)
	}
	if err := m.Register("exploration", "project-discovery", handoff.Generic); err == nil {
		t.Error("a second mapper for a transition was registered")
	}

	// An engine without a mapper of its own gets the generic one; without a
	// fallback, Map says which transition has none.
	def := enginetest.Definition()
	mem := enginetest.Memory(def)
	mem.TurnNumber = 3
	in := handoff.Input{Source: def, Memory: mem, TargetEngineID: "elsewhere", Reason: "The user asked to go elsewhere", Now: at}
	if _, specific := m.Lookup("testing", "elsewhere"); specific {
		t.Error("the test engine has a mapper of its own")
	}
	h, err := m.Map(in)
	if err != nil || h.Metadata.SourceEngineID != "testing" || h.Metadata.TargetEngineID != "elsewhere" || h.Metadata.TurnCount != 3 {
		t.Fatalf("generic map = %+v, %v", h.Metadata, err)
	}
	if r := handoff.Validate(h); !r.Valid {
		t.Errorf("the generic handoff of a fresh session is invalid: %v", r.Errors)
	}
	if _, err := handoff.NewMappers().Map(in); err == nil || !strings.Contains(err.Error(), "testing->elsewhere") {
		t.Errorf("map without a mapper = %v", err)
	}
}

// The generic mapper carries what every engine knows: deferred obligations
// become open questions and sensitivities, a failed background task a
// knowledge gap, friction a sensitivity and low trust, phases their results.
func TestGenericMapper(t *testing.T) {
	def := enginetest.Definition()
	mem := enginetest.Memory(def)
	mem.TurnNumber = 4
	enginetest.Set(mem, "basics.goal", "ship a task tracker", 0.9, 1)
	mem.Phase.History = []engine.PhaseRecord{{PhaseID: "INTRO", EnteredAtTurn: 0, ExitedAtTurn: 2, TurnsInPhase: 2, Completeness: 0.3}}
	mem.Phase.Current, mem.Phase.EnteredAtTurn = "DETAILS", 2
	mem.Extraction.Deferred = map[string]int{"budget_known": 3}
	mem.BackgroundTasks.Gaps = []string{"market"}
	mem.SocioEmotional = engine.SocioEmotional{Rapport: 0.3, Trust: 0.2, Friction: 0.6}
	h := handoff.Generic(handoff.Input{Source: def, Memory: mem, TargetEngineID: "elsewhere", Reason: "asked", Now: at})
	if len(h.PhaseResults) != 2 || h.PhaseResults[0].PhaseName != "INTRO" || h.PhaseResults[0].CompletionPercentage != 30 ||
		!strings.Contains(h.PhaseResults[0].KeyOutputs, "Goal: ship a task tracker") || h.PhaseResults[1].PhaseName != "DETAILS" {
		t.Errorf("phase results = %+v", h.PhaseResults)
	}
	if !slices.Contains(h.SituationAwareness.KnowledgeGapsRevealed, "Background research did not complete: market") {
		t.Errorf("gaps = %v", h.SituationAwareness.KnowledgeGapsRevealed)
	}
	if !slices.ContainsFunc(h.RelationalState.OpenQuestions, func(s string) bool { return strings.Contains(s, "The budget is known") }) ||
		len(h.RelationalState.Sensitivities) != 2 {
		t.Errorf("relational state = %+v", h.RelationalState)
	}
	if h.RelationalState.TrustLevel != contracts.LevelLow || h.SituationAwareness.UserConfidenceLevel != contracts.LevelLow ||
		!strings.HasPrefix(h.RelationalState.Rapport, "Strained") {
		t.Errorf("levels = %s, %s, %q", h.RelationalState.TrustLevel, h.SituationAwareness.UserConfidenceLevel, h.RelationalState.Rapport)
	}
	if !h.Metadata.HandoffDate.Equal(at) {
		t.Errorf("date = %v", h.Metadata.HandoffDate)
	}
}

// A handoff carries forward what its session's own inbound handoff brought:
// after project-discovery → exploration → project-discovery, the second
// discovery session knows the requirements the first captured (the budget,
// the platform, the goal, the problem, the security concern, the question
// put off), not only the decision exploration reached. What the source
// settled comes first and is not repeated; the knowledge gaps are the
// source's own (it may have closed the earlier ones). Under memory version
// 3 the problem goes as such (ProblemPrefix), and the decision answers it,
// the exploration session having taken it up without the user stating it
// again; a chain of sessions of version 2 carries it as a pain point and
// the decision without a question, as it did.
func TestMapCarriesTheInboundHandoffForward(t *testing.T) {
	for _, tt := range []struct {
		version       int
		problem, asks string
	}{
		{version: 2, problem: "Jobs get lost on paper"},
		{version: 3, problem: handoff.ProblemPrefix + "Jobs get lost on paper", asks: "Jobs get lost on paper"},
	} {
		t.Run(fmt.Sprint("version ", tt.version), func(t *testing.T) {
			mapCarriesTheInboundHandoffForward(t, tt.version, tt.problem, tt.asks)
		})
	}
}

// mapCarriesTheInboundHandoffForward is TestMapCarriesTheInboundHandoffForward
// for sessions of memory version version: the pain point the problem is
// carried as, and the question the decision answers.
func mapCarriesTheInboundHandoffForward(t *testing.T, version int, problem, asks string) {
	t.Helper()
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	mappers := handoff.Builtin()

	first := enginetest.Memory(discovery)
	first.SchemaVersion, first.TurnNumber = version, 20
	enginetest.Set(first, "constraints.budget", "$90k", 0.9, 15)
	enginetest.Set(first, "constraints.technical", "Android tablets, hosted on Azure", 0.9, 9)
	enginetest.Set(first, "purpose_and_problem.desired_outcome", "No job is forgotten", 0.9, 14)
	enginetest.Set(first, "purpose_and_problem.core_problem", "Jobs get lost on paper", 0.9, 1)
	enginetest.Set(first, "non_functional_screening.security", "Only staff may see customer data", 0.9, 13)
	first.Extraction.Deferred = map[string]int{"team_resources_known": 11}
	toExploration, err := mappers.Map(handoff.Input{Source: discovery, Memory: first, TargetEngineID: "exploration",
		Reason: "Requirements are captured and the user wants to explore solution options", Now: at})
	if err != nil {
		t.Fatal(err)
	}
	toExploration.SituationAwareness.KnowledgeGapsRevealed = []string{"Unsure how hosting works"}

	second := enginetest.Memory(exploration)
	second.SchemaVersion, second.TurnNumber = version, 10
	second.InboundHandoff, _ = json.Marshal(toExploration)
	enginetest.Set(second, "decision.decision_made", "custom build", 0.85, 10)
	enginetest.Set(second, "decision.reasoning", "It gives us full control over offline sync", 0.85, 10)
	enginetest.Set(second, "decision.constraints", []string{"Budget: $90k", "Live within six months"}, 0.85, 8)
	back, err := mappers.Map(handoff.Input{Source: exploration, Memory: second, TargetEngineID: "project-discovery",
		Reason: "User reached decision and ready to define requirements", Now: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	if r := handoff.Validate(back); !r.Valid {
		t.Fatalf("invalid: %v", r.Errors)
	}
	if d := back.ActionList.DecisionsReached; len(d) != 1 || d[0].Decision != "custom build" || d[0].Question != asks {
		t.Errorf("decisions = %+v, want the custom build answering %q", d, asks)
	}
	var constraints []string
	for _, c := range back.ActionList.ConstraintsIdentified {
		constraints = append(constraints, c.Constraint)
	}
	if want := []string{"Budget: $90k", "Live within six months", "Technical: Android tablets, hosted on Azure"}; !slices.Equal(constraints, want) {
		t.Errorf("constraints = %q, want %q", constraints, want)
	}
	sa, rs := back.SituationAwareness, back.RelationalState
	if !slices.Contains(sa.UserGoals, "No job is forgotten") || !slices.Contains(sa.KeyPainPoints, problem) {
		t.Errorf("goals %q, pain points %q; want the pain point %q", sa.UserGoals, sa.KeyPainPoints, problem)
	}
	if !slices.Contains(rs.Sensitivities, "Only staff may see customer data") ||
		!slices.ContainsFunc(rs.OpenQuestions, func(q string) bool { return strings.HasPrefix(q, "Put off by the user: The team") }) {
		t.Errorf("sensitivities %q, open questions %q", rs.Sensitivities, rs.OpenQuestions)
	}
	if slices.Contains(sa.KnowledgeGapsRevealed, "Unsure how hosting works") {
		t.Errorf("an earlier engine's knowledge gap is carried: %q", sa.KnowledgeGapsRevealed)
	}
	if md := back.Metadata; md.SourceEngineID != "exploration" || md.TargetEngineID != "project-discovery" || md.TurnCount != 10 {
		t.Errorf("metadata = %+v", md)
	}
}

// Along project-discovery → exploration → project-discovery → exploration,
// what the second discovery session settled replaces what the first
// brought: the budget the user corrected is carried once, at its new value,
// and the question the user put off in the first session, answered in the
// second, is no longer carried as put off.
func TestMapCarriesWhatTheSourceSettledNotWhatItReplaced(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	hop := newChain(t).hop

	first := enginetest.Memory(discovery)
	enginetest.Set(first, "constraints.budget", "$90k", 0.9, 5)
	first.Extraction.Deferred = map[string]int{"team_resources_known": 6}
	h := hop(discovery, first, "exploration")

	second := enginetest.Memory(exploration)
	second.InboundHandoff, _ = json.Marshal(h)
	enginetest.Set(second, "decision.decision_made", "custom build", 0.85, 4)
	enginetest.Set(second, "decision.reasoning", "It gives us full control over offline sync", 0.85, 4)
	h = hop(exploration, second, "project-discovery")

	third := enginetest.Memory(discovery)
	third.InboundHandoff, _ = json.Marshal(h)
	enginetest.Set(third, "constraints.budget", "$120k", 0.9, 3)
	enginetest.Set(third, "constraints.team", "two developers", 0.9, 4)
	for i, o := range third.Obligations.Items {
		if o.ID == "team_resources_known" {
			third.Obligations.Items[i].Status = engine.StatusSatisfied
		}
	}
	h = hop(discovery, third, "exploration")

	if r := handoff.Validate(h); !r.Valid {
		t.Fatalf("invalid: %v", r.Errors)
	}
	var budgets []string
	for _, c := range h.ActionList.ConstraintsIdentified {
		if strings.HasPrefix(c.Constraint, "Budget:") {
			budgets = append(budgets, c.Constraint)
		}
	}
	if !slices.Equal(budgets, []string{"Budget: $120k"}) {
		t.Errorf("budgets = %q, want the corrected one alone", budgets)
	}
	for _, x := range append(h.RelationalState.OpenQuestions, h.RelationalState.Sensitivities...) {
		if strings.Contains(x, "The team and resources available are known") {
			t.Errorf("the answered question is carried as put off: %q", x)
		}
	}
	if d := h.ActionList.DecisionsReached; len(d) != 1 || d[0].Decision != "custom build" {
		t.Errorf("decisions = %+v, want exploration's", d)
	}
}

// Along exploration → project-discovery → exploration → project-discovery
// → exploration → project-discovery, each exploration session decides
// again what the last one decided: its decision replaces the one the chain
// carried, so each handoff reports one decision, the latest, and the
// executive summary says "Chose" once. (Each round trip used to add the
// decision it replaced: the fifth handoff reported Connecteam, the custom
// build and Jobber, all as chosen.)
func TestMapChainKeepsTheLatestDecision(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	c := newChain(t)
	var h contracts.EngineHandoff
	hop := func(def *engine.Definition, m *engine.WorkingMemory, target string) {
		t.Helper()
		h = c.hop(def, m, target)
		if r := handoff.Validate(h); !r.Valid {
			t.Fatalf("invalid: %v", r.Errors)
		}
	}
	for i, chose := range []string{"Jobber", "custom build", "Connecteam"} {
		m := enginetest.Memory(exploration)
		m.SessionID = fmt.Sprintf("exploration-%d", i)
		enginetest.Set(m, "decision.decision_made", chose, 0.85, 4)
		enginetest.Set(m, "decision.reasoning", "It fits the crews and the budget we have", 0.85, 4)
		hop(exploration, m, "project-discovery")
		if got := decisionsOf(h); !slices.Equal(got, []string{chose}) {
			t.Errorf("handoff %d: decisions = %q, want [%s]", 2*i+1, got, chose)
		}
		if n := strings.Count(handoff.Format(h, "Project Discovery"), "✓ Chose"); n != 1 {
			t.Errorf("handoff %d: the summary lists %d decisions, want 1", 2*i+1, n)
		}

		m = enginetest.Memory(discovery)
		m.SessionID = fmt.Sprintf("discovery-%d", i)
		enginetest.Set(m, "constraints.budget", "$90k", 0.9, 5)
		hop(discovery, m, "exploration")
		if d := h.ActionList.DecisionsReached; len(d) != 1 || d[0].Decision != chose {
			t.Errorf("handoff %d: decisions = %+v, want the carried %s alone", 2*i+2, d, chose)
		}
	}
}

// Along exploration → project-discovery → exploration → project-discovery
// → exploration → project-discovery, the second exploration session decides
// another question than the first (a payment provider, not an accounting
// tool): its decision is carried beside the first's, not in its place. The
// third decides the first's question again (QuickBooks, which the first
// weighed, over Xero): its decision replaces the first's alone. (Stripe
// used to replace Xero, each decision of exploration having the same key.)
// The fourth asks the accounting question once more and weighs other tools
// (Wave, FreshBooks): its decision replaces QuickBooks, the question being
// the same though no option is. (Both used to be carried, the options
// having nothing in common.)
func TestMapChainKeepsTheDecisionsOfOtherQuestions(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	c := newChain(t)
	hops := []struct {
		problem string
		options []string
		chose   string
		want    []string
	}{
		{"Which accounting tool should we use for invoicing", []string{"Xero", "QuickBooks", "FreshBooks"}, "Xero",
			[]string{"Xero"}},
		{"How should customers pay for bookings online", []string{"Stripe", "Square", "PayPal"}, "Stripe",
			[]string{"Stripe", "Xero"}},
		{"Our accounting tool again: payroll matters now", []string{"Xero", "QuickBooks"}, "QuickBooks",
			[]string{"QuickBooks", "Stripe"}},
		{"We need an accounting tool for invoicing", []string{"Wave", "FreshBooks"}, "Wave",
			[]string{"Wave", "Stripe"}},
	}
	for i, hp := range hops {
		m := enginetest.Memory(exploration)
		m.SessionID = fmt.Sprintf("exploration-%d", i)
		enginetest.Set(m, "initial_state.problem_statement", hp.problem, 0.9, 1)
		enginetest.Set(m, "solution_landscape.options", hp.options, 0.9, 2)
		enginetest.Set(m, "decision.decision_made", hp.chose, 0.85, 4)
		enginetest.Set(m, "decision.reasoning", "It fits the way the studio works today", 0.85, 4)
		if got := decisionsOf(c.hop(exploration, m, "project-discovery")); !slices.Equal(got, hp.want) {
			t.Errorf("handoff %d: decisions = %q, want %q", 2*i+1, got, hp.want)
		}

		m = enginetest.Memory(discovery)
		m.SessionID = fmt.Sprintf("discovery-%d", i)
		enginetest.Set(m, "constraints.budget", "$90k", 0.9, 5)
		if got := decisionsOf(c.hop(discovery, m, "exploration")); !slices.Equal(got, hp.want) {
			t.Errorf("handoff %d: decisions = %q, want the carried %q", 2*i+2, got, hp.want)
		}
	}
}

// A carried decision gives way to one of the source session's own when both
// answer the same question: the same key, and one's choice among the
// other's options (articles aside, or one naming the other). A carried
// decision without options (recorded before they were, or none named) gives
// way to any decision with its key, as before options were recorded.
func TestCarryForwardReplacesADecisionOnTheSameQuestion(t *testing.T) {
	const key = "exploration/decision.decision_made"
	accounting := contracts.Decision{Decision: "Xero", Key: key, Options: []string{"Xero", "QuickBooks", "FreshBooks"}}
	for _, tt := range []struct {
		name         string
		own, carried contracts.Decision
		wantReplaced bool
	}{
		{"the choice among the carried options", contracts.Decision{Decision: "QuickBooks", Key: key}, accounting, true},
		{"the carried choice among the options", contracts.Decision{Decision: "Wave", Key: key, Options: []string{"xero", "Wave"}},
			accounting, true},
		{"another question", contracts.Decision{Decision: "Stripe", Key: key, Options: []string{"Stripe", "Square"}},
			accounting, false},
		{"another question, no options named", contracts.Decision{Decision: "Stripe", Key: key}, accounting, false},
		{"the carried decision has no options", contracts.Decision{Decision: "Stripe", Key: key, Options: []string{"Stripe"}},
			contracts.Decision{Decision: "Xero", Key: key}, true},
		{"another key", contracts.Decision{Decision: "QuickBooks", Key: "ideation/selection.selected_idea"}, accounting, false},
		{"no key", contracts.Decision{Decision: "QuickBooks"}, accounting, false},
		{"the carried decision has no key", contracts.Decision{Decision: "QuickBooks", Key: key},
			contracts.Decision{Decision: "Xero", Options: accounting.Options}, false},
		{"an option named with more words", contracts.Decision{Decision: "custom build", Key: key},
			contracts.Decision{Decision: "off-the-shelf tool", Key: key,
				Options: []string{"an off-the-shelf tool like Mindbody", "a no-code platform", "a custom build"}}, true},
		{"a choice naming an option", contracts.Decision{Decision: "QuickBooks Online", Key: key}, accounting, true},
		{"a word of an option is none", contracts.Decision{Decision: "Quick", Key: key}, accounting, false},
		{"another language, by its symbols", contracts.Decision{Decision: "C++", Key: key, Options: []string{"C++", "Rust"}},
			contracts.Decision{Decision: "C#", Key: key, Options: []string{"C#", "Java", "Go"}}, false},
	} {
		if got := replaces(tt.own, tt.carried); got != tt.wantReplaced {
			t.Errorf("%s: %q carried beside %q: replaced = %v, want %v", tt.name, tt.carried.Decision, tt.own.Decision,
				got, tt.wantReplaced)
		}
	}
}

// An option ruled out in one exploration session and chosen in a later one
// is no longer carried as eliminated: the handoff after the second session
// says the user chose the custom build, not also that it was ruled out,
// though the user ruled out "a custom build" and chose "custom build" (the
// decision's pattern drops the article, the list's keeps it: both used to
// be carried).
func TestMapChainDoesNotEliminateTheChosenOption(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	hop := newChain(t).hop

	first := enginetest.Memory(exploration)
	enginetest.Set(first, "decision.decision_made", "Jobber", 0.85, 4)
	enginetest.Set(first, "decision.reasoning", "It has a mobile app the crews can use today", 0.85, 4)
	enginetest.Set(first, "solution_landscape.eliminated_options", []string{"A custom build", "Connecteam"}, 0.85, 3)
	h := hop(exploration, first, "project-discovery")

	second := enginetest.Memory(discovery)
	second.InboundHandoff, _ = json.Marshal(h)
	enginetest.Set(second, "constraints.budget", "$90k", 0.9, 5)
	h = hop(discovery, second, "exploration")

	third := enginetest.Memory(exploration)
	third.InboundHandoff, _ = json.Marshal(h)
	enginetest.Set(third, "decision.decision_made", "custom build", 0.85, 4)
	enginetest.Set(third, "decision.reasoning", "It gives us full control over offline sync", 0.85, 4)
	h = hop(exploration, third, "project-discovery")

	eliminated := eliminatedOf(h)
	if !slices.Equal(eliminated, []string{"Connecteam"}) {
		t.Errorf("options eliminated = %q, want [Connecteam]", eliminated)
	}
}

// A carried decision gives way to one of the source session's own on the
// same key only when they answer the same question, and when both say what
// they were asked their questions tell, whatever the options: more than
// half of the shorter question's words (but for function words and those
// of any exploration, plurals aside) are the other's, and each asks about a
// thing the other names (its subject: "which database", "needs hosting").
// Options do not tell questions apart, every exploration weighing the same
// kinds of option. (A payments decision for a custom build used to replace
// the booking decision for an off-the-shelf tool, "custom build" being
// among the booking options; Square Appointments replaced Square; a
// decision without options gave way to any other; the same question asked
// again among new tools kept both answers; and hosting for the mobile app
// replaced a database for it, the project's own words being in both.)
func TestCarryForwardTellsQuestionsApartByWhatWasAsked(t *testing.T) {
	const key = "exploration/decision.decision_made"
	const booking = "I want to figure out the best way to build a booking system for my yoga studio"
	const payments = "I want to figure out how to take card payments for my yoga studio"
	for _, tt := range []struct {
		name         string
		own, carried contracts.Decision
		wantReplaced bool
	}{
		{"the same kinds of option for another question",
			contracts.Decision{Decision: "custom build", Key: key, Question: payments,
				Options: []string{"Stripe", "Square", "a custom build to take card payments"}},
			contracts.Decision{Decision: "off-the-shelf tool", Key: key, Question: booking,
				Options: []string{"an off-the-shelf tool like Mindbody", "a no-code platform", "a custom build"}}, false},
		{"a choice naming an option of another question",
			contracts.Decision{Decision: "Square Appointments", Key: key, Question: "Which booking tool should we use for classes?",
				Options: []string{"Mindbody", "Square Appointments", "Acuity"}},
			contracts.Decision{Decision: "Square", Key: key, Question: "How should customers pay for their classes?",
				Options: []string{"Stripe", "Square"}}, false},
		{"a carried decision without options, another question",
			contracts.Decision{Decision: "Stripe", Key: key, Question: payments},
			contracts.Decision{Decision: "off-the-shelf tool", Key: key, Question: booking}, false},
		{"the same question among new options",
			contracts.Decision{Decision: "Wave", Key: key, Question: "We need an accounting tool for invoicing",
				Options: []string{"Wave", "FreshBooks"}},
			contracts.Decision{Decision: "Xero", Key: key, Question: "Which accounting tool should we use for invoicing?",
				Options: []string{"Xero", "QuickBooks"}}, true},
		{"the same question in other words",
			contracts.Decision{Decision: "a custom build", Key: key, Question: "Which booking system should we use for classes?",
				Options: []string{"a custom build", "a no-code platform"}},
			contracts.Decision{Decision: "Mindbody", Key: key, Question: "We need a booking tool for our classes",
				Options: []string{"Mindbody", "Acuity"}}, true},
		{"the same question, another key",
			contracts.Decision{Decision: "Mindbody", Key: "ideation/selection.selected_idea", Question: booking},
			contracts.Decision{Decision: "custom build", Key: key, Question: booking}, false},
		{"the carried decision says no question: its options tell",
			contracts.Decision{Decision: "QuickBooks", Key: key, Question: payments},
			contracts.Decision{Decision: "Xero", Key: key, Options: []string{"Xero", "QuickBooks"}}, true},
		{"the own decision says no question: the options tell",
			contracts.Decision{Decision: "Stripe", Key: key, Options: []string{"Stripe", "Square"}},
			contracts.Decision{Decision: "Xero", Key: key, Question: booking, Options: []string{"Xero", "QuickBooks"}}, false},
		{"a question of exploration words alone says nothing: the options tell",
			contracts.Decision{Decision: "QuickBooks", Key: key, Question: "What are the best options?"},
			contracts.Decision{Decision: "Xero", Key: key, Question: booking, Options: []string{"Xero", "QuickBooks"}}, true},
		{"the project's words, another thing asked",
			contracts.Decision{Decision: "Fly.io", Key: key, Question: "Which hosting should we use for the mobile app?"},
			contracts.Decision{Decision: "PostgreSQL", Key: key, Question: "Which database should we use for the mobile app?"}, false},
		{"the project's words first, another thing asked",
			contracts.Decision{Decision: "Fly.io", Key: key, Question: "For the mobile app, which hosting should we use?"},
			contracts.Decision{Decision: "PostgreSQL", Key: key, Question: "Which database should we use for the mobile app?"}, false},
		{"the project's words first in a statement, another thing asked",
			contracts.Decision{Decision: "Fly.io", Key: key, Question: "Our mobile app needs hosting"},
			contracts.Decision{Decision: "PostgreSQL", Key: key, Question: "Our mobile app needs a database"}, false},
		{"the same thing asked about the project in other words",
			contracts.Decision{Decision: "SQLite", Key: key, Question: "Which database should the mobile app use?"},
			contracts.Decision{Decision: "PostgreSQL", Key: key, Question: "What database should we pick for the app?"}, true},
		{"the same thing asked in another form of its word",
			contracts.Decision{Decision: "Render", Key: key, Question: "Where should we host the mobile app?"},
			contracts.Decision{Decision: "Fly.io", Key: key, Question: "Which hosting should we use for the mobile app?"}, true},
		{"a tool of the project's for another purpose",
			contracts.Decision{Decision: "Stripe", Key: key, Question: "Which tool should the yoga studio use for payments?"},
			contracts.Decision{Decision: "Mindbody", Key: key, Question: "Which tool should the yoga studio use for bookings?"}, false},
		{"a platform of the project's for another purpose",
			contracts.Decision{Decision: "Mailchimp", Key: key, Question: "Which platform should Björk Bakery use for its newsletter?"},
			contracts.Decision{Decision: "Shopify", Key: key, Question: "Which platform should Björk Bakery use for online orders?"}, false},
		{"a tool of the project's for the same purpose in other words",
			contracts.Decision{Decision: "Acuity", Key: key, Question: "What booking tool should the yoga studio pick?"},
			contracts.Decision{Decision: "Mindbody", Key: key, Question: "Which tool should the yoga studio use for bookings?"}, true},
		{"the same thing asked with a word of judgement",
			contracts.Decision{Decision: "SQLite", Key: key, Question: "What's the right database for the mobile app?"},
			contracts.Decision{Decision: "PostgreSQL", Key: key, Question: "Which database should we use for the mobile app?"}, true},
		{"the same thing asked with another word of judgement",
			contracts.Decision{Decision: "Render", Key: key, Question: "What would be a good host for the mobile app?"},
			contracts.Decision{Decision: "Fly.io", Key: key, Question: "Which hosting should we use for the mobile app?"}, true},
		{"the same thing asked, the project's words first",
			contracts.Decision{Decision: "SQLite", Key: key, Question: "For the mobile app, which database should we use?"},
			contracts.Decision{Decision: "PostgreSQL", Key: key, Question: "Which database should we use for the mobile app?"}, true},
	} {
		if got := replaces(tt.own, tt.carried); got != tt.wantReplaced {
			t.Errorf("%s: %q carried beside %q: replaced = %v, want %v", tt.name, tt.carried.Decision, tt.own.Decision,
				got, tt.wantReplaced)
		}
	}
}

// Along exploration → project-discovery → exploration, the two exploration
// sessions of one mobile app ask which database and which hosting to use
// for it: the second handoff carries both decisions, each with its
// question. (The questions sharing "mobile app", the hosting decision used
// to replace the database one.)
func TestMapChainKeepsTheDecisionsOfOneProjectsQuestions(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	hop := newChain(t).hop

	first := enginetest.Memory(exploration)
	enginetest.Set(first, "initial_state.problem_statement", "Which database should we use for the mobile app?", 0.9, 1)
	enginetest.Set(first, "decision.decision_made", "PostgreSQL", 0.85, 4)
	enginetest.Set(first, "decision.reasoning", "The team knows it and it scales with the app", 0.85, 4)
	hop(exploration, first, "project-discovery")

	second := enginetest.Memory(discovery)
	enginetest.Set(second, "constraints.budget", "$9k", 0.9, 5)
	hop(discovery, second, "exploration")

	third := enginetest.Memory(exploration)
	enginetest.Set(third, "initial_state.problem_statement", "Which hosting should we use for the mobile app?", 0.9, 1)
	enginetest.Set(third, "decision.decision_made", "Fly.io", 0.85, 4)
	enginetest.Set(third, "decision.reasoning", "It runs close to the users and costs little", 0.85, 4)
	h := hop(exploration, third, "project-discovery")

	if got, want := decisionsOf(h), []string{"Fly.io", "PostgreSQL"}; !slices.Equal(got, want) {
		t.Errorf("decisions = %q, want %q", got, want)
	}
	summary := handoff.Format(h, "Project Discovery")
	for _, q := range []string{"Which database should we use for the mobile app?", "Which hosting should we use for the mobile app?"} {
		if !strings.Contains(summary, "  Question: "+q) {
			t.Errorf("the summary does not say the decision on %q:\n%s", q, summary)
		}
	}
}

// One choice made for two questions is two decisions: PostgreSQL chosen for
// the app's database, then for analytics, is carried beside the earlier
// one, and the summary says both questions. The same choice for the same
// question, or where either says no question, is listed once. (The second
// used to drop the first, their text being the same: the summary said
// PostgreSQL was chosen for analytics alone.)
func TestCarryForwardKeepsOneChoiceForTwoQuestions(t *testing.T) {
	const key = "exploration/decision.decision_made"
	const app = "Which database should we use for the app?"
	for _, tt := range []struct {
		name                 string
		ownKey, own, carried string
		wantDecisions        int
	}{
		{"another question", key, "Which database should we use for analytics?", app, 2},
		{"another question, another key", "ideation/selection.selected_idea", "Which database should we use for analytics?", app, 2},
		{"the same question, another key", "ideation/selection.selected_idea", "What database should the app use?", app, 1},
		{"the carried decision says no question", "ideation/selection.selected_idea", "Which database should we use for analytics?", "", 1},
		{"the own decision says no question", "ideation/selection.selected_idea", "", app, 1},
	} {
		h := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
			{Decision: "PostgreSQL", Key: tt.ownKey, Question: tt.own, Confidence: 0.9, Reasoning: "It runs the reports we need"}}}}
		inbound := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
			{Decision: "postgreSQL", Key: key, Question: tt.carried, Confidence: 0.8, Reasoning: "The team knows it well"}}}}
		handoff.CarryForward(&h, inbound)
		if got := len(h.ActionList.DecisionsReached); got != tt.wantDecisions {
			t.Errorf("%s: decisions = %+v, want %d", tt.name, h.ActionList.DecisionsReached, tt.wantDecisions)
			continue
		}
		if tt.wantDecisions == 2 {
			summary := handoff.Format(h, "Project Discovery")
			if n := strings.Count(summary, "✓ Chose"); n != 2 || !strings.Contains(summary, "  Question: "+tt.own) ||
				!strings.Contains(summary, "  Question: "+tt.carried) {
				t.Errorf("%s: the summary does not say both decisions with their questions:\n%s", tt.name, summary)
			}
		}
	}
}

// An option ruled out for one question stays ruled out when a later
// session chooses it for another: a custom build ruled out for the booking
// system, chosen to take payments. Chosen for the same question, or when
// either says no question, it is no longer carried as ruled out. (It used
// to be dropped whatever the question.)
func TestCarryForwardKeepsAnOptionRuledOutForAnotherQuestion(t *testing.T) {
	const booking = "Which booking system should we use for classes?"
	for _, tt := range []struct {
		name                   string
		chosenFor, ruledOutFor string
		wantKept               bool
	}{
		{"another question", "How do we take card payments?", booking, true},
		{"the same question", "We need a booking tool for our classes", booking, false},
		{"ruled out for no question", "How do we take card payments?", "", false},
		{"chosen for no question", "", booking, false},
	} {
		h := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
			{Decision: "custom build", Key: "exploration/decision.decision_made", Question: tt.chosenFor}}}}
		inbound := contracts.EngineHandoff{ActionList: contracts.ActionList{OptionsEliminated: []contracts.EliminatedOption{
			{Option: "A custom build", Question: tt.ruledOutFor}}}}
		handoff.CarryForward(&h, inbound)
		if got := len(h.ActionList.OptionsEliminated) == 1; got != tt.wantKept {
			t.Errorf("%s: options eliminated = %+v, want kept = %v", tt.name, h.ActionList.OptionsEliminated, tt.wantKept)
		}
	}
}

// Along exploration → project-discovery → exploration, an option the first
// exploration session ruled out for the booking system is still ruled out
// after the second chose it to take payments: each handoff records the
// question its options were ruled out for.
func TestMapChainKeepsAnOptionRuledOutForAnotherQuestion(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	hop := newChain(t).hop

	first := enginetest.Memory(exploration)
	enginetest.Set(first, "initial_state.problem_statement", "Which booking system should we use for our classes", 0.9, 1)
	enginetest.Set(first, "decision.decision_made", "Mindbody", 0.85, 4)
	enginetest.Set(first, "decision.reasoning", "It runs class schedules and memberships today", 0.85, 4)
	enginetest.Set(first, "solution_landscape.eliminated_options", []string{"A custom build"}, 0.85, 3)
	h := hop(exploration, first, "project-discovery")

	second := enginetest.Memory(discovery)
	enginetest.Set(second, "constraints.budget", "$9k", 0.9, 5)
	h = hop(discovery, second, "exploration")

	third := enginetest.Memory(exploration)
	enginetest.Set(third, "initial_state.problem_statement", "How should we take card payments online", 0.9, 1)
	enginetest.Set(third, "decision.decision_made", "custom build", 0.85, 4)
	enginetest.Set(third, "decision.reasoning", "It gives us full control over the payment flow", 0.85, 4)
	h = hop(exploration, third, "project-discovery")

	eliminated, decisions := eliminatedOf(h), decisionsOf(h)
	if !slices.Equal(eliminated, []string{"A custom build"}) || !slices.Equal(decisions, []string{"custom build", "Mindbody"}) {
		t.Errorf("options eliminated = %q, decisions = %q; want [A custom build] and [custom build Mindbody]", eliminated, decisions)
	}
}

// An option ruled out earlier stays ruled out when a later session chooses
// another whose name differs from it only by symbols: C++ ruled out for
// the firmware, C# chosen for the back office. (Words ignore punctuation,
// and "C++" and "C#" used to be the same word, "c": C++ was dropped.)
func TestCarryForwardTellsOptionsApartByTheirSymbols(t *testing.T) {
	h := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
		{Decision: "C#", Key: "exploration/decision.decision_made"}}}}
	inbound := contracts.EngineHandoff{ActionList: contracts.ActionList{OptionsEliminated: []contracts.EliminatedOption{
		{Option: "C++"}, {Option: "a C#"}}}}
	handoff.CarryForward(&h, inbound)
	eliminated := eliminatedOf(h)
	if !slices.Equal(eliminated, []string{"C++"}) {
		t.Errorf("options eliminated = %q, want [C++]", eliminated)
	}
}

// An option the source session rules out, which an earlier session ruled
// out too, is listed once, though one of them names it with an article:
// "custom build", not also "A custom build". (Both used to be carried.)
func TestCarryForwardListsAnEliminatedOptionOnce(t *testing.T) {
	h := contracts.EngineHandoff{ActionList: contracts.ActionList{OptionsEliminated: []contracts.EliminatedOption{
		{Option: "custom build", Reasons: []string{"too slow to build"}}}}}
	inbound := contracts.EngineHandoff{ActionList: contracts.ActionList{OptionsEliminated: []contracts.EliminatedOption{
		{Option: "A custom build"}, {Option: "Connecteam"}}}}
	handoff.CarryForward(&h, inbound)
	eliminated := eliminatedOf(h)
	if !slices.Equal(eliminated, []string{"custom build", "Connecteam"}) {
		t.Errorf("options eliminated = %q, want [custom build Connecteam]", eliminated)
	}
}

// Along exploration → project-discovery → exploration → project-discovery
// → exploration, a custom build is ruled out for the booking system, then
// to take payments, then chosen to take payments: each handoff says it was
// ruled out for the booking system, and the second for payments too.
// (The second handoff used to list it once, ruled out to take payments, the
// two having the same name; the third then had it ruled out for nothing.)
func TestMapChainKeepsAnOptionRuledOutForTwoQuestions(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	c := newChain(t)
	const booking, payments = "Which booking system should we use for our classes", "How should we take card payments online"
	hops := []struct {
		problem, chose string
		ruledOut       []string
		want           []contracts.EliminatedOption
	}{
		{booking, "Mindbody", []string{"A custom build"},
			[]contracts.EliminatedOption{{Option: "A custom build", Reasons: []string{}, Question: booking}}},
		{payments, "Stripe", []string{"custom build"}, []contracts.EliminatedOption{
			{Option: "custom build", Reasons: []string{}, Question: payments},
			{Option: "A custom build", Reasons: []string{}, Question: booking}}},
		{payments, "a custom build", nil,
			[]contracts.EliminatedOption{{Option: "A custom build", Reasons: []string{}, Question: booking}}},
	}
	for i, hp := range hops {
		m := enginetest.Memory(exploration)
		m.SessionID = fmt.Sprintf("exploration-%d", i)
		enginetest.Set(m, "initial_state.problem_statement", hp.problem, 0.9, 1)
		enginetest.Set(m, "decision.decision_made", hp.chose, 0.85, 4)
		enginetest.Set(m, "decision.reasoning", "It fits the way the studio works today", 0.85, 4)
		if hp.ruledOut != nil {
			enginetest.Set(m, "solution_landscape.eliminated_options", hp.ruledOut, 0.85, 3)
		}
		h := c.hop(exploration, m, "project-discovery")
		if got := h.ActionList.OptionsEliminated; !reflect.DeepEqual(got, hp.want) {
			t.Errorf("handoff %d: options eliminated = %+v, want %+v", 2*i+1, got, hp.want)
		}

		m = enginetest.Memory(discovery)
		m.SessionID = fmt.Sprintf("discovery-%d", i)
		enginetest.Set(m, "constraints.budget", "$9k", 0.9, 5)
		c.hop(discovery, m, "exploration")
	}
}

// Along exploration → project-discovery → exploration → project-discovery
// → exploration, a budget the second exploration session names replaces
// the one the first named, though exploration's constraints are free text
// with no label: one that names money is the budget, one that names a span
// of time the timeline. A constraint with no such topic is carried by its
// text. (Both budgets used to be carried into the third handoff and on.)
func TestMapChainKeepsTheLatestBudget(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	c := newChain(t)
	hop := func(def *engine.Definition, m *engine.WorkingMemory, target string) []string {
		t.Helper()
		var out []string
		for _, k := range c.hop(def, m, target).ActionList.ConstraintsIdentified {
			out = append(out, k.Constraint)
		}
		return out
	}
	explore := func(i int, constraints ...string) *engine.WorkingMemory {
		m := enginetest.Memory(exploration)
		m.SessionID = fmt.Sprintf("exploration-%d", i)
		enginetest.Set(m, "decision.decision_made", "Jobber", 0.85, 4)
		enginetest.Set(m, "decision.reasoning", "It fits the crews and the budget we have", 0.85, 4)
		enginetest.Set(m, "decision.constraints", constraints, 0.85, 3)
		return m
	}
	discover := func(i int) *engine.WorkingMemory {
		m := enginetest.Memory(discovery)
		m.SessionID = fmt.Sprintf("discovery-%d", i)
		enginetest.Set(m, "constraints.technical", "Android tablets", 0.9, 5)
		return m
	}

	hop(exploration, explore(1, "about 300 dollars a month", "live within two months", "no vendor lock-in"), "project-discovery")
	hop(discovery, discover(1), "exploration")
	want := []string{"about 500 dollars a month", "ready in six weeks", "Technical: Android tablets", "no vendor lock-in"}
	if got := hop(exploration, explore(2, "about 500 dollars a month", "ready in six weeks"), "project-discovery"); !slices.Equal(got, want) {
		t.Errorf("third handoff: constraints = %q, want %q", got, want)
	}
	want = []string{"Technical: Android tablets", "about 500 dollars a month", "ready in six weeks", "no vendor lock-in"}
	if got := hop(discovery, discover(2), "exploration"); !slices.Equal(got, want) {
		t.Errorf("fourth handoff: constraints = %q, want %q", got, want)
	}
}

// A carried constraint gives way to one of the source session's own on the
// same topic: its label, or for free text Budget (an amount of money) or
// Timeline (a span of time, counted); free text of neither topic (a
// concern about fees, "offline for days") is carried by its text, and so
// is a constraint whose label is that of a list field (an integration, a
// regulation), each value of which is one item among others.
func TestCarryForwardReplacesAConstraintOnTheSameTopic(t *testing.T) {
	for _, tt := range []struct {
		own, carried string
		replaced     bool
	}{
		{"about 500 dollars a month", "about 300 dollars a month", true},
		{"budget is limited to $5,000", "Budget: $90k", true},
		{"Budget: $120k", "we can spend 80k", true},
		{"Timeline: within 6 months", "we must be live within two months", true},
		{"ready in six weeks", "Timeline: by March", true},
		{"about 300 dollars a month", "live within two months", false}, // money, though "a month"
		{"no vendor lock-in", "must run on Android tablets", false},
		{"must run on Android tablets", "Budget: $90k", false},
		{"Technical: Azure", "Integration: QuickBooks", false},
		{"Team: two developers", "Team: an agency", true},
		{"Funding: bootstrapped", "Funding: a seed round", true},
		{"Integration: Xero", "Integration: QuickBooks", false}, // a list: one more integration
		{"Regulation: GDPR", "Regulation: HIPAA", false},
		{"avoid per-user monthly fees", "Budget: $90k", false}, // money, but no amount
		{"must keep working offline for days", "Timeline: within 6 months", false},
		{"40 technicians in the first month", "Timeline: within 6 months", false}, // the number counts technicians
		{"fees under 50 a month", "Budget: $90k", true},
		{"launch in a 6-month window", "Timeline: by March", true},
		// How long something lasts, or how much of something a span holds,
		// is no deadline; the price of one item is no budget.
		{"crews must work offline for two weeks at a time", "Timeline: within 6 months", false},
		{"Timeline: within 6 months", "keep 3 years of job history", false},
		{"reports must cover 12 months of data", "Timeline: by March", false},
		{"live within 3 months of signing", "Timeline: by March", true},
		{"each tablet must cost under $300", "Budget: $90k", false},
		{"Budget: $120k", "hardware costs about 40 dollars per device", false},
		{"no more than $10 per user per month", "Budget: $90k", false},
		{"about 500 dollars per month", "Budget: $90k", true},
		{"we can spend $2,000 each quarter", "Budget: $90k", true},
	} {
		h := contracts.EngineHandoff{ActionList: contracts.ActionList{
			ConstraintsIdentified: []contracts.IdentifiedConstraint{{Constraint: tt.own}}}}
		inbound := contracts.EngineHandoff{ActionList: contracts.ActionList{
			ConstraintsIdentified: []contracts.IdentifiedConstraint{{Constraint: tt.carried}}}}
		handoff.CarryForward(&h, inbound)
		if got := len(h.ActionList.ConstraintsIdentified) == 1; got != tt.replaced {
			t.Errorf("%q beside %q: replaced = %v, want %v", tt.carried, tt.own, got, tt.replaced)
		}
	}
}

// A constraint carried along a chain does not keep the implication written
// for the engine it was handed to before: project discovery's budget,
// handed to exploration as "Only options within it are worth exploring",
// reaches the next discovery session as the budget alone, not as options
// to explore.
func TestMapChainDropsTheImplicationForAnotherEngine(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	mappers := handoff.Builtin()

	first := enginetest.Memory(discovery)
	enginetest.Set(first, "constraints.budget", "$90k", 0.9, 5)
	h, err := mappers.Map(handoff.Input{Source: discovery, Memory: first, TargetEngineID: "exploration",
		Reason: "The user asked to go on there", Now: at})
	if err != nil {
		t.Fatal(err)
	}
	forExploration := h.ActionList.ConstraintsIdentified[0].Implication

	second := enginetest.Memory(exploration)
	second.InboundHandoff, _ = json.Marshal(h)
	enginetest.Set(second, "decision.decision_made", "custom build", 0.85, 4)
	enginetest.Set(second, "decision.reasoning", "It gives us full control over offline sync", 0.85, 4)
	enginetest.Set(second, "decision.constraints", []string{"no vendor lock-in"}, 0.85, 3)
	if h, err = mappers.Map(handoff.Input{Source: exploration, Memory: second, TargetEngineID: "project-discovery",
		Reason: "The user asked to go on there", Now: at}); err != nil {
		t.Fatal(err)
	}
	want := []contracts.IdentifiedConstraint{
		{Constraint: "no vendor lock-in", Implication: "The requirements must fit within it"},
		{Constraint: "Budget: $90k"},
	}
	if got := h.ActionList.ConstraintsIdentified; !slices.Equal(got, want) {
		t.Errorf("constraints = %+v, want %+v", got, want)
	}
	if text := handoff.Format(h, "Project Discovery"); strings.Contains(text, forExploration) {
		t.Errorf("the summary for project discovery says %q:\n%s", forExploration, text)
	}
}

// Along project-discovery → exploration → project-discovery → exploration,
// the integrations the second discovery session names are added to those
// the first named, each value of the list field being one integration, and
// the budget named again replaces the one carried. (The second session's
// one integration used to drop the two carried.)
func TestMapChainAddsToTheCarriedIntegrations(t *testing.T) {
	cat := enginetest.Shipped(t)
	discovery, _ := cat.Get("project-discovery")
	exploration, _ := cat.Get("exploration")
	c := newChain(t)
	hop := func(def *engine.Definition, m *engine.WorkingMemory, target string) []string {
		t.Helper()
		var out []string
		for _, k := range c.hop(def, m, target).ActionList.ConstraintsIdentified {
			out = append(out, k.Constraint)
		}
		return out
	}

	first := enginetest.Memory(discovery)
	first.SessionID = "discovery-1"
	enginetest.Set(first, "constraints.budget", "$90k", 0.9, 5)
	enginetest.Set(first, "constraints.integrations", []string{"our scheduling system", "QuickBooks"}, 0.9, 6)
	hop(discovery, first, "exploration")

	second := enginetest.Memory(exploration)
	second.SessionID = "exploration-1"
	enginetest.Set(second, "decision.decision_made", "custom build", 0.85, 4)
	enginetest.Set(second, "decision.reasoning", "It gives us full control over offline sync", 0.85, 4)
	hop(exploration, second, "project-discovery")

	third := enginetest.Memory(discovery)
	third.SessionID = "discovery-2"
	enginetest.Set(third, "constraints.budget", "$120k", 0.9, 3)
	enginetest.Set(third, "constraints.integrations", []string{"Xero"}, 0.9, 4)
	want := []string{"Budget: $120k", "Integration: Xero", "Integration: our scheduling system", "Integration: QuickBooks"}
	if got := hop(discovery, third, "exploration"); !slices.Equal(got, want) {
		t.Errorf("constraints = %q, want %q", got, want)
	}
}

// A label is a list's (its values added to those carried) exactly when the
// builtin mappers take it from an array field of the source engine: the
// integrations and regulations are lists, the budget, timeline, technical
// platform, team and funding single values.
func TestListLabelsAreThoseOfArrayFields(t *testing.T) {
	cat := enginetest.Shipped(t)
	for name, f := range handoff.BuiltinFields() {
		source, _, _ := strings.Cut(name, "->")
		def, ok := cat.Get(source)
		if !ok {
			t.Fatalf("%s: engine %s not shipped", name, source)
		}
		for _, c := range f.Constraints {
			if c.Label == "" {
				continue
			}
			fd, ok := def.Field(c.Path)
			if !ok {
				t.Errorf("%s: %s has no field %s", name, source, c.Path)
				continue
			}
			if got, want := handoff.IsListLabel(c.Label), fd.ValueType == engine.TypeArray; got != want {
				t.Errorf("%s: label %s of %s (%s) is a list's: %t, want %t", name, c.Label, c.Path, fd.ValueType, got, want)
			}
		}
	}
}

// chain maps handoffs with the shipped mappers as a chain of engines does:
// each session after the first starts from the handoff before it.
type chain struct {
	t       *testing.T
	mappers *handoff.Mappers
	last    contracts.EngineHandoff
}

func newChain(t *testing.T) *chain { return &chain{t: t, mappers: handoff.Builtin()} }

// hop maps the session of def with memory m to target, m starting from the
// chain's last handoff if there is one.
func (c *chain) hop(def *engine.Definition, m *engine.WorkingMemory, target string) contracts.EngineHandoff {
	c.t.Helper()
	if c.last.Metadata.SessionID != "" {
		m.InboundHandoff, _ = json.Marshal(c.last)
	}
	h, err := c.mappers.Map(handoff.Input{Source: def, Memory: m, TargetEngineID: target,
		Reason: "The user asked to go on there", Now: at})
	if err != nil {
		c.t.Fatal(err)
	}
	c.last = h
	return h
}

// replaces reports whether a session's own decision replaces the carried
// one when CarryForward merges them.
func replaces(own, carried contracts.Decision) bool {
	h := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{own}}}
	inbound := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{carried}}}
	handoff.CarryForward(&h, inbound)
	return len(h.ActionList.DecisionsReached) == 1
}

// decisionsOf names the decisions a handoff carries, in order.
func decisionsOf(h contracts.EngineHandoff) []string {
	var out []string
	for _, d := range h.ActionList.DecisionsReached {
		out = append(out, d.Decision)
	}
	return out
}

// eliminatedOf names the options a handoff carries as ruled out, in order.
func eliminatedOf(h contracts.EngineHandoff) []string {
	var out []string
	for _, o := range h.ActionList.OptionsEliminated {
		out = append(out, o.Option)
	}
	return out
}

// ideationSession is the coffee roaster's ideation session of the golden
// chain (testdata/golden/chats/chain.txt in services/runner) at its
// handoff to exploration, under memory version version: the problem
// framed, its impact and root cause, the constraints, and two ideas
// shortlisted, neither chosen.
func ideationSession(t *testing.T, version int) (*engine.Definition, *engine.WorkingMemory) {
	t.Helper()
	def, ok := enginetest.Shipped(t).Get("ideation")
	if !ok {
		t.Fatal("ideation is not shipped")
	}
	m := enginetest.Memory(def)
	m.SchemaVersion, m.TurnNumber = version, 14
	enginetest.Set(m, "problem_space.problem_statement",
		"coffee subscribers cancel after about three months, and I need ideas to keep them longer", 0.85, 1)
	enginetest.Set(m, "problem_space.root_causes", []string{"they get bored of the same coffee"}, 0.75, 2)
	enginetest.Set(m, "problem_space.impact", "$4,000 a month in lost revenue", 0.85, 3)
	enginetest.Set(m, "problem_space.constraints", []string{"budget of $5k", "two people to work on it"}, 0.85, 4)
	enginetest.Set(m, "idea_generation.ideas", []string{"a pause button in place of cancelling",
		"a rotating origin of the month", "brewing guides with every bag"}, 0.75, 7)
	enginetest.Set(m, "evaluation.shortlist", []string{"the pause button", "the origin of the month"}, 0.75, 13)
	return def, m
}

// Ideation hands exploration the problem it framed and the ideas the user
// shortlisted to explore. Under memory version 3 the shortlist is what the
// exploration session is there to find out about (knowledge gaps, which a
// later handoff does not carry on), and the root causes are the problem's
// pain points: they used to be mapped as knowledge gaps, so that a known
// cause read as an open question ("Still open: they get bored of the same
// coffee"), and the shortlist was not handed over at all. A session of an
// earlier version hands off as it did, for its replay to rebuild the
// handoff its target started with.
func TestIdeationHandsExplorationTheShortlist(t *testing.T) {
	const problem = "coffee subscribers cancel after about three months, and I need ideas to keep them longer"
	tests := []struct {
		version           int
		gaps, pains       []string
		inFormat, notInIt []string
	}{
		{version: 2,
			gaps:     []string{"they get bored of the same coffee"},
			pains:    []string{problem, "$4,000 a month in lost revenue"},
			inFormat: []string{"─── KNOWLEDGE GAPS ───\n• they get bored of the same coffee\n"},
			notInIt:  []string{"• " + handoff.ShortlistPrefix, "• " + handoff.ProblemPrefix, "• " + handoff.CausePrefix}},
		{version: 3,
			gaps: []string{handoff.ShortlistPrefix + "the pause button", handoff.ShortlistPrefix + "the origin of the month"},
			pains: []string{handoff.ProblemPrefix + problem, "$4,000 a month in lost revenue",
				handoff.CausePrefix + "they get bored of the same coffee"},
			inFormat: []string{
				"─── KNOWLEDGE GAPS ───\n• Shortlisted idea to explore: the pause button\n• Shortlisted idea to explore: the origin of the month\n",
				"─── PAIN POINTS ───\n• Problem: " + problem + "\n• $4,000 a month in lost revenue\n• Root cause: they get bored of the same coffee\n"},
			notInIt: []string{"• they get bored"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("version ", tt.version), func(t *testing.T) {
			def, m := ideationSession(t, tt.version)
			h, err := handoff.Builtin().Map(handoff.Input{Source: def, Memory: m, TargetEngineID: "exploration",
				Reason: "The user wants to learn about the solution options for the framed problem before committing to an idea", Now: at})
			if err != nil {
				t.Fatal(err)
			}
			if r := handoff.Validate(h); !r.Valid {
				t.Fatalf("invalid: %v", r.Errors)
			}
			sa := h.SituationAwareness
			if !slices.Equal(sa.KnowledgeGapsRevealed, tt.gaps) {
				t.Errorf("knowledge gaps = %q, want %q", sa.KnowledgeGapsRevealed, tt.gaps)
			}
			if !slices.Equal(sa.KeyPainPoints, tt.pains) {
				t.Errorf("pain points = %q, want %q", sa.KeyPainPoints, tt.pains)
			}
			if got := h.ActionList.DecisionsReached; len(got) != 0 {
				t.Errorf("decisions = %+v, want none: no idea was chosen", got)
			}
			text := handoff.Format(h, "Solution Exploration")
			for _, want := range tt.inFormat {
				if !strings.Contains(text, want) {
					t.Errorf("the summary has no\n%s\nin\n%s", want, text)
				}
			}
			for _, not := range tt.notInIt {
				if strings.Contains(text, not) {
					t.Errorf("the summary says %q:\n%s", not, text)
				}
			}
		})
	}
}

// The words the mapper frames an element with ("Shortlisted idea to
// explore: ", "Still open: ", "Background research did not complete: ")
// are no part of what the receiver must acknowledge: a reply that says
// them back names none of the elements.
func TestVerifyLooksPastAnElementsFraming(t *testing.T) {
	receiver := handoff.Receiver{EngineID: "exploration", ProjectID: "proj_xyz789"}
	h := makeHandoff(func(h *contracts.EngineHandoff) {
		h.Metadata.SourceEngineID, h.Metadata.TargetEngineID = "ideation", "exploration"
		h.ActionList.DecisionsReached, h.ActionList.ConstraintsIdentified = nil, nil
		h.SituationAwareness.KnowledgeGapsRevealed = []string{
			handoff.ShortlistPrefix + "the pause button", handoff.ShortlistPrefix + "the origin of the month",
			handoff.OpenPrefix + "Budget range", "Background research did not complete: market sizing"}
		h.RelationalState.Sensitivities = []string{handoff.NotYetPrefix + "Revenue figures"}
	})
	for _, tt := range []struct {
		reply    string
		verified bool
	}{
		{"You shortlisted some ideas to explore. Some things are still open, the background research did not " +
			"complete, and you preferred not to answer yet.", false},
		{"You shortlisted the pause button and the origin of the month. We still need a budget range and " +
			"market sizing; I won't press on revenue figures.", true},
	} {
		v := handoff.Verify(h, tt.reply, receiver)
		if v.Verified != tt.verified {
			t.Errorf("verified = %t, want %t for %q: %+v", v.Verified, tt.verified, tt.reply, v.Details.Elements)
		}
		for _, e := range v.Details.Elements {
			for _, k := range e.Keywords {
				if slices.Contains([]string{"shortlisted", "idea", "explore", "still", "open", "background",
					"research", "complete", "preferred", "answer"}, k) {
					t.Errorf("keyword %q of %q is the mapper's framing", k, e.Text)
				}
			}
		}
	}
}

// Project discovery hands exploration the core problem the user described.
// Under memory version 3 it is marked as the problem (ProblemPrefix), as
// ideation's is, so that exploration's first reply names it; a session of
// an earlier version hands it off as a pain point like the others, for its
// replay to rebuild the handoff its target started with.
func TestProjectDiscoveryHandsExplorationTheProblem(t *testing.T) {
	const problem = "Jobs get lost on paper"
	for _, tt := range []struct {
		version int
		pains   []string
	}{
		{version: 2, pains: []string{problem, "Double entry every evening"}},
		{version: 3, pains: []string{handoff.ProblemPrefix + problem, "Double entry every evening"}},
	} {
		t.Run(fmt.Sprint("version ", tt.version), func(t *testing.T) {
			def, ok := enginetest.Shipped(t).Get("project-discovery")
			if !ok {
				t.Fatal("project-discovery is not shipped")
			}
			m := enginetest.Memory(def)
			m.SchemaVersion, m.TurnNumber = tt.version, 20
			enginetest.Set(m, "purpose_and_problem.core_problem", problem, 0.9, 1)
			enginetest.Set(m, "users_and_personas.pain_points", []string{"Double entry every evening"}, 0.9, 5)
			h, err := handoff.Builtin().Map(handoff.Input{Source: def, Memory: m, TargetEngineID: "exploration",
				Reason: "Requirements are captured and the user wants to explore solution options", Now: at})
			if err != nil {
				t.Fatal(err)
			}
			if r := handoff.Validate(h); !r.Valid {
				t.Fatalf("invalid: %v", r.Errors)
			}
			if got := h.SituationAwareness.KeyPainPoints; !slices.Equal(got, tt.pains) {
				t.Errorf("pain points = %q, want %q", got, tt.pains)
			}
		})
	}
}

// An exploration session that took up the problem its inbound handoff
// carried (the user did not state it again, so initial_state.problem_statement
// is empty) hands project discovery its decision with that problem as its
// question under memory version 3, so that a later session of the chain can
// tell which question the decision answers; a session of an earlier version
// hands it off without a question, as it did.
func TestExplorationDecisionAnswersTheCarriedProblem(t *testing.T) {
	const problem = "coffee subscribers cancel after about three months"
	cat := enginetest.Shipped(t)
	exploration, _ := cat.Get("exploration")
	inbound := makeHandoff(func(h *contracts.EngineHandoff) {
		h.Metadata.SourceEngineID, h.Metadata.TargetEngineID = "ideation", "exploration"
		h.ActionList.DecisionsReached = []contracts.Decision{}
		h.SituationAwareness.KeyPainPoints = []string{"$4,000 a month in lost revenue", handoff.ProblemPrefix + problem}
	})
	for _, tt := range []struct {
		version  int
		question string
	}{
		{version: 2, question: ""},
		{version: 3, question: problem},
	} {
		t.Run(fmt.Sprint("version ", tt.version), func(t *testing.T) {
			m := enginetest.Memory(exploration)
			m.SchemaVersion, m.TurnNumber = tt.version, 10
			m.InboundHandoff, _ = json.Marshal(inbound)
			enginetest.Set(m, "decision.decision_made", "subscription app", 0.85, 10)
			enginetest.Set(m, "decision.reasoning", "It is cheap and fast to start", 0.85, 10)
			h, err := handoff.Builtin().Map(handoff.Input{Source: exploration, Memory: m, TargetEngineID: "project-discovery",
				Reason: "User reached decision and ready to define requirements", Now: at})
			if err != nil {
				t.Fatal(err)
			}
			d := h.ActionList.DecisionsReached
			if len(d) != 1 || d[0].Decision != "subscription app" {
				t.Fatalf("decisions = %+v, want the subscription app", d)
			}
			if d[0].Question != tt.question {
				t.Errorf("question = %q, want %q", d[0].Question, tt.question)
			}
		})
	}

	// The session's own problem, when the user stated one, is the question.
	m := enginetest.Memory(exploration)
	m.TurnNumber = 10
	m.InboundHandoff, _ = json.Marshal(inbound)
	enginetest.Set(m, "initial_state.problem_statement", "which subscription tool to use", 0.85, 1)
	enginetest.Set(m, "decision.decision_made", "subscription app", 0.85, 10)
	h, err := handoff.Builtin().Map(handoff.Input{Source: exploration, Memory: m, TargetEngineID: "project-discovery",
		Reason: "User reached decision and ready to define requirements", Now: at})
	if err != nil {
		t.Fatal(err)
	}
	if d := h.ActionList.DecisionsReached; len(d) != 1 || d[0].Question != "which subscription tool to use" {
		t.Errorf("decisions = %+v, want the session's own problem as the question", d)
	}
}

// A handoff names one problem, the source session's own: the problem an
// inbound handoff marked is carried as a pain point like the others once
// the source marks its own, and keeps its mark when the source has none.
func TestCarryForwardNamesTheNewestProblem(t *testing.T) {
	inbound := contracts.EngineHandoff{SituationAwareness: contracts.SituationAwareness{KeyPainPoints: []string{
		handoff.ProblemPrefix + "coffee subscribers cancel after three months", "$4,000 a month in lost revenue"}}}
	for _, tt := range []struct {
		own, want []string
	}{
		{own: []string{handoff.ProblemPrefix + "members can't book classes online"},
			want: []string{handoff.ProblemPrefix + "members can't book classes online",
				"coffee subscribers cancel after three months", "$4,000 a month in lost revenue"}},
		{own: []string{"jobs get lost on paper"},
			want: []string{"jobs get lost on paper", handoff.ProblemPrefix + "coffee subscribers cancel after three months",
				"$4,000 a month in lost revenue"}},
	} {
		h := contracts.EngineHandoff{SituationAwareness: contracts.SituationAwareness{KeyPainPoints: slices.Clone(tt.own)}}
		handoff.CarryForward(&h, inbound)
		if got := h.SituationAwareness.KeyPainPoints; !slices.Equal(got, tt.want) {
			t.Errorf("pain points = %q, want %q", got, tt.want)
		}
	}
	if p := inbound.SituationAwareness.KeyPainPoints[0]; !strings.HasPrefix(p, handoff.ProblemPrefix) {
		t.Errorf("CarryForward changed the inbound handoff: %q", p)
	}
}
