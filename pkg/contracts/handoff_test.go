package contracts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// sampleHandoff is the seed's Exploration → Project Discovery example.
func sampleHandoff() EngineHandoff {
	return EngineHandoff{
		Metadata: HandoffMetadata{SourceEngineID: "exploration", SourceEngineName: "Exploration Engine",
			TargetEngineID: "project-discovery", HandoffDate: at, SessionID: "s1", ProjectID: "p1", TurnCount: 15,
			CompletenessScore: 0.75, TransitionReason: "User reached decision and ready to define requirements"},
		PhaseResults: []PhaseResult{{PhaseName: "DELIBERATION", CompletionPercentage: 75,
			KeyOutputs: "Chose a custom web app over WordPress and no-code", RemainingGaps: []string{"hosting"}}},
		ActionList: ActionList{
			DecisionsReached: []Decision{{Decision: "Custom Web App", Confidence: 0.85,
				Reasoning: "Full control over the product, better long-term TCO at scale"}},
			OptionsEliminated: []EliminatedOption{{Option: "WordPress", Reasons: []string{"Not flexible enough", "vendor lock-in concerns"}}},
			ConstraintsIdentified: []IdentifiedConstraint{{Constraint: "Budget: $50k-$75k initial build",
				Implication: "Scope the first release to fit"}},
			AssumptionsCarriedForward: []CarriedAssumption{{Assumption: "Stripe covers payments", WarrantsReview: true}},
		},
		SituationAwareness: SituationAwareness{UserConfidenceLevel: LevelHigh,
			KnowledgeGapsRevealed: []string{"User unclear on hosting requirements"}, UserGoals: []string{"launch in 6 months"},
			KeyPainPoints: []string{"manual bookings"}},
		AccumulatedContext: AccumulatedContext{ConceptsTaught: []TaughtConcept{{Concept: "API Design", UnderstandingLevel: UnderstandingSolid}},
			PriorExperience: []string{"used Mindbody"}, TechnicalLevel: TechnicalIntermediate},
		RelationalState: RelationalState{TrustLevel: LevelHigh, Rapport: "Collaborative and engaged",
			OpenQuestions: []string{"who hosts it"}, Sensitivities: []string{"budget is tight"}},
	}
}

