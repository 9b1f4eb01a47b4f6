package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/completeness"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/engine/phase"
	"github.com/praetorhq/praetor/internal/engine/sidebar"
	"github.com/praetorhq/praetor/internal/engine/strategy"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/engine/technique"
	"github.com/praetorhq/praetor/internal/llm"
)

// Completer is the LLM port as the runner uses it (response generation).
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// CheckpointPolicy decides when a turn's final state is snapshotted.
// (Snapshots before compression are always taken.)
type CheckpointPolicy interface {
	Due(def *engine.Definition, m *engine.WorkingMemory) bool
}

// DefaultCheckpointEvery is the checkpoint period when the engine sets none.
const DefaultCheckpointEvery = 5

// EveryNTurns checkpoints every context_config.checkpoint_every_turns turns
// (default 5).
type EveryNTurns struct{}

// Due implements CheckpointPolicy.
func (EveryNTurns) Due(def *engine.Definition, m *engine.WorkingMemory) bool {
	n := cmp.Or(def.ContextConfig.CheckpointEveryTurns, DefaultCheckpointEvery)
	return m.TurnNumber%n == 0
}

// PurposeResponse is the LLM request purpose of response generation.
const PurposeResponse = "response"

// Config configures a Runner. Every dependency is a small interface, so the
// runner holds no I/O of its own.
type Config struct {
	// LLM writes replies. Required.
	LLM Completer
	// Registry resolves custom evaluators. Required.
	Registry *engine.Registry
	// Clock gives the turn's time, read once per turn (default time.Now).
	// Inject it for replay; it must be safe for concurrent use.
	Clock func() time.Time
	// Tokenizer counts context tokens (default tiktoken with the engine's
	// encoding, behind a contextasm.Cached shared by all sessions).
	Tokenizer contextasm.Tokenizer
	// Summarizer condenses old turns for summarize_old (default the
	// deterministic contextasm.OfflineSummarizer; use
	// contextasm.LLMSummarizer in production).
	Summarizer contextasm.Summarizer
	// Scheduler picks techniques (default technique.RuleBased).
	Scheduler technique.Scheduler
	// Classifier classifies reply modes (default strategy.HeuristicClassifier).
	Classifier strategy.ModeClassifier
	// Checkpoints decides periodic checkpoints (default EveryNTurns).
	Checkpoints CheckpointPolicy
	// Logger receives one telemetry line per turn (default slog.Default()).
	// User text is never logged.
	Logger *slog.Logger
	// MaxMessageBytes bounds the user message a turn takes (default 16 KiB):
	// a longer one is cut to it, and the turn answered degraded.
	MaxMessageBytes int
	// ResponseMaxTokens bounds a reply (default 600).
	ResponseMaxTokens int
	// ResponseMaxChars is where QA cuts an overlong reply (default 4000).
	ResponseMaxChars int
	// TurnBudget is how long a turn may take from its Input.ReceivedAt to
	// its reply (default DefaultTurnBudget, 5m: the time a turn's handler
	// has). The extraction before the reply may have spent most of it on a
	// model that hangs; the reply's call gets what is left, as its context's
	// deadline, and is answered degraded when it runs out.
	TurnBudget time.Duration
	// MinReplyBudget is the least the reply's call gets, however little of
	// the turn is left (default DefaultMinReplyBudget, 60s: one attempt of
	// the openai provider), so that the reply is still tried once.
	MinReplyBudget time.Duration

	// Mappers map working memory to the handoff of an exit transition
	// (default handoff.Builtin(): the shipped engines' mappers, and the
	// generic one for the others).
	Mappers *handoff.Mappers
	// Engines, when set, name the target engine in the handover line of a
	// reply and refuse an exit to an engine that is not loaded. The service
	// and Replay set it from their catalog.
	Engines *engine.Catalog
	// TaskStrategy decides what a failed background task leads to (default
	// strategy.ConfigDriven, the seed's).
	TaskStrategy strategy.TaskFailureStrategy
	// TaskTimeoutFactor sets an attempt's timeout: the task's
	// estimated_duration times this (default 2).
	TaskTimeoutFactor float64
	// Intelligence, when set, gives lines of background intelligence for a
	// session's project (the memory service). The service asks it at each
	// turn; lines that changed are merged into working memory after the
	// turn, in the session's order, so a replay sees them where the live run
	// did. Errors are logged and the turn goes on.
	Intelligence Intelligence
	// IntelligenceTTL is how long the lines read for a project serve later
	// turns of its sessions (default DefaultIntelligenceTTL, 2s); a negative
	// value reads them at every turn.
	IntelligenceTTL time.Duration
}

