package events

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus collectors of the event layer. Create them once
// per registry with NewMetrics and share them between buses and consumers.
type Metrics struct {
	published   *prometheus.CounterVec
	publishedBy sync.Map // event type → prometheus.Counter
	handled     *prometheus.CounterVec
	handleTime  *prometheus.HistogramVec
	deadLetters *prometheus.CounterVec
	panics      *prometheus.CounterVec
	backlog     *prometheus.GaugeVec
	paused      *prometheus.GaugeVec
}

// Handling outcomes, the values of the outcome label.
const (
	OutcomeOK         = "ok"
	OutcomeRetry      = "retry"
	OutcomeDeadLetter = "dead_letter"
)

// NewMetrics creates the collectors and registers them with reg; a nil reg
// leaves them unregistered (counted, never exported).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_events_published_total",
			Help: "Events acknowledged by the stream, by CloudEvents type.",
		}, []string{"type"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_events_handled_total",
			Help: "Events handled by consumers, by service (consumer), type and outcome (ok, retry, dead_letter).",
		}, []string{"service", "type", "outcome"}),
		handleTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "praetor_event_handle_seconds",
			Help: "Time spent in event handlers.",
			// From the turn path's sub-millisecond events to the handlers
			// that take minutes: the runner's and the extractor's time out
			// at 5, a background task's at 11, a workflow attempt's at an
			// hour and a minute.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30,
				60, 120, 300, 600, 1800, 3600, 7200},
		}, []string{"service", "type"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_dead_letters_total",
			Help: "Events copied to the dead-letter stream, by service (consumer, or outbox) and cause (" + strings.Join(DeadLetterCauses, ", ") + ").",
		}, []string{"service", "cause"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_event_handler_panics_total",
			Help: "Handler panics recovered (the event is redelivered).",
		}, []string{"service"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "praetor_consumer_backlog",
			Help: "Events a service has not finished: waiting in its consumers (all partitions) plus delivered and not yet acknowledged. Scale a service's replicas on it.",
		}, []string{"service"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "praetor_consumer_paused",
			Help: "1 while a service's consumer in this process takes no events because a dependency of its handlers is unavailable (the database), else 0.",
		}, []string{"service"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.published, m.handled, m.handleTime, m.deadLetters, m.panics, m.backlog, m.paused} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// publishedOf is the published counter of one event type, looked up once:
// resolving labels hashes them and takes a lock, on every publish otherwise.
func (m *Metrics) publishedOf(ceType string) prometheus.Counter {
	if c, ok := m.publishedBy.Load(ceType); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.publishedBy.LoadOrStore(ceType, m.published.WithLabelValues(ceType))
	return c.(prometheus.Counter)
}

// serviceMetrics caches the collectors of one service per event type, so the
// hot path does no label hashing.
type serviceMetrics struct {
	m       *Metrics
	service string
	byType  sync.Map // event type → *typeMetrics
}

type typeMetrics struct {
	ok, retry, dead prometheus.Counter
	seconds         prometheus.Observer
}

func (m *Metrics) forService(service string) *serviceMetrics {
	return &serviceMetrics{m: m, service: service}
}

func (s *serviceMetrics) of(ceType string) *typeMetrics {
	if t, ok := s.byType.Load(ceType); ok {
		return t.(*typeMetrics)
	}
	t := &typeMetrics{
		ok:      s.m.handled.WithLabelValues(s.service, ceType, OutcomeOK),
		retry:   s.m.handled.WithLabelValues(s.service, ceType, OutcomeRetry),
		dead:    s.m.handled.WithLabelValues(s.service, ceType, OutcomeDeadLetter),
		seconds: s.m.handleTime.WithLabelValues(s.service, ceType),
	}
	actual, _ := s.byType.LoadOrStore(ceType, t)
	return actual.(*typeMetrics)
}

// BacklogOf is the backlog gauge of a service, as praetor_consumer_backlog
// exports it.
func (m *Metrics) BacklogOf(service string) prometheus.Gauge {
	return m.backlog.WithLabelValues(service)
}

// PausedOf is the gauge of a service's consumer, as praetor_consumer_paused
// exports it: 1 while paused for a dependency (ConsumerConfig.Unavailable).
func (m *Metrics) PausedOf(service string) prometheus.Gauge {
	return m.paused.WithLabelValues(service)
}

// unregisteredMetrics is used when a caller gives none.
func unregisteredMetrics() *Metrics {
	m, _ := NewMetrics(nil)
	return m
}
