package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/services/runner"
)

type fakeLLM struct {
	reply  string
	finish string
	err    error
	reqs   []llm.Request
}

func (f *fakeLLM) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return nil, f.err
	}
	return &llm.Response{Content: f.reply, Provider: "fake", Model: "fake-1", FinishReason: f.finish}, nil
}

var epoch = time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)

func newRunner(t *testing.T, l runner.Completer) *runner.Runner {
	t.Helper()
	n := 0
	r, err := runner.New(runner.Config{LLM: l, Registry: enginetest.Registry(), Logger: slog.New(slog.DiscardHandler),
		Clock: func() time.Time { n++; return epoch.Add(time.Duration(n) * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// input extracts fields (path -> value) at confidence 0.9 from a message, as
// the extractor would, and builds the runner's input.
func input(t *testing.T, def *engine.Definition, st *engine.WorkingMemory, msg string, fields map[string]any) runner.Input {
	t.Helper()
	turn := 1
	cur := engine.NewExtraction()
	if st != nil {
		turn, cur = st.TurnNumber+1, st.Extraction
	}
	ans := extraction.Answer{Fields: map[string]extraction.FieldAnswer{}}
	for p, v := range fields {
		b, _ := json.Marshal(v)
		ans.Fields[p] = extraction.FieldAnswer{Value: b, Confidence: 0.9}
	}
	id := fmt.Sprintf("msg-%d", turn)
	res := extraction.Apply(def, cur, ans, msg, extraction.Meta{SessionID: "s1", ProjectID: "p1", MessageID: id, EngineID: def.EngineID, TurnNumber: turn})
	in := runner.FromExtraction(id, turn, msg, res)
	in.SessionID, in.ProjectID = "s1", "p1"
	return in
}

func process(t *testing.T, r *runner.Runner, def *engine.Definition, st *engine.WorkingMemory, in runner.Input) *runner.Result {
	t.Helper()
	res, err := r.Process(context.Background(), def, st, in)
	if err != nil {
		t.Fatalf("turn %d: %v", in.TurnNumber, err)
	}
	return res
}

func TestStepsRunInTheSeedsOrder(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "What do you want to achieve?"})
	res := process(t, r, def, nil, input(t, def, nil, "Hello", nil))
	want := []string{"pre-processing", "extraction", "saturation", "socio-emotional", "completeness",
		"phase-transition-eval", "phase-transition-exec", "background-tasks", "technique-selection",
		"context-assembly", "compression-check", "response-generation", "qa-check", "mode-classification",
		"telemetry", "sidebar", "exit-transitions", "persist-state", "return"}
	if !slices.Equal(res.Steps, want) || !slices.Equal(runner.Steps(), want) {
		t.Errorf("steps = %v, want %v", res.Steps, want)
	}
}

func TestFirstTurn(t *testing.T) {
	def := enginetest.Definition()
	l := &fakeLLM{reply: "Great. Who will use it?"}
	r := newRunner(t, l)
	res := process(t, r, def, nil, input(t, def, nil, "We want to ship a task tracker.", map[string]any{"basics.goal": "ship a task tracker"}))
	m := res.State
	if m.TurnNumber != 1 || m.Phase.Current != "INTRO" || m.Phase.TurnsInPhase != 1 || m.LastMessageID != "msg-1" {
		t.Errorf("state = turn %d, phase %s/%d, last %s", m.TurnNumber, m.Phase.Current, m.Phase.TurnsInPhase, m.LastMessageID)
	}
	if len(m.History) != 2 || m.History[0].Role != engine.RoleUser || m.History[1].Content != "Great. Who will use it?" {
		t.Errorf("history = %+v", m.History)
	}
	if res.Reply != "Great. Who will use it?" || res.Provider != "fake" || res.Degraded {
		t.Errorf("reply = %q provider %q degraded %t", res.Reply, res.Provider, res.Degraded)
	}
	if o, _ := m.Obligation("goal_known"); o.Status != engine.StatusSatisfied {
		t.Errorf("goal_known = %+v", o)
	}
	if m.Obligations.Focus != "users_known" {
		t.Errorf("focus = %q, want users_known (next obligation)", m.Obligations.Focus)
	}
	if len(res.Effects.ExtractionLog) != 1 || res.Effects.ExtractionLog[0].ExtractionType != extraction.TypeNew ||
		res.Effects.ExtractionLog[0].MessageID != "msg-1" {
		t.Errorf("log = %+v", res.Effects.ExtractionLog)
	}
	if !m.UpdatedAt.Equal(epoch.Add(time.Minute)) || !res.ProcessedAt.Equal(m.UpdatedAt) {
		t.Errorf("updated_at = %v", m.UpdatedAt)
	}
	if res.StateHash == "" || res.Sidebar.ProgressBar == nil || res.Sidebar.ProgressBar.Percentage != 13 {
		t.Errorf("hash %q, sidebar %+v", res.StateHash, res.Sidebar.ProgressBar)
	}
	// The response prompt: the engine's template, then the context sections,
	// and the user's message as the user turn.
	req := l.reqs[0]
	sys := req.Messages[0].Content
	if req.Purpose != runner.PurposeResponse || !strings.HasPrefix(sys, "You are Testing. Phase: Introduction.") ||
		!strings.Contains(sys, "NEXT OBLIGATION: users_known") || req.Messages[1].Content != "We want to ship a task tracker." {
		t.Errorf("request = %+v", req)
	}
	if strings.Contains(sys, "=== CURRENT USER MESSAGE ===") {
		t.Error("the user message is repeated in the system prompt")
	}
}

func TestProcessLeavesItsInputAlone(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "ok?"})
	first := process(t, r, def, nil, input(t, def, nil, "hi", nil))
	before, _ := engine.StateHash(first.State)
	process(t, r, def, first.State, input(t, def, first.State, "We want a tracker", map[string]any{"basics.goal": "a tracker"}))
	after, _ := engine.StateHash(first.State)
	if before != after {
		t.Error("Process changed the state it was given")
	}
}

func TestBadInput(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "ok?"})
	st := process(t, r, def, nil, input(t, def, nil, "hi", nil)).State
	other := enginetest.Definition()
	other.EngineID = "other"
	tests := []struct {
		name string
		def  *engine.Definition
		in   func() runner.Input
		want error
	}{
		{"empty", def, func() runner.Input { in := input(t, def, st, "x", nil); in.Message = "  "; return in }, runner.ErrEmptyMessage},
		{"duplicate", def, func() runner.Input { in := input(t, def, st, "x", nil); in.TurnNumber = 1; return in }, runner.ErrDuplicateTurn},
		{"gap", def, func() runner.Input { in := input(t, def, st, "x", nil); in.TurnNumber = 5; return in }, runner.ErrTurnGap},
		{"other engine", other, func() runner.Input { return input(t, def, st, "x", nil) }, runner.ErrEngineMismatch},
	}
	for _, tt := range tests {
		if _, err := r.Process(context.Background(), tt.def, st, tt.in()); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// A message over the limit is cut to it, never in the middle of a
// character, and the turn is answered, degraded; a gap in the turns is
// taken when the input accepts it.
func TestLongMessageAndGap(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "ok?"})
	st := process(t, r, def, nil, input(t, def, nil, "hi", nil)).State
	in := input(t, def, st, "x", nil)
	in.Message = "a" + strings.Repeat("é", 16<<10) // 32 kB and one: the limit, 16 kB, falls inside an é
	res := process(t, r, def, st, in)
	got := res.State.History[len(res.State.History)-2].Content
	if len(got) != 16<<10-1 || !utf8.ValidString(got) || !strings.HasPrefix(in.Message, got) {
		t.Errorf("the message went into the history as %d bytes (valid UTF-8: %t), want its first %d", len(got), utf8.ValidString(got), 16<<10-1)
	}
	if !res.Degraded || !strings.Contains(res.DegradedReason, fmt.Sprint(len(in.Message))) || res.Reply == "" {
		t.Errorf("degraded %t (%q), reply %q; want a degraded reply that says how long the message was", res.Degraded, res.DegradedReason, res.Reply)
	}
	gap := input(t, def, res.State, "we are back", nil)
	gap.TurnNumber, gap.AcceptGap = 5, true
	if res := process(t, r, def, res.State, gap); res.State.TurnNumber != 5 {
		t.Errorf("after the gap the state is at turn %d, want 5", res.State.TurnNumber)
	}
}

