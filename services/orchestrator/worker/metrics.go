package worker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/collector"
)

type metrics struct {
	tasks    *prometheus.CounterVec
	latency  prometheus.Histogram
	duration *prometheus.HistogramVec
	batch    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_agent_worker_attempts_total",
			Help: "Attempts run by agent workers, by result: completed, failed, expired (reached a worker after the orchestrator stopped waiting; answered as timed out without running), rejected (undecodable), interrupted, duplicate (committed before; acknowledged without running), ignored (not a workflow task).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "praetor_agent_worker_dispatch_latency_seconds",
			Help:    "Time from an attempt's task.dispatched to a worker starting it.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "praetor_agent_worker_attempt_duration_seconds",
			Help:    "Duration of the agent runtime's work on one attempt, by agent.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"agent"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "praetor_agent_worker_commit_batch_size",
			Help:    "Answers committed in one transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 8),
		}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.tasks = collector.Register(reg, m.tasks, &err)
	m.latency = collector.Register(reg, m.latency, &err)
	m.duration = collector.Register(reg, m.duration, &err)
	m.batch = collector.Register(reg, m.batch, &err)
	return m, err
}
