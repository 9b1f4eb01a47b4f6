package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DefaultReasks is how many times CompleteJSON asks again after an unusable
// answer, unless told otherwise.
const DefaultReasks = 2

// Bounds on what a re-ask quotes back to the model, so a long wrong answer
// does not double the prompt on every attempt.
const (
	maxQuotedAnswer = 4000
	maxQuotedReason = 1000
)

// JSONOption tunes CompleteJSON.
type JSONOption func(*jsonOptions)

type jsonOptions struct {
	reasks int
}

// WithReasks sets how many times CompleteJSON asks again after an unusable
// answer; 0 asks once only. Negative values count as 0.
func WithReasks(n int) JSONOption {
	return func(o *jsonOptions) { o.reasks = max(n, 0) }
}

// CompleteJSON asks c for a JSON answer to req and decodes it into out (a
// pointer, or nil to only validate). The answer must parse (surrounding
// Markdown fences and prose are tolerated), be a JSON object when req has no
// schema, validate against req.Schema when it has one, and decode into out.
// When it does not, CompleteJSON asks again with the answer and the reason
// appended to the conversation, up to DefaultReasks times (WithReasks), then
// returns an *InvalidAnswerError wrapping ErrInvalidAnswer so the caller can
// degrade. Errors of c itself (rate limits, outages) are returned at once:
// asking again is the adapter's business.
//
// The Response returned is the one whose answer was used.
func CompleteJSON(ctx context.Context, c Client, req Request, out any, opts ...JSONOption) (*Response, error) {
	o := jsonOptions{reasks: DefaultReasks}
	for _, opt := range opts {
		opt(&o)
	}
	var schema *jsonschema.Schema
	if req.Schema != nil {
		var err error
		if schema, err = compileSchema(req.Schema.JSON); err != nil {
			return nil, err
		}
	}
	req.JSON = true
	// Never append to the caller's backing array.
	req.Messages = append([]Message(nil), req.Messages...)

	var last InvalidAnswerError
	callID := req.CallID
	for attempt := 1; attempt <= o.reasks+1; attempt++ {
		if callID != "" && attempt > 1 {
			// Each ask is a call of its own: recorded under its own id, or
			// the stream would keep the first, unusable answer and drop the
			// one used as its duplicate.
			req.CallID = callID + "/reask-" + strconv.Itoa(attempt-1)
		}
		resp, err := c.Complete(ctx, req)
		if err != nil {
			return nil, err
		}
		reason := checkAnswer(resp.Content, schema, out)
		if reason == "" {
			return resp, nil
		}
		if resp.FinishReason == FinishLength {
			// Asking again for the same at the same limit would be cut
			// again: say why it failed.
			reason = "it was cut off at the token limit (" + reason + "); answer more briefly"
		}
		last = InvalidAnswerError{Attempts: attempt, Reason: reason, Content: resp.Content}
		req.Messages = append(req.Messages,
			Message{Role: Assistant, Content: truncate(resp.Content, maxQuotedAnswer)},
			Message{Role: User, Content: "Your previous answer could not be used: " +
				truncate(reason, maxQuotedReason) +
				". Reply again with only the corrected JSON, no other text."},
		)
	}
	return nil, &last
}

// checkAnswer returns why content is not a usable answer, or "".
func checkAnswer(content string, schema *jsonschema.Schema, out any) string {
	raw, err := ParseJSONAnswer(content)
	if err != nil {
		return err.Error()
	}
	if schema != nil {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return "not valid JSON: " + err.Error()
		}
		if err := schema.Validate(inst); err != nil {
			return "does not match the schema: " + validationReason(err)
		}
	} else if raw[0] != '{' {
		return "not a JSON object"
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return "does not fit the expected shape: " + err.Error()
		}
	}
	return ""
}

