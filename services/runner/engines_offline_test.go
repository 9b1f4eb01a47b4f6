package runner_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Conversations with the shipped engines, offline, that a new user would
// hold: each pins what the user meets (the question asked next, where an
// answer is filed), not how the engine gets there.

// explorationToDeliberation are the turns that bring an exploration session
// from its start to deliberation, the last with a teach-back.
var explorationToDeliberation = []string{
	"We need a way to schedule our cleaning crews and I want to explore the options.",
	"I've used Google Sheets for it so far, that's about it.",
	"I don't understand what a scheduling app does that a spreadsheet can't.",
	"I hope to stop double-booking crews.",
	"We could use Jobber, Connecteam, or build something custom.",
	"I like that Jobber has a mobile app.",
	"The downside is the monthly fee per user.",
	"Seems good overall.",
	"So basically, in my own words: Jobber is ready to go, Connecteam is cheaper, and custom gives full control but costs most.",
}

const constraintsQuestion = "What constraints matter here"

// list is a list field of the session's extraction (nil when absent).
func (s *session) list(path string) []string {
	var xs []string
	s.state.Extraction.Decode(path, &xs)
	return xs
}

func obligationStatus(t *testing.T, m *engine.WorkingMemory, id string) engine.ObligationStatusValue {
	t.Helper()
	o, ok := m.Obligation(id)
	if !ok {
		t.Fatalf("no obligation %s", id)
	}
	return o.Status
}

// A teach-back that calls an option "limited" names no constraint, and the
// budget said next is one: it used to be dropped, the constraints being
// known already (the teach-back's three clauses).
func TestExplorationTeachBackIsNoConstraint(t *testing.T) {
	s := newSession(t, "exploration")
	script := slices.Clone(explorationToDeliberation)
	script[len(script)-1] = "So basically, in my own words: Jobber is ready to go, Connecteam is flexible but limited, and custom is fully ours but expensive."
	for _, msg := range script {
		s.say(msg)
	}
	if s.state.Phase.Current != "DELIBERATION" {
		t.Fatalf("phase = %s, want DELIBERATION", s.state.Phase.Current)
	}
	if s.state.Extraction.Has("decision.constraints") {
		t.Errorf("the teach-back was filed as constraints: %s", s.state.Extraction.Fields["decision.constraints"].Value)
	}
	s.say("Our budget is about 5000 dollars for the first year.")
	got := s.list("decision.constraints")
	if len(got) != 1 || !strings.Contains(got[0], "5000 dollars") {
		t.Errorf("decision.constraints = %q, want the budget", got)
	}
}

// One constraint named in answer to the constraints question settles it:
// the question is not asked again, turn after turn, until the user names a
// second one (it was, seven times in a row, up to the handoff).
func TestExplorationAsksForConstraintsOnce(t *testing.T) {
	s := newSession(t, "exploration")
	for _, msg := range explorationToDeliberation {
		s.say(msg)
	}
	res := s.say("The tradeoff is price versus features.")
	for i := 0; !strings.Contains(res.Reply, constraintsQuestion); i++ {
		if i == 3 {
			t.Fatalf("the constraints question was never asked; last reply %q", res.Reply)
		}
		res = s.say("The risk is that crews won't use the app.")
	}
	res = s.say("We only have about 300 dollars a month.")
	if got := obligationStatus(t, s.state, "constraints_identified"); got != engine.StatusSatisfied {
		t.Errorf("constraints_identified = %s after a constraint was named, want satisfied", got)
	}
	if strings.Contains(res.Reply, constraintsQuestion) {
		t.Errorf("the constraints question was asked again after it was answered: %q", res.Reply)
	}
	got := s.list("decision.constraints")
	if !slices.Equal(got, []string{"about 300 dollars a month"}) {
		t.Errorf("decision.constraints = %q", got)
	}
}

