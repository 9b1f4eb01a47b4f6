package openai

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/redact"
)

// Provider is the name this adapter reports in responses, errors and metrics.
const Provider = "openai"

// Defaults of Config.
const (
	DefaultBaseURL       = "https://api.openai.com/v1"
	DefaultModel         = "gpt-4o-mini"
	DefaultTimeout       = 60 * time.Second
	DefaultMaxRetries    = 3
	DefaultBackoffBase   = 500 * time.Millisecond
	DefaultBackoffCap    = 20 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
	DefaultMaxElapsed    = 4 * time.Minute
)

// Doer sends HTTP requests; *http.Client is one.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Backoff is the wait between retries when the server names none: Base
// doubled after each failed attempt, capped at Cap, and drawn at random in
// its upper half so clients that failed together do not retry together.
type Backoff struct {
	// Base is the wait after the first failure. Default 500ms.
	Base time.Duration
	// Cap bounds every wait. Default 20s.
	Cap time.Duration
}

// Config configures a Client.
type Config struct {
	// BaseURL is the API root, version included. Default DefaultBaseURL;
	// e.g. http://localhost:11434/v1 for Ollama.
	BaseURL string
	// APIKey is sent as a bearer token. Local servers may need none.
	APIKey string
	// Model is used when a Request names none. Default DefaultModel.
	Model string
	// Timeout bounds each attempt, not the whole call (the caller's ctx does
	// that). Default 60s.
	Timeout time.Duration
	// MaxRetries is how many times a retryable failure is retried. Default 3;
	// negative means never.
	MaxRetries int
	// Backoff paces retries when the server sends no Retry-After.
	Backoff Backoff
	// MaxRetryAfter is the longest Retry-After the client waits for; a longer
	// one is returned at once as an *llm.APIError with RetryAfter set, for a
	// caller that can wait without holding a goroutine (an event redelivery).
	// Default 60s.
	MaxRetryAfter time.Duration
	// MaxElapsed bounds a whole call, its retries and waits included: no
	// attempt runs past it, and once it is spent the last failure is
	// returned. A caller that must answer in its own time (a turn's handler
	// has 5 minutes, then its event is redelivered and the work redone)
	// gets an error it can degrade on, instead of its context ending first.
	// Default 4m, or Timeout when that is longer: one attempt is never cut
	// short of the timeout it was given.
	MaxElapsed time.Duration
	// HTTPClient sends the requests. Default a new http.Client; its own
	// Timeout should be zero or longer than Timeout.
	HTTPClient Doer
	// Logger reports retries, and a rejected key at error level (once a
	// minute at most). Default: discard.
	Logger *slog.Logger
	// KeySetting names where the key comes from, in the error logged when
	// the server refuses it (e.g. "PRAETOR_LLM_API_KEY"). Default "the API
	// key".
	KeySetting string
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	c.BaseURL = cmp.Or(c.BaseURL, DefaultBaseURL)
	c.Model = cmp.Or(c.Model, DefaultModel)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.MaxRetries = cmp.Or(c.MaxRetries, DefaultMaxRetries)
	c.Backoff.Base = cmp.Or(c.Backoff.Base, DefaultBackoffBase)
	c.Backoff.Cap = cmp.Or(c.Backoff.Cap, DefaultBackoffCap)
	c.MaxRetryAfter = cmp.Or(c.MaxRetryAfter, DefaultMaxRetryAfter)
	c.MaxElapsed = cmp.Or(c.MaxElapsed, max(DefaultMaxElapsed, c.Timeout))
	c.KeySetting = cmp.Or(c.KeySetting, "the API key")
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		msg := fmt.Sprintf("openai: base URL %q must be an http(s) URL such as %s", redact.URL(c.BaseURL), DefaultBaseURL)
		if strings.Contains(c.BaseURL, "@") {
			msg += " (credentials do not go in it: the key goes in the API key setting)"
		}
		return errors.New(msg)
	}
	// The path is appended to the base URL as text: a query (Azure's
	// ?api-version=) would end up before it, and a password in it would be
	// logged with it.
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil || strings.Contains(c.BaseURL, "@") {
		return fmt.Errorf("openai: base URL %q must be the API root alone, without a query, a fragment or credentials "+
			"(the key goes in the API key setting; an '@' that belongs to the path is written %%40; for Azure OpenAI use a "+
			"compatible gateway)", redact.URL(c.BaseURL))
	}
	if c.Timeout < 0 {
		return fmt.Errorf("openai: timeout %s must be positive", c.Timeout)
	}
	if c.Backoff.Base < 0 || c.Backoff.Cap < c.Backoff.Base {
		return fmt.Errorf("openai: backoff base %s must be positive and at most its cap %s", c.Backoff.Base, c.Backoff.Cap)
	}
	if c.MaxRetryAfter < 0 {
		return fmt.Errorf("openai: max retry-after %s must be positive", c.MaxRetryAfter)
	}
	if c.MaxElapsed < 0 {
		return fmt.Errorf("openai: max elapsed %s must be positive", c.MaxElapsed)
	}
	return nil
}