func TestDegradedReplyStillAnswersTheTurn(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{err: &llm.APIError{Provider: "fake", Err: llm.ErrUnavailable, Message: "503"}})
	res := process(t, r, def, nil, input(t, def, nil, "hello", nil))
	if !res.Degraded || !strings.Contains(res.DegradedReason, "response generation") {
		t.Errorf("degraded = %t %q", res.Degraded, res.DegradedReason)
	}
	want := "Sorry, I could not prepare a full answer just now. Let's keep going: What do you want to achieve?"
	if res.Reply != want {
		t.Errorf("reply = %q, want %q", res.Reply, want)
	}
	if res.State.TurnNumber != 1 || res.State.History[1].Content != want {
		t.Errorf("turn not recorded: %+v", res.State.History)
	}
}

// How the model ended its reply counts: one cut off at the token limit is
// kept to its last whole sentence, one withheld or empty gets the fallback;
// each is degraded, and counted so.
func TestRepliesTheModelDidNotFinish(t *testing.T) {
	def := enginetest.Definition()
	fallback := "Sorry, I could not prepare a full answer just now. Let's keep going: What do you want to achieve?"
	tests := []struct {
		name, reply, finish, want, reason string
	}{
		{"cut off", "Thanks, that helps. The price of 3.5 units matters. Could you tell me which teams will use it and wh",
			llm.FinishLength, "Thanks, that helps. The price of 3.5 units matters.", "cut off at the token limit"},
		{"cut off in a list", "Here are three options.\n1. An off-the-shelf tool\n2. A no-code app\n3.", llm.FinishLength,
			"Here are three options.", "cut off at the token limit"},
		{"cut off after an abbreviation", "Options exist. Options include e.g. Jobber or", llm.FinishLength,
			"Options exist.", "cut off at the token limit"},
		{"cut off after a sentence ending in a number", "Great. Your team has 40 technicians. We can launch in 2026. What is your bud",
			llm.FinishLength, "Great. Your team has 40 technicians. We can launch in 2026.", "cut off at the token limit"},
		{"cut off after a figure after a colon", "Got it, team size: 12. What is your bud", llm.FinishLength,
			"Got it, team size: 12.", "cut off at the token limit"},
		{"cut off after etc.", "Thanks. We use Redis, Postgres, etc. Then we ask ab", llm.FinishLength,
			"Thanks. We use Redis, Postgres, etc.", "cut off at the token limit"},
		{"cut off after a quote", `You said "we lose jobs." Could you tell me wh`, llm.FinishLength,
			`You said "we lose jobs."`, "cut off at the token limit"},
		{"cut off after Dr.", "Thanks. Ask Dr. Lee abo", llm.FinishLength, "Thanks.", "cut off at the token limit"},
		{"cut off in its first sentence", "Could you tell me which teams will use it and wh", llm.FinishLength,
			"Could you tell me which teams will use it and wh…", "cut off at the token limit"},
		{"withheld", "", llm.FinishContentFilter, fallback, "withheld"},
		{"withheld in part", "Well", llm.FinishContentFilter, fallback, "withheld"},
		{"empty", "  ", llm.FinishLength, fallback, "empty"},
		{"empty, stopped", "", llm.FinishStop, fallback, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, &fakeLLM{reply: tc.reply, finish: tc.finish})
			res := process(t, r, def, nil, input(t, def, nil, "hello", nil))
			if res.Reply != tc.want || !res.Degraded || !strings.Contains(res.DegradedReason, tc.reason) || !res.Telemetry.ResponseDegraded {
				t.Errorf("reply %q degraded %t (%q); want %q, degraded for %q", res.Reply, res.Degraded, res.DegradedReason, tc.want, tc.reason)
			}
		})
	}
	res := process(t, newRunner(t, &fakeLLM{reply: "All good. Who will use it?", finish: llm.FinishStop}), def, nil, input(t, def, nil, "hello", nil))
	if res.Degraded || res.Reply != "All good. Who will use it?" {
		t.Errorf("a finished reply: %q degraded %t (%q)", res.Reply, res.Degraded, res.DegradedReason)
	}
}

