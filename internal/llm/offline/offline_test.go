package offline

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func newOffline(t *testing.T, seed int64) *Offline {
	t.Helper()
	o, err := New(Config{Seed: seed})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return o
}

func TestConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T) llm.Client { return newOffline(t, 1) })
}

// goldenRequests cover each kind of answer.
func goldenRequests() map[string]llm.Request {
	user := func(s string) []llm.Message {
		return []llm.Message{{Role: llm.System, Content: "You are a helpful intake assistant."}, {Role: llm.User, Content: s}}
	}
	return map[string]llm.Request{
		"reply":       {Messages: user("I need to plan a trip to Rome, on a small budget."), Purpose: "response"},
		"reply-other": {Messages: user("Our team keeps missing deadlines."), Purpose: "response"},
		"greeting":    {Messages: []llm.Message{{Role: llm.System, Content: "Greet the user."}}},
		"truncated":   {Messages: user("Tell me everything about tokenizers."), MaxTokens: 4},
		"json":        {Messages: user("Answer in JSON."), JSON: true},
		"schema": {Messages: user("Extract the fields."), Schema: &llm.Schema{Name: "extraction", JSON: json.RawMessage(`{
			"type": "object",
			"properties": {
				"destination": {"type": "string"},
				"budget": {"type": "number", "minimum": 100},
				"travellers": {"type": "integer", "minimum": 1},
				"dates": {"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 2},
				"notes": {"type": "string"}
			},
			"required": ["destination", "budget", "travellers", "dates"],
			"additionalProperties": false
		}`)}},
	}
}

type golden struct {
	Content      string    `json:"content"`
	Usage        llm.Usage `json:"usage"`
	FinishReason string    `json:"finish_reason"`
}

// TestGolden pins the answers of seed 7: they were written by another
// process (with -update), so a match shows answers do not depend on the
// process, map order or time.
func TestGolden(t *testing.T) {
	o := newOffline(t, 7)
	got := map[string]golden{}
	for name, req := range goldenRequests() {
		resp, err := o.Complete(t.Context(), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = golden{resp.Content, resp.Usage, resp.FinishReason}
	}
	path := filepath.Join("testdata", "answers.golden.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	var want map[string]golden
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s:\n got %+v\nwant %+v", name, g, w)
		}
	}
	if len(want) != len(got) {
		t.Errorf("golden has %d answers, want %d; run with -update", len(want), len(got))
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	a, b := newOffline(t, 42), newOffline(t, 42)
	other := newOffline(t, 43)
	differsBySeed := false
	for name, req := range goldenRequests() {
		r1, err := a.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if r1.Content != r2.Content || r1.Usage != r2.Usage || r1.FinishReason != r2.FinishReason {
			t.Errorf("%s: two clients with one seed disagree:\n%+v\n%+v", name, r1, r2)
		}
		// Tenant, scope and call id are not what a request asks.
		req.TenantID, req.Scope, req.CallID = "acme", "s1", "c1"
		r3, err := a.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if r3.Content != r1.Content {
			t.Errorf("%s: answer changed with tenant/scope/call id", name)
		}
		r4, err := other.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		differsBySeed = differsBySeed || r4.Content != r1.Content
	}
	if !differsBySeed {
		t.Error("seed 43 answers every request like seed 42")
	}
	// Different questions get (some) different answers.
	seen := map[string]bool{}
	for _, msg := range []string{"I want a new job.", "My cat is sick.", "Budget for the Q3 launch.", "We are moving to Lisbon."} {
		resp, err := a.Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: msg}}})
		if err != nil {
			t.Fatal(err)
		}
		seen[resp.Content] = true
		if !strings.Contains(resp.Content, strings.TrimSuffix(msg, ".")) {
			t.Errorf("reply %q does not pick up %q", resp.Content, msg)
		}
	}
	if len(seen) != 4 {
		t.Errorf("4 questions got %d distinct replies", len(seen))
	}
}

