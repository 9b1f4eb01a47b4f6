// Package bufpool keeps byte buffers for reuse: the large ones a hot path
// writes into and is done with soon after (a canonical request, an LLM
// record, a compressed value), which allocated anew every time would be a
// good part of what the collector has to reclaim. A buffer grown past the
// pool's bound goes to the collector instead, so that one large value does
// not stay pinned.
package bufpool

import "sync"

// Pool is a pool of byte buffers.
type Pool struct {
	pool sync.Pool
	max  int
}

// New returns a pool that keeps buffers of up to max bytes of capacity.
func New(max int) *Pool {
	return &Pool{max: max, pool: sync.Pool{New: func() any { return new([]byte) }}}
}

// Get returns an empty buffer to append to. Give it back with Put once
// nothing refers to what was written into it.
func (p *Pool) Get() *[]byte {
	buf := p.pool.Get().(*[]byte)
	*buf = (*buf)[:0]
	return buf
}

// Put gives buf back, holding b, what was appended to it (a slice of it, or
// of the larger array append moved it to): kept for the next Get when its
// capacity is within the bound.
func (p *Pool) Put(buf *[]byte, b []byte) {
	if cap(b) > p.max {
		return
	}
	*buf = b[:0]
	p.pool.Put(buf)
}