// ParseJSONAnswer finds the JSON value in a model's answer, once the
// <think>…</think> blocks some models print first are left out: the whole
// answer, else the inside of a Markdown code fence, else the first whole
// JSON object in it, whatever prose comes before or after.
// Models asked for JSON still sometimes wrap it; rejecting those would cost
// a re-ask for nothing.
func ParseJSONAnswer(content string) (json.RawMessage, error) {
	s := strings.TrimSpace(withoutThinking(content))
	if s == "" {
		return nil, errors.New("empty answer, expected JSON")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s), nil
	}
	if inner, ok := fenced(s); ok && json.Valid([]byte(inner)) {
		return json.RawMessage(inner), nil
	}
	if obj, ok := firstObject(s); ok {
		return obj, nil
	}
	var v any
	err := json.Unmarshal([]byte(s), &v)
	return nil, fmt.Errorf("not valid JSON: %v", err)
}

// maxObjectStarts bounds how many '{' firstObject tries: each try decodes
// from there, and prose full of braces would make it quadratic.
const maxObjectStarts = 64

// firstObject returns the first '{' of s from which a whole JSON object
// decodes, and that object.
func firstObject(s string) (json.RawMessage, bool) {
	for i, tries := 0, 0; tries < maxObjectStarts; tries++ {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			return nil, false
		}
		i += j
		var obj json.RawMessage
		err := json.NewDecoder(strings.NewReader(s[i:])).Decode(&obj)
		if err == nil {
			return obj, true
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The answer ends inside this object (cut off): a '{' further on
			// is inside it, a piece of it, not an answer.
			return nil, false
		}
		i++
	}
	return nil, false
}

// withoutThinking leaves out the <think>…</think> blocks that reasoning
// models (DeepSeek R1, Qwen) served without a reasoning parser print before
// their answer; an unclosed one runs to the end.
func withoutThinking(s string) string {
	for {
		rest, ok := strings.CutPrefix(strings.TrimSpace(s), "<think>")
		if !ok {
			return s
		}
		_, after, closed := strings.Cut(rest, "</think>")
		if !closed {
			return ""
		}
		s = after
	}
}

// fenced returns the body of the first ``` code fence in s.
func fenced(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "```")
	if !ok {
		return "", false
	}
	// Skip the info string ("json") up to the end of the fence's line.
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[nl+1:]
	}
	body, _, ok := strings.Cut(rest, "```")
	if !ok {
		return "", false
	}
	return strings.TrimSpace(body), true
}

// ValidateJSON checks a JSON document against a JSON Schema. The error wraps
// ErrInvalidSchema when the schema is unusable.
func ValidateJSON(schema json.RawMessage, doc []byte) error {
	sch, err := compileSchema(schema)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("does not match the schema: %s", validationReason(err))
	}
	return nil
}

// schemas caches compiled schemas by their text: those of code and engine
// files, and one per workflow task output list (llmagent), so it starts
// afresh past maxCompiledSchemas. (A map indexed with string(raw) looks up
// without copying the schema, which a sync.Map key would, at every call.)
var schemas struct {
	sync.RWMutex
	m map[string]*jsonschema.Schema
}

const maxCompiledSchemas = 1024

// schemaURL is where a compiled schema says it lives; an in-memory name, so
// nothing is read from disk or network.
const schemaURL = "mem:///answer.schema.json"

func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	schemas.RLock()
	s, ok := schemas.m[string(raw)]
	schemas.RUnlock()
	if ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	// Only this document: a $ref elsewhere is an error, not a fetch.
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	s, err = c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	schemas.Lock()
	if schemas.m == nil || len(schemas.m) >= maxCompiledSchemas {
		schemas.m = map[string]*jsonschema.Schema{}
	}
	schemas.m[string(raw)] = s
	schemas.Unlock()
	return s, nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %q: only references inside the schema are allowed", url)
}

// validationReason flattens a validation error into one line a model can
// act on: "at /age: must be >= 0; at /name: missing property".
func validationReason(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	for _, u := range leaves(ve.BasicOutput()) {
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		msg := "invalid"
		if u.Error != nil {
			msg = u.Error.String()
		}
		parts = append(parts, "at "+loc+": "+msg)
	}
	if len(parts) == 0 {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(parts, "; ")
}

// leaves returns the output units that carry an error message, skipping the
// summary unit at the top.
func leaves(u *jsonschema.OutputUnit) []jsonschema.OutputUnit {
	if u == nil {
		return nil
	}
	var out []jsonschema.OutputUnit
	for _, e := range u.Errors {
		if e.Error != nil {
			out = append(out, e)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
