package offlineskill_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// firstReply is the offline reply to "Sounds good." that opens a session
// started by h: the acknowledgement of the handoff, then the question.
func firstReply(t *testing.T, h contracts.EngineHandoff) string {
	t.Helper()
	h.Metadata = contracts.HandoffMetadata{SourceEngineID: "project-discovery", SourceEngineName: "Project Requirements Discovery",
		TargetEngineID: "exploration", HandoffDate: time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC), SessionID: "s1",
		ProjectID: "p1", TurnCount: 20, CompletenessScore: 0.9, TransitionReason: "explore the options"}
	h.SituationAwareness.UserConfidenceLevel = contracts.LevelMedium
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
	v := handoff.Verify(h, got, handoff.Receiver{EngineID: "exploration", ProjectID: "p1"})
	if !v.Verified {
		t.Errorf("the first reply %q does not verify: %+v", got, v.Details)
	}
	// Every constraint is acknowledged, not only enough of them: one left
	// out fails the verification of a handoff with one other.
	for _, e := range v.Details.Elements {
		if e.Kind == handoff.KindConstraint && !e.Acknowledged {
			t.Errorf("the first reply %q does not acknowledge the constraint %q (keywords %v)", got, e.Text, e.Keywords)
		}
	}
	return got
}

// The first reply after a handoff says back its decisions, constraints and
// cautions as a person would, not as the form the handoff is: a capital
// that only opened the user's sentence is lowered (a name keeps its own),
// the user's "our" and "we" are turned around as in every other reply, a
// label is said in words or left out, and the items of one label are
// said together. The dog-walking chat read "I have noted your constraints:
// Budget: Around 15,000 pounds; Timeline: by June; …; Integration:
// Stripe; Integration: our Google Calendar; Team: An agency will build it
// and we will run it."
func TestReplySaysTheHandoffBackInWords(t *testing.T) {
	constraints := func(cs ...string) []contracts.IdentifiedConstraint {
		var out []contracts.IdentifiedConstraint
		for _, c := range cs {
			out = append(out, contracts.IdentifiedConstraint{Constraint: c, Implication: "Options must respect it"})
		}
		return out
	}
	tests := []struct {
		name      string
		handoff   contracts.EngineHandoff
		want, not []string
	}{
		{name: "the requirements of project discovery",
			handoff: contracts.EngineHandoff{
				ActionList: contracts.ActionList{ConstraintsIdentified: constraints("Budget: Around 15,000 pounds",
					"Timeline: by June", "Technical: It must run on iPhone and Android", "Integration: Stripe",
					"Integration: our Google Calendar", "Team: An agency will build it and we will run it")},
				RelationalState: contracts.RelationalState{
					Sensitivities: []string{"Owners' addresses and door codes; only the assigned walker may see them"}},
			},
			want: []string{"I have noted your constraints: a budget of around 15,000 pounds; by June; " +
				"it must run on iPhone and Android; integration with Stripe and your Google Calendar; " +
				"and an agency will build it and you will run it.",
				"I will keep in mind: owners' addresses and door codes; only the assigned walker may see them."},
			not: []string{"Budget:", "Integration:", " our Google", "we will"}},
		{name: "the constraints of a business profile",
			handoff: contracts.EngineHandoff{
				ActionList: contracts.ActionList{ConstraintsIdentified: constraints("Baking capacity", "finding staff",
					"Regulation: Food hygiene rules", "Regulation: allergen labelling", "Funding: Our own savings, no loans")},
				RelationalState: contracts.RelationalState{
					Sensitivities: []string{"Card payments go through Square; we keep cafe contacts in a spreadsheet"}},
			},
			want: []string{"I have noted your constraints: baking capacity; finding staff; " +
				"compliance with food hygiene rules and allergen labelling; and funding from your own savings, no loans.",
				"I will keep in mind: card payments go through Square; you keep cafe contacts in a spreadsheet."}},
		{name: "a decision that opens with an article",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "The winter storage with a spring service", Confidence: 0.8, Reasoning: "it pays upfront"}}}},
			want: []string{"You decided on the winter storage with a spring service."}},
		{name: "a decision that is a name",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "Stripe", Confidence: 0.8, Reasoning: "low fees"}}}},
			want: []string{"You decided on Stripe."}},
		{name: "a decision to do something",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "Use Glofox", Confidence: 0.8, Reasoning: "the class bookings"}}}},
			want: []string{"You decided to use Glofox."},
			not:  []string{"decided on"}},
		{name: "a decision to do something beside a thing chosen",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "Stripe", Confidence: 0.8, Reasoning: "low fees"},
				{Decision: "Hire a second baker", Confidence: 0.7, Reasoning: "the early shift"}}}},
			want: []string{"You decided on Stripe, and to hire a second baker."}},
		{name: "a capital that opened an item of a list",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Regulation: Food hygiene rules", "Regulation: Allergen labels", "Budget: Around 5k")}},
			want: []string{"compliance with food hygiene rules and allergen labels"}},
		{name: "a decision that is a product's name",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "Square", Confidence: 0.8, Reasoning: "the cafes know it"}}}},
			want: []string{"You decided on Square."}},
		{name: "constraints there are none of, and a holiday",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Budget: none yet", "Timeline: Christmas", "Integration: none", "Integration: Xero", "Funding: None")}},
			want: []string{"I have noted your constraints: no budget yet, by Christmas, integration with Xero and no funding."},
			not:  []string{"of none", "from none", "with none", "christmas"}},
		{name: "constraints said as none or not known, in other words",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Budget: None at the moment", "Timeline: Not sure", "Integration: none needed", "Team: unknown")}},
			want: []string{"I have noted your constraints: no budget yet, the timeline is not known yet, " +
				"no integration needed and the team is not known yet."},
			not: []string{"of none", "of not sure", "with none", "of unknown", "None at"}},
		{name: "a budget no one knows and a technical constraint to be decided",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Budget: no idea", "Technical: TBD", "Regulation: n/a")}},
			want: []string{"I have noted your constraints: the budget is not known yet, no technical constraints yet " +
				"and no regulation to comply with."},
			not: []string{"of no idea", "compliance with"}},
		{name: "a recurring time is no deadline",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Timeline: Monday mornings", "Budget: $500 a month")}},
			want: []string{"I have noted your constraints: on Monday mornings and a budget of $500 a month."},
			not:  []string{"by Monday", "of Monday"}},
		{name: "a recurring time said with every, and a deadline on a day",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Timeline: every Friday", "Timeline: Friday week")}},
			want: []string{"I have noted your constraints: every Friday and by Friday week."}},
		{name: "an integration none needed, with one other constraint",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Integration: none needed", "Budget: $500 a month")}},
			want: []string{"I have noted your constraints: no integration needed and a budget of $500 a month."}},
		{name: "a team and a timeline not decided, and a budget of none with more to say",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Team: not decided", "Timeline: Not decided yet", "Budget: none yet, maybe 5k later")}},
			want: []string{"I have noted your constraints: the team is not decided yet; the timeline is not decided yet; " +
				"and no budget yet, maybe 5k later."},
			not: []string{"no team", "no timeline", "of none"}},
		{name: "an integration none needed for now, with more to say",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Integration: None needed for now, maybe Xero later", "Budget: $500 a month")}},
			want: []string{"I have noted your constraints: no integration needed for now, maybe Xero later; a budget of $500 a month."}},
		{name: "decisions that are noun phrases opening with a verb's word",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "Open plan office", Confidence: 0.8, Reasoning: "the team talks more"},
				{Decision: "Use of Glofox for bookings", Confidence: 0.8, Reasoning: "the class bookings"}}}},
			want: []string{"You decided on open plan office and use of Glofox for bookings."},
			not:  []string{"to open", "to use"}},
		{name: "a verb and its object beside a noun phrase",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
				{Decision: "Open plan office", Confidence: 0.8, Reasoning: "the team talks more"},
				{Decision: "Hire a baker", Confidence: 0.7, Reasoning: "the early shift"}}}},
			want: []string{"You decided on open plan office, and to hire a baker."}},
		{name: "recurring times that list days",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Timeline: Tuesday and Thursday evenings", "Timeline: Mondays and Wednesdays", "Timeline: Fridays before 9am")}},
			want: []string{"I have noted your constraints: on Tuesday and Thursday evenings; on Mondays and Wednesdays; " +
				"and on Fridays before 9am."},
			not: []string{"by "}},
		{name: "integrations not known",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Integration: not sure", "Budget: $500 a month")}},
			want: []string{"I have noted your constraints: the integrations are not known yet and a budget of $500 a month."}},
		{name: "a budget and a deadline said in other words",
			handoff: contracts.EngineHandoff{ActionList: contracts.ActionList{ConstraintsIdentified: constraints(
				"Budget: $60k to $80k", "Timeline: 6 months to launch", "Team: two developers")}},
			want: []string{"I have noted your constraints: a budget of $60k to $80k, a timeline of 6 months to launch " +
				"and a team of two developers."}},
		{name: "a question the user put off",
			handoff: contracts.EngineHandoff{RelationalState: contracts.RelationalState{Sensitivities: []string{
				"Only staff may see customer data",
				handoff.NotYetPrefix + "The team and resources available are known"}}},
			want: []string{"I will keep in mind: only staff may see customer data; " +
				"you would rather come back to the team and resources available later."},
			not: []string{"The user preferred"}},
		{name: "questions put off whose description says is twice",
			handoff: contracts.EngineHandoff{RelationalState: contracts.RelationalState{Sensitivities: []string{
				handoff.NotYetPrefix + "Whether the business is profitable is known",
				handoff.NotYetPrefix + "How digital the business is (paper, mixed, fully digital) is assessed"}}},
			want: []string{"I will keep in mind: you would rather come back to whether the business is profitable later; " +
				"you would rather come back to how digital the business is later (paper, mixed, fully digital)."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstReply(t, tt.handoff)
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("the first reply\n%q\ndoes not say\n%q", got, want)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(got, not) {
					t.Errorf("the first reply %q says %q", got, not)
				}
			}
		})
	}
}

