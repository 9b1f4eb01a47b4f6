// Package neo4j is the production graph store: memory on Neo4j 5 through
// neo4j-go-driver/v5.
//
// Model. Memory nodes carry the labels :Memory and :Decision, :Pattern or
// :EntityFact, and the properties tenant_id, id, kind, level, project_id,
// focus, scope_uid (tenant|scope key), area_uid (tenant|area key), title,
// rationale, entity_name, entity_key, content_hash, content_key (scope uid |
// kind | content hash), status, created_at, last_validated_at, superseded_by
// and, while live, ft_scope. Scopes are :Scope nodes (:Project, :FocusArea
// with FOCUS_OF to its project, :Global) with a unique uid, write_seq (the
// count of their write transactions) and rehashed_seq (the write_seq up to
// which their nodes' content hashes are known to be current). Relationships:
// SUPERSEDES (newer to older; from a reinstated node to the one it replaced,
// with reinstated: true) and CONFLICTS_WITH, each carrying tenant_id.
//
// Schema, created idempotently by Open: uniqueness constraints on
// Memory.id, Memory.content_key and Scope.uid; range indexes on
// (scope_uid, created_at) and (scope_uid, last_validated_at), which Live
// reads in order, (area_uid, kind) and tenant_id; the full-text
// indexes decision_fulltext and pattern_fulltext on title, rationale and
// ft_scope. Open then recomputes, in one transaction, the content hash,
// content key and entity key of the nodes with a sign ('+', '#') whose
// stored ones predate the signs counting ("C++" is not "C"; see
// dedup.Normalize), in the scopes whose rehashed_seq is behind.
//
// Transactions. Reads run in ExecuteRead (read access mode: the server
// refuses writes); writes in ExecuteWrite transaction functions whose first
// statement sets a property of the scope node, taking its exclusive lock,
// so dedup's checks and the write are atomic per scope. Full-text queries
// are built from SearchTerms (graph.Words, which keeps no sign) with every
// Lucene special character escaped.
package neo4j
