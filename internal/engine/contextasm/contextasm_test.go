package contextasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/completeness"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/llm"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func tokenizer(t testing.TB) *contextasm.Tiktoken {
	t.Helper()
	tok, err := contextasm.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTiktokenCounts(t *testing.T) {
	tok := tokenizer(t)
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"<|endoftext|>", 7}, // special tokens count as plain text
		{"The quick brown fox jumps over the lazy dog.", 10},
	}
	for _, tt := range tests {
		if got := tok.Count(tt.text); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
	if got := tok.Truncate("The quick brown fox jumps over the lazy dog.", 3); got != "The quick brown" {
		t.Errorf("Truncate = %q", got)
	}
	o200, err := contextasm.NewTiktoken("o200k_base")
	if err != nil || o200.Count("hello world") != 2 {
		t.Errorf("o200k_base: %v", err)
	}
	if _, err := contextasm.NewTiktoken("nope"); err == nil {
		t.Error("unknown encoding: err = nil")
	}
}

// conversation builds a memory after `turns` turns of a scripted exchange.
func conversation(def *engine.Definition, turns int) *engine.WorkingMemory {
	m := enginetest.Memory(def)
	for i := 1; i <= turns; i++ {
		m.TurnNumber = i
		m.History = append(m.History, engine.Message{Role: engine.RoleUser, Turn: i, MessageID: fmt.Sprintf("msg-%d", i),
			Content: fmt.Sprintf("Turn %d: we want to ship a task tracker for the operations team. It has to work offline too.", i)})
		if i < turns {
			m.History = append(m.History, engine.Message{Role: engine.RoleAssistant, Turn: i,
				Content: fmt.Sprintf("Thanks. Tell me more about point %d.", i)})
		}
	}
	enginetest.Set(m, "basics.goal", "ship a task tracker", 0.9, 1)
	enginetest.Set(m, "basics.users", "operations team", 0.6, 2)
	enginetest.Set(m, "details.features", []string{"offline mode"}, 0.8, 2)
	m.Phase.TurnsInPhase = turns
	m.Obligations = obligation.Evaluate(def, m, enginetest.Registry())
	m.Completeness = completeness.Evaluate(def, m, enginetest.Registry())
	return m
}

