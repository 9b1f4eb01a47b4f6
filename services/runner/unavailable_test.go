package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// recordingBus records the consumers a service subscribes.
type recordingBus struct {
	*events.Bus
	mu   sync.Mutex
	cfgs []events.ConsumerConfig
}

func (b *recordingBus) Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error) {
	b.mu.Lock()
	b.cfgs = append(b.cfgs, cfg)
	b.mu.Unlock()
	return b.Bus.Subscribe(ctx, cfg, h)
}

// Every consumer of the runner reads or writes the store: told how to
// recognise the database down, each pauses on it, probing the store,
// rather than use up its events' deliveries on the outage.
func TestEveryConsumerPausesForTheDatabase(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	r, err := New(Config{LLM: fixed("Go on."), Registry: rig.Registry, Logger: rig.Logger})
	if err != nil {
		t.Fatal(err)
	}
	errDown := errors.New("connection refused")
	bus := &recordingBus{Bus: rig.Bus}
	s, err := NewService(ServiceConfig{DB: rig.DB, Bus: bus, Relay: rig.Relay, Engines: rig.Engines, Runner: r,
		Logger: rig.Logger, AckWait: time.Second, Unavailable: func(err error) bool { return errors.Is(err, errDown) }})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	bus.mu.Lock()
	defer bus.mu.Unlock()
	if len(bus.cfgs) != 4 {
		t.Fatalf("%d consumers subscribed, want 4", len(bus.cfgs))
	}
	for _, cfg := range bus.cfgs {
		if cfg.Unavailable == nil || !cfg.Unavailable(errDown) || cfg.Probe == nil {
			t.Errorf("consumer %s: no pause for the database down", cfg.Name)
			continue
		}
		if err := cfg.Probe(t.Context()); err != nil {
			t.Errorf("consumer %s: probe of a store that answers = %v, want nil", cfg.Name, err)
		}
	}
}
