// Package dedup is the seed's DedupEngine: it keeps the same decision from
// being stored twice in a scope.
//
// Step 1 compares the SHA-256 of the normalized content (ContentHash) with
// the scope's nodes: a live match is duplicate_skip. A superseded match is
// content asserted again after it was replaced, a revert: its node is
// reinstated (graph.WriteTx.Reinstate), live again and superseding the live
// head of its chain, confirmed at the write's time (its LastValidatedAt, by
// which retrieval ranks it), and the outcome is supersede with the
// reinstated node's id. (The seed skips any match; that left the replacement current
// while telling the caller the content was stored.) Step 2, for decisions
// only, asks the store's full-text index for the five best candidates of
// the scope and compares titles by Jaccard similarity of their TitleTokens:
// 0.70 or more supersedes the best candidate, 0.50 or more waits for manual
// review, less is a new decision. One refinement of the seed (see
// Config.ScoreOnly): a best candidate at 0.70 or more whose title differs by
// a replaced word, not only by added or removed words or changed numbers,
// waits for manual review rather than being superseded.
//
// Content is compared in graph.SignedWords: words of letters and digits,
// with the '+' or '#' that ends a name kept, so "Use C++ for the engine"
// and "Use C for the engine" are neither the same content (step 1) nor the
// same title (step 2: two tokens of four shared, 0.5, manual review). The
// hashes that the stores kept from before the signs counted are recomputed
// when a store opens (with ContentHash, the one definition of the hash).
//
// Run executes inside the write transaction of graph.Store.Write, which has
// taken the scope's write lock first; the content-key uniqueness constraint
// of the store is the second line of defence.
package dedup
