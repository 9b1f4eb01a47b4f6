package offline

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/praetorhq/praetor/internal/tokenizer"

	"github.com/praetorhq/praetor/internal/llm"
)

// Provider is the name this adapter reports in responses and metrics.
const Provider = "offline"

// DefaultModel is the model name offline responses report.
const DefaultModel = "offline"

// Config configures an Offline client.
type Config struct {
	// Seed varies the answers: the same seed gives the same answers. Default 0.
	Seed int64
	// Model is the model name responses report, whatever the request asks
	// for, so logs and the UI show that no model answered. Default "offline".
	Model string
	// Latency delays every answer, to stand in for a model's latency in load
	// tests and failure drills. Default 0.
	Latency time.Duration
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	c.Model = cmp.Or(c.Model, DefaultModel)
	return c
}

// Skill answers requests of one purpose, e.g. rule-based extraction from the
// field definitions in the messages. It returns the content of the answer;
// for a JSON request, the JSON text. Skills must be deterministic functions
// of the request (use Offline.Rand for choices) and safe for concurrent use.
type Skill func(ctx context.Context, req llm.Request) (string, error)

// Offline is the deterministic llm.Client. It is safe for concurrent use.
type Offline struct {
	cfg Config
	tok *tokenizer.Tokenizer

	mu     sync.RWMutex
	skills map[string]Skill
}

var _ llm.Client = (*Offline)(nil)

// New returns an Offline client. It fails only when the embedded tokenizer
// cannot load, which a broken build would cause.
func New(cfg Config) (*Offline, error) {
	tok, err := tokenizer.New(Encoding)
	if err != nil {
		return nil, fmt.Errorf("offline: %w", err)
	}
	return &Offline{cfg: cfg.WithDefaults(), tok: tok, skills: map[string]Skill{}}, nil
}

// Handle registers the skill that answers requests of purpose, replacing any
// before it; a nil skill removes it.
func (o *Offline) Handle(purpose string, s Skill) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s == nil {
		delete(o.skills, purpose)
		return
	}
	o.skills[purpose] = s
}

// Rand returns a random source determined by the seed and the request, for
// skills that choose among answers. Within one build the same request and
// seed give the same sequence.
func (o *Offline) Rand(req llm.Request) *rand.Rand {
	return rand.New(o.source(req))
}

// Tokens counts the tokens of text.
func (o *Offline) Tokens(text string) int { return o.tok.Count(text) }

// PromptTokens counts the tokens of a chat prompt the way OpenAI bills it.
func (o *Offline) PromptTokens(msgs []llm.Message) int { return promptTokens(o.tok, msgs) }

// Complete answers req without a model. See the package documentation.
func (o *Offline) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("offline: %w", err)
	}
	if len(req.Messages) == 0 {
		return nil, &llm.APIError{Provider: Provider, Err: llm.ErrBadRequest, Message: "the request has no messages"}
	}
	start := time.Now()
	if d := o.cfg.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("offline: %w", ctx.Err())
		}
	}
	o.mu.RLock()
	skill := o.skills[req.Purpose]
	o.mu.RUnlock()

	finish := "stop"
	var content string
	switch {
	case skill != nil:
		var err error
		if content, err = skill(ctx, req); err != nil {
			return nil, fmt.Errorf("offline: skill %q: %w", req.Purpose, err)
		}
	case req.Schema != nil:
		doc, err := MinimalJSON(req.Schema.JSON, o.source(req))
		if err != nil {
			return nil, &llm.APIError{Provider: Provider, Err: llm.ErrInvalidSchema,
				Message: fmt.Sprintf("schema %q: %v", req.Schema.Name, err)}
		}
		content = string(doc)
	case req.JSON:
		content = "{}"
	default:
		content = reply(req, o.source(req))
		if req.MaxTokens > 0 {
			if cut, ok := o.tok.Truncate(content, req.MaxTokens); ok {
				content, finish = cut, "length"
			}
		}
	}
	// A context that ends while a skill runs ends the call, as a model's
	// would.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("offline: %w", err)
	}

	prompt := promptTokens(o.tok, req.Messages)
	if req.Schema != nil {
		// Providers bill the schema as part of the prompt.
		prompt += o.tok.Count(string(req.Schema.JSON))
	}
	completion := o.tok.Count(content)
	return &llm.Response{
		Content:      content,
		Usage:        llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
		Latency:      time.Since(start),
		Model:        o.cfg.Model,
		Provider:     Provider,
		FinishReason: finish,
	}, nil
}

// source is the deterministic random stream of a request: SHA-256 in counter
// mode over (seed, request hash). Its bytes do not depend on the Go version.
func (o *Offline) source(req llm.Request) *stream {
	h := sha256.New()
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(o.cfg.Seed))
	h.Write([]byte("praetor/offline/v1\x00"))
	h.Write(seed[:])
	h.Write([]byte(llm.Hash(req)))
	s := &stream{}
	copy(s.key[:], h.Sum(nil))
	return s
}

// stream is a rand.Source: block i is SHA-256(key || i).
type stream struct {
	key   [32]byte
	ctr   uint64
	block [32]byte
	off   int
}

// Uint64 returns the next 64 bits of the stream.
func (s *stream) Uint64() uint64 {
	if s.ctr == 0 || s.off == len(s.block) {
		var buf [40]byte
		copy(buf[:], s.key[:])
		binary.BigEndian.PutUint64(buf[32:], s.ctr)
		s.block = sha256.Sum256(buf[:])
		s.ctr++
		s.off = 0
	}
	v := binary.BigEndian.Uint64(s.block[s.off:])
	s.off += 8
	return v
}

// pick returns a number in [0, n). Plain modulo: the bias is far below
// anything a test or a reader could notice, and it keeps the choice stable.
func (s *stream) pick(n int) int {
	if n <= 0 {
		return 0
	}
	return int(s.Uint64() % uint64(n))
}
