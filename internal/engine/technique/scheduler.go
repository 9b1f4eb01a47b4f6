package technique

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

// Input is what a scheduler chooses from: the phase, the working memory as
// it stands after this turn's extraction, completeness and phase steps, and
// the user's message.
type Input struct {
	Phase   *engine.Phase
	Memory  *engine.WorkingMemory
	Message string
}

// Scheduler chooses the techniques the next reply uses (the seed's
// TechniqueScheduler).
type Scheduler interface {
	Select(ctx context.Context, in Input) ([]string, error)
}

// Candidates are the phase's active techniques that exist in the library and
// are not cooling down at the memory's turn, in the phase's order.
func Candidates(phase *engine.Phase, m *engine.WorkingMemory) []Technique {
	var out []Technique
	for _, id := range phase.ActiveTechniques {
		t, ok := Lookup(id)
		if ok && Available(m, id) {
			out = append(out, t)
		}
	}
	return out
}

// Available reports whether a technique is off cooldown at the current turn.
func Available(m *engine.WorkingMemory, id string) bool {
	return m.Techniques.Cooldowns[id] <= m.TurnNumber
}

// Use records the techniques chosen for this turn's reply: they become the
// active ones and each rests for its cooldown, so a technique with cooldown
// N used at turn T is next available at turn T+N+1. Expired cooldowns are
// dropped to keep the state small.
func Use(m *engine.WorkingMemory, ids []string) {
	if m.Techniques.Cooldowns == nil {
		m.Techniques.Cooldowns = map[string]int{}
	}
	for id, until := range m.Techniques.Cooldowns {
		if until <= m.TurnNumber {
			delete(m.Techniques.Cooldowns, id)
		}
	}
	m.Techniques.Active = append([]string{}, ids...)
	for _, id := range ids {
		if t, ok := Lookup(id); ok && t.CooldownTurns > 0 {
			m.Techniques.Cooldowns[id] = m.TurnNumber + t.CooldownTurns + 1
		}
	}
}

// Observation is what the user's turn showed about the last reply's
// techniques.
type Observation struct {
	WordCount, PrevWordCount      int
	NewConcepts                   int
	FrictionBefore, FrictionAfter float64
	// Confirmed is true when the user confirmed or corrected something.
	Confirmed bool
}

