package llm

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestHashIgnoresWhoAndSeesWhat(t *testing.T) {
	t.Parallel()
	base := Request{
		Model:    "m",
		Messages: []Message{{Role: System, Content: "be brief"}, {Role: User, Content: "hi"}},
		Purpose:  "response",
	}
	h := Hash(base)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h) {
		t.Fatalf("Hash = %q, want 64 hex digits", h)
	}

	same := []struct {
		name string
		edit func(*Request)
	}{
		{"tenant", func(r *Request) { r.TenantID = "acme" }},
		{"scope", func(r *Request) { r.Scope = "session-1" }},
		{"call id", func(r *Request) { r.CallID = "turn-1/reply" }},
		{"nil vs empty messages are different requests only by content", func(r *Request) {}},
	}
	for _, tc := range same {
		r := base
		tc.edit(&r)
		if got := Hash(r); got != h {
			t.Errorf("%s: Hash changed to %s, want %s", tc.name, got, h)
		}
	}

	different := []struct {
		name string
		edit func(*Request)
	}{
		{"model", func(r *Request) { r.Model = "m2" }},
		{"message content", func(r *Request) {
			r.Messages = []Message{{Role: System, Content: "be brief"}, {Role: User, Content: "hi!"}}
		}},
		{"message role", func(r *Request) {
			r.Messages = []Message{{Role: User, Content: "be brief"}, {Role: User, Content: "hi"}}
		}},
		{"json", func(r *Request) { r.JSON = true }},
		{"schema", func(r *Request) { r.Schema = &Schema{Name: "x", JSON: json.RawMessage(`{}`)} }},
		{"strict schema", func(r *Request) { r.Schema = &Schema{Name: "x", JSON: json.RawMessage(`{}`), Strict: true} }},
		{"temperature", func(r *Request) { r.Temperature = ptr(0.0) }},
		{"max tokens", func(r *Request) { r.MaxTokens = 10 }},
		{"seed", func(r *Request) { r.Seed = ptr(int64(7)) }},
		{"purpose", func(r *Request) { r.Purpose = "extraction" }},
	}
	for _, tc := range different {
		r := base
		tc.edit(&r)
		if got := Hash(r); got == h {
			t.Errorf("%s: Hash unchanged, want a different hash", tc.name)
		}
	}
}

