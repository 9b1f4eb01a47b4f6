package runner_test

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner"
)

// startFrom plays msgs on a new session of engineID that starts with the
// handoff h (none when nil), the way the handoff consumer starts it, and
// returns the result of its last turn.
func startFrom(t *testing.T, engineID string, h *contracts.EngineHandoff, msgs ...string) *runner.Result {
	t.Helper()
	s := newSession(t, engineID)
	if h != nil {
		m, err := runner.StartMemory(s.def, contracts.SessionStarted{SessionID: "sess-1", ProjectID: "proj-1",
			EngineID: engineID, EngineVersion: s.def.Version, MemoryVersion: engine.MemorySchemaVersion, InboundHandoff: h,
			StartedAt: epoch})
		if err != nil {
			t.Fatal(err)
		}
		s.state = m
	}
	var res *runner.Result
	for _, msg := range msgs {
		res = s.say(msg)
	}
	return res
}

// handOff is startFrom's last turn's handoff; the turn must make one.
func handOff(t *testing.T, engineID string, h *contracts.EngineHandoff, msgs ...string) contracts.EngineHandoff {
	t.Helper()
	res := startFrom(t, engineID, h, msgs...)
	if res.Effects.Exit == nil {
		t.Fatalf("%s did not hand off; last reply %q", engineID, res.Reply)
	}
	return res.Effects.Exit.Handoff
}

// A user who chose an off-the-shelf tool in exploration, went on to
// project discovery, asked to explore the options again and chose a custom
// build there is greeted by the second discovery session with the custom
// build alone. The handoff used to carry the first choice beside the
// second ("You decided on custom build; off-the-shelf tool."), one more
// each round trip.
func TestChainGreetsWithTheLatestDecision(t *testing.T) {
	h := handOff(t, "exploration", nil, explorationMessages...)
	h = handOff(t, "project-discovery", &h, projectDiscoveryMessages...)
	again := slices.Clone(explorationMessages)
	again[len(again)-1] = "I'll go with a custom build because it gives us full control."
	h = handOff(t, "exploration", &h, again...)

	var decisions []string
	for _, d := range h.ActionList.DecisionsReached {
		decisions = append(decisions, d.Decision)
	}
	if !slices.Equal(decisions, []string{"custom build"}) {
		t.Errorf("decisions = %q, want [custom build]", decisions)
	}
	res := startFrom(t, "project-discovery", &h, "Hello again.")
	if !strings.Contains(res.Reply, "You decided on custom build.") || strings.Contains(res.Reply, "off-the-shelf") {
		t.Errorf("greeting %q, want the custom build alone", res.Reply)
	}
}

// A user who chose an off-the-shelf booking tool in exploration, went on to
// project discovery and explored again how customers should pay is greeted
// by the second discovery session with both decisions: the second answers
// another question than the first, whether it chose Stripe or a custom
// build, one of the kinds of option exploration suggests for every
// question. Stripe used to replace the booking tool, both being
// exploration's decision; then the custom build did, being among the
// booking options.
func TestChainKeepsTheDecisionOfAnotherQuestion(t *testing.T) {
	for _, tt := range []struct {
		options, choice, want string
	}{
		{"Stripe, Square, or PayPal", "Stripe because it is cheap and fast to start", "Stripe"},
		{"Stripe, Square, or a custom build", "a custom build because we want full control of payments", "custom build"},
	} {
		h := handOff(t, "exploration", nil, explorationMessages...)
		h = handOff(t, "project-discovery", &h, projectDiscoveryMessages...)
		payments := slices.Clone(explorationMessages)
		payments[0] = "I want to figure out how to take card payments for my yoga studio."
		payments[3] = "We are considering " + tt.options + " to take card payments."
		payments[len(payments)-1] = "I'll go with " + tt.choice + "."
		h = handOff(t, "exploration", &h, payments...)

		var decisions []string
		for _, d := range h.ActionList.DecisionsReached {
			decisions = append(decisions, d.Decision)
		}
		if want := []string{tt.want, "off-the-shelf tool"}; !slices.Equal(decisions, want) {
			t.Errorf("decisions = %q, want %q", decisions, want)
		}
	}
}

