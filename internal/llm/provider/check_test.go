package provider

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The start check asks the server for its models, once, with the key: what
// can never work fails the start and names the setting to fix; what may come
// back only warns.
func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  int
		body    string
		path    string // of the base URL
		wantErr []string
		warn    bool
	}{
		{"a key that works", 200, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}`, "/v1", nil, false},
		{"a wrong key", 401, `{"error":{"message":"Incorrect API key provided: sk-badk*****999.","type":"invalid_request_error","code":"invalid_api_key"}}`, "/v1",
			[]string{"PRAETOR_LLM_API_KEY", "OPENAI_API_KEY", "401", "Incorrect API key"}, false},
		{"a key without access", 403, `{"error":{"message":"forbidden"}}`, "/v1", []string{"PRAETOR_LLM_API_KEY", "OPENAI_API_KEY"}, false},
		{"a base URL without /v1", 404, `{"error":{"message":"Invalid URL (GET /models)"}}`, "", []string{"--llm-base-url", "PRAETOR_LLM_BASE_URL", "/v1", "404"}, false},
		{"a server down for now", 503, `upstream down`, "/v1", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var gotPath, gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath, gotAuth = r.Method+" "+r.URL.Path, r.Header.Get("Authorization")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			var logs bytes.Buffer
			err := Check(t.Context(), Config{APIKey: secret, BaseURL: srv.URL + tc.path}, slog.New(slog.NewTextHandler(&logs, nil)))
			if gotPath != "GET "+tc.path+"/models" || gotAuth != "Bearer "+secret {
				t.Errorf("request %q with %q, want GET %s/models with the key", gotPath, gotAuth, tc.path)
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.wantErr != nil && err == nil:
				t.Errorf("no error, want one naming %q", tc.wantErr)
			case err != nil:
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want it to name %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "sk-badk") || strings.Contains(err.Error(), secret) {
					t.Errorf("err = %v leaks the key", err)
				}
			}
			if got := strings.Contains(logs.String(), "level=WARN"); got != tc.warn {
				t.Errorf("warned %t, want %t: %s", got, tc.warn, logs.String())
			}
		})
	}
}

// A server that cannot be reached may come back: the start goes on, warned.
func TestCheckUnreachableWarns(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var logs bytes.Buffer
	if err := Check(t.Context(), Config{APIKey: secret, BaseURL: url + "/v1"}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Errorf("err = %v, want a warning only", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), url) {
		t.Errorf("log %q, want a warning naming the base URL", logs.String())
	}
}

// The offline provider has nothing to check; nor has a config that is wrong
// (New says why).
func TestCheckOffline(t *testing.T) {
	t.Parallel()
	if err := Check(t.Context(), Config{}, nil); err != nil {
		t.Errorf("offline: %v", err)
	}
	var se *SettingError
	if err := Check(t.Context(), Config{Provider: "nope"}, nil); !errors.As(err, &se) {
		t.Errorf("bad provider: %v, want a SettingError", err)
	}
}
