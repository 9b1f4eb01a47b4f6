// Package events carries CloudEvents over NATS JetStream for every Praetor
// service: publishing, durable consumers behind a middleware chain,
// dead-lettering, replay and an embedded server.
//
// # Wire format
//
// Events travel in the binary content mode of the CloudEvents NATS binding:
// each attribute is a "ce-<name>" header whose value is percent-encoded (space,
// '"', '%' and every byte outside printable ASCII become %XX), the data is the
// message body, datacontenttype is the Content-Type header, and the event id
// is also the Nats-Msg-Id header, so the server drops an event republished
// within the stream's duplicate window.
//
// # Delivery and failures
//
// Each service role is one durable pull consumer; every replica of the service
// pulls from it, so adding replicas adds workers. A handler's nil error acks
// the event. A Permanent error, an event that does not decode, or one that
// fails its contract (ConsumerConfig.Validate) is copied to the dead-letter
// stream PRAETOR_DLQ with its reason and the original message, then
// terminated. Any other error naks the event with exponential backoff; when
// its last delivery (MaxDeliver) fails it is dead-lettered too. An event whose
// handler's process died on the last delivery is caught from the server's
// MaxDeliver advisory, captured in the PRAETOR_ADVISORIES stream so none is
// missed while no process runs, and its original is fetched by stream
// sequence into the dead-letter stream. Nothing is dropped silently, and
// nothing is redelivered forever unless its consumer asks for that
// (MaxDeliver -1, for timers that must outlast an outage of what they
// call). A panic is recovered, counted and naked (dead-lettered on a
// consumer without a bound on deliveries, where it would crash-loop). A
// failure its consumer recognises as a dependency being down
// (ConsumerConfig.Unavailable: the database unreachable) naks the event
// and pauses the consumer, which takes no events until the dependency
// answers its probe again, so an outage does not use up deliveries.
//
// # Ordering
//
// Events with the same ordering key are handled one at a time and in stream
// order; events with different keys run in parallel, also across processes.
// The mechanism is subject partitioning with one consumer per partition:
//
//   - A keyed stream (StreamConfig.Partitions = N) has a single subject
//     pattern ending in the tenant and key tokens, praetor.turn.*.*.*. The
//     server rewrites every subject on arrival to append a partition token,
//     a hash of (tenant, key) modulo N: praetor.turn.received.acme.s1.7.
//     A key always lands in the same partition, in arrival order.
//   - A keyed consumer (ConsumerConfig.Keyed) is N durable consumers, one per
//     partition, each filtering its partition and allowing one
//     unacknowledged message (MaxAckPending 1). The server gives a
//     partition's next message to any replica only once the previous one is
//     acked or terminated; a nak with delay holds the partition until the
//     retry. So a key's events are handled strictly in order, one at a time,
//     even with many replicas, and a crashed replica's event is redelivered
//     (after AckWait) before anything behind it.
//   - Parallelism is N partitions at once, spread over the replicas. Keys that
//     share a partition wait for each other; pick N well above the number of
//     workers.
//
// Unkeyed consumers (tasks, LLM records) have one durable consumer with many
// outstanding messages, handled by a pool of ConsumerConfig.Concurrency
// workers per process. A process pulls only for its free workers, so an
// event never waits in a busy process, where its AckWait would run out and
// it would be handled twice: it stays on the server for the first free
// worker of any replica, and from its handler's start progress reports keep
// it for as long as the handler runs.
//
// # Exactly-once effect
//
// Delivery is at least once. Handlers that change state make it exactly once
// in effect with the inbox and outbox of package internal/delivery: the state
// change, the "handled" inbox row and the events to emit commit in one
// transaction; the handler then publishes those events and acknowledges its
// input once the stream holds them, and a relay publishes whatever a crash
// or a failed publish left in the outbox. Handlers derive the ids of
// the events they emit from the input event (DeriveID), so a re-run emits the
// same ids and the stream's duplicate window and the consumers' inboxes drop
// the copies.
package events
