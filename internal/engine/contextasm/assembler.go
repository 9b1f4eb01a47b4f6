package contextasm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/technique"
)

// Section names one of the seven parts of the assembled context.
type Section string

// The seven sections, in the order they are assembled: the inbound handoff
// first (what is at the top is recalled best, "Lost in the Middle"), the
// history in the middle, the user's message last.
const (
	SectionHandoff     Section = "handoff"
	SectionPhase       Section = "phase_instructions"
	SectionObligations Section = "obligations"
	SectionBackground  Section = "background_intelligence"
	SectionHistory     Section = "conversation_history"
	SectionExtraction  Section = "extraction_summary"
	SectionMessage     Section = "user_message"
)

// Order returns the sections in assembly order.
func Order() []Section {
	return []Section{SectionHandoff, SectionPhase, SectionObligations, SectionBackground,
		SectionHistory, SectionExtraction, SectionMessage}
}

// Headers of the sections. The offline reply skill finds its way by them,
// so they are part of the format.
const (
	HeaderHandoff     = "═══ HANDOFF CONTEXT — READ THIS FIRST ═══"
	HeaderPhase       = "=== CURRENT PHASE ==="
	HeaderObligations = "=== OBLIGATIONS ==="
	HeaderBackground  = "=== BACKGROUND INTELLIGENCE ==="
	HeaderHistory     = "=== CONVERSATION HISTORY ==="
	HeaderExtraction  = "=== EXTRACTION SUMMARY ==="
	HeaderMessage     = "=== CURRENT USER MESSAGE ==="
	// NextPrefix starts the line naming the obligation to ask for next:
	// "NEXT OBLIGATION: <id> | <description> | ask: <question>".
	NextPrefix = "NEXT OBLIGATION: "
	// NothingNext replaces that line when every obligation is settled.
	NothingNext = "NEXT OBLIGATION: none — every obligation is satisfied or deferred"
)

// Input is what one turn's context is assembled from.
type Input struct {
	Def *engine.Definition
	// Memory is the working memory after this turn's earlier steps; its
	// history holds the current message as its last user message.
	Memory *engine.WorkingMemory
	// Message is the current user message.
	Message string
	// Techniques are the ids chosen for this reply.
	Techniques []string
	// Next is the obligation to ask for next (nil: nothing left).
	Next *engine.Obligation
	// Handoff is the formatted inbound handoff (the executive summary of
	// package handoff, framed by its own ═ title block; other text gets
	// HeaderHandoff); when empty and the memory has one, its JSON is shown.
	Handoff string
	// Intelligence are lines of background intelligence besides the
	// memory's tasks and its stored intelligence (e.g. a provider asked
	// this turn).
	Intelligence []string
}

// Part is one assembled section.
type Part struct {
	Section Section `json:"section"`
	Text    string  `json:"text"`
	Tokens  int     `json:"tokens"`
	// Budget is the section's token budget (0: not budgeted by allocation).
	Budget    int  `json:"budget"`
	Truncated bool `json:"truncated,omitempty"`
}

// Assembled is a turn's context.
type Assembled struct {
	Parts      []Part `json:"parts"`
	TokensUsed int    `json:"tokens_used"`
	// HistoryTokens is what the whole history would take; HistoryBudget
	// what it may take. Overflow means compression is due.
	HistoryTokens int  `json:"history_tokens"`
	HistoryBudget int  `json:"history_budget"`
	Overflow      bool `json:"overflow"`
}

// Part returns one section.
func (a Assembled) Part(s Section) (Part, bool) {
	for _, p := range a.Parts {
		if p.Section == s {
			return p, true
		}
	}
	return Part{}, false
}

// Config configures an Assembler.
type Config struct {
	// Tokenizer counts tokens. Required.
	Tokenizer Tokenizer
	// Summarizer condenses old turns for summarize_old (default the
	// deterministic OfflineSummarizer).
	Summarizer Summarizer
}

