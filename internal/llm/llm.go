// Package llm is Praetor's port to language models: chat completion with a
// JSON answer, token usage and latency. Adapters: llm/openai (any
// OpenAI-compatible server), llm/offline (deterministic, seeded, no network,
// the default when no key is set) and llm/record (a recorder that publishes
// every call as llm.call.recorded, and a replayer that answers from those
// records by request hash). llm/provider picks one from the PRAETOR_LLM_*
// settings; llm/llmtest is the conformance suite every adapter passes.
//
// This package also holds what every caller shares: Hash (a request's
// identity, for recording and replay), CompleteJSON (ask for JSON, validate
// it against the request's schema, re-ask with the error, give up with an
// *InvalidAnswerError the caller degrades on), the failure categories
// (ErrRateLimited, ErrTimeout ... carried by *APIError) and Metrics.
package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"time"
)

// Role is the author of a chat message.
type Role string

// Chat roles.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Schema asks for a JSON answer that validates against a JSON Schema.
type Schema struct {
	// Name identifies the schema to the provider, e.g. "extraction".
	Name string `json:"name"`
	// JSON is the JSON Schema document.
	JSON json.RawMessage `json:"json"`
	// Strict asks the provider to enforce the schema exactly (OpenAI's
	// strict structured outputs). Only a schema written to its rules can
	// ask for it: every property required, additionalProperties false on
	// every object, none of the keywords it does not support; OpenAI
	// refuses any other with a 400. Without it the schema guides the model,
	// and the answer is checked on our side either way (CompleteJSON).
	Strict bool `json:"strict,omitempty"`
}

// Request is one chat completion.
type Request struct {
	// Model overrides the client's default model when set.
	Model    string    `json:"model,omitempty"`
	Messages []Message `json:"messages"`
	// JSON asks for a JSON object answer; Schema, when set, implies it and
	// constrains the object.
	JSON   bool    `json:"json,omitempty"`
	Schema *Schema `json:"schema,omitempty"`
	// Temperature, when set, overrides the provider default.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens bounds the answer; zero means the provider default.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Seed asks providers that support it for a reproducible answer.
	Seed *int64 `json:"seed,omitempty"`
	// Purpose names what the call is for ("extraction", "response", ...), for
	// metrics and for the offline provider's routing.
	Purpose string `json:"purpose,omitempty"`
	// TenantID and Scope say whom the call belongs to (a session, a run), for
	// recording. They are not sent to the model.
	TenantID string `json:"-"`
	Scope    string `json:"-"`
	// CallID, when set, names this call within its scope for recording, e.g.
	// "<turn id>/extraction". Derive it from the input (never random) so that
	// a re-run after a crash records under the same event id and the stream
	// drops the duplicate; see package record. It is not sent to the model
	// and not part of Hash.
	CallID string `json:"-"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is a completion's answer.
type Response struct {
	Content  string        `json:"content"`
	Usage    Usage         `json:"usage"`
	Latency  time.Duration `json:"latency"`
	Model    string        `json:"model"`
	Provider string        `json:"provider"`
	// FinishReason is why the model stopped, as the provider says it:
	// FinishStop, FinishLength, FinishContentFilter, or another word.
	FinishReason string `json:"finish_reason,omitempty"`
}

// Finish reasons that callers act on.
const (
	// FinishStop: the model ended its answer.
	FinishStop = "stop"
	// FinishLength: the answer was cut off at MaxTokens (or the model's
	// own limit).
	FinishLength = "length"
	// FinishContentFilter: the provider withheld (part of) the answer.
	FinishContentFilter = "content_filter"
)

// Client completes chats. Implementations are safe for concurrent use.
type Client interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}

type ownerKey struct{}

// WithOwner returns ctx naming whom the model calls made under it belong to
// (a session, a run), for the calls whose Request names no TenantID and
// Scope: a handler sets it once for everything its turn calls.
func WithOwner(ctx context.Context, tenantID, scope string) context.Context {
	return context.WithValue(ctx, ownerKey{}, [2]string{tenantID, scope})
}

// OwnerFrom returns the owner WithOwner put in ctx.
func OwnerFrom(ctx context.Context) (tenantID, scope string, ok bool) {
	o, ok := ctx.Value(ownerKey{}).([2]string)
	return o[0], o[1], ok
}

type workKey struct{}

// WithWork returns ctx naming the piece of work the model calls made under
// it do ("turn/<turn id>"): a call whose Request has no CallID is then
// identified as work/purpose (CallIDOf). A handler sets it once, so that the
// same work redone (after a stale write, or redelivered after a crash) makes
// calls of the same ids, which a recorder answers with what it recorded the
// first time: the answer a replay serves.
func WithWork(ctx context.Context, work string) context.Context {
	return context.WithValue(ctx, workKey{}, work)
}

// CallIDOf is req's CallID or, without one, the id WithWork gives it under
// ctx; empty when neither says.
func CallIDOf(ctx context.Context, req Request) string {
	if req.CallID != "" {
		return req.CallID
	}
	if w, _ := ctx.Value(workKey{}).(string); w != "" {
		return w + "/" + cmp.Or(req.Purpose, "call")
	}
	return ""
}
