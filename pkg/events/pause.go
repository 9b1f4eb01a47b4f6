package events

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// The probes of a paused subscription (see ConsumerConfig.Unavailable):
// the first a quarter of a second after the pause, then twice as far apart
// each time, up to probeMax, each given probeTimeout to answer.
const (
	probeFirst   = 250 * time.Millisecond
	probeMax     = 5 * time.Second
	probeTimeout = 5 * time.Second
)

// pause is the state of a subscription whose handlers need a dependency
// that is unavailable: one for the whole subscription, however many
// handlers fail at once. While paused, the subscription pulls no events and
// the events it still receives (a pull already out, a keyed partition's
// next delivery) wait, unhandled, for the dependency to come back: an event
// that waits on the server is not delivered, so the outage does not use up
// its deliveries.
type pause struct {
	s     *Subscription
	gauge prometheus.Gauge // praetor_consumer_paused{service}

	// resumed is closed when the pause ends; nil while running. Read on
	// every message, so atomic rather than under mu.
	resumed atomic.Pointer[chan struct{}]
	mu      sync.Mutex // serialises pausing and resuming
	since   time.Time
	probing sync.WaitGroup // the prober, while paused
}

func newPause(s *Subscription) *pause {
	p := &pause{s: s, gauge: s.bus.cfg.Metrics.paused.WithLabelValues(s.cfg.Name)}
	p.gauge.Set(0)
	return p
}

// enter pauses the subscription because of err, unless it is paused
// already or stopping, and starts probing the dependency.
func (p *pause) enter(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed.Load() != nil || p.s.ctx.Err() != nil {
		return
	}
	ch := make(chan struct{})
	p.resumed.Store(&ch)
	p.since = time.Now()
	p.gauge.Set(1)
	p.s.bus.cfg.Logger.Warn("consumer paused: a dependency is unavailable; probing it before taking events again",
		"service", p.s.cfg.Name, "error", err)
	p.probing.Add(1)
	go p.probe()
}

// probe calls the subscription's Probe, further and further apart, until
// it succeeds (then resumes) or the subscription stops.
func (p *pause) probe() {
	defer p.probing.Done()
	wait := probeFirst
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-p.s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(p.s.ctx, probeTimeout)
		err := p.s.cfg.Probe(ctx)
		cancel()
		if err == nil {
			p.resume()
			return
		}
		wait = min(2*wait, probeMax)
		t.Reset(wait)
	}
}

func (p *pause) resume() {
	p.mu.Lock()
	ch := p.resumed.Swap(nil)
	p.gauge.Set(0)
	p.s.bus.cfg.Logger.Info("consumer resumed: the dependency is back", "service", p.s.cfg.Name,
		"paused_for", time.Since(p.since).Round(time.Millisecond))
	p.mu.Unlock()
	close(*ch)
	if f := p.s.feed; f != nil {
		f.release(0, false) // pull for the workers left free meanwhile
	}
}

// paused reports whether the subscription is paused.
func (p *pause) paused() bool { return p.resumed.Load() != nil }

// hold keeps msg, received while the subscription is paused, until the
// pause ends, reporting progress so the server does not deliver it again
// meanwhile. It returns false, at once, when the subscription starts
// stopping first: the message is not to be handled here.
func (p *pause) hold(msg jetstream.Msg) bool {
	ch := p.resumed.Load()
	if ch == nil {
		return true
	}
	t := time.NewTicker(p.s.cfg.AckWait / 2)
	defer t.Stop()
	for {
		select {
		case <-*ch:
			return true
		case <-p.s.stopping:
			return false
		case <-p.s.ctx.Done():
			return false
		case <-t.C:
			_ = msg.InProgress()
		}
	}
}
