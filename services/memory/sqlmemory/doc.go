// Package sqlmemory keeps the relational part of graph memory in the store
// port (internal/store), on PostgreSQL and SQLite alike (migration 00005):
//
//   - Tokens: governance tokens, kept as SHA-256 hashes with their tenant,
//     name and expiry. It is the write engine's TokenChecker for callers
//     that hold a token (MCP, CLI), and verifies the proofs that
//     memory.write.requested events carry instead of a token
//     (contracts.SignMemoryWrite).
//   - Queue: the write engine's durable Queue. A write answered
//     pending_retry is a row until it settles, so a restart loses none;
//     replicas share the table by leases, and the settlement can be recorded
//     (an outbox event) in the transaction that removes the row.
package sqlmemory
