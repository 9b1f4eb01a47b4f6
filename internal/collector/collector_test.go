package collector_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/collector"
)

// A collector registered again is the one registered first, so two
// components count into one series; one of another type under the same
// name is an error.
func TestRegisterSharesTheFirstCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "praetor_test_total", Help: "A test counter."}
	var err error
	first := collector.Register(reg, prometheus.NewCounter(opts), &err)
	second := collector.Register(reg, prometheus.NewCounter(opts), &err)
	if err != nil {
		t.Fatal(err)
	}
	first.Inc()
	second.Inc()
	if got := testutil.ToFloat64(first); got != 2 {
		t.Errorf("the counter = %v after one increment through each registration, want 2", got)
	}
	gauge := collector.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: opts.Name, Help: opts.Help}), &err)
	if err == nil || gauge == nil {
		t.Errorf("a gauge under the counter's name: err %v, gauge %v, want an error and the gauge given", err, gauge)
	}
}
