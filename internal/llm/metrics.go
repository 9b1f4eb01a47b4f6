package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, for dashboards and tests.
const (
	MetricRequests = "praetor_llm_requests_total"
	MetricTokens   = "praetor_llm_tokens_total"
	MetricSeconds  = "praetor_llm_request_seconds"
)

// Metrics counts model calls. Labels are bounded: provider, purpose (set by
// code and engine files), outcome (see Outcome) and token kind; never a
// session or tenant.
type Metrics struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

// NewMetrics registers the LLM metrics with reg. Registering twice with the
// same registry reuses the collectors already there, so several clients can
// share one registry.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("llm metrics: a prometheus.Registerer is required")
	}
	requests, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRequests,
		Help: "Model calls by provider, purpose and outcome (ok, rate_limited, timeout, ...).",
	}, []string{"provider", "purpose", "outcome"}))
	if err != nil {
		return nil, err
	}
	tokens, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricTokens,
		Help: "Tokens used by model calls, by provider and kind (prompt, completion).",
	}, []string{"provider", "kind"}))
	if err != nil {
		return nil, err
	}
	seconds, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: MetricSeconds,
		Help: "Wall time of model calls, retries included.",
		// 50 ms to ~100 s: offline answers at the bottom, slow models with
		// retries at the top.
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
	}, []string{"provider"}))
	if err != nil {
		return nil, err
	}
	return &Metrics{requests: requests, tokens: tokens, seconds: seconds}, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		var zero C
		return zero, fmt.Errorf("llm metrics: %w", err)
	}
	return c, nil
}

// Instrument wraps c so every call is counted under provider.
func (m *Metrics) Instrument(c Client, provider string) Client {
	return &instrumented{next: c, provider: provider, m: m}
}

// Instrument is NewMetrics(reg) followed by Metrics.Instrument.
func Instrument(c Client, provider string, reg prometheus.Registerer) (Client, error) {
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return m.Instrument(c, provider), nil
}

type instrumented struct {
	next     Client
	provider string
	m        *Metrics
}

func (i *instrumented) Complete(ctx context.Context, req Request) (*Response, error) {
	start := time.Now()
	resp, err := i.next.Complete(ctx, req)
	i.m.seconds.WithLabelValues(i.provider).Observe(time.Since(start).Seconds())
	i.m.requests.WithLabelValues(i.provider, cmp.Or(req.Purpose, "none"), Outcome(err)).Inc()
	var usage Usage
	var apiErr *APIError
	switch {
	case resp != nil:
		usage = resp.Usage
	case errors.As(err, &apiErr):
		usage = apiErr.Usage // a refusal is billed too
	}
	if usage.PromptTokens > 0 || usage.CompletionTokens > 0 {
		i.m.tokens.WithLabelValues(i.provider, "prompt").Add(float64(usage.PromptTokens))
		i.m.tokens.WithLabelValues(i.provider, "completion").Add(float64(usage.CompletionTokens))
	}
	return resp, err
}