func (c Config) validate() error {
	if c.Tokenizer == nil {
		return errors.New("contextasm: Config.Tokenizer is required")
	}
	return nil
}

// Assembler builds the context of each turn within the engine's token
// budget and compresses history when it overflows.
type Assembler struct {
	tok Tokenizer
	sum Summarizer
}

// New returns an assembler.
func New(cfg Config) (*Assembler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Summarizer == nil {
		cfg.Summarizer = OfflineSummarizer{Tokenizer: cfg.Tokenizer}
	}
	return &Assembler{tok: cfg.Tokenizer, sum: cfg.Summarizer}, nil
}

// Shares of max_tokens the unbudgeted sections may use at most.
const (
	handoffShare = 0.25
	phaseShare   = 0.15
	messageShare = 0.25
)

// Assemble builds the context. The handoff, phase instructions and user
// message are placed first, each capped to a share of max_tokens; the rest
// of the budget is split between obligations, background intelligence,
// history and extraction summary by the configured allocation, and each of
// those is cut to its budget (lists lose their last lines, history its
// oldest messages). It is deterministic.
func (a *Assembler) Assemble(in Input) Assembled {
	cfg := in.Def.ContextConfig
	maxTok := cfg.MaxTokens
	parts := map[Section]Part{}
	fixed := func(s Section, text string, share float64) {
		if text == "" {
			return
		}
		limit := int(float64(maxTok) * share)
		p := Part{Section: s, Text: text, Tokens: a.count(text)}
		if p.Tokens > limit {
			p.Text, p.Truncated = a.head(text, limit), true
			p.Tokens = a.count(p.Text)
		}
		parts[s] = p
	}
	fixed(SectionHandoff, renderHandoff(in), handoffShare)
	fixed(SectionPhase, renderPhase(in), phaseShare)
	fixed(SectionMessage, HeaderMessage+"\n"+in.Message, messageShare)
	rest := maxTok
	for _, p := range parts {
		rest -= p.Tokens
	}
	rest = max(rest, 0)
	al := cfg.Allocation
	budget := func(f float64) int { return int(float64(rest) * f) }

	parts[SectionObligations] = a.fitTail(SectionObligations, HeaderObligations, renderObligations(in), budget(al.Obligations))
	parts[SectionBackground] = a.fitTail(SectionBackground, HeaderBackground, renderBackground(in), budget(al.BackgroundIntelligence))
	parts[SectionExtraction] = a.fitTail(SectionExtraction, HeaderExtraction, renderExtraction(in), budget(al.ExtractionSummary))
	hist, full := a.fitHistory(in.Memory, budget(al.ConversationHistory))
	parts[SectionHistory] = hist

	out := Assembled{HistoryTokens: full, HistoryBudget: hist.Budget, Overflow: full > hist.Budget}
	for _, s := range Order() {
		p, ok := parts[s]
		if !ok {
			continue
		}
		out.Parts = append(out.Parts, p)
		out.TokensUsed += p.Tokens
	}
	return out
}

// Text is the sections in order, separated by blank lines. (The runner
// writes the sections but the message into its prompt: WriteSections.)
func (a Assembled) Text() string {
	all := func(Part) bool { return true }
	var b strings.Builder
	b.Grow(a.Len(all))
	a.WriteSections(&b, all)
	return b.String()
}

// Len is the length of what WriteSections writes for keep.
func (a Assembled) Len(keep func(Part) bool) int {
	n, kept := 0, 0
	for _, p := range a.Parts {
		if keep(p) {
			n += len(p.Text)
			kept++
		}
	}
	return n + 2*max(kept-1, 0)
}

// WriteSections writes to b the text of the parts keep accepts, in order,
// separated by blank lines.
func (a Assembled) WriteSections(b *strings.Builder, keep func(Part) bool) {
	first := true
	for _, p := range a.Parts {
		if !keep(p) {
			continue
		}
		if !first {
			b.WriteString("\n\n")
		}
		first = false
		b.WriteString(p.Text)
	}
}