func assemble(t *testing.T, def *engine.Definition, m *engine.WorkingMemory, handoff string) contextasm.Assembled {
	t.Helper()
	a, err := contextasm.New(contextasm.Config{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	return a.Assemble(contextasm.Input{Def: def, Memory: m, Message: m.History[len(m.History)-1].Content,
		Techniques: []string{"open_ended_questions", "active_listening"}, Next: obligation.Next(def, m), Handoff: handoff})
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestAssembleGolden(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int
		turns     int
		handoff   string
	}{
		{name: "first_turn", maxTokens: 4000, turns: 1},
		{name: "three_turns_with_handoff", maxTokens: 4000, turns: 3,
			handoff: "Source: exploration → Target: testing\nDecision: Custom Web App (confidence 0.85)"},
		{name: "tight_budget", maxTokens: 600, turns: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := enginetest.Definition()
			def.ContextConfig.MaxTokens = tt.maxTokens
			got := assemble(t, def, conversation(def, tt.turns), tt.handoff)
			golden(t, tt.name, got.Text())
		})
	}
}

func TestAssembleOrderAndBudgets(t *testing.T) {
	def := enginetest.Definition()
	def.ContextConfig.MaxTokens = 600
	m := conversation(def, 8)
	got := assemble(t, def, m, "handoff text")
	var order []contextasm.Section
	for _, p := range got.Parts {
		order = append(order, p.Section)
		if p.Budget > 0 && p.Tokens > p.Budget {
			t.Errorf("%s uses %d tokens over its budget %d", p.Section, p.Tokens, p.Budget)
		}
	}
	if fmt.Sprint(order) != fmt.Sprint(contextasm.Order()) {
		t.Errorf("order = %v, want %v", order, contextasm.Order())
	}
	if !strings.HasPrefix(got.Text(), contextasm.HeaderHandoff) {
		t.Error("the handoff is not at the top")
	}
	if !strings.HasSuffix(got.Text(), m.History[len(m.History)-1].Content) {
		t.Error("the user message is not at the bottom")
	}
	if got.TokensUsed > def.ContextConfig.MaxTokens {
		t.Errorf("tokens used %d > max %d", got.TokensUsed, def.ContextConfig.MaxTokens)
	}
	if !got.Overflow || got.HistoryTokens <= got.HistoryBudget {
		t.Errorf("overflow = %t (%d > %d), want true", got.Overflow, got.HistoryTokens, got.HistoryBudget)
	}
	// Allocation: obligations get 40% and history 30% of what is left.
	ob, _ := got.Part(contextasm.SectionObligations)
	hi, _ := got.Part(contextasm.SectionHistory)
	ex, _ := got.Part(contextasm.SectionExtraction)
	if ob.Budget*3 < hi.Budget*4-4 || ob.Budget*3 > hi.Budget*4+4 || hi.Budget < ex.Budget*3-3 {
		t.Errorf("budgets obligations %d, history %d, extraction %d do not follow 40/30/10", ob.Budget, hi.Budget, ex.Budget)
	}
	if strings.Contains(hi.Text, "Turn 1:") || !strings.Contains(hi.Text, "Turn 7:") {
		t.Errorf("history should keep the newest messages:\n%s", hi.Text)
	}
	if strings.Contains(hi.Text, "Turn 8:") {
		t.Error("the current message is repeated in the history")
	}
}

func TestAssembleIsDeterministic(t *testing.T) {
	def := enginetest.Definition()
	a := assemble(t, def, conversation(def, 5), "").Text()
	for range 5 {
		if b := assemble(t, def, conversation(def, 5), "").Text(); b != a {
			t.Fatal("two assemblies of the same input differ")
		}
	}
}

type fakeSummarizer struct {
	err  error
	got  []engine.Message
	prev string
}

func (f *fakeSummarizer) Summarize(_ context.Context, prev string, msgs []engine.Message, _ int) (string, error) {
	f.got, f.prev = msgs, prev
	if f.err != nil {
		return "", f.err
	}
	return "summary of " + fmt.Sprint(len(msgs)) + " messages", nil
}

func TestCompressStrategies(t *testing.T) {
	tests := []struct {
		strategy engine.CompressionStrategy
		sum      *fakeSummarizer
		check    func(t *testing.T, m *engine.WorkingMemory, s *fakeSummarizer)
	}{
		{strategy: engine.CompressSummarizeOld, sum: &fakeSummarizer{},
			check: func(t *testing.T, m *engine.WorkingMemory, s *fakeSummarizer) {
				if m.Context.Summary != "summary of 6 messages" || s.prev != "earlier" {
					t.Errorf("summary = %q (prev %q)", m.Context.Summary, s.prev)
				}
			}},
		{strategy: engine.CompressSummarizeOld, sum: &fakeSummarizer{err: errors.New("model down")},
			check: func(t *testing.T, m *engine.WorkingMemory, _ *fakeSummarizer) {
				if !strings.HasPrefix(m.Context.Summary, "earlier turn 1: the user said \"Turn 1: we want to ship a task tracker for the operations team\".") {
					t.Errorf("fallback summary = %q", m.Context.Summary)
				}
			}},
		{strategy: engine.CompressSlidingWindow,
			check: func(t *testing.T, m *engine.WorkingMemory, _ *fakeSummarizer) {
				if m.Context.Summary != "earlier" {
					t.Errorf("summary = %q, want unchanged", m.Context.Summary)
				}
			}},
		{strategy: engine.CompressExtractive,
			check: func(t *testing.T, m *engine.WorkingMemory, _ *fakeSummarizer) {
				want := "Key facts from earlier turns:\nearlier\n- Goal: \"ship a task tracker\" (turn 1)\n- Users: \"operations team\" (turn 2)\n- Features: [\"offline mode\"] (turn 2)"
				if m.Context.Summary != want {
					t.Errorf("summary =\n%s\nwant\n%s", m.Context.Summary, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			def := enginetest.Definition()
			def.ContextConfig.CompressionStrategy = tt.strategy
			def.ContextConfig.RecentTurnsKept = 3
			m := conversation(def, 6) // messages of turns 1-6; keep turns 4-6
			m.Context.Summary = "earlier"
			cfg := contextasm.Config{Tokenizer: tokenizer(t)}
			if tt.sum != nil {
				cfg.Summarizer = tt.sum
			}
			a, err := contextasm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := a.Compress(context.Background(), def, m, 600)
			if err != nil {
				t.Fatal(err)
			}
			if ev.MessagesRemoved != 6 || ev.Strategy != tt.strategy || ev.AtTurn != 6 || ev.TokensAfter >= ev.TokensBefore && tt.strategy != engine.CompressExtractive {
				t.Errorf("event = %+v", ev)
			}
			if len(m.History) != 5 || m.History[0].Turn != 4 {
				t.Errorf("history kept %d messages from turn %d, want 5 from turn 4", len(m.History), m.History[0].Turn)
			}
			if len(m.Context.CompressionEvents) != 1 {
				t.Errorf("events = %+v", m.Context.CompressionEvents)
			}
			tt.check(t, m, tt.sum)
		})
	}
	def := enginetest.Definition()
	a, _ := contextasm.New(contextasm.Config{Tokenizer: tokenizer(t)})
	if _, err := a.Compress(context.Background(), def, conversation(def, 2), 10); !errors.Is(err, contextasm.ErrNothingToCompress) {
		t.Errorf("err = %v, want ErrNothingToCompress", err)
	}
}

type fakeLLM struct{ req llm.Request }

func (f *fakeLLM) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.req = req
	return &llm.Response{Content: "  They want a tracker.  "}, nil
}

func TestLLMSummarizer(t *testing.T) {
	f := &fakeLLM{}
	got, err := contextasm.LLMSummarizer{LLM: f}.Summarize(context.Background(), "before",
		[]engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We want a tracker"}}, 50)
	if err != nil || got != "They want a tracker." {
		t.Fatalf("Summarize = %q, %v", got, err)
	}
	if f.req.Purpose != contextasm.PurposeSummarize || !strings.Contains(f.req.Messages[1].Content, "[turn 1] user: We want a tracker") ||
		!strings.Contains(f.req.Messages[1].Content, "before") {
		t.Errorf("request = %+v", f.req)
	}
}

// A formatted handoff summary opens the context as it is, under its own
// title block, above the phase instructions.
func TestFormattedHandoffOnTop(t *testing.T) {
	def := enginetest.Definition()
	m := conversation(def, 1)
	summary := "═══════\nHANDOFF CONTEXT — READ THIS FIRST\n═══════\nSource: exploration → Target: testing\n═══════"
	got := assemble(t, def, m, summary)
	if !strings.HasPrefix(got.Text(), summary+"\n\n"+contextasm.HeaderPhase) {
		t.Errorf("context does not open with the summary, then the phase:\n%s", got.Text())
	}
	if strings.Contains(got.Text(), contextasm.HeaderHandoff) {
		t.Error("the summary got a second title")
	}
}

// The background section shows each task state the agent must act on.
func TestBackgroundSection(t *testing.T) {
	def := enginetest.Definition()
	def.BackgroundTasks = []engine.BackgroundTask{
		{TaskID: "scan", DisplayName: "Competitive scan"}, {TaskID: "costs", DisplayName: "Cost research"},
		{TaskID: "risks", DisplayName: "Risk review"}, {TaskID: "market", DisplayName: "Market research"},
		{TaskID: "legal", DisplayName: "Legal check"}, {TaskID: "peers", DisplayName: "Peer lookup"}}
	m := conversation(def, 2)
	m.BackgroundTasks = engine.BackgroundTaskState{
		Completed: []engine.TaskRecord{
			{TaskID: "scan", Status: engine.TaskCompleted, Result: json.RawMessage(`{"summary":"Three products do this","findings":[{"title":"Jobber","detail":"field service"}]}`)},
			{TaskID: "costs", Status: engine.TaskDegraded, Error: "search API down", Note: "Quote no figures"},
			{TaskID: "risks", Status: engine.TaskGap, Error: "timed out"}},
		Pending: []engine.TaskRecord{{TaskID: "market", Status: engine.TaskStalled, Attempt: 2},
			{TaskID: "legal", Status: engine.TaskRetrying, Attempt: 3}, {TaskID: "peers", Status: engine.TaskPending, Attempt: 1}},
		Gaps:         []string{"risks"},
		Intelligence: []string{"Decision (2026-01): the team standardised on Azure"},
	}
	a, err := contextasm.New(contextasm.Config{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := a.Assemble(contextasm.Input{Def: def, Memory: m, Message: "hi", Intelligence: []string{"Pattern: offline-first apps"}})
	bg, _ := got.Part(contextasm.SectionBackground)
	for _, want := range []string{
		"- Competitive scan: Three products do this | Jobber (field service)",
		"- Cost research: unavailable (search API down); proceed this way: Quote no figures",
		"- gap: Risk review",
		"- Market research: WAITING",
		"- Legal check: failed once, being retried (attempt 3)",
		"- Peer lookup: still running",
		"- Decision (2026-01): the team standardised on Azure",
		"- Pattern: offline-first apps",
	} {
		if !strings.Contains(bg.Text, want) {
			t.Errorf("background section lacks %q:\n%s", want, bg.Text)
		}
	}
}