// Observe scores the techniques of the last reply (the memory's active
// techniques) against their effectiveness signal, as an exponential moving
// average starting at 0.5.
func Observe(m *engine.WorkingMemory, o Observation) {
	if len(m.Techniques.Active) == 0 {
		return
	}
	if m.Techniques.Effectiveness == nil {
		m.Techniques.Effectiveness = map[string]float64{}
	}
	for _, id := range m.Techniques.Active {
		t, ok := Lookup(id)
		if !ok {
			continue
		}
		hit := 0.0
		switch t.Signal {
		case SignalRicherDetail:
			if o.WordCount > o.PrevWordCount && o.WordCount >= 8 {
				hit = 1
			}
		case SignalNewConcepts:
			if o.NewConcepts > 0 {
				hit = 1
			}
		case SignalLowerFriction:
			if o.FrictionAfter < o.FrictionBefore || o.FrictionAfter == 0 {
				hit = 1
			}
		case SignalConfirmation:
			if o.Confirmed {
				hit = 1
			}
		}
		prev, seen := m.Techniques.Effectiveness[id]
		if !seen {
			prev = 0.5
		}
		m.Techniques.Effectiveness[id] = round4(0.7*prev + 0.3*hit)
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// RuleConfig configures the rule-based scheduler.
type RuleConfig struct {
	// MaxPerTurn is how many techniques a reply uses (default 2).
	MaxPerTurn int
}

// WithDefaults fills unset fields.
func (c RuleConfig) WithDefaults() RuleConfig {
	c.MaxPerTurn = cmp.Or(c.MaxPerTurn, 2)
	return c
}

// RuleBased is the seed's TODO scheduler: it scores each candidate by how
// much of the phase's mode blend the technique serves, adds boosts for what
// the conversation shows (friction, saturation, terse or long answers, low
// rapport, high completeness) and for past effectiveness, and picks the best
// few. It is deterministic: ties keep the phase's order.
type RuleBased struct {
	cfg RuleConfig
}

// NewRuleBased returns a rule-based scheduler.
func NewRuleBased(cfg RuleConfig) *RuleBased { return &RuleBased{cfg: cfg.WithDefaults()} }

// Select implements Scheduler.
func (r *RuleBased) Select(_ context.Context, in Input) ([]string, error) {
	cands := Candidates(in.Phase, in.Memory)
	type scored struct {
		id    string
		score float64
		order int
	}
	var all []scored
	for i, t := range cands {
		s := Score(t, in)
		if s > 0 {
			all = append(all, scored{t.ID, s, i})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].order < all[j].order
	})
	out := []string{}
	for _, s := range all {
		if len(out) == r.cfg.MaxPerTurn {
			break
		}
		out = append(out, s.id)
	}
	return out, nil
}

// Score is the rule-based score of one technique for this turn.
func Score(t Technique, in Input) float64 {
	m := in.Memory
	score := 0.0
	for _, mode := range t.ApplicableModes {
		score += float64(in.Phase.ModeBlend.Get(mode)) / 100
	}
	boost := func(ids map[string]float64) {
		score += ids[t.ID]
	}
	words := len(strings.Fields(in.Message))
	if m.SocioEmotional.Friction >= 0.3 {
		boost(map[string]float64{"roll_with_resistance": 1.0, "reflective_listening": 0.5, "mirroring": 0.3})
	}
	saturated := m.Saturation.Saturated
	if n := len(m.Saturation.NewConcepts); n > 0 && m.TurnNumber > 2 && m.Saturation.NewConcepts[n-1] == 0 {
		saturated = true
	}
	if saturated {
		boost(map[string]float64{"change_perspective": 0.4, "multiple_retrieval_attempts": 0.4,
			"report_everything": 0.3, "reverse_order_recall": 0.2, "context_reinstatement": 0.2})
	}
	if words > 0 && words < 8 {
		boost(map[string]float64{"open_ended_questions": 0.3, "report_everything": 0.2})
	}
	if words > 50 {
		boost(map[string]float64{"active_listening": 0.3, "reflective_listening": 0.2, "summary_reflection": 0.1})
	}
	if m.SocioEmotional.Rapport < 0.4 {
		boost(map[string]float64{"mirroring": 0.3, "active_listening": 0.2})
	}
	if m.Completeness.Overall >= 0.6 {
		boost(map[string]float64{"summary_reflection": 0.3, "confidence_scaling": 0.2})
	}
	if eff, ok := m.Techniques.Effectiveness[t.ID]; ok {
		score += (eff - 0.5) * 0.4
	}
	return score
}

// Completer is the LLM port as the LLM-driven scheduler uses it.
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// PurposeSelection is the LLM request purpose of technique selection.
const PurposeSelection = "technique_selection"

// LLMConfig configures the LLM-driven scheduler.
type LLMConfig struct {
	// LLM answers the selection prompt. Required.
	LLM Completer
	// Fallback chooses when the model fails or answers nothing usable
	// (default a RuleBased scheduler).
	Fallback Scheduler
	// MaxPerTurn is the most techniques kept (default 2).
	MaxPerTurn int
}

// WithDefaults fills unset fields.
func (c LLMConfig) WithDefaults() LLMConfig {
	c.MaxPerTurn = cmp.Or(c.MaxPerTurn, 2)
	if c.Fallback == nil {
		c.Fallback = NewRuleBased(RuleConfig{MaxPerTurn: c.MaxPerTurn})
	}
	return c
}

func (c LLMConfig) validate() error {
	if c.LLM == nil {
		return errors.New("technique: LLMConfig.LLM is required")
	}
	return nil
}

// LLMDriven is the seed's v1 scheduler: the model picks techniques from the
// candidates via a prompt. Ids it invents are dropped; on failure the
// fallback scheduler decides.
type LLMDriven struct {
	cfg LLMConfig
}

// NewLLMDriven returns an LLM-driven scheduler.
func NewLLMDriven(cfg LLMConfig) (*LLMDriven, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &LLMDriven{cfg: cfg}, nil
}

// Select implements Scheduler.
func (s *LLMDriven) Select(ctx context.Context, in Input) ([]string, error) {
	cands := Candidates(in.Phase, in.Memory)
	if len(cands) == 0 {
		return []string{}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Choose at most %d conversation techniques for the next reply.\n", s.cfg.MaxPerTurn)
	fmt.Fprintf(&b, "Phase: %s (%s). Mode blend: %s.\n", in.Phase.ID, in.Phase.DisplayName, in.Phase.ModeBlend)
	se := in.Memory.SocioEmotional
	fmt.Fprintf(&b, "Rapport %.2f, trust %.2f, friction %.2f. Completeness %.2f. Saturated: %t.\n",
		se.Rapport, se.Trust, se.Friction, in.Memory.Completeness.Overall, in.Memory.Saturation.Saturated)
	b.WriteString("Candidates:\n")
	for _, t := range cands {
		fmt.Fprintf(&b, "- %s: %s (modes %v)\n", t.ID, t.Description, t.ApplicableModes)
	}
	fmt.Fprintf(&b, "User's last message:\n%s\n", in.Message)
	b.WriteString(`Answer with JSON: {"techniques": ["id", ...]}`)
	resp, err := s.cfg.LLM.Complete(ctx, llm.Request{
		Purpose: PurposeSelection, JSON: true,
		Messages: []llm.Message{{Role: llm.System, Content: "You select conversation techniques."},
			{Role: llm.User, Content: b.String()}},
	})
	if err != nil {
		return s.cfg.Fallback.Select(ctx, in)
	}
	var ans struct {
		Techniques []string `json:"techniques"`
	}
	if err := json.Unmarshal([]byte(resp.Content), &ans); err != nil {
		return s.cfg.Fallback.Select(ctx, in)
	}
	out := []string{}
	for _, id := range ans.Techniques {
		ok := slices.ContainsFunc(cands, func(t Technique) bool { return t.ID == id })
		if ok && !slices.Contains(out, id) && len(out) < s.cfg.MaxPerTurn {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return s.cfg.Fallback.Select(ctx, in)
	}
	return out, nil
}
