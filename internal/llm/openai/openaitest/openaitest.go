// Package openaitest is a fake Chat Completions server for tests: an
// httptest server that parses each request as the wire format defines it,
// keeps it for inspection, and answers with scripted replies (errors,
// headers, malformed bodies, stalls) or, when the script is empty, with a
// well-formed completion that echoes the last user message.
package openaitest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ChatRequest is what a client sent, decoded independently of any client
// library so tests check the wire, not a library's structs.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
}

// Message is one chat message on the wire.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ResponseFormat is the response_format object.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is response_format.json_schema.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// Received is one request the server got.
type Received struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Chat is Body decoded; zero when it did not decode (see DecodeErr).
	Chat      ChatRequest
	DecodeErr error
}

// Usage is the usage object of a completion.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status. Default 200.
	Status int
	// Header is added to the answer (Retry-After, x-should-retry ...).
	Header map[string]string
	// Body, when set, is sent verbatim (malformed JSON, an HTML error page).
	Body string
	// Error, for a status >= 400 without Body, is the OpenAI error object's
	// message; ErrorType and ErrorCode fill its type and code.
	Error, ErrorType, ErrorCode string
	// Content is the assistant message of a 200 without Body.
	Content string
	// Refusal is the assistant's refusal of a 200 without Body.
	Refusal string
	// FinishReason defaults to "stop".
	FinishReason string
	// Usage defaults to word counts of the prompt and the content.
	Usage *Usage
	// Stall, when true, answers nothing until the client gives up.
	Stall bool
}

// Server is a fake Chat Completions endpoint. Its URL plus "/v1" is a base
// URL for an OpenAI client.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	script   []Reply
	received []Received
	// Default answers when the script is empty. Replace it before use.
	Default func(ChatRequest) Reply
	// arrived gets one value per request, for tests that wait for a call.
	arrived chan struct{}
}

// NewServer starts a fake server, closed when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{Default: Echo, arrived: make(chan struct{}, 1024)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the API root to configure a client with.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Enqueue adds replies to the script, answered in order.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// next records rec and takes its reply: the script's next, else Default's
// (under the lock, released even when Default panics).
func (s *Server) next(rec Received) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, rec)
	if len(s.script) > 0 {
		reply := s.script[0]
		s.script = s.script[1:]
		return reply
	}
	return s.Default(rec.Chat)
}

// Arrived is signalled once per request received.
func (s *Server) Arrived() <-chan struct{} { return s.arrived }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		// The start check of praetor dev and serve: answered as the API
		// does, neither recorded nor taking a reply of the script.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model","owned_by":"openaitest"}]}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	rec := Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	rec.DecodeErr = json.Unmarshal(body, &rec.Chat)

	reply := s.next(rec)
	select {
	case s.arrived <- struct{}{}:
	default:
	}

	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.Method+" "+r.URL.Path, "invalid_request_error", "")
		return
	}
	if rec.DecodeErr != nil {
		writeError(w, http.StatusBadRequest, "request body is not JSON: "+rec.DecodeErr.Error(), "invalid_request_error", "")
		return
	}
	if reply.Stall {
		<-r.Context().Done()
		return
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	status := cmp.Or(reply.Status, http.StatusOK)
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply.Body)
		return
	}
	if status >= 400 {
		writeError(w, status, cmp.Or(reply.Error, http.StatusText(status)), cmp.Or(reply.ErrorType, "server_error"), reply.ErrorCode)
		return
	}
	usage := reply.Usage
	if usage == nil {
		p, c := 0, len(strings.Fields(reply.Content))
		for _, m := range rec.Chat.Messages {
			p += 4 + len(strings.Fields(m.Content))
		}
		usage = &Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content, "refusal": nil}
	if reply.Refusal != "" {
		msg["content"], msg["refusal"] = nil, reply.Refusal
	}
	resp := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake%d", len(s.Requests())),
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   cmp.Or(rec.Chat.Model, "fake-model") + "-2024-07-18",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"logprobs":      nil,
			"finish_reason": cmp.Or(reply.FinishReason, "stop"),
		}},
		"usage":              usage,
		"system_fingerprint": "fp_fake",
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var c any
	if code != "" {
		c = code
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": c,
	}})
}

// Echo is the default answer: the last user message echoed, as a JSON
// object when the request asked for JSON.
func Echo(req ChatRequest) Reply {
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	if req.ResponseFormat != nil && req.ResponseFormat.Type != "text" {
		b, _ := json.Marshal(map[string]string{"echo": last})
		return Reply{Content: string(b)}
	}
	return Reply{Content: "You said: " + last}
}