func TestHashCanonicalSchema(t *testing.T) {
	t.Parallel()
	a := Request{Messages: []Message{{Role: User, Content: "x"}}, Schema: &Schema{Name: "s",
		JSON: json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"number","minimum":1.50}}}`)}}
	b := a
	b.Schema = &Schema{Name: "s", JSON: json.RawMessage(`{
		"properties": {"a": {"minimum": 1.50, "type": "number"}},
		"required": ["a"],
		"type": "object"
	}`)}
	if Hash(a) != Hash(b) {
		t.Errorf("schemas differing only in key order and spaces hash differently:\n%s\n%s", CanonicalJSON(a), CanonicalJSON(b))
	}
	// A schema implies JSON, so saying it twice is the same request.
	c := a
	c.JSON = true
	if Hash(a) != Hash(c) {
		t.Error("JSON=true with a schema hashes differently from the schema alone")
	}
	// A schema that is not JSON still hashes, and not like an empty one.
	d := a
	d.Schema = &Schema{Name: "s", JSON: json.RawMessage(`{not json`)}
	e := a
	e.Schema = &Schema{Name: "s"}
	if Hash(d) == Hash(e) || Hash(d) == Hash(a) {
		t.Error("an invalid schema collides with another request")
	}
}

func TestHashStable(t *testing.T) {
	t.Parallel()
	// A hash is an identifier kept in recorded events: it must not change
	// between processes or releases without bumping canonicalVersion.
	req := Request{
		Model:       "gpt-4o-mini",
		Messages:    []Message{{Role: System, Content: "You are terse."}, {Role: User, Content: "Say hi."}},
		Temperature: ptr(0.2),
		MaxTokens:   64,
		Seed:        ptr(int64(42)),
		Purpose:     "response",
	}
	const want = `{"v":1,"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hi."}],"json":false,"temperature":0.2,"max_tokens":64,"seed":42,"purpose":"response"}`
	if got := string(CanonicalJSON(req)); got != want {
		t.Fatalf("CanonicalJSON =\n%s\nwant\n%s", got, want)
	}
	// JSON has no NaN; a request with one still hashes, apart from others.
	nan := req
	nan.Temperature = ptr(math.NaN())
	inf := req
	inf.Temperature = ptr(math.Inf(1))
	if Hash(nan) == Hash(inf) || Hash(nan) == Hash(req) {
		t.Error("NaN and infinite temperatures collide")
	}
	if Hash(req) != Hash(req) {
		t.Fatal("Hash is not a function of its input")
	}
}

// Recorded hashes digest this exact form: HTML characters and the line and
// paragraph separators escaped as encoding/json.Marshal escapes them, in
// messages and schemas alike; AppendCanonicalJSON appends the same bytes.
func TestCanonicalJSONEscapesAsMarshal(t *testing.T) {
	t.Parallel()
	req := Request{
		Model: "m",
		Messages: []Message{{Role: System, Content: "<fields>\na & b > c\u2028d\u2029</fields>"},
			{Role: User, Content: "é \x7f"}},
		Schema:    &Schema{Name: "x<y", JSON: []byte(`{"type":"object","description":"a <b> & c` + "\u2028" + `"}`)},
		MaxTokens: 8,
		Purpose:   "extraction",
	}
	want := `{"v":1,"model":"m","messages":[{"role":"system","content":"\u003cfields\u003e\na \u0026 b \u003e c\u2028d\u2029\u003c/fields\u003e"},` +
		`{"role":"user","content":"é ` + "\x7f" + `"}],"json":true,` +
		`"schema":{"name":"x\u003cy","json":{"description":"a \u003cb\u003e \u0026 c\u2028","type":"object"}},"max_tokens":8,"purpose":"extraction"}`
	if got := string(CanonicalJSON(req)); got != want {
		t.Fatalf("CanonicalJSON =\n%s\nwant\n%s", got, want)
	}
	dst := append(make([]byte, 0, 64), "prefix"...)
	if got := string(AppendCanonicalJSON(dst, req)); got != "prefix"+want {
		t.Fatalf("AppendCanonicalJSON(prefix) =\n%s\nwant prefix then\n%s", got, want)
	}
}

// AppendCanonicalJSON writes its form by parts, splicing the cached schema
// in; the reference is the one struct encoding/json encodes whole, which is
// what the recorded hashes were taken from.
func TestCanonicalJSONIsTheWholeStructEncoded(t *testing.T) {
	t.Parallel()
	type schema struct {
		Name   string          `json:"name"`
		JSON   json.RawMessage `json:"json"`
		Strict bool            `json:"strict,omitempty"`
	}
	type whole struct {
		V           int       `json:"v"`
		Model       string    `json:"model"`
		Messages    []Message `json:"messages"`
		JSON        bool      `json:"json"`
		Schema      *schema   `json:"schema,omitempty"`
		Temperature any       `json:"temperature,omitempty"`
		MaxTokens   int       `json:"max_tokens"`
		Seed        *int64    `json:"seed,omitempty"`
		Purpose     string    `json:"purpose"`
	}
	reference := func(req Request) string {
		w := whole{V: canonicalVersion, Model: req.Model, Messages: req.Messages, JSON: req.JSON || req.Schema != nil,
			MaxTokens: req.MaxTokens, Seed: req.Seed, Purpose: req.Purpose}
		if w.Messages == nil {
			w.Messages = []Message{}
		}
		if t := req.Temperature; t != nil {
			w.Temperature = *t
			if math.IsNaN(*t) || math.IsInf(*t, 0) {
				w.Temperature = strconv.FormatFloat(*t, 'g', -1, 64)
			}
		}
		if req.Schema != nil {
			w.Schema = &schema{Name: req.Schema.Name, JSON: canonicalJSONValue(req.Schema.JSON), Strict: req.Schema.Strict}
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	reqs := []Request{
		{},
		{Model: "m", JSON: true, MaxTokens: -1, Purpose: "p<&>"},
		{Messages: []Message{{Role: User, Content: "a\u2028<b>"}}, Temperature: ptr(0.0), Seed: ptr(int64(-7))},
		{Temperature: ptr(math.Inf(-1)), Schema: &Schema{Name: "", JSON: nil}},
		{Schema: &Schema{Name: "n\"q", JSON: []byte(`{"b":1e3,"a":[true,null,"x&y"]}`)}, Temperature: ptr(1.5)},
		{Schema: &Schema{Name: "broken", JSON: []byte(`{"a":`)}, Purpose: "extraction", Seed: ptr(int64(0))},
		{Schema: &Schema{Name: "strict", JSON: []byte(`{"type":"object"}`), Strict: true}},
	}
	for i, req := range reqs {
		want := reference(req)
		if got := string(CanonicalJSON(req)); got != want {
			t.Errorf("request %d: CanonicalJSON =\n%s\nwant\n%s", i, got, want)
		}
	}
}
