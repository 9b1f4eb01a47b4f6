package executor

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	runs     *prometheus.CounterVec
	inflight prometheus.Gauge
	failed   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_workflow_attempts_total",
			Help: "Task attempts by result: completed, retry, failed, interrupted.",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "praetor_workflow_attempt_duration_seconds",
			Help:    "Duration of task attempts, from dispatch to result, by agent.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"agent"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_workflow_runs_finished_total",
			Help: "Workflow runs finished, by status.",
		}, []string{"status"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "praetor_workflow_attempts_in_flight",
			Help: "Task attempts dispatched and not yet answered.",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_workflow_tasks_failed_total",
			Help: "Tasks failed for good (their retries spent, or a permanent error), by agent.",
		}, []string{"agent"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.attempts = register(reg, m.attempts, &err)
	m.duration = register(reg, m.duration, &err)
	m.runs = register(reg, m.runs, &err)
	m.inflight = register(reg, m.inflight, &err)
	m.failed = register(reg, m.failed, &err)
	return m, err
}

// register registers c, or reuses the collector already registered under
// its name, so several executors can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errp = errors.Join(*errp, err)
	}
	return c
}
