// Package embedded is the graph store of praetor dev: memory nodes, scopes
// and relationships in tables of one SQLite file (modernc.org/sqlite, pure
// Go), full-text search through an FTS5 index. It passes the same
// conformance suite as the Neo4j adapter (graph/graphtest).
//
// Write transactions begin IMMEDIATE on a single connection, so they run
// one at a time and the scope lock of the port is implied; read
// transactions use a separate pool whose connections are query_only, so a
// read transaction cannot write.
package embedded