func TestUsageCountsTokens(t *testing.T) {
	t.Parallel()
	o := newOffline(t, 0)
	// cl100k_base: "hello" " world" / "t" "ik" "token" " is" " great" "!".
	for text, want := range map[string]int{"": 0, "hello world": 2, "tiktoken is great!": 6} {
		if got := o.Tokens(text); got != want {
			t.Errorf("Tokens(%q) = %d, want %d", text, got, want)
		}
	}
	msgs := []llm.Message{{Role: llm.User, Content: "hello world"}}
	// 3 per message + "user" (1) + content (2) + 3 to prime the answer.
	if got := o.PromptTokens(msgs); got != 9 {
		t.Errorf("PromptTokens = %d, want 9", got)
	}
	resp, err := o.Complete(t.Context(), llm.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens != 9 || resp.Usage.CompletionTokens != o.Tokens(resp.Content) ||
		resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("Usage = %+v for content %q", resp.Usage, resp.Content)
	}
}

func TestMaxTokens(t *testing.T) {
	t.Parallel()
	o := newOffline(t, 0)
	req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "Explain the whole history of the printing press."}}}
	full, err := o.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.MaxTokens = 3
	cut, err := o.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if cut.FinishReason != "length" || cut.Usage.CompletionTokens > 3 || cut.Usage.CompletionTokens == 0 {
		t.Errorf("cut answer %q: finish %q, %d tokens; want length and 1-3", cut.Content, cut.FinishReason, cut.Usage.CompletionTokens)
	}
	if full.FinishReason != "stop" {
		t.Errorf("full answer finish = %q, want stop", full.FinishReason)
	}
	req.MaxTokens = 1000
	roomy, err := o.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if roomy.FinishReason != "stop" {
		t.Errorf("answer under its limit finish = %q, want stop", roomy.FinishReason)
	}
}

func TestSkills(t *testing.T) {
	t.Parallel()
	o := newOffline(t, 0)
	var got llm.Request
	o.Handle("extraction", func(_ context.Context, req llm.Request) (string, error) {
		got = req
		return `{"name":"Ada"}`, nil
	})
	boom := errors.New("no rule for this field")
	o.Handle("broken", func(context.Context, llm.Request) (string, error) { return "", boom })

	req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "My name is Ada."}}, JSON: true, Purpose: "extraction"}
	resp, err := o.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"name":"Ada"}` || got.Purpose != "extraction" || got.Messages[0].Content != "My name is Ada." {
		t.Errorf("skill answer %q for request %+v", resp.Content, got)
	}
	if resp.Usage.CompletionTokens == 0 || resp.Provider != Provider {
		t.Errorf("skill response %+v lacks usage or provider", resp)
	}

	_, err = o.Complete(t.Context(), llm.Request{Messages: req.Messages, Purpose: "broken"})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the skill's error", err)
	}

	// Other purposes keep the generic answers; removing the skill restores them.
	resp, err = o.Complete(t.Context(), llm.Request{Messages: req.Messages, JSON: true, Purpose: "other"})
	if err != nil || resp.Content != "{}" {
		t.Errorf("JSON answer without a skill = %q, %v; want {}", resp.Content, err)
	}
	o.Handle("extraction", nil)
	resp, err = o.Complete(t.Context(), req)
	if err != nil || resp.Content != "{}" {
		t.Errorf("after removing the skill: %q, %v; want {}", resp.Content, err)
	}
}

func TestSkillRand(t *testing.T) {
	t.Parallel()
	o := newOffline(t, 5)
	req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "pick"}}}
	a, b := o.Rand(req), o.Rand(req)
	for range 10 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("Rand streams of one request differ: %d, %d", x, y)
		}
	}
	req.Messages[0].Content = "pick again"
	if o.Rand(req).Uint64() == newOffline(t, 5).Rand(llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "pick"}}}).Uint64() {
		t.Error("different requests share a Rand stream")
	}
}

func TestCancelDuringSkill(t *testing.T) {
	t.Parallel()
	o := newOffline(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	o.Handle("slow", func(ctx context.Context, _ llm.Request) (string, error) {
		cancel() // the caller gives up while the skill works
		return "late", nil
	})
	_, err := o.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "x"}}, Purpose: "slow"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestReportsOfflineModel(t *testing.T) {
	t.Parallel()
	o := newOffline(t, 0)
	resp, err := o.Complete(t.Context(), llm.Request{Model: "gpt-4o", Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != DefaultModel || resp.Provider != Provider {
		t.Errorf("model %q provider %q, want offline for both", resp.Model, resp.Provider)
	}
	if _, err := o.Complete(t.Context(), llm.Request{}); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("empty request: err = %v, want ErrBadRequest", err)
	}
}

func TestSchemaAnswers(t *testing.T) {
	t.Parallel()
	schemas := map[string]string{
		"empty":          `{}`,
		"true":           `true`,
		"no required":    `{"type":"object","properties":{"a":{"type":"string"}}}`,
		"strict nested":  `{"type":"object","additionalProperties":false,"required":["person","tags"],"properties":{"person":{"type":"object","additionalProperties":false,"required":["name","age","email","born"],"properties":{"name":{"type":"string","minLength":12,"maxLength":20},"age":{"type":"integer","minimum":18,"maximum":120},"email":{"type":"string","format":"email"},"born":{"type":"string","format":"date-time"}}},"tags":{"type":"array","items":{"type":"string"},"minItems":3,"uniqueItems":true}}}`,
		"enum and const": `{"type":"object","required":["phase","v"],"properties":{"phase":{"enum":["discovery","synthesis"]},"v":{"const":2}}}`,
		"nullable":       `{"type":"object","required":["a","b"],"properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"null"},{"type":"integer","minimum":3}]}}}`,
		"numbers": `{"type":"object","required":["p","q","r","s","t"],"properties":{
			"p":{"type":"number","exclusiveMinimum":0,"maximum":1},
			"q":{"type":"integer","exclusiveMinimum":5},
			"r":{"type":"number","minimum":-10,"maximum":-2},
			"s":{"type":"integer","multipleOf":7,"minimum":1},
			"t":{"type":"number","exclusiveMaximum":-3}}}`,
		"refs":     `{"$defs":{"item":{"type":"object","required":["id"],"properties":{"id":{"type":"string","format":"uuid"}}}},"type":"object","required":["items"],"properties":{"items":{"type":"array","minItems":2,"items":{"$ref":"#/$defs/item"}}}}`,
		"allOf":    `{"allOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"boolean"}}},{"required":["b"],"properties":{"b":{"type":"string"}}}]}`,
		"oneOf":    `{"oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"x"}}},{"type":"string"}]}`,
		"tuple":    `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"minItems":2}`,
		"implicit": `{"required":["n"],"properties":{"n":{"minimum":4}}}`,
	}
	o := newOffline(t, 3)
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "fill"}}, Schema: &llm.Schema{Name: name, JSON: json.RawMessage(schema)}}
			resp, err := o.Complete(t.Context(), req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if err := llm.ValidateJSON(json.RawMessage(schema), []byte(resp.Content)); err != nil {
				t.Errorf("answer %s: %v", resp.Content, err)
			}
		})
	}
}

