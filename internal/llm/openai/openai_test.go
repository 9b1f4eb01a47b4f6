package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/llmtest"
	"github.com/praetorhq/praetor/internal/llm/openai/openaitest"
)

// clock is the fake time of a test client: a fixed now, and sleeps that
// return at once and are remembered.
type clock struct {
	now    time.Time
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *clock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *clock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// newClient returns a client of srv with fake sleeps and zero jitter.
func newClient(t *testing.T, srv *openaitest.Server, cfg Config) (*Client, *clock) {
	t.Helper()
	cfg.BaseURL = srv.BaseURL()
	cfg.APIKey = "sk-test"
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c.now = func() time.Time { return clk.now }
	c.sleep = clk.sleep
	c.randN = func(int64) int64 { return 0 }
	return c, clk
}

func ptr[T any](v T) *T { return &v }

func userRequest(content string) llm.Request {
	return llm.Request{Messages: []llm.Message{
		{Role: llm.System, Content: "You are terse."},
		{Role: llm.User, Content: content},
	}}
}

func TestConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T) llm.Client {
		c, _ := newClient(t, openaitest.NewServer(t), Config{})
		return c
	})
}

func TestSuccess(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{
		Content:      "Hello there.",
		FinishReason: "length",
		Usage:        &openaitest.Usage{PromptTokens: 21, CompletionTokens: 3, TotalTokens: 24},
	})
	c, clk := newClient(t, srv, Config{Model: "gpt-4o-mini"})
	req := userRequest("Say hello.")
	req.Temperature = ptr(0.0)
	req.MaxTokens = 3
	req.Seed = ptr(int64(42))
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := llm.Response{Content: "Hello there.", Usage: llm.Usage{PromptTokens: 21, CompletionTokens: 3, TotalTokens: 24},
		Model: "gpt-4o-mini-2024-07-18", Provider: "openai", FinishReason: "length", Latency: resp.Latency}
	if *resp != want {
		t.Errorf("response = %+v, want %+v", *resp, want)
	}
	if resp.Latency <= 0 {
		t.Errorf("Latency = %s, want the call's wall time", resp.Latency)
	}
	if s := clk.slept(); len(s) != 0 {
		t.Errorf("slept %v on a first-time success", s)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", got.Method, got.Path)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer sk-test" {
		t.Errorf("Authorization = %q", a)
	}
	chat := got.Chat
	if chat.Model != "gpt-4o-mini" {
		t.Errorf("model = %q, want the configured default", chat.Model)
	}
	wantMsgs := []openaitest.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Say hello."}}
	if len(chat.Messages) != 2 || chat.Messages[0] != wantMsgs[0] || chat.Messages[1] != wantMsgs[1] {
		t.Errorf("messages = %+v, want %+v", chat.Messages, wantMsgs)
	}
	if chat.ResponseFormat != nil {
		t.Errorf("response_format = %+v on a text request", chat.ResponseFormat)
	}
	if chat.Temperature == nil || *chat.Temperature > 1e-6 {
		t.Errorf("temperature = %v, want sent and zero", chat.Temperature)
	}
	if chat.MaxTokens == nil || *chat.MaxTokens != 3 || chat.MaxCompletionTokens != nil {
		t.Errorf("max_tokens = %v, max_completion_tokens = %v, want 3 and absent", chat.MaxTokens, chat.MaxCompletionTokens)
	}
	if chat.Seed == nil || *chat.Seed != 42 {
		t.Errorf("seed = %v, want 42", chat.Seed)
	}
	if chat.Stream {
		t.Error("stream = true")
	}
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	tests := []struct {
		name  string
		req   llm.Request
		check func(t *testing.T, chat openaitest.ChatRequest)
	}{
		{
			name: "json mode",
			req:  func() llm.Request { r := userRequest("Reply in JSON please."); r.JSON = true; return r }(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.ResponseFormat == nil || chat.ResponseFormat.Type != "json_object" || chat.ResponseFormat.JSONSchema != nil {
					t.Errorf("response_format = %+v, want json_object", chat.ResponseFormat)
				}
				if len(chat.Messages) != 2 {
					t.Errorf("messages = %+v, want the request's two (it mentions JSON)", chat.Messages)
				}
			},
		},
		{
			name: "json mode without the word adds a hint",
			req:  func() llm.Request { r := userRequest("Reply."); r.JSON = true; return r }(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if len(chat.Messages) != 3 || chat.Messages[0].Role != "system" || !strings.Contains(chat.Messages[0].Content, "JSON") {
					t.Errorf("messages = %+v, want a system hint naming JSON first", chat.Messages)
				}
			},
		},
		{
			name: "schema mode",
			req: func() llm.Request {
				r := userRequest("Extract.")
				r.Schema = &llm.Schema{Name: "turn extraction", JSON: json.RawMessage(schema)}
				return r
			}(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				rf := chat.ResponseFormat
				if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil {
					t.Fatalf("response_format = %+v, want json_schema", rf)
				}
				// Not strict unless asked: OpenAI refuses, with a 400, a
				// strict schema with an optional property, as extraction's.
				if rf.JSONSchema.Name != "turn_extraction" || rf.JSONSchema.Strict {
					t.Errorf("json_schema name %q strict %v, want turn_extraction and not strict", rf.JSONSchema.Name, rf.JSONSchema.Strict)
				}
				var got, want any
				json.Unmarshal(rf.JSONSchema.Schema, &got)
				json.Unmarshal([]byte(schema), &want)
				if !jsonEqual(got, want) {
					t.Errorf("schema = %s, want %s", rf.JSONSchema.Schema, schema)
				}
			},
		},
		{
			name: "strict schema",
			req: func() llm.Request {
				r := userRequest("Extract.")
				r.Schema = &llm.Schema{Name: "strict", JSON: json.RawMessage(schema), Strict: true}
				return r
			}(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if rf := chat.ResponseFormat; rf == nil || rf.JSONSchema == nil || !rf.JSONSchema.Strict {
					t.Errorf("response_format = %+v, want a strict json_schema", rf)
				}
			},
		},
		{
			name: "reasoning models get no temperature",
			req: func() llm.Request {
				r := userRequest("Extract.")
				r.Model, r.Temperature, r.MaxTokens = "gpt-5-mini", ptr(0.0), 100
				return r
			}(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.Temperature != nil || chat.MaxCompletionTokens == nil || *chat.MaxCompletionTokens != 100 {
					t.Errorf("temperature %v, max_completion_tokens %v, want absent and 100", chat.Temperature, chat.MaxCompletionTokens)
				}
			},
		},
		{
			name: "o-series models get no temperature",
			req:  func() llm.Request { r := userRequest("Hi."); r.Model, r.Temperature = "o4-mini", ptr(0.3); return r }(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.Temperature != nil {
					t.Errorf("temperature %v, want absent", *chat.Temperature)
				}
			},
		},
		{
			name: "request model wins",
			req:  func() llm.Request { r := userRequest("Hi."); r.Model = "llama3.1:8b"; return r }(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.Model != "llama3.1:8b" {
					t.Errorf("model = %q", chat.Model)
				}
			},
		},
		{
			name: "reasoning models get max_completion_tokens",
			req:  func() llm.Request { r := userRequest("Hi."); r.Model = "o3-mini"; r.MaxTokens = 100; return r }(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.MaxTokens != nil || chat.MaxCompletionTokens == nil || *chat.MaxCompletionTokens != 100 {
					t.Errorf("max_tokens %v, max_completion_tokens %v, want absent and 100", chat.MaxTokens, chat.MaxCompletionTokens)
				}
			},
		},
		{
			name: "unset options are not sent",
			req:  userRequest("Hi."),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.Temperature != nil || chat.MaxTokens != nil || chat.Seed != nil {
					t.Errorf("temperature %v max_tokens %v seed %v, want all absent", chat.Temperature, chat.MaxTokens, chat.Seed)
				}
			},
		},
		{
			name: "temperature",
			req:  func() llm.Request { r := userRequest("Hi."); r.Temperature = ptr(0.7); return r }(),
			check: func(t *testing.T, chat openaitest.ChatRequest) {
				if chat.Temperature == nil || *chat.Temperature < 0.6999 || *chat.Temperature > 0.7001 {
					t.Errorf("temperature = %v, want 0.7", chat.Temperature)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := openaitest.NewServer(t)
			c, _ := newClient(t, srv, Config{})
			if _, err := c.Complete(t.Context(), tc.req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("server got %d requests, want 1", len(reqs))
			}
			tc.check(t, reqs[0].Chat)
		})
	}
}