// Client is an llm.Client for Chat Completions servers. It is safe for
// concurrent use.
type Client struct {
	cfg     Config
	api     *goopenai.Client
	retries int
	// authLogged is when a refused key was last logged (Unix nanoseconds).
	authLogged atomic.Int64

	// Seams for tests: the clock that reads HTTP-date Retry-After values, the
	// wait between attempts, and the jitter source ([0, n)).
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	randN func(n int64) int64
}

var _ llm.Client = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = errorIn200{next: cfg.HTTPClient}
	return &Client{
		cfg:     cfg,
		api:     goopenai.NewClientWithConfig(oc),
		retries: max(cfg.MaxRetries, 0),
		now:     time.Now,
		sleep:   sleepCtx,
		randN:   rand.Int64N,
	}, nil
}

// Model is the model used when a Request names none.
func (c *Client) Model() string { return c.cfg.Model }

// baseURL is the API root requests go to, as errors quote it.
func (c *Client) baseURL() string { return strings.TrimRight(c.cfg.BaseURL, "/") }

// Complete sends req as a chat completion, retrying transient failures. The
// Response's Latency is the wall time of the whole call, retries included.
func (c *Client) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	start := time.Now()
	creq, apiErr := c.chatRequest(req)
	if apiErr != nil {
		return nil, apiErr
	}
	end := start.Add(c.cfg.MaxElapsed)
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("openai: chat completion: %w", err)
		}
		resp, err := c.attempt(ctx, creq, min(c.cfg.Timeout, time.Until(end)))
		if err == nil {
			out, apiErr := c.response(resp, creq.Model, start)
			if apiErr != nil {
				apiErr.Attempts, apiErr.Model = attempt, creq.Model
				return nil, apiErr
			}
			return out, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("openai: chat completion: %w", ctxErr)
		}
		err.Attempts, err.Model = attempt, creq.Model
		if errors.Is(err, llm.ErrUnauthorized) {
			c.logUnauthorized(ctx, creq.Model, err)
		}
		if !err.Retryable || attempt > c.retries {
			return nil, err
		}
		delay := c.backoff(attempt)
		if err.RetryAfter > 0 {
			if err.RetryAfter > c.cfg.MaxRetryAfter {
				return nil, err
			}
			// The server's wait, plus a little jitter so the clients it told
			// the same thing do not all come back at once.
			delay = err.RetryAfter + time.Duration(c.randN(int64(c.cfg.Backoff.Base)+1))
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			// Waiting would outlive the caller; report the real failure now
			// rather than a bare deadline later.
			return nil, err
		}
		if time.Until(end) < delay+time.Second {
			// No time left for another attempt worth the name.
			err.Message += fmt.Sprintf(" (after %d attempts in %s, the most a call may take: MaxElapsed)", attempt,
				time.Since(start).Round(time.Millisecond))
			return nil, err
		}
		c.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "llm call retrying",
			slog.String("provider", Provider),
			slog.String("model", creq.Model),
			slog.Int("attempt", attempt),
			slog.Int("status", err.Status),
			slog.String("outcome", llm.Outcome(err)),
			slog.Duration("delay", delay))
		if serr := c.sleep(ctx, delay); serr != nil {
			return nil, fmt.Errorf("openai: chat completion: %w", serr)
		}
	}
}