// Intelligence is the memory service as the runner uses it: lines of
// background intelligence (decisions, patterns) for a tenant's project.
type Intelligence interface {
	Background(ctx context.Context, tenantID, projectID string) ([]string, error)
}

// Defaults of a turn's time (Config.TurnBudget, Config.MinReplyBudget).
const (
	DefaultTurnBudget     = 5 * time.Minute
	DefaultMinReplyBudget = 60 * time.Second
)

// DefaultTaskTimeoutFactor multiplies a task's estimated duration into the
// timeout of one attempt.
const DefaultTaskTimeoutFactor = 2

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Summarizer == nil {
		c.Summarizer = contextasm.OfflineSummarizer{Tokenizer: c.Tokenizer}
	}
	if c.Scheduler == nil {
		c.Scheduler = technique.NewRuleBased(technique.RuleConfig{})
	}
	if c.Classifier == nil {
		c.Classifier = strategy.HeuristicClassifier{}
	}
	if c.Checkpoints == nil {
		c.Checkpoints = EveryNTurns{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, 16<<10)
	c.ResponseMaxTokens = cmp.Or(c.ResponseMaxTokens, 600)
	c.ResponseMaxChars = cmp.Or(c.ResponseMaxChars, 4000)
	c.TurnBudget = cmp.Or(c.TurnBudget, DefaultTurnBudget)
	c.MinReplyBudget = cmp.Or(c.MinReplyBudget, DefaultMinReplyBudget)
	if c.Mappers == nil {
		c.Mappers = handoff.Builtin()
	}
	if c.TaskStrategy == nil {
		c.TaskStrategy = strategy.ConfigDriven{}
	}
	c.TaskTimeoutFactor = cmp.Or(c.TaskTimeoutFactor, DefaultTaskTimeoutFactor)
	c.IntelligenceTTL = cmp.Or(c.IntelligenceTTL, DefaultIntelligenceTTL)
	return c
}

func (c Config) validate() error {
	if c.LLM == nil {
		return errors.New("runner: Config.LLM is required")
	}
	if c.Registry == nil {
		return errors.New("runner: Config.Registry is required")
	}
	if c.TurnBudget < 0 || c.MinReplyBudget < 0 {
		return errors.New("runner: TurnBudget and MinReplyBudget must be positive")
	}
	if c.MaxMessageBytes < 1 || c.ResponseMaxTokens < 1 || c.ResponseMaxChars < 1 {
		return errors.New("runner: limits must be positive")
	}
	if c.TaskTimeoutFactor <= 0 {
		return errors.New("runner: TaskTimeoutFactor must be positive")
	}
	return nil
}

// withEngines returns a runner that knows the engines (for handover lines
// and exit checks), unless it knows some already.
func (r *Runner) withEngines(cat *engine.Catalog) *Runner {
	if r.cfg.Engines != nil || cat == nil {
		return r
	}
	cfg := r.cfg
	cfg.Engines = cat
	return &Runner{cfg: cfg}
}

// Runner runs the 19-step loop for any engine. It is safe for concurrent
// use; turns of one session must be processed in order.
type Runner struct {
	cfg Config
}

// New returns a runner.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, cached := cfg.Intelligence.(*cachedIntelligence); cfg.Intelligence != nil && cfg.IntelligenceTTL > 0 && !cached {
		cfg.Intelligence = newCachedIntelligence(cfg.Intelligence, cfg.IntelligenceTTL)
	}
	return &Runner{cfg: cfg}, nil
}

// Errors of Process. All are permanent for the turn: retrying the same input
// gives the same error.
var (
	ErrEmptyMessage   = errors.New("runner: message is empty")
	ErrEngineMismatch = errors.New("runner: state belongs to another engine")
	// ErrDuplicateTurn is returned for a turn the state has already
	// processed: the caller acknowledges it without a second effect.
	ErrDuplicateTurn = errors.New("runner: turn already processed")
	// ErrTurnGap is returned when turns are missing between the state and
	// the input.
	ErrTurnGap = errors.New("runner: turn out of order")
	// ErrHandedOff is returned for a turn after the one whose exit
	// transition fired: the conversation has gone to the target engine, and
	// the session takes no more turns.
	ErrHandedOff = errors.New("runner: the session has handed off")
)

