package strategy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

// ModeClassifier says which of the seven modes a reply was written in,
// strongest first (the seed's ModeClassifier).
type ModeClassifier interface {
	Classify(ctx context.Context, text string) ([]engine.Mode, error)
}

// NoOpClassifier is the seed's v1: no enforcement, no modes.
type NoOpClassifier struct{}

// Classify implements ModeClassifier.
func (NoOpClassifier) Classify(context.Context, string) ([]engine.Mode, error) { return nil, nil }

// modeCues are phrases that signal a mode in a reply.
var modeCues = map[engine.Mode][]string{
	engine.ModeExtract:    {"tell me", "could you describe", "can you tell", "what is", "what are", "how do", "how does", "who", "when", "walk me through", "in your own words"},
	engine.ModeExplore:    {"what if", "imagine", "possibilities", "alternatively", "could also", "brainstorm", "another way", "explore"},
	engine.ModeInform:     {"here is", "here are", "typically", "for example", "works by", "this means", "in practice", "there are", "one option", "is a kind of", "let me explain"},
	engine.ModeValidate:   {"to confirm", "did i get", "is that right", "is that correct", "so you", "let me make sure", "here is what i have", "confirm"},
	engine.ModeRefine:     {"more specifically", "to be precise", "narrow", "refine", "exactly", "which one", "how many"},
	engine.ModePersuade:   {"i recommend", "you should", "the best choice", "most teams", "i suggest", "worth considering"},
	engine.ModeDeliberate: {"pros", "cons", "tradeoff", "trade-off", "on the other hand", "versus", "weigh", "compared to"},
}

// HeuristicClassifier scores each mode by the cue phrases found in the
// reply; a question with no cue counts as extract.
type HeuristicClassifier struct{}

// Classify implements ModeClassifier.
func (HeuristicClassifier) Classify(_ context.Context, text string) ([]engine.Mode, error) {
	type sc struct {
		m engine.Mode
		n int
		i int
	}
	var all []sc
	lt := engine.LowerText(text)
	for i, m := range engine.Modes() {
		n := 0
		for _, c := range modeCues[m] {
			if lt.Contains(c) {
				n++
			}
		}
		if n > 0 {
			all = append(all, sc{m, n, i})
		}
	}
	if len(all) == 0 && strings.Contains(text, "?") {
		return []engine.Mode{engine.ModeExtract}, nil
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].n != all[b].n {
			return all[a].n > all[b].n
		}
		return all[a].i < all[b].i
	})
	out := make([]engine.Mode, len(all))
	for i, s := range all {
		out[i] = s.m
	}
	return out, nil
}

// Completer is the LLM port as the LLM classifier uses it.
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// PurposeModeClassification is the LLM request purpose of mode classification.
const PurposeModeClassification = "mode_classification"

// LLMClassifier asks the model which modes a reply uses (the seed's v2
// TODO). Unknown modes are dropped; on failure Fallback answers (default
// HeuristicClassifier).
type LLMClassifier struct {
	LLM      Completer
	Fallback ModeClassifier
}

// Classify implements ModeClassifier.
func (c LLMClassifier) Classify(ctx context.Context, text string) ([]engine.Mode, error) {
	fb := c.Fallback
	if fb == nil {
		fb = HeuristicClassifier{}
	}
	if c.LLM == nil {
		return nil, errors.New("strategy: LLMClassifier.LLM is nil")
	}
	names := make([]string, 0, 7)
	for _, m := range engine.Modes() {
		names = append(names, string(m))
	}
	prompt := fmt.Sprintf("Which conversation modes does this assistant reply use? Modes: %s.\n"+
		"Answer with JSON {\"modes\": [...]}, strongest first.\nReply:\n%s", strings.Join(names, ", "), text)
	resp, err := c.LLM.Complete(ctx, llm.Request{Purpose: PurposeModeClassification, JSON: true,
		Messages: []llm.Message{{Role: llm.System, Content: "You classify conversation modes."}, {Role: llm.User, Content: prompt}}})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fb.Classify(ctx, text)
	}
	var ans struct {
		Modes []engine.Mode `json:"modes"`
	}
	if err := json.Unmarshal([]byte(resp.Content), &ans); err != nil {
		return fb.Classify(ctx, text)
	}
	var out []engine.Mode
	for _, m := range ans.Modes {
		if engine.ValidMode(m) && !containsMode(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

func containsMode(ms []engine.Mode, m engine.Mode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}
