// Package memory is Praetor's graph memory service (seed 001): decisions,
// patterns and entity facts kept in a graph per tenant, scoped to a project,
// a focus area of a project, or the tenant's global scope.
//
// The graph sits behind one port, package graph, with two adapters that pass
// one conformance suite (graph/graphtest): Neo4j 5 through neo4j-go-driver
// (graph/neo4j, production) and SQLite with FTS5 (graph/embedded, praetor
// dev). The seed's engines are packages of their own, pure where the seed
// allows and doing I/O only through the port:
//
//   - scope: resolves (project, focus) to unresolved / uncertain /
//     resolved_project / resolved_focus, and gates reads and writes;
//   - retrieval: the priority-merged context bundle, with timeout, retry,
//     supersession filter, conflict detection and the hygiene_due flag;
//   - dedup: content hash, full-text candidates and title Jaccard, run inside
//     the write transaction;
//   - write: governance gate, dedup, write and background retry;
//   - analysis: keyword routing of a task to a reasoning mode;
//   - hygiene: the five read-only quality checks.
package memory