// A session that starts from a handoff carrying the constraints (ideation's
// budget and people, say) does not ask for them again: its first reply says
// it has noted them.
func TestExplorationKnowsTheHandoffsConstraints(t *testing.T) {
	s := newSession(t, "exploration")
	var h contracts.EngineHandoff
	for _, c := range []string{"£500 a month to spend", "just two instructors"} {
		h.ActionList.ConstraintsIdentified = append(h.ActionList.ConstraintsIdentified,
			contracts.IdentifiedConstraint{Constraint: c, Implication: "Options must respect it"})
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	s.state = engine.NewWorkingMemory(s.def, "sess-1", "proj-1")
	s.state.InboundHandoff = b
	script := append(slices.Clone(explorationToDeliberation),
		"The tradeoff is price versus features.",
		"The risk is that crews won't use the app.")
	for _, msg := range script {
		if res := s.say(msg); strings.Contains(res.Reply, constraintsQuestion) {
			t.Fatalf("asked for the constraints the handoff carried: %q", res.Reply)
		}
	}
	if got := obligationStatus(t, s.state, "constraints_identified"); got != engine.StatusSatisfied {
		t.Errorf("constraints_identified = %s, want satisfied", got)
	}
}

// Two knowledge gaps said in one sentence, of which the offline cues take
// one, answer the question: it is not asked again.
func TestExplorationAsksForKnowledgeGapsOnce(t *testing.T) {
	s := newSession(t, "exploration")
	s.say("We need a way to schedule our cleaning crews and I want to explore the options.")
	s.say("I've used Google Sheets for it so far, that's about it.")
	res := s.say("I don't understand what a scheduling app does that a spreadsheet can't, and I'm unsure about pricing models.")
	if got := obligationStatus(t, s.state, "knowledge_gaps_identified"); got != engine.StatusSatisfied {
		t.Errorf("knowledge_gaps_identified = %s, want satisfied", got)
	}
	if strings.Contains(res.Reply, "What are you unsure about") || strings.Contains(res.Reply, "what are you unsure about") {
		t.Errorf("the knowledge-gaps question was asked again: %q", res.Reply)
	}
}

// "X versus Y" is the tradeoff, wherever the word "tradeoff" stands: "Cost
// versus reliability is the tradeoff for me" was filed as "for me".
func TestExplorationTradeoffIsWhatIsWeighed(t *testing.T) {
	s := newSession(t, "exploration")
	for _, msg := range explorationToDeliberation {
		s.say(msg)
	}
	s.say("Cost versus reliability is the tradeoff for me.")
	got := s.list("decision.tradeoffs")
	if !slices.Equal(got, []string{"Cost versus reliability"}) {
		t.Errorf("decision.tradeoffs = %q, want [Cost versus reliability]", got)
	}
	// Two words a side, up to the verb.
	s = newSession(t, "exploration")
	for _, msg := range explorationToDeliberation {
		s.say(msg)
	}
	s.say("Low cost versus high reliability is the tradeoff.")
	got = nil
	s.state.Extraction.Decode("decision.tradeoffs", &got)
	if !slices.Equal(got, []string{"Low cost versus high reliability"}) {
		t.Errorf("decision.tradeoffs = %q, want [Low cost versus high reliability]", got)
	}
}

// bakeryOpening is how a bakery's owner answers business profile's first
// seven questions, up to where the business sells.
var bakeryOpening = []string{
	"Hi! We run a small bakery in Leeds called Crumb & Co, we've been going for about 6 years.",
	"Both, cafes buy wholesale and people buy in the shop.",
	"Wholesale bread to cafes is the biggest, then shop sales and celebration cakes.",
	"Per loaf for wholesale, and cakes are priced by size.",
	"Everything is baked fresh every morning with local flour, that's why people come to us.",
	"Local cafes, office workers, and families ordering birthday cakes.",
	"Mostly local, within about ten miles of the shop.",
}

// An owner who corrects the team size ("Actually it's 11 people now") while
// asked about the team's roles corrects the head count; the correction is
// not filed as the roles.
func TestBusinessProfileHeadcountCorrection(t *testing.T) {
	s := newSession(t, "business-profile")
	for _, msg := range append(bakeryOpening[:len(bakeryOpening):len(bakeryOpening)],
		"Greggs and the supermarket bakeries.",
		"Sourdough, pastries and custom cakes.",
		"We are a team of 9 people.") {
		s.say(msg)
	}
	var n float64
	if !s.state.Extraction.Decode("team_composition.headcount", &n) || n != 9 {
		t.Fatalf("headcount = %s, want 9", s.state.Extraction.Fields["team_composition.headcount"].Value)
	}
	if s.state.Obligations.Focus != "key_roles_identified" {
		t.Fatalf("focus = %s, want key_roles_identified", s.state.Obligations.Focus)
	}
	s.say("Actually it's 11 people now, we hired two bakers last month.")
	if !s.state.Extraction.Decode("team_composition.headcount", &n) || n != 11 {
		t.Errorf("headcount = %s after the correction, want 11", s.state.Extraction.Fields["team_composition.headcount"].Value)
	}
	if s.state.Extraction.Has("team_composition.key_roles") {
		t.Errorf("the correction was filed as the key roles: %s", s.state.Extraction.Fields["team_composition.key_roles"].Value)
	}
}

// A question the user's answers leave open is asked twice in a row, then
// rests while the conversation takes up others, and comes back: it was
// asked turn after turn, eight times in a row, while the user told of the
// users, the pain, success, the budget and an integration.
func TestProjectDiscoveryDoesNotAskInVainTurnAfterTurn(t *testing.T) {
	s := newSession(t, "project-discovery")
	var asked []string // the question each reply ends with
	for _, msg := range []string{
		"Hi",
		"We want to build an app for our plumbing company to schedule jobs",
		"Our office staff use it most, and the technicians see their jobs out in the field",
		"Right now we use paper and Excel, double bookings happen every week and we lose jobs",
		"Success would be no double bookings and 20% more jobs a week",
		"Budget is about 30k and we need it in 3 months",
		"It has to sync with Xero",
		"No, that's about it",
	} {
		res := s.say(msg)
		q := res.Reply[strings.LastIndexAny(strings.TrimSuffix(res.Reply, "?"), ".:?!")+1:]
		asked = append(asked, strings.ToLower(strings.TrimSpace(q)))
	}
	run := 1
	for i := 1; i < len(asked); i++ {
		if asked[i] != asked[i-1] {
			run = 1
			continue
		}
		if run++; run > 2 {
			t.Errorf("reply %d asks %q a third time in a row", i+1, asked[i])
		}
	}
	// The product question, asked by the second and third replies, rests
	// for three turns and is asked again.
	product := asked[1]
	if asked[2] != product || asked[3] == product || !slices.Contains(asked[4:], product) {
		t.Errorf("questions asked %q: want the second one asked twice, then others, then again", asked)
	}
}

// sideBusinessFraming are the first turns of an ideation on a side
// business: the problem, then who it affects.
var sideBusinessFraming = []string{
	"I want ideas for a small food business I could start on the side.",
	"Mostly me, I'm stuck in a job I don't enjoy.",
}

// The money and the time the user has are the constraints any idea must
// respect: they were filed as the problem's cost, and the next reply asked
// for the constraints.
func TestIdeationFilesWhatTheUserHasAsConstraints(t *testing.T) {
	s := newSession(t, "ideation")
	for _, msg := range sideBusinessFraming {
		s.say(msg)
	}
	res := s.say("I have about 5000 pounds to start and evenings free")
	got := s.list("problem_space.constraints")
	if !slices.Equal(got, []string{"about 5000 pounds to start", "evenings free"}) {
		t.Errorf("problem_space.constraints = %q, want the sum and the evenings", got)
	}
	if strings.Contains(res.Reply, "What constraints must any idea respect") {
		t.Errorf("the constraints question was asked after they were named: %q", res.Reply)
	}
}

// Ideas the user offers while the problem is being framed are ideas: they
// were filed as the answers to the framing questions asked (the
// constraints, success), and idea generation opened by asking for ideas as
// if there were none.
func TestIdeationKeepsIdeasOfferedWhileFraming(t *testing.T) {
	s := newSession(t, "ideation")
	for _, msg := range sideBusinessFraming {
		s.say(msg)
	}
	s.say("Maybe a weekend stall selling Caribbean food")
	s.say("Or a meal prep service for busy parents")
	got := s.list("idea_generation.ideas")
	if want := []string{"a weekend stall selling Caribbean food", "a meal prep service for busy parents"}; !slices.Equal(got, want) {
		t.Errorf("idea_generation.ideas = %q, want %q", got, want)
	}
	if s.state.Extraction.Has("problem_space.constraints") || s.state.Extraction.Has("problem_space.success_criteria") {
		t.Errorf("an idea was filed as a framing answer: constraints %s, success %s",
			s.state.Extraction.Fields["problem_space.constraints"].Value, s.state.Extraction.Fields["problem_space.success_criteria"].Value)
	}
	for _, msg := range []string{
		"I have about 5000 pounds to start and evenings free",
		"Success would be making 500 pounds a month within a year.",
		"It costs me the chance to earn more, maybe 500 pounds a month.",
		"Not sure.",
		"Not sure.",
	} {
		res := s.say(msg)
		if res.Phase != "DIVERGE" {
			continue
		}
		if strings.Contains(res.Reply, "What ideas come to mind?") || strings.Contains(res.Reply, "what ideas come to mind?") {
			t.Errorf("idea generation asks for ideas as if there were none: %q", res.Reply)
		}
		return
	}
	t.Fatalf("the session never reached DIVERGE: phase %s", s.state.Phase.Current)
}

// Selling to locals and to cafes names the customers, and is no model
// type, which the user says in its words: the question stays open until
// "Both" answers it (business-profile 1.0.0 filed "locals and a few cafes"
// as the model type).
func TestBusinessProfileWhoPaysAnsweredInItsWords(t *testing.T) {
	s := newSession(t, "business-profile")
	for _, msg := range []string{
		"Hi, we run a bakery in Hull.",
		"We're a bakery, we make bread and cakes.",
		"We've been open for 4 years",
	} {
		s.say(msg)
	}
	if s.state.Obligations.Focus != "business_model_type_known" {
		t.Fatalf("focus = %s, want business_model_type_known", s.state.Obligations.Focus)
	}
	s.say("We sell bread and cakes to locals and a few cafes")
	if got := s.state.Extraction.String("business_model.model_type"); got != "" {
		t.Errorf("business_model.model_type = %q, want none: whom the bakery sells to is its customers", got)
	}
	var got []string
	if s.state.Extraction.Decode("target_market.customer_segments", &got); !slices.Equal(got, []string{"locals", "a few cafes"}) {
		t.Errorf("target_market.customer_segments = %q, want [locals, a few cafes]", got)
	}
	if s.state.Obligations.Focus != "business_model_type_known" {
		t.Fatalf("focus = %s, want business_model_type_known still", s.state.Obligations.Focus)
	}
	s.say("Both.")
	if got := s.state.Extraction.String("business_model.model_type"); got != "B2B and B2C" {
		t.Errorf("business_model.model_type = %q, want B2B and B2C", got)
	}
}

// An owner with no competitors to name says so: the answer is that there
// are none, which settles the question. "None." was filed as a competitor
// named "None", and "We have no competitors" left the question open, to
// be asked again.
func TestBusinessProfileNoCompetitorsIsAnAnswer(t *testing.T) {
	for _, answer := range []string{"None.", "We have no competitors", "Not really, no."} {
		s := newSession(t, "business-profile")
		for _, msg := range bakeryOpening {
			s.say(msg)
		}
		if s.state.Obligations.Focus != "competitors_named" {
			t.Fatalf("focus = %s, want competitors_named", s.state.Obligations.Focus)
		}
		res := s.say(answer)
		if got := obligationStatus(t, s.state, "competitors_named"); got != engine.StatusSatisfied {
			t.Errorf("%q: competitors_named = %s, want satisfied", answer, got)
		}
		if got := s.state.Extraction.Fields["target_market.competitors"].Value; string(got) != "null" {
			t.Errorf("%q: target_market.competitors = %s, want null", answer, got)
		}
		if strings.Contains(strings.ToLower(res.Reply), "competitors") {
			t.Errorf("%q: the competitors question was asked again: %q", answer, res.Reply)
		}
	}
}

// An integration taken back beside the one the user keeps ("…, just
// Xero") leaves the one kept: both were taken off, and the list emptied.
func TestProjectDiscoveryKeepsTheIntegrationKeptAfterATakeBack(t *testing.T) {
	s := newSession(t, "project-discovery")
	for _, msg := range []string{
		"Hi",
		"We want to build an app for our plumbing company to schedule jobs",
		"It has to sync with Xero and Shopify",
		"It doesn't need to sync with Shopify any more, just Xero.",
	} {
		s.say(msg)
	}
	got := s.list("constraints.integrations")
	if !slices.Equal(got, []string{"Xero"}) {
		t.Errorf("constraints.integrations = %q, want [Xero]", got)
	}
}