func TestPhaseTransitionAndCheckpointBlock(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "Tell me more?"})
	res := process(t, r, def, nil, input(t, def, nil, "goal and users", map[string]any{"basics.goal": "ship", "basics.users": "ops"}))
	if res.PhaseChange == nil || res.PhaseChange.From != "INTRO" || res.PhaseChange.To != "DETAILS" || res.Phase != "DETAILS" {
		t.Fatalf("phase change = %+v, phase %s", res.PhaseChange, res.Phase)
	}
	if h := res.State.Phase.History; len(h) != 1 || h[0].PhaseID != "INTRO" || h[0].ExitedAtTurn != 1 {
		t.Errorf("phase history = %+v", h)
	}
	// DETAILS moves after 3 turns, but its checkpoint budget_known blocks.
	st := res.State
	for i := 0; i < 3; i++ {
		res = process(t, r, def, st, input(t, def, st, "more", nil))
		st = res.State
	}
	if res.Phase != "DETAILS" || len(res.PhaseBlockedBy) == 0 || !strings.Contains(res.PhaseBlockedBy[0], "budget_known") {
		t.Errorf("phase %s, blocked by %v; want held by the checkpoint", res.Phase, res.PhaseBlockedBy)
	}
}

func TestCheckpointsAndCompression(t *testing.T) {
	def := enginetest.Definition()
	def.ContextConfig.MaxTokens = 700
	def.ContextConfig.RecentTurnsKept = 2
	r := newRunner(t, &fakeLLM{reply: "Thanks, and what else matters to you about it?"})
	var st *engine.WorkingMemory
	var periodic, before []int
	var compressions int
	for i := 1; i <= 10; i++ {
		msg := fmt.Sprintf("Turn %d. We want a tracker that the operations team can use on the road, offline, with photos and checklists.", i)
		res := process(t, r, def, st, input(t, def, st, msg, nil))
		for _, cp := range res.Effects.Checkpoints {
			switch cp.Reason {
			case runner.CheckpointPeriodic:
				periodic = append(periodic, cp.AtTurn)
			case runner.CheckpointBeforeCompression:
				before = append(before, cp.AtTurn)
				var snap engine.WorkingMemory
				if err := json.Unmarshal(cp.State, &snap); err != nil {
					t.Fatal(err)
				}
				if len(snap.History) <= len(res.State.History)-1 {
					t.Errorf("turn %d: the checkpoint was not taken before compression", i)
				}
			}
		}
		if res.Context.Compression != nil {
			compressions++
			if res.State.Context.Summary == "" {
				t.Error("summarize_old left no summary")
			}
		}
		if res.Context.TokensUsed > def.ContextConfig.MaxTokens {
			t.Errorf("turn %d: context %d tokens > %d", i, res.Context.TokensUsed, def.ContextConfig.MaxTokens)
		}
		st = res.State
	}
	if !slices.Equal(periodic, []int{5, 10}) {
		t.Errorf("periodic checkpoints at %v, want [5 10]", periodic)
	}
	if compressions == 0 || len(before) != compressions {
		t.Errorf("compressions %d, checkpoints before compression %v", compressions, before)
	}
	if len(st.Context.CompressionEvents) != compressions {
		t.Errorf("events = %+v", st.Context.CompressionEvents)
	}
}

