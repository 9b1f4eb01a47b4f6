package dispatch

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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
	m.dispatches = register(reg, m.dispatches, &err)
	m.answers = register(reg, m.answers, &err)
	m.wait = register(reg, m.wait, &err)
	return m, err
}

// register registers c, or reuses the collector already registered under
// its name, so several dispatchers can share one registry.
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