// Check asks the server for its models (GET {base}/models: free, no
// tokens), to learn before any call whether the key and the base URL work.
// Its error is an *llm.APIError: Status 401 or 403 for a refused key, 404 for
// a base URL the server has no API at, 0 for a server that cannot be reached.
func (c *Client) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(c.cfg.Timeout, checkTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL()+"/models", nil)
	if err != nil {
		return &llm.APIError{Provider: Provider, Err: llm.ErrBadRequest, Cause: err, Message: err.Error()}
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return &llm.APIError{Provider: Provider, Err: llm.ErrUnavailable, Cause: err, Retryable: true,
			Message: "GET " + redact.URL(c.baseURL()) + "/models: " + err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 300 {
		return nil
	}
	msg := snippet(body, resp.Status)
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	msg = "GET " + redact.URL(c.baseURL()) + "/models: " + RedactKeys(msg)
	out := c.fromStatus(resp.StatusCode, "", "", resp.Header)
	out.Message = msg
	return out
}

// checkTimeout bounds Check.
const checkTimeout = 10 * time.Second

// authLogEvery is how often a refused key is logged: every call fails the
// same way, and one line a minute says it as well as a thousand.
const authLogEvery = time.Minute

// logUnauthorized logs a refused key at error level, with what to fix,
// at most once per authLogEvery for the client.
func (c *Client) logUnauthorized(ctx context.Context, model string, err *llm.APIError) {
	now, last := c.now().UnixNano(), c.authLogged.Load()
	if last != 0 && now-last < int64(authLogEvery) || !c.authLogged.CompareAndSwap(last, now) {
		return
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelError, "llm key refused: every call fails until it is fixed",
		slog.String("provider", Provider),
		slog.String("model", model),
		slog.String("base_url", redact.URL(c.baseURL())),
		slog.Int("status", err.Status),
		slog.String("error", err.Message),
		slog.String("fix", "check "+c.cfg.KeySetting+": the server at the base URL refuses it (a 403 may also be a key "+
			"without access to the model or the project)"))
}

// attempt makes one call under its own timeout. The error is nil on success.
func (c *Client) attempt(ctx context.Context, creq goopenai.ChatCompletionRequest, timeout time.Duration) (goopenai.ChatCompletionResponse, *llm.APIError) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := c.api.CreateChatCompletion(actx, creq)
	if err == nil {
		return resp, nil
	}
	if actx.Err() != nil && ctx.Err() == nil {
		return resp, &llm.APIError{
			Provider: Provider, Err: llm.ErrTimeout, Cause: context.DeadlineExceeded, Retryable: true,
			Message: "no answer within " + timeout.Round(time.Millisecond).String(),
		}
	}
	// go-openai keeps the response headers even when the status is an error,
	// which is where Retry-After lives.
	return resp, c.classify(err, resp.Header())
}

