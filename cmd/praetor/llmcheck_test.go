package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// dev and serve check the model's key and base URL before they start: a
// wrong key or a base URL without its /v1 stops them with the setting to
// fix, rather than a node whose every turn is degraded.
func TestStartChecksTheModelsKeyAndBaseURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/models" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"Invalid URL (GET ` + r.URL.Path + `)"}}`))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: sk-badk*****999.","code":"invalid_api_key"}}`))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("PRAETOR_LLM_API_KEY", "sk-badkey999")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("PRAETOR_LLM_BASE_URL", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("PRAETOR_LLM_PROVIDER", "")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"dev with a wrong key", []string{"dev", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--nats-listen", "",
			"--llm-base-url", srv.URL + "/v1"}, []string{"PRAETOR_LLM_API_KEY", "OPENAI_API_KEY", "401"}},
		{"serve with a base URL without /v1", []string{"serve", "--services", "runner", "--nats-url", "nats://127.0.0.1:1",
			"--database-url", "postgres://x@127.0.0.1:1/x", "--llm-base-url", srv.URL}, []string{"--llm-base-url", "/v1", "404"}},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		err := run(ctx, tc.args, io.Discard, io.Discard)
		cancel()
		if err == nil {
			t.Errorf("%s: started, want the start refused", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to name %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "sk-badk") {
			t.Errorf("%s: err = %v leaks the key", tc.name, err)
		}
	}
}
