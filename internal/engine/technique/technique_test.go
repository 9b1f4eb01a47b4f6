package technique

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

func TestLibraryHasTheSeedsSixteen(t *testing.T) {
	seed := []string{
		"context_reinstatement", "reverse_order_recall", "change_perspective", "report_everything",
		"open_ended_questions", "avoid_interruptions", "sketch_or_visualize", "multiple_retrieval_attempts",
		"reflective_listening", "elicit_change_talk", "roll_with_resistance",
		"active_listening", "mirroring", "chunking_with_checkin", "pros_cons_listing", "social_proof",
	}
	lib := Library()
	var core []string
	for _, tq := range lib {
		if !tq.Extension {
			core = append(core, tq.ID)
		}
		if tq.Name == "" || tq.Description == "" || tq.AgentInstruction == "" || tq.EffectivenessSignal == "" || tq.Signal == "" {
			t.Errorf("%s: incomplete definition %+v", tq.ID, tq)
		}
		if len(tq.ApplicableModes) == 0 {
			t.Errorf("%s: no applicable modes", tq.ID)
		}
		for _, m := range tq.ApplicableModes {
			if !engine.ValidMode(m) {
				t.Errorf("%s: mode %q is not one of the seven", tq.ID, m)
			}
		}
	}
	if !slices.Equal(core, seed) {
		t.Errorf("core techniques = %v, want the seed's 16 in order %v", core, seed)
	}
	counts := map[Category]int{}
	for _, tq := range lib {
		if !tq.Extension {
			counts[tq.Category]++
		}
	}
	want := map[Category]int{CognitiveInterview: 8, MotivationalInterviewing: 3, HUMINTRapport: 2,
		InformDelivery: 1, DeliberationSupport: 1, Persuasion: 1}
	for c, n := range want {
		if counts[c] != n {
			t.Errorf("category %s has %d techniques, want %d", c, counts[c], n)
		}
	}
	ci, _ := Lookup("context_reinstatement")
	if ci.CooldownTurns != 5 || !slices.Equal(ci.ApplicableModes, []engine.Mode{engine.ModeExtract, engine.ModeExplore}) {
		t.Errorf("context_reinstatement = %+v, want the seed's cooldown 5 and modes extract, explore", ci)
	}
}

func memAt(turn int) *engine.WorkingMemory {
	return &engine.WorkingMemory{TurnNumber: turn, SocioEmotional: engine.NewSocioEmotional(),
		Techniques: engine.TechniqueState{Cooldowns: map[string]int{}}}
}

func TestCooldown(t *testing.T) {
	m := memAt(1)
	Use(m, []string{"context_reinstatement", "open_ended_questions"})
	tests := []struct {
		turn int
		id   string
		want bool
	}{
		{2, "context_reinstatement", false},
		{6, "context_reinstatement", false},
		{7, "context_reinstatement", true}, // cooldown 5: rests turns 2-6
		{2, "open_ended_questions", false},
		{3, "open_ended_questions", true}, // cooldown 1
		{2, "active_listening", true},     // never used
	}
	for _, tt := range tests {
		m.TurnNumber = tt.turn
		if got := Available(m, tt.id); got != tt.want {
			t.Errorf("turn %d: Available(%s) = %t, want %t", tt.turn, tt.id, got, tt.want)
		}
	}
	m.TurnNumber = 8
	Use(m, []string{"active_listening"})
	if _, ok := m.Techniques.Cooldowns["context_reinstatement"]; ok {
		t.Error("expired cooldown was kept")
	}
	if !slices.Equal(m.Techniques.Active, []string{"active_listening"}) {
		t.Errorf("active = %v", m.Techniques.Active)
	}
}

func phase(blend engine.ModeBlend, active ...string) *engine.Phase {
	return &engine.Phase{ID: "P", DisplayName: "P", ModeBlend: blend, ActiveTechniques: active}
}

