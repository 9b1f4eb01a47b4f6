// Package provider chooses and builds the llm.Client a process uses, from
// the PRAETOR_LLM_* settings: the openai adapter when a key is set (or when
// asked for by name), otherwise the deterministic offline one. It logs the
// choice, and says loudly when answers come from the offline stand-in, so
// nobody mistakes them for a model's.
package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/internal/llm/openai"
	"github.com/praetorhq/praetor/internal/redact"
)

// Environment variables of the settings, as errors name them.
const (
	EnvProvider   = "PRAETOR_LLM_PROVIDER"
	EnvBaseURL    = "PRAETOR_LLM_BASE_URL"
	EnvAPIKey     = "PRAETOR_LLM_API_KEY"
	EnvModel      = "PRAETOR_LLM_MODEL"
	EnvTimeout    = "PRAETOR_LLM_TIMEOUT"
	EnvMaxRetries = "PRAETOR_LLM_MAX_RETRIES"
	EnvSeed       = "PRAETOR_LLM_SEED"
)

// Provider choices.
const (
	Auto    = "auto"
	OpenAI  = openai.Provider
	Offline = offline.Provider
)

// ErrInvalidSetting is wrapped by every *SettingError.
var ErrInvalidSetting = errors.New("invalid setting")

// SettingError is a setting that cannot be used, named by its variable.
type SettingError struct {
	// Setting is the environment variable, e.g. PRAETOR_LLM_PROVIDER.
	Setting string
	// Problem says what is wrong and how to fix it.
	Problem string
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Problem }

// Unwrap makes errors.Is(err, ErrInvalidSetting) true.
func (e *SettingError) Unwrap() error { return ErrInvalidSetting }

func bad(setting, format string, args ...any) error {
	return &SettingError{Setting: setting, Problem: fmt.Sprintf(format, args...)}
}

// Config holds the LLM settings of a process.
type Config struct {
	// Provider is auto, openai or offline (PRAETOR_LLM_PROVIDER). Default
	// auto: openai when APIKey is set, offline otherwise.
	Provider string
	// BaseURL of an OpenAI-compatible server (PRAETOR_LLM_BASE_URL).
	// Default https://api.openai.com/v1.
	BaseURL string
	// APIKey for the server (PRAETOR_LLM_API_KEY). Never logged.
	APIKey string
	// Model (PRAETOR_LLM_MODEL). Default gpt-4o-mini for openai, "offline"
	// for offline.
	Model string
	// Timeout of one attempt (PRAETOR_LLM_TIMEOUT). Default 60s.
	Timeout time.Duration
	// MaxRetries of a failed call (PRAETOR_LLM_MAX_RETRIES). Default 3;
	// negative means none.
	MaxRetries int
	// Seed of the offline provider's answers (PRAETOR_LLM_SEED). Default 0.
	Seed int64
	// OfflineLatency delays the offline provider's answers, standing in for
	// a model's latency in load tests and failure drills. Default 0.
	OfflineLatency time.Duration
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	c.Provider = cmp.Or(strings.ToLower(strings.TrimSpace(c.Provider)), Auto)
	c.Timeout = cmp.Or(c.Timeout, openai.DefaultTimeout)
	c.MaxRetries = cmp.Or(c.MaxRetries, openai.DefaultMaxRetries)
	return c
}

// Validate checks c with its defaults as New does, so that a command can
// name a wrong setting before it starts anything.
func (c Config) Validate() error { return c.WithDefaults().validate() }