func TestExitTransitionFiresOnce(t *testing.T) {
	def := enginetest.Definition()
	def.ExitTransitions = []engine.ExitTransition{{TargetEngine: "elsewhere", Reason: "user asked",
		Conditions: []engine.Condition{{Type: engine.CondUserRequest, Keywords: []string{"explore options"}}}}}
	r := newRunner(t, &fakeLLM{reply: "Sure?"})
	res := process(t, r, def, nil, input(t, def, nil, "hello", nil))
	if res.Effects.Exit != nil {
		t.Fatal("exit fired without the request")
	}
	res = process(t, r, def, res.State, input(t, def, res.State, "Can we explore options now?", nil))
	if res.Effects.Exit == nil || res.Effects.Exit.TargetEngine != "elsewhere" || res.State.Exit == nil || res.State.Exit.AtTurn != 2 {
		t.Fatalf("exit = %+v / %+v", res.Effects.Exit, res.State.Exit)
	}
	// The session takes no turn after the one that handed off.
	if _, err := r.Process(context.Background(), def, res.State, input(t, def, res.State, "explore options please", nil)); !errors.Is(err, runner.ErrHandedOff) {
		t.Errorf("a turn after the handoff: %v, want ErrHandedOff", err)
	}
}

// The reply of the turn whose exit transition fires is the last this
// session gives: the user's next message goes to the target engine. It
// ends with the handover, never with a question of the source engine that
// the user could answer only where it was not asked; what came before the
// question stays.
func TestHandoffReplyEndsWithTheHandover(t *testing.T) {
	const handover = "I am handing you over to elsewhere to go on from here (user asked). Your next message goes there."
	for _, tc := range []struct{ reply, want string }{
		{"Noted: a booking app. What is your budget?", "Noted: a booking app.\n\n" + handover},
		{"Noted, e.g. Jobber. What is your budget? And when do you need it?  ", "Noted, e.g. Jobber.\n\n" + handover},
		{"Here is what I have:\n- Goal: a booking app\n**Is this right?**", "Here is what I have:\n- Goal: a booking app\n\n" + handover},
		{"She said \"fine.\" Anything else to add?", "She said \"fine.\"\n\n" + handover},
		{"Is there anything you would like to add or change?", handover},
		{"Why not? We have everything we need.", "Why not? We have everything we need.\n\n" + handover},
		{"Voilà tout. Ça va?", "Voilà tout.\n\n" + handover},
		{"好的，我记下了。你还有什么要补充的吗？", "好的，我记下了。\n\n" + handover},
		{"了解しました！他に何かありますか？", "了解しました！\n\n" + handover},
		{"شكرا. هل تريد إضافة شيء؟", "شكرا.\n\n" + handover},
		{"Great choice! Anything else? 🙂", "Great choice!\n\n" + handover},
		{"Great choice! 🎉", "Great choice! 🎉\n\n" + handover},
		{"You picked Jobber.\n\nBefore we go on, a few questions:\n- What is your budget?\n- When do you launch?",
			"You picked Jobber.\n\n" + handover},
		{"Here is the plan:\n- Jobber\n- a pilot in May", "Here is the plan:\n- Jobber\n- a pilot in May\n\n" + handover},
	} {
		def := enginetest.Definition()
		def.ExitTransitions = []engine.ExitTransition{{TargetEngine: "elsewhere", Reason: "user asked",
			Conditions: []engine.Condition{{Type: engine.CondUserRequest, Keywords: []string{"explore options"}}}}}
		res := process(t, newRunner(t, &fakeLLM{reply: tc.reply}), def, nil, input(t, def, nil, "Can we explore options now?", nil))
		if res.Effects.Exit == nil {
			t.Fatalf("%q: the exit did not fire", tc.reply)
		}
		if res.Reply != tc.want {
			t.Errorf("reply of %q:\n got %q\nwant %q", tc.reply, res.Reply, tc.want)
		}
		if h := res.State.History; h[len(h)-1].Content != res.Reply {
			t.Errorf("history keeps %q, the user saw %q", h[len(h)-1].Content, res.Reply)
		}
	}
}

