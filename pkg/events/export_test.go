package events

// HandleAdvisory dead-letters the event a MaxDeliver advisory names, as the
// advisory watcher does.
func (b *Bus) HandleAdvisory(data []byte) error { return b.handleAdvisory(data) }
