package offlineskill_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// The first reply after a handoff that says which pain point is the
// problem, and which ideas the user shortlisted to explore, names them,
// briefly: the problem in the user's words turned around and cut when
// long, the ideas in a list. A pain point the handoff does not mark as
// the problem is not said as one.
func TestReplyNamesTheProblemAndTheShortlistTakenUp(t *testing.T) {
	long := "our subscribers cancel after about three months because every bag tastes the same, they forget to skip a month " +
		"when they travel, and the emails we send them are never read at all"
	tests := []struct {
		name      string
		pains     []string
		shortlist []string
		want      []string
		not       []string
	}{
		{name: "the problem and two ideas",
			pains:     []string{handoff.ProblemPrefix + "coffee subscribers cancel after three months, and I need ideas to keep them", "$4,000 a month lost"},
			shortlist: []string{"the pause button", "the origin of the month"},
			want: []string{"Picking up from Ideation Workshop. The problem: coffee subscribers cancel after three months, and you need ideas to keep them. " +
				"You shortlisted the pause button and the origin of the month to explore."},
			not: []string{"$4,000", "Still open"}},
		{name: "a long problem is cut",
			pains: []string{handoff.ProblemPrefix + long},
			want: []string{"The problem: your subscribers cancel after about three months because every bag tastes the same, " +
				"they forget to skip a month when they travel, and the emails… "},
			not: []string{"never read", "…."}},
		{name: "a problem put as a question",
			pains: []string{handoff.ProblemPrefix + "How might we keep our subscribers past the third bag?"},
			want:  []string{"The problem: how might you keep your subscribers past the third bag? "}},
		{name: "a name keeps its capital",
			pains: []string{handoff.ProblemPrefix + "Shopify loses the skipped months."},
			want:  []string{"The problem: Shopify loses the skipped months. "}},
		{name: "pain points none of which is the problem",
			pains: []string{"Jobs get lost on paper"},
			not:   []string{"The problem", "Jobs get lost"}},
		{name: "many ideas",
			shortlist: []string{"a", "b", "c", "d", "e", "f", "g"},
			want:      []string{"You shortlisted a, b, c, d, e, f and 1 more to explore."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := contracts.EngineHandoff{
				Metadata: contracts.HandoffMetadata{SourceEngineID: "ideation", SourceEngineName: "Ideation Workshop",
					TargetEngineID: "exploration", HandoffDate: time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC), SessionID: "s1",
					ProjectID: "p1", TurnCount: 14, CompletenessScore: 0.46, TransitionReason: "explore the options first"},
				SituationAwareness: contracts.SituationAwareness{UserConfidenceLevel: "medium", KeyPainPoints: tt.pains},
			}
			for _, idea := range tt.shortlist {
				h.SituationAwareness.KnowledgeGapsRevealed = append(h.SituationAwareness.KnowledgeGapsRevealed, handoff.ShortlistPrefix+idea)
			}
			sys := handoff.Format(h, "Solution Exploration") + "\n\n" + contextasm.HeaderPhase +
				"\nPhase: ORIENTATION | Orientation | 1 of 3 | turn 1 in phase\nMode blend: inform 60% \n\n" +
				contextasm.HeaderObligations + "\n" + contextasm.NextPrefix +
				"prior_knowledge_assessed | What the user already knows is assessed | ask: What do you already know?\n\n" +
				contextasm.HeaderHistory + "\n(this is the first turn)"
			got, err := offlineskill.Reply(context.Background(), llm.Request{Purpose: offlineskill.PurposeResponse,
				Messages: []llm.Message{{Role: llm.System, Content: sys}, {Role: llm.User, Content: "Sounds good."}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("the first reply %q does not say %q", got, want)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(got, not) {
					t.Errorf("the first reply %q says %q", got, not)
				}
			}
			if !strings.HasSuffix(got, "What do you already know?") {
				t.Errorf("the first reply %q does not end with the next question", got)
			}
		})
	}
}

// Research on the problem a handoff marked as such is about the problem,
// not about "Problem: …": the task's first fact is the handoff's first
// pain point (tasks.NewInput), and the offline findings say it.
func TestResearchOnTheProblemAHandoffCarried(t *testing.T) {
	body, err := json.Marshal(tasks.ResearchRequest{Handler: "research.solution_landscape", Task: tasks.Input{
		TaskID: "landscape_research", DisplayName: "Solution landscape research", Facts: []string{
			"Pain point (from an earlier session): " + handoff.ProblemPrefix + "coffee subscribers cancel after three months"}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := offlineskill.Research(context.Background(), llm.Request{Purpose: tasks.PurposeResearch,
		Messages: []llm.Message{{Role: llm.System, Content: "research"}, {Role: llm.User, Content: string(body)}}})
	if err != nil {
		t.Fatal(err)
	}
	var f tasks.Findings
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("answer is not findings: %v: %s", err, out)
	}
	if want := `fit "coffee subscribers cancel after three months"`; !strings.Contains(f.Summary, want) {
		t.Errorf("summary %q, want it to say %q", f.Summary, want)
	}
}
