// Package contracts is the event catalog of Praetor: for every event type, its
// CloudEvents type (reverse-DNS and versioned), the JetStream stream and subject
// it travels on, the ordering key that serialises its handling, and the Go
// struct of its data.
//
// A subject is always five tokens, praetor.<domain>.<event>.<tenant>.<key>,
// where <key> is the ordering key. Streams whose consumers need per-key order
// are partitioned by the server on (tenant, key); see package events.
//
// The catalog is the source of truth: services build events with [NewEvent],
// route them with [Subject] and read them with [Decode] or [DecodeAs], which
// reject any event that breaks its contract.
package contracts