// An obligation the source engine left open comes in the handoff as its
// description ("Still open: The next steps are agreed"), which says what
// would be done, not what is open: the first reply says it is not done
// yet, and leaves to the context one it cannot say so of.
func TestReplySaysWhatIsStillOpen(t *testing.T) {
	h := contracts.EngineHandoff{SituationAwareness: contracts.SituationAwareness{KnowledgeGapsRevealed: []string{
		handoff.OpenPrefix + "The next steps are agreed",
		handoff.OpenPrefix + "The key concepts have been explained",
		handoff.OpenPrefix + "The kind of product is known (web app, mobile app, ...)",
		handoff.OpenPrefix + "The user explained the options back correctly (teach-back)",
		handoff.OpenPrefix + "The users' pain points today are captured",
	}}}
	got := firstReply(t, h)
	const want = "Still open: the next steps are not agreed yet; the key concepts have not been explained yet; " +
		"the kind of product is not known yet (web app, mobile app, ...); and the users' pain points today are not captured yet."
	if !strings.Contains(got, want) {
		t.Errorf("the first reply\n%q\ndoes not say\n%q", got, want)
	}
	for _, not := range []string{"are agreed", "The user", "explained the options back"} {
		if strings.Contains(got, not) {
			t.Errorf("the first reply %q says %q", got, not)
		}
	}
}