func TestBackgroundTaskDispatched(t *testing.T) {
	def := enginetest.Definition()
	def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "budget_research", Handler: "research.web",
		Trigger: engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}, MinTurn: 2}}}
	r := newRunner(t, &fakeLLM{reply: "ok?"})
	res := process(t, r, def, nil, input(t, def, nil, "hi", nil))
	if len(res.Effects.Tasks) != 0 {
		t.Fatalf("tasks at turn 1 = %+v", res.Effects.Tasks)
	}
	res = process(t, r, def, res.State, input(t, def, res.State, "hi again", nil))
	if len(res.Effects.Tasks) != 1 || res.Effects.Tasks[0].Handler != "research.web" || !res.State.BackgroundTasks.IsPending("budget_research") {
		t.Errorf("tasks = %+v", res.Effects.Tasks)
	}
}

func TestSupersessionFlowsToTheLog(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "ok?"})
	res := process(t, r, def, nil, input(t, def, nil, "I need a website", map[string]any{"basics.goal": "Need a website"}))
	first := res.Effects.ExtractionLog[0]
	res = process(t, r, def, res.State, input(t, def, res.State, "Actually, I need a mobile app, not a website",
		map[string]any{"basics.goal": "a mobile app, not a website"}))
	log := res.Effects.ExtractionLog
	if len(log) != 1 || log[0].ExtractionType != extraction.TypeSupersede {
		t.Fatalf("log = %+v", log)
	}
	if l := res.Effects.SupersededLinks; len(l) != 1 || l[0].EntryID != first.ID || l[0].SupersededBy != "msg-2" {
		t.Errorf("links = %+v", l)
	}
	if res.Telemetry.Superseded != 1 {
		t.Errorf("telemetry = %+v", res.Telemetry)
	}
}