// Steps returns the seed's 19 steps, in order, as Result.Steps reports them.
func Steps() []string {
	return []string{
		"pre-processing", "extraction", "saturation", "socio-emotional", "completeness",
		"phase-transition-eval", "phase-transition-exec", "background-tasks", "technique-selection",
		"context-assembly", "compression-check", "response-generation", "qa-check", "mode-classification",
		"telemetry", "sidebar", "exit-transitions", "persist-state", "return",
	}
}

// Process runs one turn: steps 1 and 3-19 of the seed in its order, with
// step 2's result taken from the input (the extractor ran it). It does not
// change state; the new state is in the result, with everything to persist
// as effects. Given the same definition, state, input, LLM answers and
// clock, it returns the same result. A failed response generation gives a
// degraded reply: the turn is still answered.
func (r *Runner) Process(ctx context.Context, def *engine.Definition, state *engine.WorkingMemory, in Input) (*Result, error) {
	return r.process(ctx, def, state, in, false)
}

// processOwned is Process for a caller that hands state over: a memory it
// has just decoded from JSON and normalized (NormalizeDecoded), and will not
// use again. The turn works on it instead of on a copy, which would be the
// same value (a copy is a JSON round trip, and state already is one) at the
// cost of encoding and decoding the whole memory. state becomes the
// result's State.
func (r *Runner) processOwned(ctx context.Context, def *engine.Definition, state *engine.WorkingMemory, in Input) (*Result, error) {
	return r.process(ctx, def, state, in, true)
}

