package contextasm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

// Summarizer condenses older conversation turns (the seed's
// JourneyCompressor, summarize_old). previous is the summary of turns
// compressed before, to be folded into the new one.
type Summarizer interface {
	Summarize(ctx context.Context, previous string, msgs []engine.Message, targetTokens int) (string, error)
}

// DefaultRecentTurns is how many recent turns compression keeps intact when
// the engine does not say.
const DefaultRecentTurns = 4

// ErrNothingToCompress is returned when every message is recent: the history
// is cut at render time instead.
var ErrNothingToCompress = errors.New("contextasm: no turn old enough to compress")

// Compress applies the engine's compression strategy to the memory's
// history, which has overflowed its budget of historyBudget tokens. It
// keeps the messages of the last recent_turns_kept turns and:
//
//   - summarize_old (default): folds the older messages into
//     Context.Summary with the Summarizer (the deterministic summarizer if
//     the configured one fails);
//   - sliding_window: drops the older messages;
//   - extractive: replaces the older messages with the extracted facts they
//     produced (field, value, turn), merged into Context.Summary.
//
// It records and returns the compression event. The caller checkpoints the
// state before calling it.
func (a *Assembler) Compress(ctx context.Context, def *engine.Definition, m *engine.WorkingMemory, historyBudget int) (engine.CompressionEvent, error) {
	cfg := def.ContextConfig
	strategy := cmp.Or(cfg.CompressionStrategy, engine.CompressSummarizeOld)
	keep := cmp.Or(cfg.RecentTurnsKept, DefaultRecentTurns)
	cutoff := m.TurnNumber - keep + 1 // messages of turns ≥ cutoff stay
	var old, recent []engine.Message
	for _, msg := range m.History {
		if msg.Turn < cutoff {
			old = append(old, msg)
		} else {
			recent = append(recent, msg)
		}
	}
	if len(old) == 0 {
		return engine.CompressionEvent{}, ErrNothingToCompress
	}
	before := a.historyTokens(m)
	switch strategy {
	case engine.CompressSummarizeOld:
		target := max(historyBudget/3, 32)
		s, err := a.sum.Summarize(ctx, m.Context.Summary, old, target)
		if err != nil {
			if ctx.Err() != nil {
				return engine.CompressionEvent{}, ctx.Err()
			}
			s, _ = OfflineSummarizer{Tokenizer: a.tok}.Summarize(ctx, m.Context.Summary, old, target)
		}
		m.Context.Summary = s
	case engine.CompressSlidingWindow:
	case engine.CompressExtractive:
		m.Context.Summary = extractFacts(def, m, old)
	default:
		return engine.CompressionEvent{}, fmt.Errorf("contextasm: unknown compression strategy %q", strategy)
	}
	m.History = recent
	ev := engine.CompressionEvent{AtTurn: m.TurnNumber, Strategy: strategy, MessagesRemoved: len(old),
		TokensBefore: before, TokensAfter: a.historyTokens(m)}
	m.Context.CompressionEvents = append(m.Context.CompressionEvents, ev)
	return ev, nil
}

func (a *Assembler) historyTokens(m *engine.WorkingMemory) int {
	n := a.count(m.Context.Summary)
	for _, msg := range m.History {
		n += a.tok.Count(renderMessage(msg)) + 1
	}
	return n
}

// extractFacts lists the facts extracted from the compressed turns, keeping
// facts already in the summary.
func extractFacts(def *engine.Definition, m *engine.WorkingMemory, old []engine.Message) string {
	turns := map[int]bool{}
	for _, msg := range old {
		turns[msg.Turn] = true
	}
	const head = "Key facts from earlier turns:"
	lines := []string{}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimPrefix(m.Context.Summary, head), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
			seen[l] = true
		}
	}
	for _, f := range def.ExtractionSchema.Fields {
		x, ok := m.Extraction.Fields[f.Path]
		if !ok {
			continue
		}
		from := 0
		for _, t := range x.ExtractedFromTurns {
			if turns[t] {
				from = t
			}
		}
		if from == 0 {
			continue
		}
		l := fmt.Sprintf("- %s: %s (turn %d)", f.DisplayName, clip(string(x.Value), 200), from)
		if !seen[l] {
			lines = append(lines, l)
			seen[l] = true
		}
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("- (turns %d-%d held no extracted facts)", old[0].Turn, old[len(old)-1].Turn))
	}
	return head + "\n" + strings.Join(lines, "\n")
}

// OfflineSummarizer condenses turns without a model: the first sentence of
// each user message, by turn, after the previous summary, cut to the
// target. It is the summarizer of the offline provider and the fallback of
// the LLM one.
type OfflineSummarizer struct {
	Tokenizer Tokenizer
}

// Summarize implements Summarizer.
func (s OfflineSummarizer) Summarize(_ context.Context, previous string, msgs []engine.Message, targetTokens int) (string, error) {
	var parts []string
	if previous != "" {
		parts = append(parts, previous)
	}
	for _, m := range msgs {
		if m.Role != engine.RoleUser {
			continue
		}
		parts = append(parts, fmt.Sprintf("turn %d: the user said %q.", m.Turn, firstSentence(m.Content, 25)))
	}
	out := strings.Join(parts, " ")
	if s.Tokenizer != nil && s.Tokenizer.Count(out) > targetTokens {
		// Keep the newest part: cut from the front.
		words := strings.Fields(out)
		for len(words) > 1 && s.Tokenizer.Count(strings.Join(words, " ")) > targetTokens-2 {
			words = words[max(1, len(words)/10):]
		}
		out = "… " + strings.Join(words, " ")
	}
	return out, nil
}

func firstSentence(s string, maxWords int) string {
	s = oneLine(s)
	if i := strings.IndexAny(s, ".!?"); i > 0 {
		s = s[:i]
	}
	w := strings.Fields(s)
	if len(w) > maxWords {
		w = append(w[:maxWords], "…")
	}
	return strings.Join(w, " ")
}

// Completer is the LLM port as the LLM summarizer uses it.
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// PurposeSummarize is the LLM request purpose of history summarization.
const PurposeSummarize = "summarize"

// LLMSummarizer summarizes old turns with the model (production
// summarize_old).
type LLMSummarizer struct {
	LLM Completer
}

// Summarize implements Summarizer.
func (s LLMSummarizer) Summarize(ctx context.Context, previous string, msgs []engine.Message, targetTokens int) (string, error) {
	if s.LLM == nil {
		return "", errors.New("contextasm: LLMSummarizer.LLM is nil")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Summarize the conversation below in at most %d tokens. Keep every fact, number, name, decision and open question; drop pleasantries.\n", targetTokens)
	if previous != "" {
		fmt.Fprintf(&b, "Summary of even earlier turns (fold it in):\n%s\n", previous)
	}
	b.WriteString("Conversation:\n")
	for _, m := range msgs {
		b.WriteString(renderMessage(m))
		b.WriteByte('\n')
	}
	resp, err := s.LLM.Complete(ctx, llm.Request{Purpose: PurposeSummarize, MaxTokens: targetTokens,
		Messages: []llm.Message{{Role: llm.System, Content: "You write faithful, compact summaries."}, {Role: llm.User, Content: b.String()}}})
	if err != nil {
		return "", fmt.Errorf("summarize: %w", err)
	}
	out := strings.TrimSpace(resp.Content)
	if out == "" {
		return "", errors.New("summarize: empty answer")
	}
	return out, nil
}
