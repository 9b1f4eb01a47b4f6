package llm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInstrument(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c, err := Instrument(&scripted{replies: []reply{
		{content: "one"},
		{content: "two"},
		{err: &APIError{Provider: "x", Status: 429, Err: ErrRateLimited}},
		{err: context.Canceled},
		{err: fmt.Errorf("extraction: %w", &APIError{Provider: "x", Err: ErrRefused, Usage: Usage{PromptTokens: 40, CompletionTokens: 5}})},
	}}, "openai", reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, purpose := range []string{"extraction", "extraction", "response", "", "extraction"} {
		c.Complete(t.Context(), Request{Purpose: purpose, Messages: []Message{{Role: User, Content: "x"}}})
	}

	want := `
# HELP praetor_llm_requests_total Model calls by provider, purpose and outcome (ok, rate_limited, timeout, ...).
# TYPE praetor_llm_requests_total counter
praetor_llm_requests_total{outcome="canceled",provider="openai",purpose="none"} 1
praetor_llm_requests_total{outcome="ok",provider="openai",purpose="extraction"} 2
praetor_llm_requests_total{outcome="rate_limited",provider="openai",purpose="response"} 1
praetor_llm_requests_total{outcome="refused",provider="openai",purpose="extraction"} 1
# HELP praetor_llm_tokens_total Tokens used by model calls, by provider and kind (prompt, completion).
# TYPE praetor_llm_tokens_total counter
praetor_llm_tokens_total{kind="completion",provider="openai"} 7
praetor_llm_tokens_total{kind="prompt",provider="openai"} 42
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricRequests, MetricTokens); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, MetricSeconds); err != nil || n != 1 {
		t.Errorf("%s series = %d, %v; want one per provider", MetricSeconds, n, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == MetricSeconds {
			if got := mf.GetMetric()[0].GetHistogram().GetSampleCount(); got != 5 {
				t.Errorf("%s count = %d, want 5", MetricSeconds, got)
			}
		}
	}

	// A second client on the same registry shares the collectors.
	c2, err := Instrument(&scripted{replies: []reply{{content: "three"}}}, "offline", reg)
	if err != nil {
		t.Fatalf("second Instrument on one registry: %v", err)
	}
	c2.Complete(t.Context(), Request{Purpose: "extraction", Messages: []Message{{Role: User, Content: "x"}}})
	if n, _ := testutil.GatherAndCount(reg, MetricSeconds); n != 2 {
		t.Errorf("%s series = %d after a second provider, want 2", MetricSeconds, n)
	}
}

func TestNewMetricsNeedsRegistry(t *testing.T) {
	t.Parallel()
	if _, err := NewMetrics(nil); err == nil {
		t.Error("NewMetrics(nil) succeeded")
	}
}
