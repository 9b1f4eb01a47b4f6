package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/collector"
)

type metrics struct {
	dispatches *prometheus.CounterVec
	answers    *prometheus.CounterVec
	wait       prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		dispatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_workflow_dispatches_total",
			Help: "Attempts dispatched over JetStream, by result: published, recorded (answered from the store), rejected (too large), publish_failed.",
		}, []string{"result"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_workflow_answers_total",
			Help: "Task answers consumed, by result: recorded, duplicate, ignored (not a workflow task).",
		}, []string{"result"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "praetor_workflow_dispatch_wait_seconds",
			Help:    "Time from publishing an attempt to receiving its answer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 12),
		}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.dispatches = collector.Register(reg, m.dispatches, &err)
	m.answers = collector.Register(reg, m.answers, &err)
	m.wait = collector.Register(reg, m.wait, &err)
	return m, err
}