func (c Config) validate() error {
	switch c.Provider {
	case Auto, OpenAI, Offline:
	default:
		return bad(EnvProvider, "%q is not one of %s, %s, %s", c.Provider, Auto, OpenAI, Offline)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			hint := ""
			if strings.Contains(c.BaseURL, "@") {
				hint = " (credentials do not go in it: the key goes in " + EnvAPIKey + ")"
			}
			return bad(EnvBaseURL, "%q is not an http(s) URL; use e.g. %s or http://localhost:11434/v1%s",
				redact.URL(c.BaseURL), openai.DefaultBaseURL, hint)
		}
	}
	if c.Provider == OpenAI && c.APIKey == "" && c.BaseURL == "" {
		return bad(EnvAPIKey, "required when %s=%s; for a local server that needs no key, set %s instead",
			EnvProvider, OpenAI, EnvBaseURL)
	}
	if c.Timeout <= 0 {
		return bad(EnvTimeout, "%s must be positive, e.g. 60s", c.Timeout)
	}
	return nil
}

// Info says which provider was chosen and why, for logs and the UI.
type Info struct {
	// Provider is openai or offline.
	Provider string
	// Model is the default model of the client.
	Model string
	// BaseURL is the server of the openai provider; empty for offline.
	BaseURL string
	// Offline is true when answers come from the offline stand-in.
	Offline bool
	// Reason says why this provider, e.g. "no PRAETOR_LLM_API_KEY set".
	Reason string
}

// The flags of praetor dev and serve that the settings have, for messages.
const (
	FlagProvider = "--llm-provider"
	FlagBaseURL  = "--llm-base-url"
)

// choose picks the provider of a valid config with its defaults, and says why.
func (c Config) choose() (provider, reason string) {
	if c.Provider != Auto {
		return c.Provider, EnvProvider + "=" + c.Provider
	}
	if c.APIKey != "" {
		return OpenAI, EnvAPIKey + " is set"
	}
	reason = "no " + EnvAPIKey + " or " + EnvOpenAIKey + " set"
	if c.BaseURL != "" {
		reason += fmt.Sprintf(" (%s (%s) is ignored; for a server that needs no key, set %s %s (%s=%s))",
			FlagBaseURL, EnvBaseURL, FlagProvider, OpenAI, EnvProvider, OpenAI)
	}
	return Offline, reason
}

// keySetting names where the key comes from.
const keySetting = EnvAPIKey + " (or " + EnvOpenAIKey + ")"

// Check makes sure, once, at start, that the openai provider's key and base
// URL work (the server's list of models, which costs no tokens): a refused
// key fails it naming the key's variables, a base URL the server has no API
// at naming the base URL setting. A server that cannot be reached, or fails,
// only warns: it may come back. The offline provider has nothing to check.
func Check(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	if p, _ := cfg.choose(); p != OpenAI {
		return nil
	}
	c, err := openai.New(openai.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Timeout: cfg.Timeout})
	if err != nil {
		return bad(EnvBaseURL, "%v", err)
	}
	base := redact.URL(cmp.Or(cfg.BaseURL, openai.DefaultBaseURL))
	err = c.Check(ctx)
	var apiErr *llm.APIError
	switch {
	case err == nil:
		logger.Info("llm key and base URL checked", slog.String("base_url", base))
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case !errors.As(err, &apiErr):
		return err
	case errors.Is(err, llm.ErrUnauthorized):
		return bad(EnvAPIKey, "the server at %s refuses the key (%d: %s); check %s, or start with --llm-check=false "+
			"to skip this check", base, apiErr.Status, apiErr.Message, keySetting)
	case apiErr.Status == http.StatusNotFound:
		return bad(EnvBaseURL, "the server at %s has no OpenAI API there (%d: %s); check %s (%s): it names the API root, "+
			"which usually ends in /v1 (e.g. %s, http://localhost:11434/v1), or start with --llm-check=false for a server "+
			"without GET /models", base, apiErr.Status, apiErr.Message, FlagBaseURL, EnvBaseURL, openai.DefaultBaseURL)
	default:
		logger.Warn("llm server not checked: it could not be reached or failed; starting anyway, turns are answered "+
			"degraded until it answers", slog.String("base_url", base), slog.String("error", apiErr.Message))
		return nil
	}
}

