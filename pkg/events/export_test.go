package events

import "time"

// HandleAdvisory dead-letters the event a MaxDeliver advisory names, as the
// advisory watcher does.
func (b *Bus) HandleAdvisory(data []byte) error { return b.handleAdvisory(data) }

// ObserveHandle records a handler run of d, as a consumer does.
func (m *Metrics) ObserveHandle(service, ceType string, d time.Duration) {
	m.forService(service).of(ceType).seconds.Observe(d.Seconds())
}

// Drained starts the subscription's drain, as Bus.Close does before it stops
// any subscription, and returns the channel closed once it has drained.
func (s *Subscription) Drained() <-chan struct{} { return s.drain() }

// SlowDeadLetters makes the bus's consumers wait d before each dead letter
// they publish, as on a slow dead-letter stream.
func (b *Bus) SlowDeadLetters(d time.Duration) { b.beforeDeadLetter = func() { time.Sleep(d) } }
