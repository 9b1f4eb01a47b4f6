package offlineskill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/services/runner"
)

// The conversation corpus (testdata/conversations/*.yaml): conversations a
// user of each shipped engine would hold, offline, run turn by turn through
// the extraction pipeline and the runner, as the services run them. After
// each turn the fields that matter must hold what a careful reader of the
// conversation would file: a value, or unset. An expectation the skill
// does not meet yet is written as {want: …, known_miss: "why"}: it must
// still fail, so that a fix that meets it promotes it to a plain one.
//
// Values compare loosely, as a reader reads them: strings without case or
// final punctuation, lists as sets of such strings, numbers as numbers. A
// string "~ text" wants a value that contains text. "unset" wants no value,
// and [] a list the user said is empty (null).

// corpusFile is one file of the corpus: conversations with one engine.
type corpusFile struct {
	Engine        string               `yaml:"engine"`
	Conversations []corpusConversation `yaml:"conversations"`
}

type corpusConversation struct {
	Name  string       `yaml:"name"`
	Turns []corpusTurn `yaml:"turns"`
}

type corpusTurn struct {
	Say    string               `yaml:"say"`
	Expect map[string]yaml.Node `yaml:"expect"`
}

// corpusExpectation is what a turn wants of a field.
type corpusExpectation struct {
	want      any    // decoded YAML: "unset", a string, a number, a bool or a list
	knownMiss string // why the skill does not meet it yet; "" when it does
}

func (t corpusTurn) expectations(tb testing.TB) map[string]corpusExpectation {
	tb.Helper()
	out := make(map[string]corpusExpectation, len(t.Expect))
	for path, n := range t.Expect {
		var e corpusExpectation
		if n.Kind == yaml.MappingNode {
			var m struct {
				Want      yaml.Node `yaml:"want"`
				KnownMiss string    `yaml:"known_miss"`
			}
			if err := n.Decode(&m); err != nil || m.KnownMiss == "" {
				tb.Fatalf("%q: %s: an expectation that is a mapping is {want, known_miss} (%v)", t.Say, path, err)
			}
			n, e.knownMiss = m.Want, m.KnownMiss
		}
		if err := n.Decode(&e.want); err != nil {
			tb.Fatalf("%q: %s: %v", t.Say, path, err)
		}
		out[path] = e
	}
	return out
}

// corpusSession drives a conversation as the services do: the extraction
// pipeline on the session's state, then the runner, both on the offline
// provider with the engine skills.
type corpusSession struct {
	tb    testing.TB
	def   *engine.Definition
	pipe  *extraction.Pipeline
	run   *runner.Runner
	state *engine.WorkingMemory
}

func newCorpusSession(tb testing.TB, engineID string) *corpusSession {
	tb.Helper()
	reg, cat := enginetest.ShippedWithRegistry(tb)
	def, ok := cat.Get(engineID)
	if !ok {
		tb.Fatalf("engine %s not shipped", engineID)
	}
	o, err := offline.New(offline.Config{Seed: 7})
	if err != nil {
		tb.Fatal(err)
	}
	for purpose, skill := range offlineskill.Skills() {
		o.Handle(purpose, skill)
	}
	pipe, err := extraction.New(extraction.Config{LLM: o})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	run, err := runner.New(runner.Config{LLM: o, Registry: reg, Logger: slog.New(slog.DiscardHandler),
		Clock: func() time.Time { n++; return time.Date(2026, 1, 1, 0, n, 0, 0, time.UTC) }})
	if err != nil {
		tb.Fatal(err)
	}
	return &corpusSession{tb: tb, def: def, pipe: pipe, run: run}
}

func (s *corpusSession) say(msg string) *runner.Result {
	s.tb.Helper()
	ctx := context.Background()
	turn, cur, focus := 1, engine.NewExtraction(), ""
	var hist []engine.Message
	if s.state != nil {
		turn, cur, focus, hist = s.state.TurnNumber+1, s.state.Extraction, s.state.Obligations.Focus, s.state.History
	}
	id := fmt.Sprintf("msg-%02d", turn)
	ext, err := s.pipe.Extract(ctx, extraction.Request{Def: s.def, Current: cur, Message: msg, History: hist, Focus: focus,
		Meta: extraction.Meta{SessionID: "sess-1", ProjectID: "proj-1", MessageID: id, EngineID: s.def.EngineID, TurnNumber: turn}})
	if err != nil {
		s.tb.Fatalf("turn %d: extract: %v", turn, err)
	}
	in := runner.FromExtraction(id, turn, msg, ext)
	in.SessionID, in.ProjectID = "sess-1", "proj-1"
	res, err := s.run.Process(ctx, s.def, s.state, in)
	if err != nil {
		s.tb.Fatalf("turn %d: process: %v", turn, err)
	}
	s.state = res.State
	s.tb.Logf("turn %d [%s, asked %s] user: %s\n  extracted: %v\n  assistant: %s", turn, res.Phase, focus, msg,
		ext.FieldsUpdated, res.Reply)
	return res
}

