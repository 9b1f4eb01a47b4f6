package offline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
)

// An engine registers a rule-based skill for its purpose; CompleteJSON then
// validates the skill's answer as it would a model's.
func ExampleOffline_Handle() {
	o, err := offline.New(offline.Config{Seed: 1})
	if err != nil {
		panic(err)
	}
	o.Handle("extraction", func(_ context.Context, req llm.Request) (string, error) {
		msg := req.Messages[len(req.Messages)-1].Content
		name, _ := strings.CutPrefix(msg, "My name is ")
		b, err := json.Marshal(map[string]string{"name": strings.TrimSuffix(name, ".")})
		return string(b), err
	})

	var out struct {
		Name string `json:"name"`
	}
	resp, err := llm.CompleteJSON(context.Background(), o, llm.Request{
		Purpose:  "extraction",
		Messages: []llm.Message{{Role: llm.User, Content: "My name is Ada."}},
		Schema: &llm.Schema{Name: "person", JSON: json.RawMessage(
			`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)},
	}, &out)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Name, resp.Provider, resp.Usage.CompletionTokens)
	// Output: Ada offline 5
}
