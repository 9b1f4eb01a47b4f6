// Package governance holds governance tokens: the credentials a caller
// must present to write to a tenant's global memory scope. Tokens are kept
// only as SHA-256 hashes, with their tenant and expiry.
//
// Tokens is the in-memory store, for tests and praetor dev until the
// relational governance-token table takes over; it implements the write
// engine's TokenChecker.
package governance
