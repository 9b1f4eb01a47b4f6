// Package graph is the port between the memory engines and the graph that
// stores memory: the node and scope types, the Store interface with its read
// and write transactions, and the errors adapters return.
//
// The interface is sized for the engines: the write engine's dedup runs its
// hash lookup, full-text candidates, create and supersede (or, for content
// written again after it was superseded, reinstate) inside one WriteTx,
// which holds the write lock of the scope's node, so concurrent writers of
// one scope cannot both write the same or near-same content. The retrieval
// and hygiene engines read through ReadTx, in read-only transactions.
//
// Supersession: a node is live while its SupersededBy is empty. Supersede
// and Reinstate keep SupersededBy and the Supersedes relationships in step
// (a relationship from X to Y exactly when Y.SupersededBy is X), so the
// chain of a superseded node, followed through SupersededBy, ends at the
// live node that holds its place.
//
// Adapters: graph/neo4j (Neo4j 5, production) and graph/embedded (SQLite
// with FTS5, praetor dev). Both pass graph/graphtest, the conformance suite.
package graph