// A user who explored the options, captured the requirements, explored
// again and came back to project discovery is not asked for the problem
// once more: the handoff carries it (a pain point, behind the option
// chosen), and the second discovery session's greeting used to end with
// "What problem are you trying to solve?" all the same.
func TestChainDoesNotAskForTheCarriedProblem(t *testing.T) {
	h := handOff(t, "exploration", nil, explorationMessages...)
	h = handOff(t, "project-discovery", &h, projectDiscoveryMessages...)
	h = handOff(t, "exploration", &h, explorationMessages...)
	if len(h.SituationAwareness.KeyPainPoints) == 0 || len(h.ActionList.DecisionsReached) == 0 {
		t.Fatalf("handoff carries pain points %q and decisions %v; want both", h.SituationAwareness.KeyPainPoints,
			h.ActionList.DecisionsReached)
	}
	res := startFrom(t, "project-discovery", &h, "Hello again.")
	def := newSession(t, "project-discovery").def
	o, _ := def.Obligation("core_problem_defined")
	if strings.Contains(res.Reply, o.Question) {
		t.Errorf("greeting %q asks %q, which the handoff answered", res.Reply, o.Question)
	}
	if st, _ := res.State.Obligation(o.ID); st.Status != engine.StatusSatisfied {
		t.Errorf("%s is %s, want %s", o.ID, st.Status, engine.StatusSatisfied)
	}
}

// A session.started recorded before decisions had keys (testdata, encoded
// by the code of ee6b8d3) still decodes and starts the same working memory:
// its state hash is the one computed then, so a replay of such a session
// does not diverge. Its carried decision, having no key, is carried on by
// its text beside the session's own, as it was then.
func TestSessionStartedBeforeDecisionKeys(t *testing.T) {
	b, err := os.ReadFile("testdata/session.started.before-decision-keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev event.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	started, err := contracts.DecodeAs[contracts.SessionStarted](ev)
	if err != nil {
		t.Fatal(err)
	}
	// The session started on the version it recorded, whatever the newest is.
	def, ok := enginetest.Shipped(t).Version(started.EngineID, started.EngineVersion)
	if !ok {
		t.Fatalf("%s %s is not shipped", started.EngineID, started.EngineVersion)
	}
	m, err := runner.StartMemory(def, *started)
	if err != nil {
		t.Fatal(err)
	}
	const recorded = "780bef986fb228e45007ea694302a33b3c76d0654305c65d0f4c01b50834c186"
	if hash, err := engine.StateHash(m); err != nil || hash != recorded {
		t.Errorf("state hash = %s, %v; recorded %s", hash, err, recorded)
	}

	m.TurnNumber = 10
	enginetest.Set(m, "decision.decision_made", "custom build", 0.85, 10)
	enginetest.Set(m, "decision.reasoning", "It gives us full control over the schedule", 0.85, 10)
	h, err := handoff.Builtin().Map(handoff.Input{Source: def, Memory: m, TargetEngineID: "project-discovery",
		Reason: "User reached decision and ready to define requirements", Now: epoch})
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, d := range h.ActionList.DecisionsReached {
		decisions = append(decisions, d.Decision)
	}
	if !slices.Equal(decisions, []string{"custom build", "Jobber"}) {
		t.Errorf("decisions = %q, want [custom build Jobber]", decisions)
	}
}

// A session of memory version 1 hands off its decisions as the builds it
// started on wrote them, without the key, options and question later
// builds record (and its eliminated options without their question): the
// target session starts with the payload, and a replay of the source must
// rebuild the one the live run published (testdata/golden/v1-handoff-*,
// recorded by 1a7403c). A session of version 2 records them.
func TestSessionOfMemoryVersion1HandsOffDecisionsWithoutQuestions(t *testing.T) {
	for _, version := range []int{1, engine.MemorySchemaVersion} {
		t.Run(strconv.Itoa(version), func(t *testing.T) {
			s := newSession(t, "exploration")
			m, err := runner.StartMemory(s.def, contracts.SessionStarted{SessionID: "sess-1", ProjectID: "proj-1",
				EngineID: "exploration", EngineVersion: s.def.Version, MemoryVersion: version, StartedAt: epoch})
			if err != nil {
				t.Fatal(err)
			}
			s.state = m
			var res *runner.Result
			for _, msg := range explorationMessages {
				res = s.say(msg)
			}
			if res.Effects.Exit == nil {
				t.Fatalf("no handoff; last reply %q", res.Reply)
			}
			h := res.Effects.Exit.Handoff
			if len(h.ActionList.DecisionsReached) == 0 {
				t.Fatal("the handoff carries no decision")
			}
			for _, d := range h.ActionList.DecisionsReached {
				recorded := d.Key != "" || len(d.Options) > 0 || d.Question != ""
				if want := version > 1; recorded != want || version > 1 && (d.Key == "" || len(d.Options) == 0 || d.Question == "") {
					t.Errorf("decision %q: key %q, options %q, question %q; want them recorded: %t", d.Decision, d.Key,
						d.Options, d.Question, want)
				}
			}
		})
	}
}

// chainIdeation are the messages of the golden chain's ideation session
// (testdata/golden/chats/chain.txt), up to the one that hands off to
// exploration: the coffee roaster frames the churn of its subscribers,
// shortlists the pause button and the origin of the month, and wants to
// explore the options before choosing.
func chainIdeation(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/golden/chats/chain.txt")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			msgs = append(msgs, l)
		}
		if strings.Contains(l, "explore the options first") {
			return msgs
		}
	}
	t.Fatal("chain.txt has no message that hands ideation off to exploration")
	return nil
}

