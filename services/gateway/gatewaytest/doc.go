// Package gatewaytest runs a Praetor dev node inside a test — embedded NATS
// JetStream and SQLite in a temporary directory, the gateway, extractor and
// runner with the offline provider — and gives tests a client of its HTTP
// API and its Server-Sent Events stream. Tests built on it exercise the real
// turn path: HTTP, outbox, JetStream, both services and the store.
package gatewaytest