func TestDeterministic(t *testing.T) {
	def := enginetest.Definition()
	run := func() []string {
		r := newRunner(t, &fakeLLM{reply: "Thanks! What else?"})
		var st *engine.WorkingMemory
		var hashes []string
		for i, f := range []map[string]any{{"basics.goal": "ship"}, {"basics.users": "ops"}, nil, {"details.budget": 5000}, nil, {"details.features": []string{"a", "b"}}} {
			res := process(t, r, def, st, input(t, def, st, fmt.Sprintf("message %d, thanks", i), f))
			st = res.State
			hashes = append(hashes, res.StateHash)
		}
		return hashes
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Errorf("state hashes differ between identical runs:\n%v\n%v", a, b)
	}
	if len(slices.Compact(slices.Clone(a))) != len(a) {
		t.Error("state did not change between turns")
	}
}

func TestFromContractRoundTrip(t *testing.T) {
	def := enginetest.Definition()
	res := extraction.Apply(def, engine.NewExtraction(), extraction.Answer{Fields: map[string]extraction.FieldAnswer{
		"basics.goal": {Value: json.RawMessage(`"x"`), Confidence: 0.9}}}, "m", extraction.Meta{MessageID: "msg-1", TurnNumber: 1})
	te, err := res.Contract("t1", "s1", "msg-1", 1, "m")
	if err != nil {
		t.Fatal(err)
	}
	if err := te.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := runner.FromContract(te, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got.TurnID != "msg-1" || got.ProjectID != "p1" || got.Extraction.String("basics.goal") != "x" || got.NewConceptCount != 1 {
		t.Errorf("input = %+v", got)
	}
}

// A task nobody answers (no background worker runs) fails once twice its
// timeout has passed, and its strategy applies: here a retry, dispatched
// again with its backoff.
func TestUnansweredTaskFollowsItsStrategy(t *testing.T) {
	def := enginetest.Definition()
	def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "budget_research", DisplayName: "Budget research", Handler: "research.web",
		EstimatedDuration: engine.Duration(10 * time.Second),
		Trigger:           engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}},
		FailureStrategy:   engine.FailureStrategy{Type: engine.FailureRetry, MaxRetries: new(2)}}}
	r := newRunner(t, &fakeLLM{reply: "ok?"})
	res := process(t, r, def, nil, input(t, def, nil, "hi", nil))
	if len(res.Effects.Tasks) != 1 || res.Effects.Tasks[0].Timeout != 20*time.Second {
		t.Fatalf("dispatch = %+v", res.Effects.Tasks)
	}
	// The clock moves a minute a turn: past twice the 20s timeout.
	res = process(t, r, def, res.State, input(t, def, res.State, "hi again", nil))
	rec, _ := res.State.BackgroundTasks.Task("budget_research")
	if len(res.Effects.Tasks) != 1 || res.Effects.Tasks[0].Attempt != 2 || rec.Status != engine.TaskRetrying ||
		!res.Effects.Tasks[0].NotBefore.Equal(res.ProcessedAt.Add(5*time.Second)) {
		t.Fatalf("after the deadline: dispatch %+v, record %+v", res.Effects.Tasks, rec)
	}
}