func TestBadRequestsAreNotSent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  llm.Request
		want error
	}{
		{"no messages", llm.Request{}, llm.ErrBadRequest},
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "tool", Content: "x"}}}, llm.ErrBadRequest},
		{"schema not JSON", llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "x"}},
			Schema: &llm.Schema{Name: "s", JSON: json.RawMessage(`{`)}}, llm.ErrInvalidSchema},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := openaitest.NewServer(t)
			c, _ := newClient(t, srv, Config{})
			_, err := c.Complete(t.Context(), tc.req)
			if !errors.Is(err, tc.want) || llm.IsRetryable(err) {
				t.Errorf("err = %v, want %v, not retryable", err, tc.want)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("server got %d requests, want none", n)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	ok := openaitest.Reply{Content: "fine"}
	tests := []struct {
		name    string
		cfg     Config
		replies []openaitest.Reply
		// wantErr is nil for a final success.
		wantErr      error
		wantStatus   int
		wantRequests int
		wantUsage    llm.Usage
		// wantSleeps are the exact waits (jitter is fixed at 0 except
		// where wantSleepRange is used).
		wantSleeps []time.Duration
	}{
		{
			name:         "500 then success",
			replies:      []openaitest.Reply{{Status: 500, Error: "boom"}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{250 * time.Millisecond},
		},
		{
			name:         "502 with an HTML body then success",
			replies:      []openaitest.Reply{{Status: 502, Body: "<html><body>Bad Gateway</body></html>"}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{250 * time.Millisecond},
		},
		{
			name:         "429 with Retry-After seconds",
			replies:      []openaitest.Reply{{Status: 429, Error: "slow down", Header: map[string]string{"Retry-After": "3"}}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{3 * time.Second},
		},
		{
			name: "429 with Retry-After as an HTTP date",
			replies: []openaitest.Reply{{Status: 429, Error: "slow down",
				Header: map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:00:07 GMT"}}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{7 * time.Second},
		},
		{
			name: "retry-after-ms wins over Retry-After",
			replies: []openaitest.Reply{{Status: 429, Error: "slow down",
				Header: map[string]string{"retry-after-ms": "1500", "Retry-After": "2"}}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{1500 * time.Millisecond},
		},
		{
			name:         "503 honours Retry-After too",
			replies:      []openaitest.Reply{{Status: 503, Header: map[string]string{"Retry-After": "2"}}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{2 * time.Second},
		},
		{
			name: "timeout then success",
			// Each attempt has the timeout, the answered one too: long
			// enough that a loaded machine (the race detector) answers
			// within it, as the stalled one never does.
			cfg:          Config{Timeout: time.Second},
			replies:      []openaitest.Reply{{Stall: true}, ok},
			wantRequests: 2,
			wantSleeps:   []time.Duration{250 * time.Millisecond},
		},
		{
			name:         "401 is not retried",
			replies:      []openaitest.Reply{{Status: 401, Error: "Incorrect API key provided", ErrorCode: "invalid_api_key"}},
			wantErr:      llm.ErrUnauthorized,
			wantStatus:   401,
			wantRequests: 1,
		},
		{
			name:         "400 is not retried",
			replies:      []openaitest.Reply{{Status: 400, Error: "bad schema", ErrorType: "invalid_request_error"}},
			wantErr:      llm.ErrBadRequest,
			wantStatus:   400,
			wantRequests: 1,
		},
		{
			name:         "exhausted quota is not retried",
			replies:      []openaitest.Reply{{Status: 429, Error: "You exceeded your current quota", ErrorCode: "insufficient_quota"}},
			wantErr:      llm.ErrRateLimited,
			wantStatus:   429,
			wantRequests: 1,
		},
		{
			name:         "x-should-retry false is obeyed",
			replies:      []openaitest.Reply{{Status: 500, Header: map[string]string{"x-should-retry": "false"}}},
			wantErr:      llm.ErrUnavailable,
			wantStatus:   500,
			wantRequests: 1,
		},
		{
			name:         "Retry-After beyond the limit is returned, not waited for",
			cfg:          Config{MaxRetryAfter: 10 * time.Second},
			replies:      []openaitest.Reply{{Status: 429, Header: map[string]string{"Retry-After": "120"}}},
			wantErr:      llm.ErrRateLimited,
			wantStatus:   429,
			wantRequests: 1,
		},
		{
			name: "retries exhausted",
			cfg:  Config{MaxRetries: 3},
			replies: []openaitest.Reply{
				{Status: 503}, {Status: 500}, {Status: 502}, {Status: 503, Error: "still down"},
			},
			wantErr:      llm.ErrUnavailable,
			wantStatus:   503,
			wantRequests: 4,
			// Half of 500ms, 1s, 2s: the lower edge of each jitter window.
			wantSleeps: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second},
		},
		{
			name:         "no retries when disabled",
			cfg:          Config{MaxRetries: -1},
			replies:      []openaitest.Reply{{Status: 500}},
			wantErr:      llm.ErrUnavailable,
			wantStatus:   500,
			wantRequests: 1,
		},
		{
			name: "body cut short, twice",
			cfg:  Config{MaxRetries: 1},
			replies: []openaitest.Reply{
				{Body: `{"id":"chatcmpl-1","choices":[{"message":`},
				{Body: `{"id":"chatcmpl-1","choices":[{"message":`},
			},
			wantErr:      llm.ErrBadResponse,
			wantRequests: 2, // a body cut short may be whole next time
			wantSleeps:   []time.Duration{250 * time.Millisecond},
		},
		{
			name:         "malformed JSON body",
			replies:      []openaitest.Reply{{Body: `<<not json>>`}},
			wantErr:      llm.ErrBadResponse,
			wantRequests: 1,
		},
		{
			name:         "no choices",
			replies:      []openaitest.Reply{{Body: `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`}},
			wantErr:      llm.ErrBadResponse,
			wantRequests: 1,
		},
		{
			name: "refusal",
			replies: []openaitest.Reply{{Refusal: "I can't help with that.",
				Usage: &openaitest.Usage{PromptTokens: 30, CompletionTokens: 6, TotalTokens: 36}}},
			wantErr:      llm.ErrRefused,
			wantRequests: 1,
			wantUsage:    llm.Usage{PromptTokens: 30, CompletionTokens: 6, TotalTokens: 36},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := openaitest.NewServer(t)
			srv.Enqueue(tc.replies...)
			c, clk := newClient(t, srv, tc.cfg)
			resp, err := c.Complete(t.Context(), userRequest("Hi."))
			if n := len(srv.Requests()); n != tc.wantRequests {
				t.Errorf("server got %d requests, want %d", n, tc.wantRequests)
			}
			if got := clk.slept(); !equalDurations(got, tc.wantSleeps) {
				t.Errorf("slept %v, want %v", got, tc.wantSleeps)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if resp.Content != "fine" {
					t.Errorf("content = %q, want the successful answer", resp.Content)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %T, want *llm.APIError", err)
			}
			if apiErr.Usage != tc.wantUsage {
				t.Errorf("APIError usage %+v, want %+v (what the provider charged)", apiErr.Usage, tc.wantUsage)
			}
			if apiErr.Status != tc.wantStatus || apiErr.Attempts != tc.wantRequests || apiErr.Provider != "openai" {
				t.Errorf("APIError status %d attempts %d provider %q, want %d, %d, openai",
					apiErr.Status, apiErr.Attempts, apiErr.Provider, tc.wantStatus, tc.wantRequests)
			}
		})
	}
}

func TestRetryAfterBeyondLimitIsReported(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "120"}})
	c, _ := newClient(t, srv, Config{})
	_, err := c.Complete(t.Context(), userRequest("Hi."))
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != 120*time.Second || !apiErr.Retryable {
		t.Fatalf("err = %#v, want a retryable APIError with RetryAfter 2m", err)
	}
	if !strings.Contains(err.Error(), "retry after 2m0s") {
		t.Errorf("message %q does not say when to retry", err)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{Stall: true}, openaitest.Reply{Stall: true})
	c, clk := newClient(t, srv, Config{Timeout: 30 * time.Millisecond, MaxRetries: 1})
	_, err := c.Complete(t.Context(), userRequest("Hi."))
	if !errors.Is(err, llm.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrTimeout wrapping DeadlineExceeded", err)
	}
	if llm.Outcome(err) != llm.OutcomeTimeout {
		t.Errorf("Outcome = %q, want timeout", llm.Outcome(err))
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server got %d requests, want 2 (one retry)", n)
	}
	if len(clk.slept()) != 1 {
		t.Errorf("slept %v, want one backoff", clk.slept())
	}
}

// A call ends by MaxElapsed, retries and all, with an error its caller can
// degrade on: its own context is still alive.
func TestMaxElapsedBoundsTheWholeCall(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{Stall: true}, openaitest.Reply{Stall: true}, openaitest.Reply{Stall: true})
	c, _ := newClient(t, srv, Config{Timeout: time.Minute, MaxElapsed: 300 * time.Millisecond, MaxRetries: 5})
	start := time.Now()
	_, err := c.Complete(t.Context(), userRequest("Hi."))
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "MaxElapsed") || t.Context().Err() != nil {
		t.Fatalf("err = %v, want ErrTimeout naming MaxElapsed", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1: no time was left for another", n)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("the call took %s; its attempt had a minute, the call 300ms", elapsed)
	}
}

// A timeout longer than MaxElapsed's default raises it: an attempt is not
// cut short of the timeout it was given.
func TestMaxElapsedDefaultsToTheTimeout(t *testing.T) {
	t.Parallel()
	if c := (Config{Timeout: 10 * time.Minute}).WithDefaults(); c.MaxElapsed != 10*time.Minute {
		t.Errorf("a 10m timeout: MaxElapsed %s, want 10m", c.MaxElapsed)
	}
	if c := (Config{}).WithDefaults(); c.MaxElapsed != DefaultMaxElapsed {
		t.Errorf("defaults: MaxElapsed %s, want %s", c.MaxElapsed, DefaultMaxElapsed)
	}
}

func TestCancelInFlight(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{Stall: true})
	c, _ := newClient(t, srv, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-srv.Arrived()
		cancel()
	}()
	_, err := c.Complete(ctx, userRequest("Hi."))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a canceled call is reported as a provider failure: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1: a canceled call is not retried", n)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "30"}})
	c, _ := newClient(t, srv, Config{})
	c.sleep = sleepCtx // the real wait, which the cancel must cut short
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-srv.Arrived()
		cancel()
	}()
	start := time.Now()
	_, err := c.Complete(ctx, userRequest("Hi."))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("cancel took %s to end a 30s wait", waited)
	}
}