// New builds the client cfg selects and logs the choice. An offline client
// is an *offline.Offline, so the engines can register their skills on it
// before wrapping it (metrics, recording).
func New(cfg Config, logger *slog.Logger) (llm.Client, Info, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, Info{}, err
	}
	provider, reason := cfg.choose()

	if provider == Offline {
		c, err := offline.New(offline.Config{Seed: cfg.Seed, Model: cfg.Model, Latency: cfg.OfflineLatency})
		if err != nil {
			return nil, Info{}, err
		}
		info := Info{Provider: Offline, Model: cmp.Or(cfg.Model, offline.DefaultModel), Offline: true, Reason: reason}
		logger.Warn("llm provider is offline: answers are deterministic stand-ins, not a model's",
			slog.String("provider", info.Provider),
			slog.String("model", info.Model),
			slog.Int64("seed", cfg.Seed),
			slog.String("reason", reason))
		return c, info, nil
	}

	c, err := openai.New(openai.Config{
		BaseURL:    cfg.BaseURL,
		APIKey:     cfg.APIKey,
		Model:      cfg.Model,
		Timeout:    cfg.Timeout,
		MaxRetries: cfg.MaxRetries,
		Logger:     logger,
		KeySetting: keySetting,
	})
	if err != nil {
		return nil, Info{}, bad(EnvBaseURL, "%v", err)
	}
	if cfg.Timeout > openai.DefaultMaxElapsed {
		logger.Warn("llm timeout is longer than a turn may wait for its model: a turn whose model takes longer "+
			"than 4m is not answered degraded but cut off by its handler (5m) and redone; keep "+EnvTimeout+" at 4m or less "+
			"unless only workflow agents call the model", slog.Duration("timeout", cfg.Timeout))
	}
	info := Info{Provider: OpenAI, Model: c.Model(), BaseURL: cmp.Or(cfg.BaseURL, openai.DefaultBaseURL), Reason: reason}
	logger.Info("llm provider selected",
		slog.String("provider", info.Provider),
		slog.String("model", info.Model),
		slog.String("base_url", redact.URL(info.BaseURL)),
		slog.Duration("timeout", cfg.Timeout),
		slog.Int("max_retries", max(cfg.MaxRetries, 0)),
		slog.String("reason", reason))
	return c, info, nil
}

// OpenAI's own variables, read when the PRAETOR_LLM_ ones are unset.
const (
	EnvOpenAIKey     = "OPENAI_API_KEY"
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
)

// FromEnv reads the settings through lookup (os.LookupEnv); the key and base
// URL fall back to OPENAI_API_KEY and OPENAI_BASE_URL. Unlike Config,
// PRAETOR_LLM_MAX_RETRIES=0 means no retries; PRAETOR_LLM_TIMEOUT is a Go
// duration ("90s") or a number of seconds.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	c := Config{
		Provider: get(EnvProvider),
		BaseURL:  cmp.Or(get(EnvBaseURL), get(EnvOpenAIBaseURL)),
		APIKey:   cmp.Or(get(EnvAPIKey), get(EnvOpenAIKey)),
		Model:    get(EnvModel),
	}
	if v := get(EnvTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			secs, serr := strconv.ParseFloat(v, 64)
			if serr != nil {
				return Config{}, bad(EnvTimeout, "%q is not a duration; use e.g. 60s or 2m", v)
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d <= 0 {
			return Config{}, bad(EnvTimeout, "%q must be positive", v)
		}
		c.Timeout = d
	}
	if v := get(EnvMaxRetries); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Config{}, bad(EnvMaxRetries, "%q is not a whole number >= 0", v)
		}
		c.MaxRetries = n
		if n == 0 {
			c.MaxRetries = -1
		}
	}
	if v := get(EnvSeed); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Config{}, bad(EnvSeed, "%q is not a 64-bit integer", v)
		}
		c.Seed = n
	}
	return c, nil
}