func TestSchemaErrors(t *testing.T) {
	t.Parallel()
	for name, schema := range map[string]string{
		"false":       `false`,
		"not json":    `{`,
		"remote ref":  `{"$ref":"https://example.com/x.json"}`,
		"missing ref": `{"$ref":"#/$defs/nope"}`,
		"recursive":   `{"$defs":{"n":{"type":"object","required":["next"],"properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		"empty range": `{"type":"integer","minimum":5,"maximum":4}`,
		"ref cycle":   `{"$defs":{"a":{"$ref":"#/$defs/a"}},"allOf":[{"$ref":"#/$defs/a"}]}`,
		"huge array":  `{"type":"array","minItems":1e9}`,
		"huge string": `{"type":"string","minLength":1e12}`,
		"explosion":   `{"$defs":{"x":{"type":"array","minItems":50,"items":{"$ref":"#/$defs/y"}},"y":{"type":"array","minItems":50,"items":{"type":"array","minItems":50}}},"$ref":"#/$defs/x"}`,
	} {
		if _, err := MinimalJSON(json.RawMessage(schema), nil); err == nil {
			t.Errorf("%s: MinimalJSON accepted %s", name, schema)
		}
	}
	o := newOffline(t, 0)
	_, err := o.Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "x"}},
		Schema: &llm.Schema{Name: "f", JSON: json.RawMessage(`false`)}})
	if !errors.Is(err, llm.ErrInvalidSchema) {
		t.Errorf("err = %v, want ErrInvalidSchema", err)
	}
}

func FuzzMinimalJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":"object","required":["a"]}`, `{"$ref":"#"}`, `{"allOf":[{"$ref":"#"}]}`, `[1]`, `{"type":["null"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		out, err := MinimalJSON(schema, nil)
		if err == nil && !json.Valid(out) {
			t.Fatalf("MinimalJSON(%s) = %s, not JSON", schema, out)
		}
	})
}
