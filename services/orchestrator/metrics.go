package orchestrator

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// serviceMetrics are the orchestrator service's own: what its executors
// count (praetor_workflow_runs_finished_total, praetor_workflow_tasks_failed_total)
// is theirs.
type serviceMetrics struct {
	runsInFlight prometheus.Gauge
}

func newServiceMetrics(reg prometheus.Registerer) (*serviceMetrics, error) {
	m := &serviceMetrics{
		runsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "praetor_workflow_runs_in_flight",
			Help: "Workflow runs this orchestrator carries on: started, resumed or taken over, and not yet finished or released.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	if err := reg.Register(m.runsInFlight); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		existing, ok := are.ExistingCollector.(prometheus.Gauge)
		if !ok {
			return nil, err
		}
		m.runsInFlight = existing
	}
	return m, nil
}