func (r *Runner) process(ctx context.Context, def *engine.Definition, state *engine.WorkingMemory, in Input, owned bool) (*Result, error) {
	res := &Result{Effects: Effects{Tasks: []TaskDispatch{}, Checkpoints: []Checkpoint{}}, Steps: make([]string, 0, 19),
		EngineDigest: def.Digest()}
	step := func(name string) { res.Steps = append(res.Steps, name) }

	// 1. Pre-processing: validate the input, load the state, open the turn.
	// A message over the limit is cut to it, and the turn answered
	// (degraded): refusing it would stop the session, whose later turns
	// the extractor has numbered after it.
	step("pre-processing")
	var cut string
	if n := len(in.Message); n > r.cfg.MaxMessageBytes {
		in.Message = truncate(in.Message, r.cfg.MaxMessageBytes)
		cut = fmt.Sprintf("the message has %d bytes; the runner took its first %d (its limit, MaxMessageBytes)", n, len(in.Message))
	}
	prev := 0
	if state != nil {
		prev = state.TurnNumber
	}
	m, err := r.preprocess(def, state, in, owned)
	if err != nil {
		return nil, err
	}
	for n := prev + 1; n < in.TurnNumber; n++ {
		res.SkippedTurns = append(res.SkippedTurns, n)
	}
	now := in.Now
	if now.IsZero() {
		now = r.cfg.Clock()
	}
	now = now.UTC()
	m.UpdatedAt = now
	meta := extraction.Meta{SessionID: m.SessionID, ProjectID: m.ProjectID, MessageID: in.TurnID,
		EngineID: def.EngineID, TurnNumber: in.TurnNumber}

	// 2. Extraction: install the extractor's result and derive its log rows.
	step("extraction")
	prevExtraction := m.Extraction
	m.Extraction = in.Extraction.Clone()
	if m.Extraction.Fields == nil {
		m.Extraction.Fields = map[string]engine.ExtractedField{}
	}
	res.Effects.ExtractionLog, res.Effects.SupersededLinks = extraction.Diff(prevExtraction, m.Extraction, meta)

	// 3. Saturation.
	step("saturation")
	updateSaturation(def, m, in)

	// 4. Socio-emotional, and how the last reply's techniques worked.
	step("socio-emotional")
	frictionBefore := m.SocioEmotional.Friction
	updateSocioEmotional(m, in)
	technique.Observe(m, technique.Observation{
		WordCount: len(strings.Fields(in.Message)), PrevWordCount: previousUserWords(m),
		NewConcepts: in.NewConceptCount, FrictionBefore: frictionBefore, FrictionAfter: m.SocioEmotional.Friction,
		Confirmed: confirms(in.Message),
	})

	// 5. Completeness: obligation statuses first, then the model.
	step("completeness")
	asked, _ := m.Obligation(m.Obligations.Focus)
	m.Obligations = obligation.Evaluate(def, m, r.cfg.Registry)
	moved := asked != nil && obligation.Moved(def, m, *asked)
	m.Completeness = completeness.Evaluate(def, m, r.cfg.Registry)

	// 6-7. Phase transition: evaluate the triggers, execute if allowed. A
	// stalled background task blocks progress: no transition until it
	// completes.
	machine := phase.New(def, r.cfg.Registry)
	step("phase-transition-eval")
	ev := machine.EvaluateTransition(m)
	step("phase-transition-exec")
	res.Stalled = stalledNames(def, m)
	if ev.ShouldTransition {
		ok, why := machine.CanTransition(ev.From, ev.Target, m)
		for _, n := range res.Stalled {
			ok, why = false, append(why, fmt.Sprintf("waiting for background task %s (stalled)", n))
		}
		if !ok {
			res.PhaseBlockedBy = why
		} else if err := machine.ExecuteTransition(ev.From, ev.Target, m); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		} else {
			res.PhaseChange = &PhaseChange{From: ev.From, To: ev.Target, Trigger: ev.Trigger}
		}
	}
	cur, _ := def.Phase(m.Phase.Current)

	// 8. Background tasks: those whose attempt went unanswered for too long
	// fail (their strategy decides what next); dispatch those whose trigger
	// holds, and, in a new phase, again those an earlier phase left as gaps.
	step("background-tasks")
	var recs []engine.TaskRecord
	for _, late := range tasks.Overdue(def, m, r.cfg.TaskTimeoutFactor, now) {
		d, _ := tasks.Fail(def, m, r.cfg.TaskStrategy, late.TaskID, late.Attempt,
			tasks.Failure{Message: "no answer from the background workers in time"}, now)
		if rec, ok := m.BackgroundTasks.Task(late.TaskID); ok && d.NextAttempt > 0 {
			recs = append(recs, rec)
		}
	}
	recs = append(recs, tasks.Dispatch(m, tasks.Due(def, m, r.cfg.Registry))...)
	if res.PhaseChange != nil {
		recs = append(recs, tasks.Refill(def, m)...)
	}
	for _, rec := range recs {
		d, err := r.dispatch(def, m, rec)
		if err != nil {
			return nil, err
		}
		res.Effects.Tasks = append(res.Effects.Tasks, d)
	}
	res.Stalled = stalledNames(def, m) // an overdue task may have stalled

	// 9. Technique selection.
	step("technique-selection")
	chosen, err := r.cfg.Scheduler.Select(ctx, technique.Input{Phase: cur, Memory: m, Message: in.Message})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		chosen = []string{}
	}
	technique.Use(m, chosen)

	// 10. Context assembly, around the obligation to ask for next.
	step("context-assembly")
	next := obligation.Ask(def, m, moved)
	tok, err := r.tokenizer(def)
	if err != nil {
		return nil, err
	}
	asm, err := contextasm.New(contextasm.Config{Tokenizer: tok, Summarizer: r.summarizer(tok)})
	if err != nil {
		return nil, err
	}
	asmIn := contextasm.Input{Def: def, Memory: m, Message: in.Message, Techniques: chosen, Next: next,
		Handoff: inboundSummary(def, m)}
	assembled := asm.Assemble(asmIn)

	// 11. Compression check: on overflow, checkpoint, compress, reassemble.
	step("compression-check")
	if assembled.Overflow {
		cp, err := checkpoint(m, CheckpointBeforeCompression, assembled.TokensUsed)
		if err != nil {
			return nil, err
		}
		ev, err := asm.Compress(ctx, def, m, assembled.HistoryBudget)
		switch {
		case err == nil:
			res.Effects.Checkpoints = append(res.Effects.Checkpoints, cp)
			res.Context.Compression = &ev
			assembled = asm.Assemble(asmIn)
		case errors.Is(err, contextasm.ErrNothingToCompress):
			// Only recent turns: the assembler already cut the rendering.
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			return nil, fmt.Errorf("runner: compress: %w", err)
		}
	}
	m.Context.Tokens = assembled.TokensUsed
	res.Context.TokensUsed, res.Context.MaxTokens = assembled.TokensUsed, def.ContextConfig.MaxTokens
	res.Context.Assembled = assembled

	// 12. Response generation.
	step("response-generation")
	fallback := fallbackReply(next)
	degrade := func(reason string) {
		if res.DegradedReason != "" {
			res.DegradedReason += "; "
		}
		res.Degraded, res.DegradedReason = true, res.DegradedReason+reason
	}
	gctx, cancel := r.replyContext(ctx, in)
	reply, resp, genErr := r.generate(gctx, def, m, cur, in, chosen, next, assembled)
	if genErr != nil && gctx.Err() != nil && ctx.Err() == nil {
		// Said in the log, not in the degraded reason: the reason comes from
		// the call's recorded error alone, so that a replay, which serves
		// that error at once, rebuilds the same turn.
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reply ran out of the turn's time",
			slog.String("session_id", m.SessionID), slog.Int("turn", m.TurnNumber),
			slog.Duration("turn_budget", r.cfg.TurnBudget), slog.Duration("min_reply_budget", r.cfg.MinReplyBudget),
			slog.Time("received_at", in.ReceivedAt))
	}
	cancel()
	var short string
	if genErr == nil {
		reply, short, genErr = finished(reply, resp, r.cfg.ResponseMaxTokens)
	}
	if genErr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		degrade(genErr.Error())
		reply = fallback
	}
	if short != "" {
		degrade(short)
	}
	if cut != "" {
		degrade(cut)
	}
	if resp != nil {
		res.Provider, res.Model, res.Usage = resp.Provider, resp.Model, resp.Usage
	}
	if res.Degraded {
		// The turn's line says only that it was degraded; what to fix (a
		// key, a base URL, a model that hangs) is in the reason.
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "response degraded",
			slog.String("session_id", m.SessionID), slog.String("engine_id", def.EngineID),
			slog.Int("turn", m.TurnNumber), slog.String("reason", res.DegradedReason))
	}

	// 13. QA check; and the user is told what progress waits for.
	step("qa-check")
	reply, res.QA = qaCheck(reply, fallback, m, cur, r.cfg.ResponseMaxChars)
	if len(res.Stalled) > 0 {
		reply += "\n\n(Waiting for background research: " + strings.Join(res.Stalled, ", ") + ". " + whatWaits(def, cur) + ")"
	}

	// 14. Mode classification.
	step("mode-classification")
	modes, err := r.cfg.Classifier.Classify(ctx, reply)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	m.Modes.Last = modes
	if m.Modes.Counts == nil {
		m.Modes.Counts = map[engine.Mode]int{}
	}
	for _, md := range modes {
		m.Modes.Counts[md]++
	}

	// 15. Telemetry.
	step("telemetry")
	r.telemetry(ctx, def, m, in, res)

	// 16. Sidebar.
	step("sidebar")
	res.Sidebar = withTasks(sidebar.Build(def, m, r.cfg.Registry), def, m)

	// 17. Exit transitions: the first whose conditions all hold fires, once,
	// with a handoff that passes validation (a handoff that fails is not
	// made, and says why); and the first reply after an inbound handoff is
	// checked (I-PASS).
	step("exit-transitions")
	reply = r.exit(ctx, def, m, in, now, reply, res)
	res.Effects.Verification = verifyInbound(def, m, reply)

	// 18. Persist state: the reply joins the history; snapshot when due.
	step("persist-state")
	m.History = append(m.History, engine.Message{Role: engine.RoleAssistant, Content: reply, Turn: m.TurnNumber})
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("runner: state: %w", err)
	}
	res.stateJSON = raw
	var hash string
	if r.cfg.Checkpoints.Due(def, m) {
		canon, err := engine.Canonicalize(raw)
		if err != nil {
			return nil, fmt.Errorf("runner: state: %w", err)
		}
		res.Effects.Checkpoints = append(res.Effects.Checkpoints, Checkpoint{AtTurn: m.TurnNumber,
			Reason: CheckpointPeriodic, State: canon, ContextTokens: m.Context.Tokens})
		hash = engine.HashCanonical(canon)
	} else if hash, err = engine.CanonicalHash(raw); err != nil {
		return nil, fmt.Errorf("runner: state: %w", err)
	}

	// 19. Return.
	step("return")
	res.Reply, res.State, res.StateHash = reply, m, hash
	res.Phase, res.Completeness = m.Phase.Current, m.Completeness
	res.Techniques, res.Modes = chosen, modes
	res.ProcessedAt = now
	return res, nil
}