// classify turns a go-openai error into an *llm.APIError.
func (c *Client) classify(err error, h http.Header) *llm.APIError {
	var (
		apiErr *goopenai.APIError
		reqErr *goopenai.RequestError
		urlErr *url.Error
		synErr *json.SyntaxError
		typErr *json.UnmarshalTypeError
		netErr net.Error
		// TLS: a certificate not accepted, or TLS and plain HTTP mixed up.
		certErr   *tls.CertificateVerificationError
		recordErr tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &apiErr):
		return c.fromStatus(apiErr.HTTPStatusCode, errorCode(apiErr), apiErr.Message, h)
	case errors.As(err, &reqErr):
		// An error status whose body is not OpenAI's error JSON: a proxy's
		// HTML page, an empty 502 — or a 404 from a server that has no
		// such path, most often a base URL without its /v1.
		return c.fromStatus(reqErr.HTTPStatusCode, "", snippet(reqErr.Body, reqErr.HTTPStatus), h)
	case errors.As(err, &certErr):
		// Waiting does not make a certificate trusted: a private CA, a proxy
		// that intercepts TLS, a name the certificate does not hold.
		return &llm.APIError{Provider: Provider, Err: llm.ErrUnavailable, Cause: err,
			Message: "the server's TLS certificate is not accepted: " + err.Error() + "; check the base URL " + c.baseURL() +
				", and if the server's certificate is signed by a private CA, add the CA to the system's trust store " +
				"or name it in SSL_CERT_FILE"}
	case errors.As(err, &recordErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return &llm.APIError{Provider: Provider, Err: llm.ErrUnavailable, Cause: err,
			Message: "TLS and plain HTTP are mixed up: " + err.Error() + "; check the scheme of the base URL " + c.baseURL() +
				" (https:// for a server that speaks TLS, http:// for one that does not)"}
	case errors.As(err, &urlErr), errors.As(err, &netErr), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		// The connection failed, before the request or while the answer was
		// read (a reset mid-body reaches us as a bare net error).
		return &llm.APIError{Provider: Provider, Err: llm.ErrUnavailable, Cause: err, Retryable: true, Message: err.Error()}
	case errors.As(err, &synErr), errors.As(err, &typErr), errors.Is(err, io.EOF):
		msg := "the answer is not a chat completion"
		if ct := h.Get("Content-Type"); ct != "" && !strings.Contains(ct, "json") {
			msg += " (Content-Type " + ct + ")"
		}
		return &llm.APIError{Provider: Provider, Err: llm.ErrBadResponse, Cause: err,
			Message: msg + ": " + err.Error() + "; check the base URL " + c.baseURL() + " (it names the API root, such as " +
				DefaultBaseURL + "; compatible servers usually end in /v1) and that the server answers without streaming"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A body cut short is a transport accident; the next one may be whole.
		return &llm.APIError{Provider: Provider, Err: llm.ErrBadResponse, Cause: err, Retryable: true,
			Message: "the answer was cut short: " + err.Error()}
	default:
		// go-openai refused to send the request (a parameter the model does
		// not take): the same request can never succeed.
		return &llm.APIError{Provider: Provider, Err: llm.ErrBadRequest, Cause: err, Message: err.Error()}
	}
}

// fromStatus classifies an HTTP error status.
func (c *Client) fromStatus(status int, code, msg string, h http.Header) *llm.APIError {
	msg = RedactKeys(msg)
	if status == http.StatusNotFound && code != "model_not_found" {
		// A server with no such path, most often a base URL without its
		// /v1; OpenAI itself says so in JSON ("Invalid URL").
		msg = "POST " + c.baseURL() + "/chat/completions: " + msg + "; check the base URL (OpenAI-compatible servers usually end in /v1)"
	}
	e := &llm.APIError{Provider: Provider, Status: status, Code: code, Message: msg, RetryAfter: retryAfter(h, c.now())}
	switch {
	case status == http.StatusTooManyRequests:
		e.Err = llm.ErrRateLimited
		// An exhausted quota is a 429 too, but waiting does not refill it.
		e.Retryable = code != "insufficient_quota"
	case status == http.StatusRequestTimeout:
		e.Err, e.Retryable = llm.ErrTimeout, true
	case status == http.StatusConflict:
		e.Err, e.Retryable = llm.ErrUnavailable, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Err = llm.ErrUnauthorized
	case status >= 500:
		e.Err, e.Retryable = llm.ErrUnavailable, true
	default:
		e.Err = llm.ErrBadRequest
	}
	// OpenAI says outright when retrying is (not) worth it.
	switch strings.ToLower(h.Get("x-should-retry")) {
	case "true":
		e.Retryable = true
	case "false":
		e.Retryable = false
	}
	return e
}

// retryAfter reads the wait a server asks for: retry-after-ms (OpenAI), or
// Retry-After in seconds or as an HTTP date. Zero when absent, unreadable or
// already past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || math.IsInf(s, 0) || math.IsNaN(s) || s > math.MaxInt64/float64(time.Second) {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// backoff is the wait after the given failed attempt (1-based).
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.Backoff.Cap
	if shift := attempt - 1; shift < 32 {
		d = min(c.cfg.Backoff.Base<<shift, c.cfg.Backoff.Cap)
	}
	half := d / 2
	return half + time.Duration(c.randN(int64(d-half)+1))
}