func TestRuleBasedSelect(t *testing.T) {
	extract := engine.ModeBlend{Extract: 75, Validate: 15, Explore: 10}
	inform := engine.ModeBlend{Inform: 60, Explore: 20, Validate: 15, Deliberate: 5}
	tests := []struct {
		name    string
		phase   *engine.Phase
		setup   func(m *engine.WorkingMemory)
		message string
		want    []string
	}{
		{
			name:    "extract blend prefers extract techniques in phase order",
			phase:   phase(extract, "context_reinstatement", "open_ended_questions", "active_listening"),
			message: "We keep losing track of tasks in spreadsheets and it is getting worse every week.",
			// active_listening serves extract, explore and validate (1.00);
			// the other two tie at 0.85 and keep the phase's order.
			want: []string{"active_listening", "context_reinstatement"},
		},
		{
			name:    "inform blend prefers inform techniques",
			phase:   phase(inform, "open_ended_questions", "chunking_with_checkin", "examples_and_analogies"),
			message: "Tell me about the options I have for building this.",
			want:    []string{"examples_and_analogies", "chunking_with_checkin"},
		},
		{
			name:    "cooldown excludes a technique",
			phase:   phase(extract, "context_reinstatement", "open_ended_questions", "active_listening"),
			setup:   func(m *engine.WorkingMemory) { m.Techniques.Cooldowns["active_listening"] = 99 },
			message: "We keep losing track of tasks in spreadsheets and it is getting worse every week.",
			want:    []string{"context_reinstatement", "open_ended_questions"},
		},
		{
			name:    "friction brings roll with resistance forward",
			phase:   phase(extract, "open_ended_questions", "active_listening", "roll_with_resistance"),
			setup:   func(m *engine.WorkingMemory) { m.SocioEmotional.Friction = 0.6 },
			message: "I already told you that, why do you keep asking the same question again and again?",
			want:    []string{"roll_with_resistance", "active_listening"},
		},
		{
			name:    "terse answers bring open questions forward",
			phase:   phase(extract, "active_listening", "open_ended_questions"),
			message: "yes",
			want:    []string{"open_ended_questions", "active_listening"},
		},
		{
			name:  "all on cooldown gives none",
			phase: phase(extract, "context_reinstatement"),
			setup: func(m *engine.WorkingMemory) { m.Techniques.Cooldowns["context_reinstatement"] = 10 },
			want:  []string{},
		},
	}
	s := NewRuleBased(RuleConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memAt(3)
			if tt.setup != nil {
				tt.setup(m)
			}
			got, err := s.Select(context.Background(), Input{Phase: tt.phase, Memory: m, Message: tt.message})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Select = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObserveEffectiveness(t *testing.T) {
	m := memAt(4)
	m.Techniques.Active = []string{"open_ended_questions", "pros_cons_listing"}
	Observe(m, Observation{WordCount: 30, PrevWordCount: 5, NewConcepts: 0})
	if got := m.Techniques.Effectiveness["open_ended_questions"]; got != 0.65 {
		t.Errorf("open_ended_questions effectiveness = %v, want 0.65 after a richer answer", got)
	}
	if got := m.Techniques.Effectiveness["pros_cons_listing"]; got != 0.35 {
		t.Errorf("pros_cons_listing effectiveness = %v, want 0.35 with no new concepts", got)
	}
}

type fakeLLM struct {
	answer string
	err    error
	got    llm.Request
}

func (f *fakeLLM) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.got = req
	if f.err != nil {
		return nil, f.err
	}
	return &llm.Response{Content: f.answer}, nil
}

func TestLLMDrivenSelect(t *testing.T) {
	p := phase(engine.ModeBlend{Extract: 100}, "open_ended_questions", "active_listening", "context_reinstatement")
	tests := []struct {
		name string
		llm  *fakeLLM
		want []string
	}{
		{"model choice kept, inventions dropped", &fakeLLM{answer: `{"techniques":["hypnosis","context_reinstatement"]}`}, []string{"context_reinstatement"}},
		{"model error falls back to rules", &fakeLLM{err: errors.New("down")}, []string{"open_ended_questions", "active_listening"}},
		{"not JSON falls back", &fakeLLM{answer: "use active listening"}, []string{"open_ended_questions", "active_listening"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewLLMDriven(LLMConfig{LLM: tt.llm})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Select(context.Background(), Input{Phase: p, Memory: memAt(2), Message: "We lose track of tasks in spreadsheets every single week."})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Select = %v, want %v", got, tt.want)
			}
			if tt.llm.got.Purpose != PurposeSelection || !strings.Contains(tt.llm.got.Messages[1].Content, "context_reinstatement") {
				t.Errorf("request = %+v", tt.llm.got)
			}
		})
	}
	if _, err := NewLLMDriven(LLMConfig{}); err == nil {
		t.Error("NewLLMDriven without LLM: err = nil")
	}
}

func TestPromptBlock(t *testing.T) {
	got := PromptBlock([]string{"context_reinstatement", "nope", "active_listening"})
	want := "Active Techniques (use these in your response):\n" +
		"- Context Reinstatement [context_reinstatement]: Help the user mentally return to the situation by asking about the setting, who was present, what they were feeling, and what led up to the moment.\n" +
		"- Active Listening [active_listening]: Demonstrate that you understand the user's perspective by briefly restating what they said before moving on.\n"
	if got != want {
		t.Errorf("PromptBlock =\n%s\nwant\n%s", got, want)
	}
	if PromptBlock(nil) != "" {
		t.Error("PromptBlock(nil) != \"\"")
	}
}
