package worker

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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
	m.tasks = register(reg, m.tasks, &err)
	m.latency = register(reg, m.latency, &err)
	m.duration = register(reg, m.duration, &err)
	m.batch = register(reg, m.batch, &err)
	return m, err
}

// register registers c, or reuses the collector already registered under
// its name, so several pools can share one registry.
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