// response maps a chat completion to an llm.Response.
func (c *Client) response(resp goopenai.ChatCompletionResponse, model string, start time.Time) (*llm.Response, *llm.APIError) {
	if len(resp.Choices) == 0 {
		return nil, &llm.APIError{Provider: Provider, Err: llm.ErrBadResponse, Message: "the answer has no choices"}
	}
	ch := resp.Choices[0]
	usage := llm.Usage{
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		TotalTokens:      resp.Usage.TotalTokens,
	}
	if ch.Message.Content == "" && ch.Message.Refusal != "" {
		// A refusal is billed like an answer.
		return nil, &llm.APIError{Provider: Provider, Err: llm.ErrRefused, Message: ch.Message.Refusal, Usage: usage}
	}
	return &llm.Response{
		Content:      ch.Message.Content,
		Usage:        usage,
		Latency:      time.Since(start),
		Model:        cmp.Or(resp.Model, model),
		Provider:     Provider,
		FinishReason: string(ch.FinishReason),
	}, nil
}

// jsonHint is added when JSON mode is asked for and no message says "JSON":
// OpenAI rejects json_object requests whose messages never mention it.
const jsonHint = "Answer with a single JSON object."

// chatRequest maps an llm.Request to the wire request.
func (c *Client) chatRequest(req llm.Request) (goopenai.ChatCompletionRequest, *llm.APIError) {
	bad := func(cat error, format string, args ...any) (goopenai.ChatCompletionRequest, *llm.APIError) {
		return goopenai.ChatCompletionRequest{}, &llm.APIError{Provider: Provider, Err: cat, Message: fmt.Sprintf(format, args...)}
	}
	if len(req.Messages) == 0 {
		return bad(llm.ErrBadRequest, "the request has no messages")
	}
	creq := goopenai.ChatCompletionRequest{Model: cmp.Or(req.Model, c.cfg.Model)}
	mentionsJSON := false
	for i, m := range req.Messages {
		switch m.Role {
		case llm.System, llm.User, llm.Assistant:
		default:
			return bad(llm.ErrBadRequest, "message %d: role %q is not system, user or assistant", i, m.Role)
		}
		mentionsJSON = mentionsJSON || strings.Contains(strings.ToLower(m.Content), "json")
		creq.Messages = append(creq.Messages, goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content})
	}
	switch {
	case req.Schema != nil:
		if !json.Valid(req.Schema.JSON) {
			return bad(llm.ErrInvalidSchema, "schema %q is not JSON", req.Schema.Name)
		}
		creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name:   schemaName(req.Schema.Name),
				Schema: json.RawMessage(req.Schema.JSON),
				Strict: req.Schema.Strict,
			},
		}
	case req.JSON:
		creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
		if !mentionsJSON {
			creq.Messages = append([]goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleSystem, Content: jsonHint}}, creq.Messages...)
		}
	}
	if req.Seed != nil {
		s := int(*req.Seed)
		creq.Seed = &s
	}
	if req.MaxTokens > 0 {
		creq.MaxTokens = req.MaxTokens
		// Reasoning models take only max_completion_tokens; everyone else
		// (and most compatible servers) max_tokens.
		if err := goopenai.NewReasoningValidator().Validate(creq); errors.Is(err, goopenai.ErrReasoningModelMaxTokensDeprecated) {
			creq.MaxTokens, creq.MaxCompletionTokens = 0, req.MaxTokens
		}
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		if t == 0 {
			// go-openai omits a zero temperature, and the server would use
			// its default (1). The smallest positive float32 is 0 to every
			// sampler and survives omitempty.
			t = math.SmallestNonzeroFloat32
		}
		creq.Temperature = t
		// Reasoning models (o1, o3, o4, gpt-5 ...) take no temperature but
		// their own: go-openai refuses the request before sending it. The
		// temperature is left out for them; the answer is the model's.
		if err := goopenai.NewReasoningValidator().Validate(creq); errors.Is(err, goopenai.ErrReasoningModelLimitationsOther) ||
			errors.Is(err, goopenai.ErrReasoningSamplingUnsupported) {
			creq.Temperature = 0
		}
	}
	return creq, nil
}

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// schemaName makes a name the API accepts: [A-Za-z0-9_-]{1,64}.
func schemaName(name string) string {
	name = nameUnsafe.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	return cmp.Or(name, "answer")
}

