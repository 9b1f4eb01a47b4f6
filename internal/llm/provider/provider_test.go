package provider

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/internal/llm/openai"
)

const secret = "sk-very-secret-key"

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		cfg          Config
		wantProvider string
		wantReason   string
		wantModel    string
		wantLevel    string
	}{
		{"auto with a key is openai", Config{APIKey: secret}, OpenAI, EnvAPIKey + " is set", openai.DefaultModel, "INFO"},
		{"auto without a key is offline", Config{}, Offline, "no " + EnvAPIKey, offline.DefaultModel, "WARN"},
		{"auto ignores a keyless base URL, and says so", Config{BaseURL: "http://localhost:11434/v1"}, Offline,
			"no PRAETOR_LLM_API_KEY or OPENAI_API_KEY set (--llm-base-url (PRAETOR_LLM_BASE_URL) is ignored; for a server that needs no key, set --llm-provider openai (PRAETOR_LLM_PROVIDER=openai))",
			offline.DefaultModel, "WARN"},
		{"offline by name despite a key", Config{Provider: "offline", APIKey: secret}, Offline, EnvProvider + "=offline", offline.DefaultModel, "WARN"},
		{"openai by name for a local server", Config{Provider: "OpenAI", BaseURL: "http://localhost:11434/v1", Model: "llama3.1"}, OpenAI, EnvProvider + "=openai", "llama3.1", "INFO"},
		{"offline model name", Config{Model: "offline-test"}, Offline, "", "offline-test", "WARN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			c, info, err := New(tc.cfg, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if info.Provider != tc.wantProvider || info.Offline != (tc.wantProvider == Offline) || info.Model != tc.wantModel {
				t.Errorf("info = %+v, want provider %s model %s", info, tc.wantProvider, tc.wantModel)
			}
			if !strings.Contains(info.Reason, tc.wantReason) {
				t.Errorf("reason %q does not say %q", info.Reason, tc.wantReason)
			}
			switch tc.wantProvider {
			case Offline:
				if _, ok := c.(*offline.Offline); !ok {
					t.Errorf("client is %T, want *offline.Offline", c)
				}
			case OpenAI:
				if _, ok := c.(*openai.Client); !ok {
					t.Errorf("client is %T, want *openai.Client", c)
				}
			}
			line := logs.String()
			if !strings.Contains(line, "level="+tc.wantLevel) || !strings.Contains(line, "provider="+tc.wantProvider) {
				t.Errorf("log %q does not report provider %s at %s", line, tc.wantProvider, tc.wantLevel)
			}
			if tc.wantProvider == Offline && !strings.Contains(line, "offline") {
				t.Errorf("log %q does not say answers are offline", line)
			}
			if strings.Contains(line, secret) {
				t.Errorf("log leaks the API key: %q", line)
			}
		})
	}
}