func TestDeadlineShorterThanRetryAfter(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Enqueue(openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "30"}})
	c, clk := newClient(t, srv, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := c.Complete(ctx, userRequest("Hi."))
	if !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v, want the rate limit, not a deadline", err)
	}
	if s := clk.slept(); len(s) != 0 {
		t.Errorf("slept %v past the caller's deadline", s)
	}
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	c, err := New(Config{BaseURL: "http://localhost:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, edge := range []struct {
		name string
		rnd  func(int64) int64
	}{{"low", func(int64) int64 { return 0 }}, {"high", func(n int64) int64 { return n - 1 }}} {
		c.randN = edge.rnd
		for attempt := 1; attempt <= 40; attempt++ {
			ceil := min(DefaultBackoffBase<<min(attempt-1, 31), DefaultBackoffCap)
			d := c.backoff(attempt)
			if d < ceil/2 || d > ceil {
				t.Errorf("%s: backoff(%d) = %s, want within [%s, %s]", edge.name, attempt, d, ceil/2, ceil)
			}
		}
	}
	if got := c.backoff(1000); got > DefaultBackoffCap {
		t.Errorf("backoff(1000) = %s, over the cap", got)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "5"}, 5 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "-3"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "1e300"}, 0},
		{map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:01:00 GMT"}, time.Minute},
		{map[string]string{"Retry-After": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{map[string]string{"retry-after-ms": "250"}, 250 * time.Millisecond},
		{map[string]string{"retry-after-ms": "x", "Retry-After": "1"}, time.Second},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("retryAfter(%v) = %s, want %s", tc.header, got, tc.want)
		}
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{}, ""},
		{"local server", Config{BaseURL: "http://127.0.0.1:11434/v1"}, ""},
		{"no scheme", Config{BaseURL: "api.openai.com/v1"}, "base URL"},
		{"ftp", Config{BaseURL: "ftp://example.com"}, "base URL"},
		{"negative timeout", Config{Timeout: -time.Second}, "timeout"},
		{"cap below base", Config{Backoff: Backoff{Base: time.Second, Cap: time.Millisecond}}, "backoff"},
	}
	for _, tc := range tests {
		_, err := New(tc.cfg)
		if tc.wantErr == "" && err != nil {
			t.Errorf("%s: New: %v", tc.name, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err = %v, want one about %s", tc.name, err, tc.wantErr)
		}
	}
	c := Config{}.WithDefaults()
	if c.Timeout != 60*time.Second || c.MaxRetries != 3 || c.Backoff.Base != 500*time.Millisecond ||
		c.Backoff.Cap != 20*time.Second || c.Model != DefaultModel || c.BaseURL != DefaultBaseURL {
		t.Errorf("defaults = %+v", c)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
