package write

import (
	"context"
	"sort"
	"sync"
)

// Queue keeps pending writes until they settle. A durable implementation
// (a table of the relational store) makes pending writes survive a restart:
// Start lists them and retries them.
type Queue interface {
	// Put inserts p, or replaces the entry with the same NodeID.
	Put(ctx context.Context, p Pending) error
	// Delete removes the entry of nodeID; a missing entry is not an error.
	Delete(ctx context.Context, nodeID string) error
	// List returns every entry, earliest NextAt first (ties in insertion
	// order).
	List(ctx context.Context) ([]Pending, error)
}

// MemoryQueue is an in-memory Queue, safe for concurrent use. Its entries
// die with the process.
type MemoryQueue struct {
	mu    sync.Mutex
	seq   int64
	items map[string]queued
}

type queued struct {
	p   Pending
	seq int64
}

// NewMemoryQueue returns an empty in-memory queue.
func NewMemoryQueue() *MemoryQueue { return &MemoryQueue{items: make(map[string]queued)} }

// Put implements Queue.
func (q *MemoryQueue) Put(_ context.Context, p Pending) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	seq := q.seq
	if old, ok := q.items[p.NodeID]; ok {
		seq = old.seq
	} else {
		q.seq++
	}
	q.items[p.NodeID] = queued{p: p, seq: seq}
	return nil
}

// Delete implements Queue.
func (q *MemoryQueue) Delete(_ context.Context, nodeID string) error {
	q.mu.Lock()
	delete(q.items, nodeID)
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
