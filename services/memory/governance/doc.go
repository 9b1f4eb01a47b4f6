// Package governance holds governance tokens: the credentials a caller
// must present to write to a tenant's global memory scope. Tokens are kept
// only as SHA-256 hashes, with their tenant and expiry.
//
// Tokens is an in-memory store, for tests; the service keeps its tokens in
// the relational store (package sqlmemory). Both implement the write
// engine's TokenChecker and return this package's errors.
package governance