// got is a field's value, decoded, and whether the field holds one;
// present reports a field recorded as null (a list the user said is
// empty).
func (s *corpusSession) got(path string) (v any, ok, present bool) {
	f, present := s.state.Extraction.Get(path)
	if !present || f.IsNull() {
		return nil, false, present
	}
	if err := json.Unmarshal(f.Value, &v); err != nil {
		s.tb.Fatalf("%s: %v", path, err)
	}
	return v, true, true
}

// corpusMatches reports whether a field's value is what a reader wants.
func corpusMatches(want, got any, ok, present bool) bool {
	switch w := want.(type) {
	case string:
		if w == "unset" {
			return !present
		}
		g, isString := got.(string)
		return isString && corpusSays(g, w)
	case int:
		g, isNumber := got.(float64)
		return isNumber && g == float64(w)
	case float64:
		g, isNumber := got.(float64)
		return isNumber && g == w
	case bool:
		g, isBool := got.(bool)
		return isBool && g == w
	case []any:
		g, _ := got.([]any)
		if len(w) == 0 {
			return present && len(g) == 0
		}
		if !ok || len(g) != len(w) {
			return false
		}
		// Each item wanted is a distinct item got, in any order.
		used := make([]bool, len(g))
	wanted:
		for _, wi := range w {
			for i, gi := range g {
				if !used[i] && corpusSays(fmt.Sprint(gi), fmt.Sprint(wi)) {
					used[i] = true
					continue wanted
				}
			}
			return false
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

// corpusSays reports whether a string value is the one wanted: the same
// but for case and final punctuation, or, for "~ text", one that holds
// text.
func corpusSays(got, want string) bool {
	norm := func(s string) string { return strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), ".!?,;: ") }
	if rest, contains := strings.CutPrefix(want, "~ "); contains {
		return strings.Contains(norm(got), norm(rest))
	}
	return norm(got) == norm(want)
}

func TestConversationCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "conversations", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations in testdata/conversations (%v)", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var cf corpusFile
		if err := yaml.Unmarshal(b, &cf); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, c := range cf.Conversations {
			t.Run(cf.Engine+"/"+c.Name, func(t *testing.T) {
				t.Parallel()
				s := newCorpusSession(t, cf.Engine)
				for i, turn := range c.Turns {
					s.say(turn.Say)
					exps := turn.expectations(t)
					for _, path := range slices.Sorted(maps.Keys(exps)) {
						e := exps[path]
						got, ok, present := s.got(path)
						shown := any("unset")
						if present {
							shown = got
						}
						switch met := corpusMatches(e.want, got, ok, present); {
						case !met && e.knownMiss == "":
							t.Errorf("turn %d %q: %s = %#v, want %#v", i+1, turn.Say, path, shown, e.want)
						case !met:
							t.Logf("turn %d: known miss %s = %#v, want %#v (%s)", i+1, path, shown, e.want, e.knownMiss)
						case e.knownMiss != "":
							t.Errorf("turn %d %q: %s = %#v as wanted, but it is marked a known miss (%s): promote it",
								i+1, turn.Say, path, shown, e.knownMiss)
						}
					}
				}
			})
		}
	}
}

// Exploration's question "What are you unsure about …?" files a plain
// answer as a knowledge gap, which settles it: asked again, it would have
// come back until the user happened to say "not sure" or "don't know".
func TestExplorationKnowledgeGapAnsweredPlainly(t *testing.T) {
	t.Parallel()
	s := newCorpusSession(t, "exploration")
	s.say("I want to figure out how to take table bookings online for my cafe.")
	s.say("I've used OpenTable at other places but never set one up.")
	if s.state.Obligations.Focus != "knowledge_gaps_identified" {
		t.Fatalf("asked for %q, want knowledge_gaps_identified", s.state.Obligations.Focus)
	}
	s.say("The monthly fees.")
	if got, _, _ := s.got("initial_state.knowledge_gaps"); !reflect.DeepEqual(got, []any{"The monthly fees"}) {
		t.Errorf("knowledge gaps = %#v, want [The monthly fees]", got)
	}
	for _, o := range s.state.Obligations.Items {
		if o.ID == "knowledge_gaps_identified" && o.Status != engine.StatusSatisfied {
			t.Errorf("knowledge_gaps_identified is %s, want satisfied", o.Status)
		}
	}
	if s.state.Obligations.Focus == "knowledge_gaps_identified" {
		t.Errorf("the reply asks what the user is unsure about again")
	}
}

