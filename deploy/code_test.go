package deploy_test

import (
	"regexp"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/llm/provider"
	praetornode "github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/wiring"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/orchestrator"
)

// The deployment files are checked against these, taken from the code.

// serviceNames are the services praetor can run (praetor serve --services).
func serviceNames() []string { return wiring.Names() }

// nodeEnvVar is the variable of a flag, as the node names it in errors.
func nodeEnvVar(flag string) string { return praetornode.EnvVar(flag) }

// otherEnvNames are the variables praetor reads besides its flags'.
func otherEnvNames() []string {
	return []string{
		provider.EnvProvider, provider.EnvBaseURL, provider.EnvAPIKey, provider.EnvModel,
		provider.EnvTimeout, provider.EnvMaxRetries, provider.EnvSeed,
		provider.EnvOpenAIKey, provider.EnvOpenAIBaseURL,
		memory.EnvNeo4jURI, memory.EnvNeo4jUser, memory.EnvNeo4jPassword, memory.EnvNeo4jDatabase,
		orchestrator.EnvWorkflowDir, orchestrator.EnvRegistry, orchestrator.EnvAgents, orchestrator.EnvPool,
		orchestrator.EnvWorkers, orchestrator.EnvMaxParallel, orchestrator.EnvAttemptsDir, orchestrator.EnvAttemptsKeep, orchestrator.EnvLease,
	}
}

// deadLetterCauses are the values of praetor_dead_letters_total's cause.
func deadLetterCauses() []string { return slices.Clone(events.DeadLetterCauses) }

// eventMetricNames are the metrics of pkg/events, from the collectors
// events.NewMetrics registers.
func eventMetricNames() (map[string]bool, error) {
	rec := &recordingRegisterer{}
	if _, err := events.NewMetrics(rec); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				names[m[1]] = true
			}
		}
	}
	return names, nil
}

// recordingRegisterer keeps what is registered with it.
type recordingRegisterer struct {
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recordingRegisterer) Unregister(prometheus.Collector) bool { return false }
