package orchestrator

import (
	"context"
	"fmt"
	"slices"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

// WorkerFactory is the agent-worker service of a node: a worker pool for
// the agents of the registry in PRAETOR_WORKFLOW_REGISTRY (see Settings).
// Without a registry the service starts idle and logs why, so praetor dev
// runs without one.
func WorkerFactory(lookup func(string) (string, bool)) node.Factory {
	return func(_ context.Context, d node.Deps) (node.Service, error) {
		s, err := SettingsFromEnv(lookup)
		if err != nil {
			return nil, fmt.Errorf("agent-worker: %w", err)
		}
		if s.Registry == "" {
			d.Logger.Warn("agent-worker serves no agents: set " + EnvRegistry + " to an agent registry file")
			return idle{}, nil
		}
		reg, err := definition.LoadRegistry(s.Registry)
		if err != nil {
			return nil, fmt.Errorf("agent-worker: %w", err)
		}
		agents := s.Agents
		if len(agents) == 0 {
			agents = reg.Names()
		}
		for _, a := range agents {
			if !slices.Contains(reg.Names(), a) {
				return nil, fmt.Errorf("agent-worker: %s names agent %q, which %s does not have (agents: %v)", EnvAgents, a, s.Registry, reg.Names())
			}
		}
		router, err := BuildRuntimes(reg, RuntimeDeps{LLM: d.LLM, Logger: d.Logger, RegistryDir: registryDir(s.Registry),
			AttemptsDir: s.AttemptsDir})
		if err != nil {
			return nil, fmt.Errorf("agent-worker: %w", err)
		}
		return worker.New(worker.Config{Bus: d.Bus, DB: d.DB, Relay: d.Relay, Runtime: router, Agents: agents, Name: s.Pool,
			Concurrency: s.Workers, MaxResultBytes: payloadLimit(d), AckWait: d.AckWait, Logger: d.Logger, Registerer: d.Registerer})
	}
}

// payloadLimit is the largest event data the node's NATS server takes,
// with room for the headers.
func payloadLimit(d node.Deps) int {
	return int(max(d.Bus.Conn().MaxPayload()-64<<10, 4<<10))
}

// idle is a service that does nothing.
type idle struct{}

func (idle) Start(context.Context) error { return nil }
func (idle) Stop(context.Context) error  { return nil }