// A user who framed a problem in ideation and went to exploration to find
// out about the ideas shortlisted there, and says no more than "Sounds
// good.", is not asked for the problem again: the handoff carries it
// (problemCarried), and the first reply says what it took up, the problem
// and the ideas shortlisted. It used to ask "What would you like to
// explore, and what problem is behind it?", after "Still open: they get
// bored of the same coffee", the cause the user gave, and not a word of
// the shortlist.
func TestExplorationTakesUpIdeationsProblemAndShortlist(t *testing.T) {
	h := handOff(t, "ideation", nil, chainIdeation(t)...)
	res := startFrom(t, "exploration", &h, "Sounds good.")
	def := newSession(t, "exploration").def
	asked, _ := def.Obligation("problem_explored")
	if strings.Contains(res.Reply, asked.Question) {
		t.Errorf("the first reply %q asks %q, which the handoff answered", res.Reply, asked.Question)
	}
	if st, _ := res.State.Obligation(asked.ID); st.Status != engine.StatusSatisfied {
		t.Errorf("%s is %s, want %s", asked.ID, st.Status, engine.StatusSatisfied)
	}
	if next, _ := def.Obligation("prior_knowledge_assessed"); !strings.HasSuffix(res.Reply, next.Question) {
		t.Errorf("the first reply %q does not go on to %q", res.Reply, next.Question)
	}
	for _, want := range []string{"The problem: coffee subscribers cancel after about three months, and you need ideas",
		"You shortlisted the pause button and the origin of the month to explore."} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("the first reply %q does not say %q", res.Reply, want)
		}
	}
	if strings.Contains(res.Reply, "Still open:") {
		t.Errorf("the first reply %q says something is still open: the cause is known, the shortlist taken up", res.Reply)
	}
	v := handoff.Verify(h, res.Reply, handoff.Receiver{EngineID: "exploration", ProjectID: "proj-1"})
	if gaps := v.Details.Components[handoff.KindGap]; !v.Verified || gaps.Total != 2 || gaps.Acknowledged != 2 {
		t.Errorf("verification %+v; want the two shortlisted ideas acknowledged", v.Details)
	}
}

// A user who described the problem in project discovery and went to
// exploration to find out about the options is told, in the first reply
// there, which problem it takes up: project discovery's handoff marks the
// core problem as such (memory version 3), as ideation's does. It used to
// go as a pain point like the others, which the first reply did not name.
func TestExplorationNamesTheProblemProjectDiscoveryCaptured(t *testing.T) {
	h := handOff(t, "project-discovery", nil, projectDiscoveryMessages...)
	res := startFrom(t, "exploration", &h, "Sounds good.")
	const want = "The problem: your field technicians keep losing track of their jobs"
	if !strings.Contains(res.Reply, want) {
		t.Errorf("the first reply %q does not say %q", res.Reply, want)
	}
	def := newSession(t, "exploration").def
	if asked, _ := def.Obligation("problem_explored"); strings.Contains(res.Reply, asked.Question) {
		t.Errorf("the first reply %q asks %q, which the handoff answered", res.Reply, asked.Question)
	}
}

