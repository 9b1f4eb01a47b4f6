// Package llmtest is the conformance suite of the llm port: what every
// llm.Client adapter must do, whatever model is behind it. An adapter's
// tests call Run with a constructor:
//
//	func TestConformance(t *testing.T) {
//		llmtest.Run(t, func(t *testing.T) llm.Client { return newAdapter(t) })
//	}
package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/llm"
)

// Run checks the client newClient returns against the port's contract. It
// makes a new client for each subtest.
func Run(t *testing.T, newClient func(t *testing.T) llm.Client) {
	t.Helper()
	t.Run("Text", func(t *testing.T) { testText(t, newClient(t)) })
	t.Run("JSON", func(t *testing.T) { testJSON(t, newClient(t)) })
	t.Run("Schema", func(t *testing.T) { testSchema(t, newClient(t)) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceled(t, newClient(t)) })
	t.Run("ExpiredContext", func(t *testing.T) { testExpired(t, newClient(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newClient(t)) })
	t.Run("RequestUntouched", func(t *testing.T) { testUntouched(t, newClient(t)) })
}

func textRequest() llm.Request {
	return llm.Request{
		Messages: []llm.Message{
			{Role: llm.System, Content: "You are a concise assistant."},
			{Role: llm.User, Content: "Name one colour of the rainbow."},
		},
		Purpose: "conformance",
	}
}

const schemaJSON = `{
	"type": "object",
	"properties": {"colour": {"type": "string"}},
	"required": ["colour"],
	"additionalProperties": false
}`

func testText(t *testing.T, c llm.Client) {
	resp, err := c.Complete(t.Context(), textRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Content == "" {
		t.Error("Content is empty")
	}
	checkResponse(t, resp)
}

func testJSON(t *testing.T, c llm.Client) {
	req := textRequest()
	req.JSON = true
	req.Messages[1].Content = "Name one colour of the rainbow, as JSON."
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	checkResponse(t, resp)
	raw, err := llm.ParseJSONAnswer(resp.Content)
	if err != nil {
		t.Fatalf("JSON answer %q: %v", resp.Content, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Errorf("JSON answer %s is not an object: %v", raw, err)
	}
}

func testSchema(t *testing.T, c llm.Client) {
	req := textRequest()
	req.Schema = &llm.Schema{Name: "colour", JSON: json.RawMessage(schemaJSON)}
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	checkResponse(t, resp)
	if _, err := llm.ParseJSONAnswer(resp.Content); err != nil {
		t.Errorf("schema answer %q: %v", resp.Content, err)
	}
}

func testCanceled(t *testing.T, c llm.Client) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	resp, err := c.Complete(ctx, textRequest())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Complete on a canceled context: err = %v, want context.Canceled", err)
	}
	if resp != nil {
		t.Errorf("Complete on a canceled context returned %+v", resp)
	}
}

func testExpired(t *testing.T, c llm.Client) {
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := c.Complete(ctx, textRequest())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Complete past its deadline: err = %v, want context.DeadlineExceeded", err)
	}
}

func testConcurrent(t *testing.T, c llm.Client) {
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := textRequest()
			req.Messages[1].Content += " Call " + string(rune('A'+i)) + "."
			resp, err := c.Complete(t.Context(), req)
			if err == nil && resp.Content == "" {
				err = errors.New("empty content")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Complete: %v", err)
		}
	}
}

func testUntouched(t *testing.T, c llm.Client) {
	req := textRequest()
	req.JSON = true
	req.Schema = &llm.Schema{Name: "colour", JSON: json.RawMessage(schemaJSON)}
	before := textRequest()
	before.JSON = true
	before.Schema = &llm.Schema{Name: "colour", JSON: json.RawMessage(schemaJSON)}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !reflect.DeepEqual(req, before) {
		t.Errorf("Complete changed its request:\n got %+v\nwant %+v", req, before)
	}
}

func checkResponse(t *testing.T, resp *llm.Response) {
	t.Helper()
	u := resp.Usage
	if u.PromptTokens <= 0 || u.CompletionTokens <= 0 {
		t.Errorf("Usage = %+v, want prompt and completion tokens counted", u)
	}
	if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("Usage.TotalTokens = %d, want %d + %d", u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
	if resp.Provider == "" || resp.Model == "" {
		t.Errorf("Provider %q, Model %q: want both named", resp.Provider, resp.Model)
	}
	if resp.Latency < 0 {
		t.Errorf("Latency = %s, want >= 0", resp.Latency)
	}
}
