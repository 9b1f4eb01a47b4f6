package extraction

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

// Completer is the LLM port as the pipeline uses it.
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// Config configures a Pipeline.
type Config struct {
	// LLM answers extraction prompts. Required.
	LLM Completer
	// MaxAttempts is how many answers are asked for before the turn is
	// degraded; each re-ask sends the reason back to the model (default 3).
	MaxAttempts int
	// HistoryMessages is how many recent messages go into the prompt (default 6).
	HistoryMessages int
	// Logger receives a warning when a turn is degraded (default slog.Default()).
	// Message text and values are never logged.
	Logger *slog.Logger
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 3)
	c.HistoryMessages = cmp.Or(c.HistoryMessages, 6)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.LLM == nil {
		return errors.New("extraction: Config.LLM is required")
	}
	if c.MaxAttempts < 1 || c.HistoryMessages < 0 {
		return errors.New("extraction: MaxAttempts must be at least 1 and HistoryMessages not negative")
	}
	return nil
}

// Pipeline runs the per-turn extraction (runner steps 2-3 in the seed; the
// extractor service here): prompt the model with the field definitions and
// the current state, check the answer, re-ask with the error, and apply it.
type Pipeline struct {
	cfg     Config
	schemas sync.Map // *engine.Definition -> json.RawMessage; loaded definitions do not change
	parts   sync.Map // *engine.Definition -> *promptParts
}

// New returns a pipeline.
func New(cfg Config) (*Pipeline, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Pipeline{cfg: cfg}, nil
}

// Request is one turn to extract from.
type Request struct {
	Def     *engine.Definition
	Current engine.Extraction
	Message string
	// History is the conversation so far, oldest first; the last
	// HistoryMessages go into the prompt.
	History []engine.Message
	// Focus is the obligation the last reply asked for (WorkingMemory.Obligations.Focus).
	Focus string
	// Meta names the turn, and the session's prompt version (State's).
	Meta Meta
	// TenantID and Scope are passed to the LLM request for recording.
	TenantID, Scope string
}

// ErrEmptyMessage is returned for a blank message.
var ErrEmptyMessage = errors.New("extraction: message is empty")

// Extract runs one turn. A model that fails or keeps answering badly gives a
// degraded result (nothing updated, the reason set) rather than an error, so
// the turn is still answered; only a cancelled context or an empty message is
// an error.
func (p *Pipeline) Extract(ctx context.Context, r Request) (Result, error) {
	if strings.TrimSpace(r.Message) == "" {
		return Result{}, ErrEmptyMessage
	}
	if !r.Meta.PromptVersion.orCurrent().known() {
		return Result{}, fmt.Errorf("extraction: unknown prompt version %d", r.Meta.PromptVersion)
	}
	hist := r.History
	if n := p.cfg.HistoryMessages; len(hist) > n {
		hist = hist[len(hist)-n:]
	}
	schema, ok := p.schemas.Load(r.Def)
	if !ok {
		schema, _ = p.schemas.LoadOrStore(r.Def, AnswerSchema(r.Def))
	}
	parts, ok := p.parts.Load(r.Def)
	if !ok {
		parts, _ = p.parts.LoadOrStore(r.Def, newPromptParts(r.Def))
	}
	req := buildRequest(PromptInput{Def: r.Def, Current: r.Current, Message: r.Message, History: hist, Focus: r.Focus,
		Schema: schema.(json.RawMessage), Version: r.Meta.PromptVersion}, parts.(*promptParts))
	req.TenantID, req.Scope = r.TenantID, r.Scope
	// CompleteJSON checks the answer against the schema (paths, types,
	// confidences, obligation ids) and re-asks with the reason; ParseAnswer
	// then coerces what the schema lets through.
	resp, err := llm.CompleteJSON(ctx, p.cfg.LLM, req, nil, llm.WithReasks(p.cfg.MaxAttempts-1))
	var reason string
	switch {
	case err == nil:
		raw, _ := llm.ParseJSONAnswer(resp.Content) // CompleteJSON found it already
		ans, perr := ParseAnswer(r.Def, string(raw))
		if perr == nil {
			return Apply(r.Def, r.Current, ans, r.Message, r.Meta), nil
		}
		reason = perr.Error()
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("extraction: %w", ctx.Err())
	case errors.Is(err, llm.ErrInvalidAnswer):
		reason = err.Error()
	default:
		// The adapter already retried what was worth retrying.
		reason = "model call failed: " + err.Error()
	}
	p.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "extraction degraded",
		slog.String("session_id", r.Meta.SessionID), slog.String("engine_id", r.Meta.EngineID),
		slog.Int("turn", r.Meta.TurnNumber), slog.String("reason", reason))
	return Degraded(r.Current, r.Message, r.Meta, reason), nil
}

// Degraded is the result of a turn whose extraction failed: the extraction
// is unchanged, nothing is logged, sensitive information is still detected.
func Degraded(current engine.Extraction, message string, meta Meta, reason string) Result {
	res := Apply(&engine.Definition{}, current, Answer{}, message, meta)
	res.Degraded = true
	res.DegradedReason = reason
	return res
}
