package executor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/collector"
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
	m.attempts = collector.Register(reg, m.attempts, &err)
	m.duration = collector.Register(reg, m.duration, &err)
	m.runs = collector.Register(reg, m.runs, &err)
	m.inflight = collector.Register(reg, m.inflight, &err)
	m.failed = collector.Register(reg, m.failed, &err)
	return m, err
}
