package write

import (
	"context"
	"sort"
	"sync"
)

// Queue keeps pending writes until they settle. A durable implementation
// (a table of the relational store, package sqlmemory) makes pending writes
// survive a restart: Start lists them and retries them.
type Queue interface {
	// Put inserts p, or replaces the entry of the same tenant and NodeID.
	// A queue shared by several processes may decline to replace an entry
	// (Attempts > 1) that settled meanwhile or that another process took
	// over: that process finishes it.
	Put(ctx context.Context, p Pending) error
	// Done removes the entry of p (its tenant and NodeID), which settled as
	// s; a missing entry is not an error. A durable queue may record the
	// settlement in the same transaction as the removal (an outbox event,
	// say), so that it is reported exactly when the entry leaves.
	Done(ctx context.Context, p Pending, s Settlement) error
	// List returns the entries to retry, earliest NextAt first (ties in
	// insertion order). A queue shared by several processes may return only
	// the entries this process holds.
	List(ctx context.Context) ([]Pending, error)
}

// MemoryQueue is an in-memory Queue, safe for concurrent use. Its entries
// die with the process.
type MemoryQueue struct {
	mu    sync.Mutex
	seq   int64
	items map[queueKey]queued
}

type queueKey struct{ tenant, nodeID string }

func keyOf(p Pending) queueKey { return queueKey{p.Request.TenantID, p.NodeID} }

type queued struct {
	p   Pending
	seq int64
}

// NewMemoryQueue returns an empty in-memory queue.
func NewMemoryQueue() *MemoryQueue { return &MemoryQueue{items: make(map[queueKey]queued)} }

// Put implements Queue.
func (q *MemoryQueue) Put(_ context.Context, p Pending) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	seq := q.seq
	if old, ok := q.items[keyOf(p)]; ok {
		seq = old.seq
	} else {
		q.seq++
	}
	q.items[keyOf(p)] = queued{p: p, seq: seq}
	return nil
}

// Done implements Queue.
func (q *MemoryQueue) Done(_ context.Context, p Pending, _ Settlement) error {
	q.mu.Lock()
	delete(q.items, keyOf(p))
	q.mu.Unlock()
	return nil
}

// List implements Queue.
func (q *MemoryQueue) List(_ context.Context) ([]Pending, error) {
	q.mu.Lock()
	all := make([]queued, 0, len(q.items))
	for _, it := range q.items {
		all = append(all, it)
	}
	q.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		if !all[i].p.NextAt.Equal(all[j].p.NextAt) {
			return all[i].p.NextAt.Before(all[j].p.NextAt)
		}
		return all[i].seq < all[j].seq
	})
	out := make([]Pending, len(all))
	for i, it := range all {
		out[i] = it.p
	}
	return out, nil
}
