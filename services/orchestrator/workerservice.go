package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/services/orchestrator/agent/command"
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
		pool, err := worker.New(worker.Config{Bus: d.Bus, DB: d.DB, Relay: d.Relay, Runtime: router, Agents: agents, Name: s.Pool,
			Concurrency: s.Workers, MaxResultBytes: payloadLimit(d), AckWait: d.AckWait, Logger: d.Logger, Registerer: d.Registerer,
			Unavailable: d.StoreUnavailable()})
		if err != nil {
			return nil, err
		}
		if s.AttemptsDir == "" {
			return pool, nil
		}
		return &pruning{Service: pool, dir: s.AttemptsDir, keep: s.AttemptsKeep, log: d.Logger}, nil
	}
}

// attemptsPruneEvery is how often an agent-worker prunes its attempts
// directory.
const attemptsPruneEvery = time.Hour

// pruning is a worker pool whose durable attempts are removed once they
// are older than keep: the pool cannot tell when a run is over (the
// orchestrator, elsewhere, does), so without it AttemptsDir grows for ever.
type pruning struct {
	node.Service
	dir  string
	keep time.Duration
	log  *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}
}

func (p *pruning) Start(ctx context.Context) error {
	if err := p.Service.Start(ctx); err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(attemptsPruneEvery)
		defer tick.Stop()
		for {
			p.prune()
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nil
}

func (p *pruning) Stop(ctx context.Context) error {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
	return p.Service.Stop(ctx)
}

func (p *pruning) prune() {
	n, err := command.PruneAttempts(p.dir, p.keep, time.Now())
	if err != nil {
		p.log.Warn("pruning old attempts failed; the next round tries again", "dir", p.dir, "error", err)
	}
	if n.Removed > 0 {
		p.log.Info("pruned old attempts", "dir", p.dir, "removed", n.Removed, "kept_running", n.Running,
			"kept_recent", n.Recent, "keep", p.keep)
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