// fitTail keeps a section's first lines that fit the budget.
func (a *Assembler) fitTail(s Section, header string, lines []string, budget int) Part {
	text := header + "\n" + strings.Join(lines, "\n")
	p := Part{Section: s, Text: text, Tokens: a.count(text), Budget: budget}
	if p.Tokens <= budget {
		return p
	}
	p.Truncated = true
	used := a.tok.Count(header)
	kept := []string{header}
	for i, l := range lines {
		n := a.tok.Count(l) + 1
		more := fmt.Sprintf("… (%d more lines omitted)", len(lines)-i)
		if used+n+a.tok.Count(more)+1 > budget {
			kept = append(kept, more)
			break
		}
		used += n
		kept = append(kept, l)
	}
	p.Text = strings.Join(kept, "\n")
	p.Tokens = a.count(p.Text)
	return p
}

// fitHistory renders the summary and the previous turns, dropping the oldest
// messages that do not fit. It also returns what the whole history needs.
func (a *Assembler) fitHistory(m *engine.WorkingMemory, budget int) (Part, int) {
	var lines []string
	if m.Context.Summary != "" {
		lines = append(lines, "Summary of earlier turns: "+m.Context.Summary)
	}
	summaryLines := len(lines)
	for _, msg := range m.History {
		if msg.Turn >= m.TurnNumber && msg.Role == engine.RoleUser {
			continue // the current message is section 7
		}
		lines = append(lines, renderMessage(msg))
	}
	if len(lines) == 0 {
		lines = []string{"(this is the first turn)"}
	}
	full := HeaderHistory + "\n" + strings.Join(lines, "\n")
	p := Part{Section: SectionHistory, Text: full, Tokens: a.count(full), Budget: budget}
	need := p.Tokens
	if p.Tokens <= budget {
		return p, need
	}
	p.Truncated = true
	// Keep the newest messages; the summary goes last, shortened if needed.
	const omitted = "… (older messages omitted)"
	used := a.tok.Count(HeaderHistory) + 1 + a.tok.Count(omitted)
	var kept []string
	for i := len(lines) - 1; i >= summaryLines; i-- {
		n := a.tok.Count(lines[i]) + 1
		if used+n > budget {
			break
		}
		used += n
		kept = append(kept, lines[i])
	}
	slices.Reverse(kept)
	head := []string{HeaderHistory}
	if summaryLines > 0 && budget-used > 8 {
		head = append(head, a.tok.Truncate(lines[0], budget-used-1))
	}
	head = append(head, omitted)
	p.Text = strings.Join(append(head, kept...), "\n")
	p.Tokens = a.count(p.Text)
	return p, need
}

// head keeps the whole first lines of text that fit limit tokens; a first
// line longer than that is cut.
func (a *Assembler) head(text string, limit int) string {
	lines := strings.Split(text, "\n")
	used := 0
	for i, l := range lines {
		n := a.tok.Count(l) + 1
		if used+n > limit {
			if i == 0 {
				return a.tok.Truncate(l, limit)
			}
			return strings.Join(lines[:i], "\n")
		}
		used += n
	}
	return text
}

// count counts a text line by line, plus one token per line break: the
// lines that recur every turn are then counted once by a Cached tokenizer,
// and the sum never undercounts by more than the merges of adjacent line
// breaks, which budgets tolerate.
func (a *Assembler) count(text string) int {
	n := 0
	lines := strings.Split(text, "\n")
	for _, l := range lines {
		n += a.tok.Count(l)
	}
	return n + len(lines) - 1
}

func renderMessage(m engine.Message) string {
	return "[turn " + strconv.Itoa(m.Turn) + "] " + m.Role + ": " + oneLine(m.Content)
}