// The replies of the side-business chat with ideation that a user
// reported: each said back what it should not, or passed over the user's
// question.
func TestIdeationSideBusinessReplies(t *testing.T) {
	t.Parallel()
	s := newCorpusSession(t, "ideation")
	for _, tt := range []struct {
		say, notWant, want string
	}{
		{say: "I want to come up with ideas for a side business around my woodworking hobby."},
		{say: "I make cutting boards and small furniture, mostly walnut and oak."},
		{say: "My goal is to make maybe 500 dollars a month extra, I can spend weekends on it."},
		{say: "People at the farmers market love the end-grain boards."},
		{say: "One idea is selling cutting boards on Etsy."},
		{say: "Another idea: woodworking classes in my garage for beginners.", notWant: "another idea:"},
		{say: "Or custom engraved boards for weddings.", notWant: "It sounds like custom"},
		{say: "The classes need insurance, which I'm not sure about."},
		{say: "Etsy fees are about 10 percent, and shipping heavy boards is expensive.", notWant: "off-the-shelf"},
		{say: "I think the wedding boards are the most promising, margins are high.", notWant: "off-the-shelf"},
		{say: "What would you do next?", want: "Good question. First, let's settle this: "},
	} {
		reply := s.say(tt.say).Reply
		if tt.notWant != "" && strings.Contains(reply, tt.notWant) {
			t.Errorf("%q: reply %q says %q", tt.say, reply, tt.notWant)
		}
		if tt.want != "" && !strings.HasPrefix(reply, tt.want) {
			t.Errorf("%q: reply %q, want it to open with %q", tt.say, reply, tt.want)
		}
	}
}

// askedFor answers each question the session asks with the answer for its
// obligation until it asks for want, and fails when it asks for another
// one it has no answer for.
func (s *corpusSession) askedFor(want string, answers map[string]string) {
	s.tb.Helper()
	for range len(answers) + 1 {
		focus := s.state.Obligations.Focus
		if focus == want {
			return
		}
		a, ok := answers[focus]
		if !ok {
			s.tb.Fatalf("asked for %q, want %q", focus, want)
		}
		s.say(a)
	}
	s.tb.Fatalf("asked for %q, want %q", s.state.Obligations.Focus, want)
}

// discoveryAnswers answer project-discovery's questions up to the users'
// pain points for a cleaning company's app.
var discoveryAnswers = map[string]string{
	"project_type_identified":     "A mobile app.",
	"trigger_event_identified":    "We lost two clients over missed cleans last month.",
	"current_solution_understood": "Paper timesheets and a group chat.",
	"primary_user_identified":     "The cleaners.",
	"user_count_estimated":        "About 30 cleaners.",
	"jobs_to_be_done_captured":    "They need to log their hours.",
}

// Asked what frustrates the users, a sentence that says something is a
// waste of time files what wastes it, not the time ("waste" is a cue of
// the pain points).
func TestDiscoveryWasteOfTimeIsThePainPoint(t *testing.T) {
	t.Parallel()
	for _, say := range []string{"The paperwork is a waste of time.", "Admin is a waste of time.",
		// What is wasted is one thing, however many words name it, and a
		// clause that says what is wasted is said whole.
		"It's a waste of time and money.", "The paperwork is a waste of our time and effort.", "We waste a lot of flour."} {
		t.Run(say, func(t *testing.T) {
			t.Parallel()
			s := newCorpusSession(t, "project-discovery")
			s.say("We need an app for our cleaning company so the cleaners can log their jobs.")
			s.askedFor("user_pain_points_captured", discoveryAnswers)
			reply := s.say(say).Reply
			want := strings.TrimSuffix(say, ".")
			if got, _, _ := s.got("users_and_personas.pain_points"); !reflect.DeepEqual(got, []any{want}) {
				t.Errorf("pain points = %#v, want [%s]", got, want)
			}
			if strings.Contains(reply, "pain points: time") {
				t.Errorf("reply %q files the time as the pain point", reply)
			}
		})
	}
}

// Asked what problem to find ideas for, a sentence that only asks for
// ideas files what it wants them for, and the reply says that back.
func TestIdeationProblemWithoutItsFraming(t *testing.T) {
	t.Parallel()
	for say, want := range map[string]string{
		"Let's find ideas to grow wholesale orders.":        "grow wholesale orders",
		"We want ideas to fill the quiet weekday mornings.": "fill the quiet weekday mornings",
		"Side business ideas for my pottery.":               "Side business ideas for my pottery",
		// Words that do not ask for ideas frame nothing, nor does a clause
		// in which what they are for is the subject of a verb.
		"Good ideas for the menu keep coming from staff.":   "Good ideas for the menu keep coming from staff",
		"Some ideas for the menu are in my notebook.":       "Some ideas for the menu are in my notebook",
		"Needing new ideas for the menu keeps coming up.":   "Needing new ideas for the menu keeps coming up",
		"Need new ideas for the menu keeps coming up.":      "Need new ideas for the menu keeps coming up",
		"We need ideas for the menu we can sell in summer.": "the menu we can sell in summer",
		"We want ideas for the menu that are cheap.":        "the menu that are cheap",
		"I'm looking for ideas to fill the quiet mornings.": "fill the quiet mornings",
	} {
		t.Run(say, func(t *testing.T) {
			t.Parallel()
			s := newCorpusSession(t, "ideation")
			reply := s.say(say).Reply
			if got, _, _ := s.got("problem_space.problem_statement"); got != want {
				t.Errorf("problem = %#v, want %q", got, want)
			}
			if strings.Contains(strings.ToLower(reply), "down as let's") {
				t.Errorf("reply %q says the framing back as the problem", reply)
			}
		})
	}
}

// Changing perspective pictures the people who will use a product only
// when the question asks who uses it: a business or a problem to find
// ideas for has people it affects, no one who uses it.
func TestChangePerspectiveFitsTheEngine(t *testing.T) {
	t.Parallel()
	const used = "the people who will use it every day"
	for _, tt := range []struct {
		engine, phase, next string
		uses                bool
	}{
		{"project-discovery", "USERS_AND_GOALS", "primary_user_identified", true},
		{"ideation", "DIVERGE", "ideas_captured", false},
		{"business-profile", "OPERATIONS", "key_partners_identified", false},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			t.Parallel()
			def, ok := enginetest.Shipped(t).Get(tt.engine)
			if !ok {
				t.Fatalf("engine %s not shipped", tt.engine)
			}
			m := engine.NewWorkingMemory(def, "s", "p")
			m.TurnNumber = 2
			m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "hi"},
				{Role: engine.RoleAssistant, Turn: 1, Content: "Hello! What is on your mind?"}}
			reply, err := offlineskill.Reply(context.Background(),
				replyPrompt(t, def, tt.phase, []string{"change_perspective"}, tt.next, m, "Sure."))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(reply, used); got != tt.uses {
				t.Errorf("reply %q says %q: %v, want %v", reply, used, got, tt.uses)
			}
			if !strings.HasPrefix(reply, "Picture it from the point of view of the people") {
				t.Errorf("reply %q does not change perspective", reply)
			}
		})
	}
}

// Asked what jobs the users need done, a lack ("Not being able to pay
// online") is a pain point, no job, and the reply says it back as a thing,
// not as a clause.
func TestDiscoveryLackToTheJobsIsAPainPoint(t *testing.T) {
	t.Parallel()
	s := newCorpusSession(t, "project-discovery")
	s.say("We need an app for our cleaning company so the cleaners can log their jobs.")
	s.askedFor("jobs_to_be_done_captured", discoveryAnswers)
	reply := s.say("Not being able to pay online.").Reply
	if got, _, present := s.got("users_and_personas.jobs_to_be_done"); present {
		t.Errorf("jobs to be done = %#v, want unset", got)
	}
	if got, _, _ := s.got("users_and_personas.pain_points"); !reflect.DeepEqual(got, []any{"Not being able to pay online"}) {
		t.Errorf("pain points = %#v, want [Not being able to pay online]", got)
	}
	if strings.Contains(reply, "that not being") {
		t.Errorf("reply %q makes a clause of the lack", reply)
	}
}

