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
//
// The relational part lives in package sqlmemory, on the store port
// (PostgreSQL or SQLite, migration 00005): governance tokens, kept as
// SHA-256 hashes, and the durable queue of pending_retry writes, so that a
// write the graph could not take survives a restart and is retried by
// whichever replica holds it (leases), its settlement recorded in the
// outbox in the transaction that removes it.
//
// This package assembles them (Memory, New, OpenGraph) and runs the service
// (ServiceFactory, registered as "memory" in internal/wiring):
//
//   - Events. memory.write.requested, consumed keyed by (tenant, project),
//     is answered with memory.written: the write status, the dedup outcome,
//     the node and the scope. A write answered pending_retry is answered
//     again when it settles; the second answer may, rarely, be published
//     before the first, so a consumer keeps the first status that is not
//     pending_retry. Content that breaks a rule (a title over 256
//     characters, say) is answered failed with the rule; an event that
//     breaks its contract is dead-lettered. See WriteRequest for how an
//     event maps to a write.
//   - Governance by event. A global write (project_id "global", the project
//     it comes from in from_project_id) carries no token: it carries a proof,
//     HMAC-SHA256 of the request keyed by the token's stored hash, and the
//     token's id (contracts.SignMemoryWrite). The service looks the token up,
//     checks it is unexpired and unrevoked, and recomputes the proof, when
//     the request is accepted. The stream, which is kept and replayed, never
//     holds anything that authorizes another write.
//   - MCP. The memory tools (package mcpserver) are served over streamable
//     HTTP at /mcp on the node's mux, each request acting for its bearer API
//     token's tenant (praetor dev: loopback without a token acts for the
//     local tenant), and over stdio by praetor memory mcp.
//   - Runner. BackgroundSource gives the runner's context assembler what
//     memory holds of a project as short lines; OpenBackground opens one for
//     a process without the service.
//
// In praetor dev the graph is embedded in <data-dir>/memory.db; in praetor
// serve it is Neo4j at NEO4J_URI (NEO4J_USER, NEO4J_PASSWORD,
// NEO4J_DATABASE). Projects and focus areas are registered deliberately
// (praetor memory add-project, graph.Store.EnsureProject): the scope gate
// refuses writes to any other, so a mistyped id cannot start a memory of
// its own.
package memory
