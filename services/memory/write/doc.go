// Package write is the seed's WriteEngine: every memory write goes through
// the scope gate, the governance gate, dedup and the write, and is retried
// in the background when the graph is unavailable.
//
// Save returns a Receipt whose Status is the write status (saved,
// pending_retry, failed, blocked_scope; partial for batches), never an
// error: the caller gets its business result at once, whatever happened to
// the write. Only a malformed request is an error (InputError). Save waits
// for the graph at most Config.WriteTimeout; a transient failure (the graph
// unavailable, a timeout) queues the write as pending_retry, and the retry
// loop (Start/Stop) runs it again with backoff until it is saved or fails
// for good, reporting each end through Config.OnSettled. A pending write is
// never dropped: it leaves the Queue only when it has settled.
//
// Writes are idempotent: the node id is fixed when the request is accepted
// (derived from the request id when there is one, so a request made again —
// a redelivered event — has the same) and the content hash makes a repeated
// write a duplicate_skip, so a write
// whose first attempt committed without the caller knowing settles as saved
// (even when another write superseded that node in between: dedup does not
// reinstate the request's own node). Content written again after it was
// superseded is not a repeat but a revert: dedup reinstates its node, and
// the receipt says supersede with that node's id.
package write
