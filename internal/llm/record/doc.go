// Package record keeps model calls so a replay can answer without the model.
//
// A Recorder wraps an llm.Client and, after every call, publishes one
// llm.call.recorded event (contracts.LLMCallRecorded): the tenant, the scope
// (a session, a run, an episode), the request hash (llm.Hash), the canonical
// request, and the answer with its usage and latency, or the failure. A
// Replayer is an llm.Client that serves those records by request hash and
// never calls a model.
//
// # Whose call
//
// Request.TenantID and Request.Scope become the event's tenant and ordering
// key. When empty they are DefaultTenant and DefaultScope; they must be
// subject tokens (contracts.ValidToken), and a call whose tenant or scope is
// not one fails before the model is called: it could never be recorded.
//
// # Event ids, and why a replay finds the same record
//
// The event id is derived, never random, so that re-running the same work
// publishes the same ids and JetStream's duplicate window drops the copies:
//
//   - with a CallID (Request.CallID, the caller's name for the call derived
//     from its input, or else the work named by llm.WithWork and the
//     request's purpose, e.g. "turn/<turn id>/extraction"): from (tenant,
//     scope, CallID, request hash). A handler that crashes after the call and
//     is redelivered, in this process or another, or that redoes its work
//     after a stale write, records under the same id, so the stream holds one
//     record per logical call (the duplicate window outlasts the consumers'
//     ack wait, node.DefaultDuplicates; a copy published past it is stored,
//     and a replay serves the last copy of an id, the one the work that
//     committed used). Through an AckPublisher (*events.Bus) the call redone
//     within the window is answered with that first record — its answer or
//     its failure — rather than the model's new answer, which the stream
//     dropped: the work commits what a replay will serve. This is the
//     robust choice; handlers set llm.WithWork.
//   - without it: from (tenant, scope, request hash, n), where n counts the
//     earlier calls with that hash in that scope made through this Recorder.
//     A deterministic run makes the same calls in the same order, so a re-run
//     in a fresh process gets the same ids; a retry inside one process gets
//     a new n and a second record. The counters live in memory and are
//     forgotten, all at once, past Config.MaxTracked entries.
//
// A Replayer keys records by (tenant, scope, request hash) and serves the
// records of one key in their recorded order, so the n-th identical request
// of a scope gets the n-th recorded answer. A request with no record left is
// a *NotRecordedError (wrapping ErrNotRecorded) that names the call and,
// when the live run recorded another request under the same call id, that
// request: the replay's prompt is not the live run's. A caller that takes
// a model failure in its stride (a turn answers degraded) asks Missed
// after each step, so a replay says which call it could not serve rather
// than only that its state came out otherwise.
//
// # Failures
//
// A failed call is recorded too (its outcome and message in Error), so a
// replay takes the same degraded path; the replayed error wraps the same
// llm sentinel (llm.ErrRateLimited ...). A call ended by its caller's
// context is not recorded: it had no outcome, and its redelivery will be.
//
// Publishing happens after the call, on a context detached from the
// caller's cancellation (bounded by Config.PublishTimeout). A failed publish
// is logged and counted (praetor_llm_record_failures_total) and the answer
// is returned anyway: the call happened, and the record is for audit and
// replay. With Config.Strict the call fails instead, with an error wrapping
// ErrRecordFailed; use it where a replay must be complete.
package record