// preprocess is step 1: it checks the input and returns a copy of the state
// (the state itself when the caller handed it over) with the turn opened
// (number, message, history).
func (r *Runner) preprocess(def *engine.Definition, state *engine.WorkingMemory, in Input, owned bool) (*engine.WorkingMemory, error) {
	if strings.TrimSpace(in.Message) == "" {
		return nil, ErrEmptyMessage
	}
	if in.TurnID == "" {
		return nil, errors.New("runner: input has no turn id")
	}
	var m *engine.WorkingMemory
	if state == nil {
		m = engine.NewWorkingMemory(def, in.SessionID, in.ProjectID)
	} else {
		if state.EngineID != def.EngineID {
			return nil, fmt.Errorf("%w: state is %q, engine is %q", ErrEngineMismatch, state.EngineID, def.EngineID)
		}
		m = state
		if !owned {
			m = state.Clone()
		}
	}
	switch {
	case in.TurnNumber <= m.TurnNumber:
		return nil, fmt.Errorf("%w: turn %d, state is at turn %d", ErrDuplicateTurn, in.TurnNumber, m.TurnNumber)
	case m.Exit != nil:
		// Before the gap: every turn after the handoff leaves the state at
		// the handoff's, so the second of them comes after a gap, which a
		// replay (taking gaps only over dead-lettered turns) would refuse.
		return nil, fmt.Errorf("%w to %s at turn %d", ErrHandedOff, m.Exit.TargetEngine, m.Exit.AtTurn)
	case in.TurnNumber != m.TurnNumber+1 && !in.AcceptGap:
		return nil, fmt.Errorf("%w: turn %d, state is at turn %d", ErrTurnGap, in.TurnNumber, m.TurnNumber)
	}
	if _, ok := def.Phase(m.Phase.Current); !ok {
		return nil, fmt.Errorf("runner: state is in phase %q, which engine %s %s does not have", m.Phase.Current, def.EngineID, def.Version)
	}
	m.EngineVersion = def.Version
	m.TurnNumber = in.TurnNumber
	m.LastMessageID = in.TurnID
	m.Phase.TurnsInPhase++
	m.History = append(m.History, engine.Message{Role: engine.RoleUser, Content: in.Message, Turn: in.TurnNumber, MessageID: in.TurnID})
	return m, nil
}

