package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

// scripted answers each call with the next scripted reply and keeps the
// requests it saw.
type scripted struct {
	mu      sync.Mutex
	replies []reply
	seen    []Request
}

type reply struct {
	content string
	finish  string
	err     error
}

func (s *scripted) Complete(_ context.Context, req Request) (*Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, req)
	if len(s.replies) == 0 {
		return nil, errors.New("scripted: no reply left")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	if r.err != nil {
		return nil, r.err
	}
	return &Response{Content: r.content, FinishReason: r.finish, Provider: "scripted", Usage: Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}}, nil
}

const personSchema = `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "minLength": 1},
		"age": {"type": "integer", "minimum": 0}
	},
	"required": ["name", "age"],
	"additionalProperties": false
}`

type person struct {
	Name string `json:"name"`
	Age  int    `json:"age"`
}

func TestCompleteJSON(t *testing.T) {
	t.Parallel()
	schemaReq := Request{
		Messages: []Message{{Role: User, Content: "Who?"}},
		Schema:   &Schema{Name: "person", JSON: json.RawMessage(personSchema)},
	}
	plainReq := Request{Messages: []Message{{Role: User, Content: "Who? Answer in JSON."}}}

	tests := []struct {
		name      string
		req       Request
		opts      []JSONOption
		replies   []reply
		want      person
		wantCalls int
		wantErr   error
		// wantReason is a fragment of the last reason, for invalid answers.
		wantReason string
	}{
		{
			name:      "valid first time",
			req:       schemaReq,
			replies:   []reply{{content: `{"name":"Ada","age":36}`}},
			want:      person{"Ada", 36},
			wantCalls: 1,
		},
		{
			name:      "fenced answer is accepted",
			req:       schemaReq,
			replies:   []reply{{content: "Here you go:\n```json\n{\"name\":\"Ada\",\"age\":36}\n```"}},
			want:      person{"Ada", 36},
			wantCalls: 1,
		},
		{
			name:      "prose around the object is accepted",
			req:       plainReq,
			replies:   []reply{{content: `Sure. {"name":"Ada","age":36} Anything else?`}},
			want:      person{"Ada", 36},
			wantCalls: 1,
		},
		{
			name:      "unparseable then valid",
			req:       schemaReq,
			replies:   []reply{{content: `{"name": "Ada", "age": `}, {content: `{"name":"Ada","age":36}`}},
			want:      person{"Ada", 36},
			wantCalls: 2,
		},
		{
			name: "schema violation then valid",
			req:  schemaReq,
			replies: []reply{
				{content: `{"name":"Ada","age":-1}`},
				{content: `{"name":"Ada"}`},
				{content: `{"name":"Ada","age":36}`},
			},
			want:      person{"Ada", 36},
			wantCalls: 3,
		},
		{
			name: "always invalid exhausts the re-asks",
			req:  schemaReq,
			replies: []reply{
				{content: `{"name":"Ada","age":-1}`},
				{content: `{"name":"Ada","age":-2}`},
				{content: `{"name":"Ada","age":-3}`},
			},
			wantCalls:  3,
			wantErr:    ErrInvalidAnswer,
			wantReason: "/age",
		},
		{
			name:       "no re-asks",
			req:        schemaReq,
			opts:       []JSONOption{WithReasks(0)},
			replies:    []reply{{content: `not json at all`}},
			wantCalls:  1,
			wantErr:    ErrInvalidAnswer,
			wantReason: "not valid JSON",
		},
		{
			name:       "no schema needs an object",
			req:        plainReq,
			opts:       []JSONOption{WithReasks(0)},
			replies:    []reply{{content: `[1,2]`}},
			wantCalls:  1,
			wantErr:    ErrInvalidAnswer,
			wantReason: "not a JSON object",
		},
		{
			name:       "wrong Go shape without schema",
			req:        plainReq,
			opts:       []JSONOption{WithReasks(1)},
			replies:    []reply{{content: `{"name":7}`}, {content: `{"name":"Ada","age":"old"}`}},
			wantCalls:  2,
			wantErr:    ErrInvalidAnswer,
			wantReason: "expected shape",
		},
		{
			name:      "client errors are not re-asked",
			req:       schemaReq,
			replies:   []reply{{err: &APIError{Provider: "x", Status: 429, Err: ErrRateLimited}}},
			wantCalls: 1,
			wantErr:   ErrRateLimited,
		},
		{
			name:      "invalid schema is the caller's bug",
			req:       Request{Messages: schemaReq.Messages, Schema: &Schema{Name: "bad", JSON: json.RawMessage(`{"type": 12}`)}},
			wantCalls: 0,
			wantErr:   ErrInvalidSchema,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &scripted{replies: tc.replies}
			var got person
			resp, err := CompleteJSON(t.Context(), c, tc.req, &got, tc.opts...)
			if len(c.seen) != tc.wantCalls {
				t.Errorf("calls = %d, want %d", len(c.seen), tc.wantCalls)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				var inv *InvalidAnswerError
				if errors.As(err, &inv) {
					if inv.Attempts != tc.wantCalls {
						t.Errorf("Attempts = %d, want %d", inv.Attempts, tc.wantCalls)
					}
					if !strings.Contains(inv.Reason, tc.wantReason) {
						t.Errorf("Reason = %q, want it to mention %q", inv.Reason, tc.wantReason)
					}
					if inv.Content != tc.replies[len(tc.replies)-1].content {
						t.Errorf("Content = %q, want the last answer", inv.Content)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("CompleteJSON: %v", err)
			}
			if got != tc.want {
				t.Errorf("decoded %+v, want %+v", got, tc.want)
			}
			if resp == nil || resp.Content != tc.replies[len(tc.replies)-1].content {
				t.Errorf("response = %+v, want the last answer's", resp)
			}
			for i, r := range c.seen {
				if !r.JSON {
					t.Errorf("call %d: JSON not asked for", i)
				}
			}
		})
	}
}

func TestCompleteJSONReasksWithTheError(t *testing.T) {
	t.Parallel()
	c := &scripted{replies: []reply{{content: `{"name":"Ada","age":-1}`}, {content: `{"name":"Ada","age":1}`}}}
	orig := []Message{{Role: System, Content: "extract"}, {Role: User, Content: "Ada, minus one"}}
	req := Request{Messages: orig[:2:2], Schema: &Schema{Name: "person", JSON: json.RawMessage(personSchema)}, Purpose: "extraction"}
	if _, err := CompleteJSON(t.Context(), c, req, nil); err != nil {
		t.Fatalf("CompleteJSON: %v", err)
	}
	second := c.seen[1]
	if len(second.Messages) != 4 {
		t.Fatalf("re-ask has %d messages, want 4: %+v", len(second.Messages), second.Messages)
	}
	if m := second.Messages[2]; m.Role != Assistant || m.Content != `{"name":"Ada","age":-1}` {
		t.Errorf("message 3 = %+v, want the rejected answer as the assistant's", m)
	}
	if m := second.Messages[3]; m.Role != User || !strings.Contains(m.Content, "/age") || !strings.Contains(m.Content, "minimum") {
		t.Errorf("message 4 = %q, want the validation error naming /age and the rule", m.Content)
	}
	if second.Purpose != "extraction" || second.Schema == nil {
		t.Errorf("re-ask lost purpose or schema: %+v", second)
	}
	if len(c.seen[0].Messages) != 2 {
		t.Errorf("first request was changed after the fact: %+v", c.seen[0].Messages)
	}
}

// Each ask of a call with a CallID has its own: the recorder derives the
// record's event id from it, and the stream keeps one record per id.
func TestCompleteJSONReasksUnderTheirOwnCallID(t *testing.T) {
	t.Parallel()
	c := &scripted{replies: []reply{{content: "prose"}, {content: "more prose"}, {content: `{"name":"Ada","age":1}`}}}
	req := Request{Messages: []Message{{Role: User, Content: "Ada, one"}}, CallID: "turn-7/research"}
	if _, err := CompleteJSON(t.Context(), c, req, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"turn-7/research", "turn-7/research/reask-1", "turn-7/research/reask-2"}
	for i, r := range c.seen {
		if r.CallID != want[i] {
			t.Errorf("ask %d has CallID %q, want %q", i+1, r.CallID, want[i])
		}
	}
	c = &scripted{replies: []reply{{content: "prose"}, {content: `{"name":"Ada","age":1}`}}}
	if _, err := CompleteJSON(t.Context(), c, Request{Messages: []Message{{Role: User, Content: "Ada"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if c.seen[1].CallID != "" {
		t.Errorf("a call without a CallID got %q on its re-ask", c.seen[1].CallID)
	}
}

// An answer cut off at the token limit is re-asked saying so.
func TestCompleteJSONSaysAnAnswerWasCutOff(t *testing.T) {
	t.Parallel()
	c := &scripted{replies: []reply{{content: `{"name":"Ad`, finish: FinishLength}, {content: `{"name":"Ada","age":1}`, finish: FinishStop}}}
	if _, err := CompleteJSON(t.Context(), c, Request{Messages: []Message{{Role: User, Content: "Ada"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if m := c.seen[1].Messages[2]; !strings.Contains(m.Content, "cut off at the token limit") || !strings.Contains(m.Content, "briefly") {
		t.Errorf("re-ask = %q, want it to say the answer was cut off", m.Content)
	}
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, doc string
		wantErr           bool
		wantSchemaErr     bool
	}{
		{"valid", personSchema, `{"name":"a","age":1}`, false, false},
		{"extra property", personSchema, `{"name":"a","age":1,"x":0}`, true, false},
		{"draft 2020-12 declared", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, `{}`, false, false},
		{"local ref", `{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":"x"}`, true, false},
		{"remote ref refused", `{"$ref":"https://example.com/s.json"}`, `{}`, true, true},
		{"file ref refused", `{"$ref":"file:///etc/passwd"}`, `{}`, true, true},
		{"not json", `{`, `{}`, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateJSON(json.RawMessage(tc.schema), []byte(tc.doc))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got := errors.Is(err, ErrInvalidSchema); got != tc.wantSchemaErr {
				t.Errorf("ErrInvalidSchema = %v, want %v (err %v)", got, tc.wantSchemaErr, err)
			}
		})
	}
}

func TestParseJSONAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{`{"a":1}`, `{"a":1}`, false},
		{"  \n{\"a\":1}\n", `{"a":1}`, false},
		{"```json\n{\"a\":1}\n```", `{"a":1}`, false},
		{"```\n[1]\n```", `[1]`, false},
		{`The answer is {"a":{"b":2}}.`, `{"a":{"b":2}}`, false},
		{``, ``, true},
		{`{"a":`, ``, true},
		{"```json\n{\"a\":\n```", ``, true},
		{`} nonsense {`, ``, true},
		{"{\"a\":1}\nNote: I left out {b} on purpose.", `{"a":1}`, false},
		{"<think>the user said {x}</think>\n{\"a\":1}", `{"a":1}`, false},
		{"<think>a</think> <think>b {</think>```json\n{\"a\":1}\n```", `{"a":1}`, false},
		{"<think>never closed {\"a\":1}", ``, true},
		{`{"a":1} and also {"b":2}`, `{"a":1}`, false},
		{`I would say {maybe} then {"a":[1,{"b":2}]} done`, `{"a":[1,{"b":2}]}`, false},
		{`{"summary": "s", "findings": [{"title": "Jobber", "detail": "Scheduling"}, {"title": "Servi`, ``, true},
	}
	for _, tc := range tests {
		got, err := ParseJSONAnswer(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseJSONAnswer(%q) err = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("ParseJSONAnswer(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func FuzzParseJSONAnswer(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", `x {"a":[1,2]} y`, `{`, "```", "}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseJSONAnswer(s)
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("ParseJSONAnswer(%q) = %q, not valid JSON", s, got)
		}
		if !strings.Contains(s, string(got)) {
			t.Fatalf("ParseJSONAnswer(%q) = %q, not taken from the answer", s, got)
		}
		// Whatever parses must also go through the schema-free check
		// without panicking.
		_ = checkAnswer(s, nil, new(map[string]any))
	})
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, OutcomeOK},
		{context.Canceled, OutcomeCanceled},
		{context.DeadlineExceeded, OutcomeTimeout},
		{&APIError{Err: ErrTimeout, Cause: context.DeadlineExceeded}, OutcomeTimeout},
		{&APIError{Err: ErrRateLimited, Status: 429}, OutcomeRateLimited},
		{&APIError{Err: ErrUnavailable, Status: 503}, OutcomeUnavailable},
		{&APIError{Err: ErrUnauthorized, Status: 401}, OutcomeUnauthorized},
		{&APIError{Err: ErrBadRequest, Status: 400}, OutcomeBadRequest},
		{&APIError{Err: ErrBadResponse, Status: 200}, OutcomeBadResponse},
		{&InvalidAnswerError{Attempts: 3}, OutcomeInvalidAnswer},
		{errors.New("something else"), OutcomeError},
	}
	for _, tc := range tests {
		if got := Outcome(tc.err); got != tc.want {
			t.Errorf("Outcome(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if tc.want == OutcomeOK || tc.want == OutcomeError {
			continue
		}
		if back := OutcomeErr(tc.want); back == nil || Outcome(back) != tc.want {
			t.Errorf("OutcomeErr(%q) = %v, does not read back as %q", tc.want, back, tc.want)
		}
	}
}

func TestAPIErrorMessage(t *testing.T) {
	t.Parallel()
	err := error(&APIError{Provider: "openai", Status: 429, Code: "rate_limit_exceeded", Attempts: 4,
		Message: "slow down", Err: ErrRateLimited, Retryable: true})
	want := "openai: llm: rate limited (status 429, code rate_limit_exceeded, 4 attempts): slow down"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if !IsRetryable(err) || IsRetryable(context.Canceled) {
		t.Error("IsRetryable misreads the error")
	}
}

// A schema compiled before is found without copying its text: the look-up
// runs at every call.
func TestCompiledSchemaLookUpAllocatesNothing(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	first, err := compileSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if s, err := compileSchema(raw); err != nil || s != first {
			t.Fatalf("compileSchema = %p, %v; want the cached %p", s, err, first)
		}
	})
	if allocs != 0 {
		t.Fatalf("a cached schema's look-up allocates %.0f times, want 0", allocs)
	}
}
