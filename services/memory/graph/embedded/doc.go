// Package embedded is the graph store of praetor dev: memory nodes, scopes
// and relationships in tables of one SQLite file (modernc.org/sqlite, pure
// Go), full-text search through an FTS5 index. It passes the same
// conformance suite as the Neo4j adapter (graph/graphtest).
//
// Write transactions begin IMMEDIATE on a single connection, so they run
// one at a time and the scope lock of the port is implied; read
// transactions use a separate pool whose connections are query_only, so a
// read transaction cannot write.
//
// The schema is applied at every Open: idempotent CREATE statements (and a
// DROP of the index mem_nodes_live, which Live no longer reads), then
// the columns added since a table was first created (mem_edges.reinstated)
// added to files that lack them, then the content hashes and entity keys
// recomputed for the nodes with a sign ('+', '#') whose stored ones predate
// the signs counting ("C++" is not "C"; see dedup.Normalize), among the
// nodes added since the last Open (mem_meta's rehashed_seq), all in one
// transaction.
package embedded