func init() {
	for name, p := range map[string]Payload{
		"handoff.created": HandoffCreated{TenantID: "acme", HandoffID: "h1", ProjectID: "p1",
			SourceEngineID: "exploration", SourceSessionID: "s1", TargetEngineID: "project-discovery",
			TargetSessionID: "s2", Payload: mustJSON(sampleHandoff())},
		"task.returned": TaskReturned{TenantID: "acme", SessionID: "s1", TaskID: "competitive_scan", Attempt: 2,
			Completed: true, Output: json.RawMessage(`{"summary":"three products","findings":[]}`), ReturnedAt: at},
		"task.merged": TaskMerged{TenantID: "acme", SessionID: "s1", TaskID: "competitive_scan", Attempt: 2,
			Status: TaskStatusCompleted, Sidebar: json.RawMessage(`{"sections":[]}`), StateHash: "9f2c"},
	} {
		samples[name] = p
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// created is the sample handoff.created with its payload edited.
func created(edit func(*EngineHandoff)) HandoffCreated {
	h := samples["handoff.created"].(HandoffCreated)
	eh := sampleHandoff()
	edit(&eh)
	h.Payload = mustJSON(eh)
	return h
}

func TestHandoffContracts(t *testing.T) {
	good := samples["handoff.created"].(HandoffCreated)
	payload := sampleHandoff()
	started := SessionStarted{TenantID: "acme", SessionID: "s2", ProjectID: "p1", EngineID: "project-discovery",
		EngineVersion: "1.0.0", InboundHandoffID: "h1", InboundHandoff: &payload, StartedAt: at}
	cases := []struct {
		name   string
		p      Payload
		reason string // empty: valid
	}{
		{"created", good, ""},
		{"no date", created(func(h *EngineHandoff) { h.Metadata.HandoffDate = time.Time{} }), "handoff_date"},
		{"no payload", func() Payload { h := good; h.Payload = nil; return h }(), "payload is required"},
		{"payload not a handoff", func() Payload { h := good; h.Payload = json.RawMessage(`[1]`); return h }(), "not an engine handoff"},
		{"payload from another engine", func() Payload { h := good; h.SourceEngineID = "ideation"; return h }(), "payload hands"},
		{"payload from another session", func() Payload { h := good; h.SourceSessionID = "s9"; return h }(), "session"},
		{"payload of another project", func() Payload { h := good; h.ProjectID = "p9"; return h }(), "project"},
		{"self transition", func() Payload {
			h := created(func(h *EngineHandoff) { h.Metadata.TargetEngineID = "exploration" })
			h.TargetEngineID = "exploration"
			return h
		}(), "itself"},
		{"no reason", created(func(h *EngineHandoff) { h.Metadata.TransitionReason = " " }), "transition_reason"},
		{"completeness out of range", created(func(h *EngineHandoff) { h.Metadata.CompletenessScore = 1.5 }), "completeness_score"},
		{"target session not a token", func() Payload { h := good; h.TargetSessionID = "s 2"; return h }(), "target_session_id"},
		{"session started with its handoff", started, ""},
		{"session started with an id only", func() Payload { s := started; s.InboundHandoff = nil; return s }(), "come together"},
		{"session started with another engine's handoff", func() Payload { s := started; s.EngineID = "ideation"; return s }(), "targets"},
		{"returned failure without error", TaskReturned{TenantID: "acme", SessionID: "s1", TaskID: "t", Attempt: 1}, "error"},
		{"returned without attempt", TaskReturned{TenantID: "acme", SessionID: "s1", TaskID: "t", Completed: true}, "attempt"},
		{"forwarded failure", TaskReturned{TenantID: "acme", SessionID: "s2", TaskID: "t", Attempt: 1, Error: "x", FromSessionID: "s1"},
			"forwarded"},
		{"forwarded from a bad session id", TaskReturned{TenantID: "acme", SessionID: "s2", TaskID: "t", Attempt: 1, Completed: true,
			FromSessionID: "s 1"}, "from_session_id"},
		{"merged with an unknown status", TaskMerged{TenantID: "acme", SessionID: "s1", TaskID: "t", Status: "done"}, "status"},
		{"merged stalled", TaskMerged{TenantID: "acme", SessionID: "s1", TaskID: "t", Status: TaskStatusStalled}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("Validate() = %v, want valid", err)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.reason)
			}
		})
	}
}

// A session's task outcomes travel on the session's subject of the turns
// stream, with its turns.
func TestTaskOutcomesFollowTheSession(t *testing.T) {
	for _, name := range []string{"task.returned", "task.merged"} {
		ev := MustEvent(Meta{ID: "x", Time: at}, samples[name])
		subject, err := Subject(ev)
		if err != nil {
			t.Fatal(err)
		}
		want := "praetor.turn." + strings.ReplaceAll(name, ".", "_") + ".acme.s1"
		if subject != want || samples[name].Spec().Stream != StreamTurns {
			t.Errorf("%s: subject %s on %s, want %s on %s", name, subject, samples[name].Spec().Stream, want, StreamTurns)
		}
	}
}

func TestDecodeHandoff(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		ok   bool
		want string
	}{
		{"", false, ""}, {"null", false, ""}, {"{not json", false, ""},
		{`{"metadata":{"source_engine_id":"exploration"}}`, true, "exploration"},
	} {
		h, ok := DecodeHandoff([]byte(tt.raw))
		if ok != tt.ok || h.Metadata.SourceEngineID != tt.want {
			t.Errorf("DecodeHandoff(%q) = %q, %v; want %q, %v", tt.raw, h.Metadata.SourceEngineID, ok, tt.want, tt.ok)
		}
	}
}
