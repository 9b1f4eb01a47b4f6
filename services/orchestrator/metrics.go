package orchestrator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/collector"
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
	var err error
	m.runsInFlight = collector.Register(reg, m.runsInFlight, &err)
	if err != nil {
		return nil, err
	}
	return m, nil
}