func TestOfflineAnswers(t *testing.T) {
	t.Parallel()
	c, _, err := New(Config{Seed: 9}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hello"}}})
	if err != nil || resp.Provider != Offline || resp.Content == "" {
		t.Errorf("offline answer %+v, %v", resp, err)
	}
}

func TestInvalidSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		setting string
	}{
		{"unknown provider", Config{Provider: "anthropic"}, EnvProvider},
		{"openai without key or server", Config{Provider: "openai"}, EnvAPIKey},
		{"base URL without scheme", Config{BaseURL: "localhost:8000", APIKey: secret}, EnvBaseURL},
		{"base URL of another scheme", Config{BaseURL: "ftp://x/v1", APIKey: secret}, EnvBaseURL},
		{"base URL with credentials", Config{Provider: OpenAI, BaseURL: "https://praetor:" + secret + "@llm-proxy.internal/v1"}, EnvBaseURL},
		{"base URL of another scheme with credentials", Config{BaseURL: "ftp://praetor:" + secret + "@x/v1"}, EnvBaseURL},
		{"base URL that does not parse, with credentials", Config{Provider: OpenAI, BaseURL: "https://praetor:" + secret + "#x@llm-proxy.internal/v1"}, EnvBaseURL},
		{"base URL with a query", Config{BaseURL: "https://x.openai.azure.com/openai?api-version=2024-06-01", APIKey: secret}, EnvBaseURL},
		{"base URL with the key in its query", Config{Provider: OpenAI, BaseURL: "https://x.openai.azure.com/openai?api-key=" + secret}, EnvBaseURL},
		{"base URL with the key as its user", Config{Provider: OpenAI, BaseURL: "https://" + secret + "@llm-proxy.internal/v1"}, EnvBaseURL},
		{"base URL without scheme, with credentials", Config{BaseURL: "praetor:" + secret + "@llm-proxy.internal/v1"}, EnvBaseURL},
		{"negative timeout", Config{Timeout: -time.Second}, EnvTimeout},
	}
	for _, tc := range tests {
		_, _, err := New(tc.cfg, nil)
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != tc.setting || !errors.Is(err, ErrInvalidSetting) {
			t.Errorf("%s: err = %v, want a SettingError naming %s", tc.name, err, tc.setting)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.setting+": ") {
			t.Errorf("%s: message %q does not start with the setting", tc.name, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: message leaks the key", tc.name)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	got, err := FromEnv(env(map[string]string{
		EnvProvider: "openai", EnvBaseURL: "http://vllm:8000/v1", EnvAPIKey: secret, EnvModel: "qwen",
		EnvTimeout: "90s", EnvMaxRetries: "5", EnvSeed: "-7",
	}))
	want := Config{Provider: "openai", BaseURL: "http://vllm:8000/v1", APIKey: secret, Model: "qwen",
		Timeout: 90 * time.Second, MaxRetries: 5, Seed: -7}
	if err != nil || got != want {
		t.Errorf("FromEnv = %+v, %v; want %+v", got, err, want)
	}

	got, err = FromEnv(env(map[string]string{EnvTimeout: "2.5", EnvMaxRetries: "0"}))
	if err != nil || got.Timeout != 2500*time.Millisecond || got.MaxRetries >= 0 {
		t.Errorf("FromEnv = %+v, %v; want 2.5s and no retries", got, err)
	}
	if got.WithDefaults().MaxRetries >= 0 {
		t.Error("PRAETOR_LLM_MAX_RETRIES=0 turned into the default")
	}

	got, err = FromEnv(env(nil))
	if err != nil || got != (Config{}) {
		t.Errorf("empty environment: %+v, %v", got, err)
	}

	for setting, value := range map[string]string{
		EnvTimeout: "soon", EnvMaxRetries: "-2", EnvSeed: "1.5",
	} {
		_, err := FromEnv(env(map[string]string{setting: value}))
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != setting || !strings.Contains(err.Error(), value) {
			t.Errorf("%s=%s: err = %v, want one naming the setting and value", setting, value, err)
		}
	}
	if _, err := FromEnv(env(map[string]string{EnvTimeout: "-5s"})); err == nil {
		t.Error("negative timeout accepted")
	}
}

func TestFromEnvFallsBackToOpenAIVariables(t *testing.T) {
	env := map[string]string{EnvOpenAIKey: "sk-openai", EnvOpenAIBaseURL: "http://localhost:11434/v1"}
	cfg, err := FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || cfg.APIKey != "sk-openai" || cfg.BaseURL != "http://localhost:11434/v1" {
		t.Fatalf("FromEnv = %+v, %v; want the OPENAI_ variables used", cfg, err)
	}
	env[EnvAPIKey] = "sk-praetor"
	cfg, _ = FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if cfg.APIKey != "sk-praetor" {
		t.Fatalf("APIKey = %q, want PRAETOR_LLM_API_KEY to win", cfg.APIKey)
	}
}