// discoveryAnswers answer project discovery's questions of the purpose,
// users and success categories, by a phrase of the question: what a user
// back from exploration still has to tell.
var discoveryAnswers = []struct{ asked, answer string }{
	{"what kind of product", "A mobile app for our technicians."},
	{"priority now", "Last month we missed three urgent repairs and lost a big customer. That's why it became a priority now."},
	{"handle this today", "Today everything runs on paper and spreadsheets."},
	{"be different once", "Ideally every technician starts the day with a clear schedule, so that no job is forgotten."},
	{"who will use it most", "Our field technicians."},
	{"how many people", "About 40 technicians, plus 5 office dispatchers who plan the routes."},
	{"need to get done", "They need to see their daily jobs, record the work done, take photos and get the customer's signature."},
	{"frustrates them", "The paperwork is slow and they waste an hour every evening on double entry."},
	{"measure whether", "We want to cut missed appointments in half and reduce the time spent on paperwork by 30 percent."},
	{"features must", "It must have a job list, offline sync, photo uploads and customer signatures."},
	{"first version include", "The first version should cover the job list and signatures; invoicing can wait for later versions."},
}

// A user who captured the requirements in project discovery, explored the
// options and came back is not asked again for the budget, the timeline,
// the technical constraints or the integrations: the handoff carries them
// from the first discovery session (handoff.CarryForward), and the second
// counts them told (budgetCarried, ...), as its first reply says it noted
// them. It used to say "I have noted your constraints: a budget of …" and,
// once the users and success were told, ask "When do you need it, and is
// there a hard deadline?" and "What budget range do you have in mind?"
// turn after turn.
func TestChainDoesNotAskForTheCarriedConstraints(t *testing.T) {
	h := handOff(t, "project-discovery", nil, projectDiscoveryMessages...)
	// Exploration without the budget and deadline of the yoga studio,
	// which would replace the carried ones.
	explore := slices.DeleteFunc(slices.Clone(explorationMessages), func(m string) bool {
		return strings.HasPrefix(m, "Our budget is limited")
	})
	h = handOff(t, "exploration", &h, explore...)

	s := newSession(t, "project-discovery")
	m, err := runner.StartMemory(s.def, contracts.SessionStarted{SessionID: "sess-1", ProjectID: "proj-1",
		EngineID: "project-discovery", EngineVersion: s.def.Version, MemoryVersion: engine.MemorySchemaVersion,
		InboundHandoff: &h, StartedAt: epoch})
	if err != nil {
		t.Fatal(err)
	}
	s.state = m
	carried := []string{"budget_range_known", "timeline_known", "tech_constraints_known", "integrations_identified"}
	reply, phases := "", map[string]bool{}
	for turn := 1; turn <= 20; turn++ {
		msg := "Hello again."
		if turn > 1 {
			msg = "Ok."
			for _, a := range discoveryAnswers {
				if strings.Contains(strings.ToLower(reply), a.asked) {
					msg = a.answer
					break
				}
			}
		}
		res := s.say(msg)
		reply = res.Reply
		phases[res.State.Phase.Current] = true
		if turn == 1 && !strings.Contains(reply, "I have noted your constraints: a budget of $90k; within 6 months") {
			t.Errorf("the first reply %q does not say it noted the budget and the timeline", reply)
		}
		for _, id := range carried {
			o, _ := s.def.Obligation(id)
			if strings.Contains(reply, o.Question) || strings.Contains(reply, lowerFirst(o.Question)) {
				t.Fatalf("turn %d (%q) asks %q, which the handoff carried: %q", turn, msg, o.Question, reply)
			}
		}
	}
	if !phases["CONSTRAINTS"] && !phases["VALIDATION"] {
		t.Errorf("the session went through %v, never reaching the constraints", slices.Sorted(maps.Keys(phases)))
	}
	for _, id := range carried {
		if st, _ := s.state.Obligation(id); st.Status != engine.StatusSatisfied {
			t.Errorf("%s is %s, want %s", id, st.Status, engine.StatusSatisfied)
		}
	}
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }
