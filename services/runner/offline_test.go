package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/services/runner"
)

// session drives turns the way the services will: the extractor runs the
// extraction pipeline on the session's state, the runner processes the
// result. Both use the offline provider with the engine skills.
type session struct {
	t      testing.TB
	def    *engine.Definition
	pipe   *extraction.Pipeline
	run    *runner.Runner
	state  *engine.WorkingMemory
	reg    *engine.Registry
	llm    *offline.Offline
	log    []extraction.LogEntry
	links  []extraction.SupersededLink
	phases []string
}

func newSession(t testing.TB, engineID string) *session {
	t.Helper()
	reg, cat := enginetest.ShippedWithRegistry(t)
	def, ok := cat.Get(engineID)
	if !ok {
		t.Fatalf("engine %s not shipped", engineID)
	}
	o, err := offline.New(offline.Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for purpose, skill := range offlineskill.Skills() {
		o.Handle(purpose, skill)
	}
	pipe, err := extraction.New(extraction.Config{LLM: o})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64 // the clock is shared by concurrent sessions in TestConcurrentSessions
	run, err := runner.New(runner.Config{LLM: o, Registry: reg, Logger: slog.New(slog.DiscardHandler),
		Clock: func() time.Time { return epoch.Add(time.Duration(n.Add(1)) * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, def: def, pipe: pipe, run: run, reg: reg, llm: o}
}

func (s *session) say(msg string) *runner.Result {
	s.t.Helper()
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
		s.t.Fatalf("turn %d: extract: %v", turn, err)
	}
	if ext.Degraded {
		s.t.Fatalf("turn %d: extraction degraded: %s", turn, ext.DegradedReason)
	}
	in := runner.FromExtraction(id, turn, msg, ext)
	in.SessionID, in.ProjectID = "sess-1", "proj-1"
	res, err := s.run.Process(ctx, s.def, s.state, in)
	if err != nil {
		s.t.Fatalf("turn %d: process: %v", turn, err)
	}
	if res.Degraded {
		s.t.Fatalf("turn %d: reply degraded: %s", turn, res.DegradedReason)
	}
	s.state = res.State
	s.log = append(s.log, res.Effects.ExtractionLog...)
	s.links = append(s.links, res.Effects.SupersededLinks...)
	s.phases = append(s.phases, res.Phase)
	s.t.Logf("turn %d [%s %.0f%%] user: %s\n  extracted: %v\n  assistant: %s", turn, res.Phase,
		res.Completeness.Overall*100, msg, ext.FieldsUpdated, res.Reply)
	return res
}

// ScriptTurn is one user message of a scripted conversation, with the phase
// the session must be in after it and fields the turn must extract.
type ScriptTurn struct {
	Message string   `json:"message"`
	Phase   string   `json:"phase"`
	Fields  []string `json:"fields"`
}

func loadScript(t testing.TB, path string) []ScriptTurn {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var script []ScriptTurn
	if err := json.Unmarshal(b, &script); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return script
}

// The scripted project-discovery conversation of issue 3 §6: offline, the
// user reaches VALIDATION, confirms the scope, completes the discovery and
// asks to explore options, which fires the exit transition to exploration.
func TestOfflineProjectDiscoveryConversation(t *testing.T) {
	s := newSession(t, "project-discovery")
	script := loadScript(t, "testdata/discovery.json")
	var last *runner.Result
	for i, step := range script {
		last = s.say(step.Message)
		if last.Phase != step.Phase {
			t.Fatalf("turn %d: phase = %s, want %s (blocked by %v)", i+1, last.Phase, step.Phase, last.PhaseBlockedBy)
		}
		updated := map[string]bool{}
		for _, e := range last.Effects.ExtractionLog {
			updated[e.FieldPath] = true
		}
		for _, f := range step.Fields {
			if !updated[f] {
				t.Errorf("turn %d: %s not extracted (log %v)", i+1, f, last.Effects.ExtractionLog)
			}
		}
		// turn.responded names the handoff the turn made, and only then.
		tr, err := last.Responded("tenant-1", fmt.Sprintf("msg-%02d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case last.Effects.Exit != nil:
			if strings.Contains(last.Reply, "?") || !strings.HasSuffix(last.Reply, "Your next message goes there.") {
				t.Errorf("turn %d: the reply that hands off asks what the user cannot answer here: %q", i+1, last.Reply)
			}
			if tr.HandoffID == "" || tr.HandoffID != last.Effects.Exit.HandoffID {
				t.Errorf("turn %d: turn.responded handoff_id = %q, want the handoff made, %q", i+1, tr.HandoffID, last.Effects.Exit.HandoffID)
			}
		case tr.HandoffID != "":
			t.Errorf("turn %d, which made no handoff: turn.responded handoff_id = %q", i+1, tr.HandoffID)
		case !strings.Contains(last.Reply, "?"):
			t.Errorf("turn %d: the reply asks nothing: %q", i+1, last.Reply)
		}
	}
	st := s.state

	// VALIDATION was reached and the scope confirmed.
	if o, _ := st.Obligation("confirm_project_scope"); o.Status != engine.StatusSatisfied {
		t.Errorf("confirm_project_scope = %+v", o)
	}
	// The user put off the team question.
	if o, _ := st.Obligation("team_resources_known"); o.Status != engine.StatusDeferred {
		t.Errorf("team_resources_known = %+v, want deferred", o)
	}
	// Everything else is satisfied.
	for _, o := range st.Obligations.Items {
		if o.ID != "team_resources_known" && o.Status != engine.StatusSatisfied {
			t.Errorf("obligation %s is %s", o.ID, o.Status)
		}
	}
	if st.Completeness.Overall < 0.9 || !st.Completeness.IsReady {
		t.Errorf("completeness = %+v", st.Completeness)
	}
	// The phases went in order, each entered once.
	wantHistory := []string{"OPENING", "CORE_CAPTURE", "USERS_AND_GOALS", "CONSTRAINTS"}
	var got []string
	for _, h := range st.Phase.History {
		got = append(got, h.PhaseID)
	}
	if strings.Join(got, ",") != strings.Join(wantHistory, ",") {
		t.Errorf("phase history = %v, want %v", got, wantHistory)
	}
	// The exit transition to exploration fired on the last turn.
	if last.Effects.Exit == nil || last.Effects.Exit.TargetEngine != "exploration" || last.Effects.Exit.AtTurn != len(script) {
		t.Errorf("exit = %+v", last.Effects.Exit)
	}
	// The extraction log: the budget correction superseded the first budget
	// and links back to it.
	counts := map[extraction.Type]int{}
	var firstBudget, supersede *extraction.LogEntry
	for i := range s.log {
		e := &s.log[i]
		counts[e.ExtractionType]++
		if e.FieldPath == "constraints.budget" {
			if firstBudget == nil {
				firstBudget = e
			} else if e.ExtractionType == extraction.TypeSupersede {
				supersede = e
			}
		}
	}
	if firstBudget == nil || supersede == nil || firstBudget.ExtractionType != extraction.TypeNew {
		t.Fatalf("budget log rows: first %+v, supersede %+v", firstBudget, supersede)
	}
	if f := st.Extraction.Fields["constraints.budget"]; f.SupersededPrevious == nil || string(f.SupersededPrevious.Value) != `"$60k to $80k"` ||
		string(f.Value) != `"$90k"` {
		t.Errorf("budget = %s (previous %+v)", f.Value, f.SupersededPrevious)
	}
	linked := false
	for _, l := range s.links {
		if l.EntryID == firstBudget.ID && l.SupersededBy == supersede.MessageID {
			linked = true
		}
	}
	if !linked {
		t.Errorf("no link from %s to %s in %+v", firstBudget.ID, supersede.MessageID, s.links)
	}
	if counts[extraction.TypeNew] < 24 {
		t.Errorf("log counts = %v, want every field new once", counts)
	}
	// The sidebar shows the last phase and the progress.
	if last.Sidebar.PhaseIndicator.Label != "Confirming Details" || last.Sidebar.ProgressBar.Percentage < 90 {
		t.Errorf("sidebar = %+v %+v", last.Sidebar.PhaseIndicator, last.Sidebar.ProgressBar)
	}
	if len(s.phases) < 15 || len(s.phases) > 25 {
		t.Errorf("the conversation took %d turns", len(s.phases))
	}
}

// The exploration engine through the same runner, offline: orientation,
// education with a teach-back, deliberation, a decision, and the exit
// transition back to project-discovery.
func TestOfflineExplorationConversation(t *testing.T) {
	s := newSession(t, "exploration")
	script := []struct {
		msg       string
		wantPhase string
	}{
		{"I want to figure out the best way to build a booking system for my yoga studio.", "ORIENTATION"},
		{"I've heard of tools like Mindbody, but I have never built software myself.", "ORIENTATION"},
		{"I'm not sure how hosting works and I don't understand what a custom build would cost.", "EDUCATION"},
		{"We are considering an off-the-shelf tool like Mindbody, a no-code platform, or a custom build.", "EDUCATION"},
		{"I like that an off-the-shelf tool is cheap and quick to start.", "EDUCATION"},
		{"I'm worried about monthly fees and being locked in.", "EDUCATION"},
		{"In my own words: an off-the-shelf tool is fastest, no-code is flexible, and a custom build gives full control but costs the most.", "DELIBERATION"},
		{"Our budget is limited to $5,000 and we must be live within two months.", "DELIBERATION"},
		{"For us, speed matters more than control, so cost versus flexibility is the main tradeoff.", "DELIBERATION"},
		{"I'll go with the off-the-shelf tool because it is cheap and fast to start.", "DELIBERATION"},
	}
	var last *runner.Result
	for i, step := range script {
		last = s.say(step.msg)
		if last.Phase != step.wantPhase {
			t.Fatalf("turn %d: phase = %s, want %s (blocked by %v)", i+1, last.Phase, step.wantPhase, last.PhaseBlockedBy)
		}
	}
	st := s.state
	if got := st.Extraction.String("decision.decision_made"); got != "off-the-shelf tool" {
		t.Errorf("decision = %q", got)
	}
	if o, _ := st.Obligation("teach_back_passed"); o.Status != engine.StatusSatisfied {
		t.Errorf("teach_back_passed = %+v", o)
	}
	if !st.Completeness.IsReady || st.Completeness.Overall < 0.6 {
		t.Errorf("completeness = %+v", st.Completeness)
	}
	if last.Effects.Exit == nil || last.Effects.Exit.TargetEngine != "project-discovery" {
		t.Errorf("exit = %+v", last.Effects.Exit)
	}
	// The landscape research was dispatched once; no worker answered (this
	// test runs no background service), so after twice its timeout (60s ×
	// 2, twice; the test clock moves a minute a turn) its strategy settled
	// it: degraded, with the engine's degraded behaviour for the agent.
	bt := st.BackgroundTasks
	if len(last.Effects.Tasks) != 0 || len(bt.Pending) != 0 || len(bt.Completed) != 1 {
		t.Fatalf("background tasks = %+v", bt)
	}
	if r := bt.Completed[0]; r.TaskID != "landscape_research" || r.Status != engine.TaskDegraded || r.Attempt != 1 ||
		!strings.Contains(r.Error, "no answer") || r.SettledAtTurn != 6 {
		t.Errorf("landscape research = %+v", r)
	}
}

// The seed's fifth key scenario: one runner handles an extract-dominant and
// an inform-dominant engine, by configuration alone.
func TestFrameworkAgnostic(t *testing.T) {
	discovery := newSession(t, "project-discovery")
	exploration := newSession(t, "exploration")
	exploration.run = discovery.run // the very same runner
	d := discovery.say("I need a project management tool")
	e := exploration.say("Tell me about project management approaches")
	if d.State.EngineType != engine.ExtractDominant || e.State.EngineType != engine.InformDominant {
		t.Errorf("engine types = %s, %s", d.State.EngineType, e.State.EngineType)
	}
	if d.Phase != "OPENING" || e.Phase != "ORIENTATION" {
		t.Errorf("phases = %s, %s", d.Phase, e.Phase)
	}
	if d.State.EngineID != "project-discovery" || e.State.EngineID != "exploration" || len(d.State.Obligations.Items) != 25 || len(e.State.Obligations.Items) != 18 {
		t.Error("each state follows its own engine")
	}
}

// Determinism: the same conversation twice gives the same state hash at
// every turn (offline provider, injected clock).
func TestOfflineConversationIsDeterministic(t *testing.T) {
	msgs := []string{
		"Hi! Our field technicians keep losing track of their jobs because everything runs on paper and spreadsheets.",
		"Last month we missed three urgent repairs and lost a big customer.",
		"About 40 technicians, plus 5 office dispatchers who plan the routes.",
		"Actually, it is about 45 technicians now.",
		"They need to see their daily jobs, record the work done, take photos and get the customer's signature.",
		"I'm not sure, can we skip that?",
	}
	play := func() []string {
		s := newSession(t, "project-discovery")
		var hashes []string
		for _, m := range msgs {
			hashes = append(hashes, s.say(m).StateHash)
		}
		return hashes
	}
	a, b := play(), play()
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("hashes differ:\n%v\n%v", a, b)
	}
}

func TestRespondedPayload(t *testing.T) {
	s := newSession(t, "project-discovery")
	res := s.say("We keep losing track of jobs. We want a mobile app.")
	tr, err := res.Responded("tenant-1", "msg-01")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if tr.Text != res.Reply || tr.Phase != res.Phase || tr.TurnNumber != 1 || tr.SessionID != "sess-1" || len(tr.Sidebar) == 0 {
		t.Errorf("payload = %+v", tr)
	}
	if runner.PurposeResponse != offlineskill.PurposeResponse {
		t.Error("the reply skill listens on another purpose than the runner uses")
	}
}

// One runner serves many sessions at once (run with -race).
func TestConcurrentSessions(t *testing.T) {
	base := newSession(t, "project-discovery")
	done := make(chan error, 4)
	for i := range 4 {
		go func() {
			ctx := context.Background()
			var st *engine.WorkingMemory
			for turn := 1; turn <= 3; turn++ {
				msg := fmt.Sprintf("Session %d turn %d: we keep losing track of jobs, about %d technicians.", i, turn, 10+i)
				cur := engine.NewExtraction()
				if st != nil {
					cur = st.Extraction
				}
				id := fmt.Sprintf("s%d-m%d", i, turn)
				ext, err := base.pipe.Extract(ctx, extraction.Request{Def: base.def, Current: cur, Message: msg,
					Meta: extraction.Meta{SessionID: fmt.Sprint("s", i), MessageID: id, TurnNumber: turn}})
				if err != nil {
					done <- err
					return
				}
				in := runner.FromExtraction(id, turn, msg, ext)
				in.SessionID = fmt.Sprint("s", i)
				res, err := base.run.Process(ctx, base.def, st, in)
				if err != nil {
					done <- err
					return
				}
				st = res.State
			}
			if st.SessionID != fmt.Sprint("s", i) || st.TurnNumber != 3 {
				done <- fmt.Errorf("session %d ended as %s at turn %d", i, st.SessionID, st.TurnNumber)
				return
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Saying a known item is not what its list holds takes it off through the
// whole extraction: the offline skill answers the whole list without it,
// and the list is replaced, not merged with the answer (which put Pret
// back), though the message has no correction word.
func TestOfflineListCorrectionTakesTheItemOff(t *testing.T) {
	s := newSession(t, "business-profile")
	s.say("Our competitors are Greggs and Pret.")
	s.say("Pret isn't a competitor, it's Costa.")
	var got []string
	if !s.state.Extraction.Decode("target_market.competitors", &got) {
		t.Fatal("no competitors")
	}
	if !slices.Equal(got, []string{"Greggs", "Costa"}) {
		t.Errorf("competitors = %q, want [Greggs Costa]", got)
	}
}