func previousUserWords(m *engine.WorkingMemory) int {
	seen := false
	for i := len(m.History) - 1; i >= 0; i-- {
		if m.History[i].Role != engine.RoleUser {
			continue
		}
		if !seen { // the current message
			seen = true
			continue
		}
		return len(strings.Fields(m.History[i].Content))
	}
	return 0
}

// replyContext bounds the reply's call by what is left of the turn's budget,
// counted on the wall clock from when the turn was received, and at least
// MinReplyBudget. A replay's calls, answered as recorded, finish well
// within it.
func (r *Runner) replyContext(ctx context.Context, in Input) (context.Context, context.CancelFunc) {
	if in.ReceivedAt.IsZero() {
		return ctx, func() {}
	}
	deadline := in.ReceivedAt.Add(r.cfg.TurnBudget)
	if least := time.Now().Add(r.cfg.MinReplyBudget); deadline.Before(least) {
		deadline = least
	}
	return context.WithDeadline(ctx, deadline)
}

// generate is step 12: the system prompt (the engine's template) followed by
// context sections 1-6, and the user's message.
func (r *Runner) generate(ctx context.Context, def *engine.Definition, m *engine.WorkingMemory, cur *engine.Phase,
	in Input, chosen []string, next *engine.Obligation, a contextasm.Assembled) (string, *llm.Response, error) {
	data := engine.PromptData{
		EngineID: def.EngineID, EngineName: def.Name, EngineDescription: def.Description, EngineType: string(def.EngineType),
		Phase: cur.ID, PhaseName: cur.DisplayName, PhaseInstructions: cur.AgentInstructions,
		ModeBlend: cur.ModeBlend.String(), DominantMode: string(cur.ModeBlend.Dominant()),
		Techniques: technique.Names(chosen), TurnNumber: m.TurnNumber,
		Completeness: sidebar.Percentage(m.Completeness.Overall),
		UserShare:    def.InformationRatio.User, SystemShare: def.InformationRatio.System,
		Gaps: m.Completeness.Gaps,
	}
	if next != nil {
		data.NextObligation = next.Description
	}
	sys, err := def.RenderSystemPrompt(data)
	if err != nil {
		return "", nil, err
	}
	// The system prompt, then the sections but the message, written once.
	sections := func(p contextasm.Part) bool { return p.Section != contextasm.SectionMessage }
	var system strings.Builder
	system.Grow(len(sys) + 2 + a.Len(sections))
	system.WriteString(sys)
	system.WriteString("\n\n")
	a.WriteSections(&system, sections)
	req := llm.Request{
		Purpose: PurposeResponse, MaxTokens: r.cfg.ResponseMaxTokens, TenantID: in.TenantID, Scope: m.SessionID,
		Messages: []llm.Message{
			{Role: llm.System, Content: system.String()},
			{Role: llm.User, Content: in.Message},
		},
	}
	resp, err := r.cfg.LLM.Complete(ctx, req)
	if err != nil {
		return "", nil, fmt.Errorf("response generation: %w", err)
	}
	return strings.TrimSpace(resp.Content), resp, nil
}