// errorCode is the provider's machine-readable code, else its error type.
func errorCode(e *goopenai.APIError) string {
	switch v := e.Code.(type) {
	case string:
		if v != "" {
			return v
		}
	case int:
		return strconv.Itoa(v)
	}
	return e.Type
}

var keyLike = regexp.MustCompile(`sk-[A-Za-z0-9_*\-]+`)

// RedactKeys hides the API keys in a server's message: OpenAI quotes the
// refused key, partly masked (sk-badk*****999), in its 401, and the message
// is logged and recorded.
func RedactKeys(msg string) string {
	return keyLike.ReplaceAllString(msg, "sk-xxxxx")
}

// snippet is the start of an unexpected error body, for the message.
func snippet(body []byte, status string) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return cmp.Or(s, status)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxAnswerBytes bounds the answer errorIn200 reads whole.
const maxAnswerBytes = 32 << 20

// errorIn200 gives go-openai the error that some gateways and compatible
// servers send with a 200 ({"error": {...}} and no choices) with an error
// status, so that it is read, classified and retried as the error it is
// rather than as an answer with no choices, its message lost.
type errorIn200 struct{ next Doer }

func (d errorIn200) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.next.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	resp.Body.Close()
	if err != nil {
		return nil, err // a transport failure mid-answer: classify retries it
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"error"`)) {
		return resp, nil // an answer: go-openai decodes it, once
	}
	var probe struct {
		Choices json.RawMessage `json:"choices"`
		Error   *struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &probe) != nil || probe.Error == nil || len(probe.Choices) > 0 {
		return resp, nil
	}
	status := http.StatusBadGateway // an upstream's failure, passed on
	switch kind := strings.ToLower(probe.Error.Type + " " + fmt.Sprint(probe.Error.Code)); {
	case strings.Contains(kind, "rate_limit"):
		status = http.StatusTooManyRequests
	case strings.Contains(kind, "invalid_request"), strings.Contains(kind, "context_length"):
		status = http.StatusBadRequest
	case strings.Contains(kind, "authentication"), strings.Contains(kind, "invalid_api_key"):
		status = http.StatusUnauthorized
	}
	resp.StatusCode, resp.Status = status, fmt.Sprintf("%d %s (an error sent with 200)", status, http.StatusText(status))
	return resp, nil
}
