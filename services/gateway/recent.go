package gateway

import "sync"

// recent remembers the ids of the last events the gateway passed on from
// its plain NATS subscriptions. Those see every publish of a subject, the
// copies the stream drops as duplicates among them (the outbox relay
// publishes again what it cannot tell was published, and a redelivered
// handler's catch-up does too): the gateway passes each event on once.
type recent struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string // the remembered ids, oldest at next once full
	next int
}

// recentEvents is how many event ids the gateway remembers: at 500 turns a
// second, the replies of the last half minute.
const recentEvents = 16384

func newRecent(n int) *recent {
	return &recent{ids: make(map[string]struct{}, n), ring: make([]string, 0, n)}
}

// first reports whether id is new, and remembers it, forgetting the oldest
// id when full.
func (r *recent) first(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ids[id]; ok {
		return false
	}
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, id)
	} else {
		delete(r.ids, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % len(r.ring)
	}
	r.ids[id] = struct{}{}
	return true
}