func (r *Runner) telemetry(ctx context.Context, def *engine.Definition, m *engine.WorkingMemory, in Input, res *Result) {
	res.Telemetry = Telemetry{
		ExtractionDegraded: in.ExtractionDegraded, ResponseDegraded: res.Degraded,
		FieldsUpdated: len(in.FieldsUpdated), Superseded: len(in.Superseded), NewConcepts: in.NewConceptCount,
		SensitiveInfoShared: in.SensitiveInfoShared, PhaseChanged: res.PhaseChange != nil,
		Compressed: res.Context.Compression != nil, ContextTokens: res.Context.TokensUsed,
		QAIssues: len(res.QA.Issues), TasksDispatched: len(res.Effects.Tasks),
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "turn processed",
		slog.String("engine_id", def.EngineID), slog.String("session_id", m.SessionID),
		slog.Int("turn", m.TurnNumber), slog.String("phase", m.Phase.Current),
		slog.Float64("completeness", m.Completeness.Overall), slog.Int("context_tokens", res.Context.TokensUsed),
		slog.Bool("extraction_degraded", in.ExtractionDegraded), slog.Bool("response_degraded", res.Degraded),
		slog.Bool("phase_changed", res.PhaseChange != nil), slog.Bool("compressed", res.Context.Compression != nil),
		slog.Bool("sensitive_info_shared", in.SensitiveInfoShared), slog.Int("qa_issues", len(res.QA.Issues)))
}

func (r *Runner) tokenizer(def *engine.Definition) (contextasm.Tokenizer, error) {
	if r.cfg.Tokenizer != nil {
		return r.cfg.Tokenizer, nil
	}
	// One tokenizer per encoding in the process, remembering counts.
	t, err := contextasm.NewTiktoken(cmp.Or(def.ContextConfig.Encoding, contextasm.DefaultEncoding))
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	return t, nil
}

func (r *Runner) summarizer(tok contextasm.Tokenizer) contextasm.Summarizer {
	if s, ok := r.cfg.Summarizer.(contextasm.OfflineSummarizer); ok && s.Tokenizer == nil {
		return contextasm.OfflineSummarizer{Tokenizer: tok}
	}
	return r.cfg.Summarizer
}

func checkpoint(m *engine.WorkingMemory, reason string, tokens int) (Checkpoint, error) {
	b, err := engine.CanonicalJSON(m)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("runner: checkpoint: %w", err)
	}
	return Checkpoint{AtTurn: m.TurnNumber, Reason: reason, State: json.RawMessage(b), ContextTokens: tokens}, nil
}

// truncate returns the longest prefix of s of at most n bytes that does not
// cut a character in two.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// whatWaits ends the notice of a stalled task: what waits for it is the
// next phase, or in a phase with none the handoff of an exit transition;
// a last phase with no exit has nothing waiting.
func whatWaits(def *engine.Definition, cur *engine.Phase) string {
	if cur != nil {
		if cur.NextPhase != "" {
			return "We can go on talking; the next step waits for it."
		}
		for _, t := range cur.TransitionTriggers {
			if t.TargetPhase != "" {
				return "We can go on talking; the next step waits for it."
			}
		}
	}
	if len(def.ExitTransitions) > 0 {
		return "We can go on talking; moving on to the next conversation waits for it."
	}
	return "We can go on talking meanwhile."
}