// A lack ("Not being able to pay online") names a thing: listening says it
// back in no clause ("So what matters to you is that not being able to …").
func TestReflectingALackMakesNoClause(t *testing.T) {
	t.Parallel()
	def := discovery(t)
	for _, technique := range []string{"reflective_listening", "active_listening"} {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "hi"},
			{Role: engine.RoleAssistant, Turn: 1, Content: "Hello! What would you like to build?"}}
		reply, err := offlineskill.Reply(context.Background(), replyPrompt(t, def, "USERS_AND_GOALS",
			[]string{technique}, "jobs_to_be_done_captured", m, "Not being able to pay online."))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(reply, "that not being") || strings.Contains(reply, "like not being") {
			t.Errorf("%s: reply %q makes a clause of the lack", technique, reply)
		}
	}
}

// A value made only of function words names nothing, whatever was asked:
// "Within." is no key partner, nor "And also it.";
// the items beside such a word stay, and so does the user ("Us").
func TestExtractionSkillFunctionWordsAloneAreNoValue(t *testing.T) {
	t.Parallel()
	const partners = "partnerships_and_integrations.key_partners"
	runExtractionCases(t, []extractionCase{
		{name: "within", engine: "business-profile", focus: "key_partners_identified", msg: "Within.", absent: []string{partners}},
		{name: "the", engine: "business-profile", focus: "key_partners_identified", msg: "The.", absent: []string{partners}},
		{name: "and also it", engine: "business-profile", focus: "key_partners_identified", msg: "And also it.",
			absent: []string{partners}},
		{name: "an item beside", engine: "business-profile", focus: "key_partners_identified", msg: "The mill, and within.",
			want: map[string]any{partners: []any{"The mill"}}},
		{name: "the user", focus: "primary_user_identified", msg: "Us.",
			want: map[string]any{"users_and_personas.primary_user": "Us"}},
		// A word that is also a name keeps its capital: "Will" is a person.
		{name: "a name", engine: "business-profile", focus: "tech_ownership_known", msg: "Will.",
			want: map[string]any{"technology_stack.tech_ownership": "Will"}},
		{name: "a name and a verb", engine: "business-profile", focus: "tech_ownership_known", msg: "Will does.",
			want: map[string]any{"technology_stack.tech_ownership": "Will does"}},
		{name: "a name as the user", focus: "primary_user_identified", msg: "May.",
			want: map[string]any{"users_and_personas.primary_user": "May"}},
		{name: "a name that is a verb", focus: "primary_user_identified", msg: "Will does.",
			want: map[string]any{"users_and_personas.primary_user": "Will does"}},
		{name: "lowercase", engine: "business-profile", focus: "tech_ownership_known", msg: "will.",
			absent: []string{"technology_stack.tech_ownership"}},
		// Fillers name nothing.
		{name: "fillers", engine: "ideation", focus: "problem_defined", msg: "We need ideas for the, um, the.",
			absent: []string{"problem_space.problem_statement"}},
		{name: "an acronym", focus: "primary_user_identified", msg: "The ER.",
			want: map[string]any{"users_and_personas.primary_user": "The ER"}},
		{name: "uh er", engine: "business-profile", focus: "key_partners_identified", msg: "Uh, er.", absent: []string{partners}},
	})
}

// Asked what frustrates the users, a sentence that says time is wasted on
// something says what wastes it: "Wasting time on double entry" is the
// pain point, not "time on double entry".
func TestDiscoveryWastingTimeOnSomethingIsThePainPoint(t *testing.T) {
	t.Parallel()
	for say, want := range map[string][]any{
		"Wasting time on double entry.":                           {"Wasting time on double entry"},
		"We waste so much time on invoices, and the app crashes.": {"We waste so much time on invoices", "the app crashes"},
		"It's a waste of time and money, and the app crashes.":    {"It's a waste of time and money", "the app crashes"},
		"It's a waste of our time, money and effort.":             {"It's a waste of our time, money and effort"},
		"We waste a lot of flour, and deliveries are late.":       {"We waste a lot of flour", "deliveries are late"},
		"Wasted stock and late deliveries.":                       {"Wasted stock", "late deliveries"},
	} {
		t.Run(say, func(t *testing.T) {
			t.Parallel()
			def, focus := asking(t, "project-discovery", "users_and_personas.pain_points")
			ans := extract(t, def, known(t, def, nil), focus, say)
			var got any
			if fa, ok := ans.Fields["users_and_personas.pain_points"]; ok {
				_ = json.Unmarshal(fa.Value, &got)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("pain points = %#v, want %#v", got, want)
			}
		})
	}
}