// A degraded reply says why in the log, as a degraded extraction does: the
// turn's line alone said response_degraded=true.
func TestDegradedReplyLogsItsReason(t *testing.T) {
	def := enginetest.Definition()
	var logs strings.Builder
	r, err := runner.New(runner.Config{Registry: enginetest.Registry(), Clock: func() time.Time { return epoch },
		LLM:    &fakeLLM{err: &llm.APIError{Provider: "fake", Err: llm.ErrUnauthorized, Status: 401, Message: "Incorrect API key provided"}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	res := process(t, r, def, nil, input(t, def, nil, "hello", nil))
	if !res.Degraded {
		t.Fatalf("reply not degraded: %q", res.Reply)
	}
	if got := logs.String(); !strings.Contains(got, `msg="response degraded"`) || !strings.Contains(got, "Incorrect API key provided") ||
		!strings.Contains(got, "level=WARN") {
		t.Errorf("log:\n%s\nwant a warning \"response degraded\" with the reason", got)
	}
}

// turn.responded says why the phase is held, so the API can tell the user;
// a turn whose phase nothing held leaves it out.
func TestRespondedSaysWhyThePhaseIsHeld(t *testing.T) {
	def := enginetest.Definition()
	r := newRunner(t, &fakeLLM{reply: "Tell me more?"})
	res := process(t, r, def, nil, input(t, def, nil, "goal and users", map[string]any{"basics.goal": "ship", "basics.users": "ops"}))
	tr, err := res.Responded("tenant-1", "msg-1")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(tr); tr.PhaseBlockedBy != nil || strings.Contains(string(b), "phase_blocked_by") {
		t.Errorf("turn 1 moved on, yet turn.responded says %s", b)
	}
	st := res.State
	for range 3 { // DETAILS moves after 3 turns, but its checkpoint budget_known holds it
		res = process(t, r, def, st, input(t, def, st, "more", nil))
		st = res.State
	}
	if tr, err = res.Responded("tenant-1", "msg-4"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.PhaseBlockedBy, res.PhaseBlockedBy) || len(tr.PhaseBlockedBy) == 0 ||
		tr.PhaseBlockedBy[0] != "checkpoint budget_known is not satisfied" {
		t.Errorf("phase %s, turn.responded blocked by %q; want %q, first the checkpoint budget_known", tr.Phase,
			tr.PhaseBlockedBy, res.PhaseBlockedBy)
	}
}
