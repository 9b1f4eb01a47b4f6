// Package retrieval is the seed's RetrievalEngine: the context bundle of a
// (project, focus), read across the three scope levels and merged by
// priority: up to 10 nodes of the focus area, then up to 10 of the project,
// then up to 5 of the global scope, each level the most recently confirmed
// first: by a node's LastValidatedAt, else its CreatedAt. Content written
// again after it was superseded is reinstated, confirmed at that write, and
// so is among the first of its level, though it was created long before.
//
// Nodes with an incoming SUPERSEDES are never returned. A CONFLICTS_WITH
// relationship between two returned nodes turns the status to conflicted and
// names the pair. hygiene_due is set when the project's last hygiene report
// is missing or older than 30 days.
//
// Each attempt reads in one read transaction bounded by a 5 s timeout; a
// timed-out or transiently failed attempt is retried with backoff, and the
// bundle records the state of every attempt. Status is a field of the
// bundle, never an error: Retrieve returns an error only for malformed
// input.
package retrieval
