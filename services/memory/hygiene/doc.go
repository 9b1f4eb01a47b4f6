// Package hygiene is the seed's HygieneEngine: five read-only checks of
// memory quality over a project (with its focus areas) or the global scope.
//
//  1. Duplicates: live decisions or patterns of the same kind whose title
//     similarity (Jaccard of dedup.TitleTokens, as in dedup) is above 0.9.
//  2. Outdated decisions: last confirmed (LastValidatedAt, else created)
//     more than 180 days ago, with no outgoing SUPERSEDES.
//  3. Obsolete patterns: last validated more than 90 days ago.
//  4. Entity-fact normalization: one entity name on several live nodes; the
//     report proposes MERGES_INTO the oldest.
//  5. Unresolved saves: nodes whose status is pending_retry or failed.
//
// All five read in one read transaction and the engine never changes a
// node: the report lists candidate ids per category, and acting on them is
// the caller's explicit decision. The area's last_hygiene_at is written
// only after the report is complete.
//
// Duplicate detection streams the titles once and joins them in memory
// with prefix filtering (the all-pairs similarity join of Bayardo et al.):
// a pair above 0.9 must share one of the rarest few tokens of each title,
// so only those are indexed. One full-text query per node would take
// minutes on 100,000 nodes; this takes well under a second.
package hygiene
