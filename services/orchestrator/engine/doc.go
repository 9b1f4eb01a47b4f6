// Package engine is the deterministic core of the orchestrator (seed 004): a
// workflow run's state and the pure transitions that are the only way to
// change it.
//
// Every transition has the shape (State, input, Ctx) -> (State, Event, error):
//
//   - Start opens a run from a plan;
//   - ApplyAction applies an action: REQUEST_WORK or REQUEST_APPROVAL move a
//     ready task to RUNNING with a new attempt and dispatch id, ANNOTATE stores a
//     key/value artifact;
//   - ApplyResponse applies an agent's answer to the task it was dispatched for:
//     COMPLETED with its outputs and handover, PENDING again with a backoff when
//     a retryable failure has attempts left, FAILED otherwise;
//   - Finalize closes the run as COMPLETED or FAILED.
//
// Time and randomness come only from the Ctx (Now, and a Rand seeded from the
// run's seed and the transition's sequence number), never from the clock or a
// global generator, so the same inputs always give the same state. Transitions
// never modify the state they are given; they return a new one.
//
// Each transition emits exactly one Event describing its input and outcome. The
// events are the run's log: Fold replays them through the same transitions and
// rebuilds a byte-identical state, which Hash (SHA-256 of canonical JSON)
// proves. The state does not keep the log itself, which would grow without
// bound (the concern seed 004 raises); it keeps the sequence number and a hash
// chain over every event (LogHash), so an equal state hash also means an equal
// history.
//
// Decide is the scheduler: given a state and the time, it says which ready
// tasks to dispatch (in dependency order, ties broken by definition order),
// whether the run must be aborted (run timeout) or finalized, and when to look
// again (retry backoff, run deadline). It enforces the safety limits: maximum
// iterations (dispatches) and the run timeout.
package engine