// oneLine collapses every run of white space to one space and trims the
// ends; text that has nothing to collapse (most of it) comes back as is.
func oneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isOneLine reports whether oneLine would leave s unchanged: no white
// space but single spaces between words.
func isOneLine(s string) bool {
	space := true // at the start, a space would be trimmed
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		i += n
		switch {
		case r == ' ':
			if space {
				return false
			}
			space = true
		case unicode.IsSpace(r):
			return false
		default:
			space = false
		}
	}
	return !space || s == ""
}

func renderHandoff(in Input) string {
	text := in.Handoff
	if text == "" && len(in.Memory.InboundHandoff) > 0 && string(in.Memory.InboundHandoff) != "null" {
		var v any
		if json.Unmarshal(in.Memory.InboundHandoff, &v) == nil {
			b, _ := json.MarshalIndent(v, "", "  ")
			text = string(b)
		}
	}
	if text == "" {
		return ""
	}
	if strings.HasPrefix(text, "═") {
		return text // titled by the summary itself
	}
	return HeaderHandoff + "\n" + text
}

func renderPhase(in Input) string {
	m, def := in.Memory, in.Def
	p, ok := def.Phase(m.Phase.Current)
	if !ok {
		return HeaderPhase + "\nPhase: " + m.Phase.Current
	}
	var b strings.Builder
	b.WriteString(HeaderPhase + "\n")
	fmt.Fprintf(&b, "Phase: %s | %s | %d of %d | turn %d in phase\n", p.ID, p.DisplayName, p.Order, len(def.Phases), m.Phase.TurnsInPhase)
	fmt.Fprintf(&b, "Mode blend: %s\n", p.ModeBlend)
	fmt.Fprintf(&b, "Information ratio: user %d%%, system %d%%\n", def.InformationRatio.User, def.InformationRatio.System)
	if p.AgentInstructions != "" {
		fmt.Fprintf(&b, "Instructions: %s\n", oneLine(p.AgentInstructions))
	}
	if block := technique.PromptBlock(in.Techniques); block != "" {
		b.WriteString(block)
	} else {
		b.WriteString("Active Techniques: none this turn\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func renderObligations(in Input) []string {
	m, def := in.Memory, in.Def
	s := m.Obligations.Summary
	lines := []string{fmt.Sprintf("Progress: %d of %d satisfied, %d partial, %d deferred; completeness %d%% (ready at %d%%)",
		s.Satisfied, s.Total, s.Partial, s.Deferred, percent(m.Completeness.Overall), percent(def.CompletenessModel.ReadyThreshold))}
	if n := in.Next; n != nil {
		line := NextPrefix + n.ID + " | " + oneLine(n.Description)
		if n.Question != "" {
			line += " | ask: " + oneLine(n.Question)
		}
		lines = append(lines, line)
	} else {
		lines = append(lines, NothingNext)
	}
	var focus []string
	if p, ok := def.Phase(m.Phase.Current); ok {
		focus = def.PhaseFocus(p)
	}
	item := func(it engine.ObligationItem) string {
		st := string(it.Status)
		if it.Status == engine.StatusSatisfied || it.Status == engine.StatusPartial {
			st += " " + strconv.FormatFloat(it.Confidence, 'f', 2, 64)
		}
		req := ""
		if it.Required {
			req = ", required"
		}
		return "- " + it.ID + " [" + st + req + "]: " + oneLine(it.Description)
	}
	var inFocus, other []string
	for _, it := range m.Obligations.Items {
		if slices.Contains(focus, it.Category) {
			inFocus = append(inFocus, item(it))
		} else {
			other = append(other, item(it))
		}
	}
	if len(inFocus) > 0 {
		lines = append(lines, "In focus for this phase ("+strings.Join(focus, ", ")+"):")
		lines = append(lines, inFocus...)
	}
	if len(other) > 0 {
		lines = append(lines, "Other obligations:")
		lines = append(lines, other...)
	}
	if g := m.Completeness.Gaps; len(g) > 0 {
		lines = append(lines, "Gaps: "+strings.Join(g, ", "))
	}
	return lines
}

// renderBackground lists the background tasks' results, the failures the
// agent must work around (degraded: how to proceed; gap: what is missing),
// what progress waits for (stalled), what still runs, and the lines of
// background intelligence.
func renderBackground(in Input) []string {
	m := in.Memory
	name := func(id string) string {
		for _, t := range in.Def.BackgroundTasks {
			if t.TaskID == id && t.DisplayName != "" {
				return t.DisplayName
			}
		}
		return id
	}
	var lines []string
	for _, t := range m.BackgroundTasks.Completed {
		switch t.Status {
		case engine.TaskDegraded:
			lines = append(lines, fmt.Sprintf("- %s: unavailable (%s); proceed this way: %s", name(t.TaskID), clip(oneLine(t.Error), 160), oneLine(t.Note)))
		case engine.TaskGap:
			lines = append(lines, fmt.Sprintf("- gap: %s (background task failed; proceed without it, and fill it from the user if you can)", name(t.TaskID)))
		default:
			if len(t.Result) > 0 {
				lines = append(lines, fmt.Sprintf("- %s: %s", name(t.TaskID), clip(resultText(t.Result), 600)))
			}
		}
	}
	for _, t := range m.BackgroundTasks.Pending {
		switch t.Status {
		case engine.TaskStalled:
			lines = append(lines, fmt.Sprintf("- %s: WAITING — progress is blocked until it completes; tell the user you are waiting for this background research", name(t.TaskID)))
		case engine.TaskRetrying:
			lines = append(lines, fmt.Sprintf("- %s: failed once, being retried (attempt %d)", name(t.TaskID), t.Attempt))
		default:
			lines = append(lines, fmt.Sprintf("- %s: still running", name(t.TaskID)))
		}
	}
	for _, l := range append(slices.Clone(m.BackgroundTasks.Intelligence), in.Intelligence...) {
		if l = oneLine(l); l != "" {
			lines = append(lines, "- "+clip(l, 600))
		}
	}
	if len(lines) == 0 {
		lines = []string{"(no background research yet)"}
	}
	return lines
}

// resultText renders a task result: its summary and findings when it has
// them (as the research handlers answer), else its JSON on one line.
func resultText(raw json.RawMessage) string {
	var r struct {
		Summary  string `json:"summary"`
		Findings []struct {
			Title  string `json:"title"`
			Detail string `json:"detail"`
		} `json:"findings"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Summary == "" {
		return oneLine(string(raw))
	}
	parts := []string{oneLine(r.Summary)}
	for _, f := range r.Findings {
		p := oneLine(f.Title)
		if f.Detail != "" {
			p += " (" + oneLine(f.Detail) + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}

func renderExtraction(in Input) []string {
	var lines []string
	for _, f := range in.Def.ExtractionSchema.Fields {
		x, ok := in.Memory.Extraction.Fields[f.Path]
		if !ok {
			continue
		}
		b := make([]byte, 0, 64+len(f.Path)+len(f.DisplayName)+min(len(x.Value), 4*400+3))
		b = append(b, "- "...)
		b = append(b, f.Path...)
		b = append(b, " ("...)
		b = append(b, f.DisplayName...)
		b = append(b, "): "...)
		b = append(b, clip(string(x.Value), 400)...)
		b = append(b, " [confidence "...)
		b = strconv.AppendFloat(b, x.Confidence, 'f', 2, 64)
		b = append(b, ", turns "...)
		for i, t := range x.ExtractedFromTurns {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(t), 10)
		}
		b = append(b, ']')
		lines = append(lines, string(b))
	}
	if len(lines) == 0 {
		lines = []string{"(nothing extracted yet)"}
	}
	return lines
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func percent(x float64) int { return int(x*100 + 0.5) }
