package graph

import (
	"context"
	"fmt"
	"slices"
)

// MaxChainHops bounds the walk of ChainHead. Each hop is one revision of
// the content that superseded the one before; a chain this long is not a
// decision revised but a graph written wrong (by hand, or by a bug), and
// walking on would hold the scope's write lock for it.
const MaxChainHops = 100

// ChainHead finds what WriteTx.Reinstate changes: the node id, and the live
// head of its chain, reached by following SupersededBy. Adapters call it
// inside Reinstate, so that every adapter has the same rules and errors.
// node looks an id up in the transaction's scope and reports whether it is
// there.
//
// id must be a node of the scope (else ErrNotFound) that is superseded
// (else ErrInvalid). A walk that comes back to a node it passed, reaches an
// id the scope does not hold, or takes more than MaxChainHops hops fails
// with ErrNoLiveHead.
func ChainHead(ctx context.Context, id string, node func(ctx context.Context, id string) (Node, bool, error)) (start, head Node, err error) {
	start, found, err := node(ctx, id)
	switch {
	case err != nil:
		return Node{}, Node{}, err
	case !found:
		return Node{}, Node{}, fmt.Errorf("%w: node %s in this scope", ErrNotFound, id)
	case start.Live():
		return Node{}, Node{}, fmt.Errorf("%w: node %s is live; only a superseded node can be reinstated", ErrInvalid, id)
	}
	passed := []string{id}
	cur := start
	for range MaxChainHops {
		next := cur.SupersededBy
		if slices.Contains(passed, next) {
			return Node{}, Node{}, fmt.Errorf("%w: the chain from %s comes back to %s after %d hops (a cycle): set superseded_by of one of its nodes to a live node",
				ErrNoLiveHead, id, next, len(passed))
		}
		n, found, err := node(ctx, next)
		if err != nil {
			return Node{}, Node{}, err
		}
		if !found {
			return Node{}, Node{}, fmt.Errorf("%w: %s (on the chain from %s) is superseded by %s, which is no node of this scope: set its superseded_by to a live node of the scope",
				ErrNoLiveHead, cur.ID, id, next)
		}
		if n.Live() {
			return start, n, nil
		}
		passed = append(passed, next)
		cur = n
	}
	return Node{}, Node{}, fmt.Errorf("%w: no live node within %d hops of %s (the last one reached is %s, superseded by %s)",
		ErrNoLiveHead, MaxChainHops, id, cur.ID, cur.SupersededBy)
}
