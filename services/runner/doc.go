// Package runner is the conversational engine runner of seed 000 as a
// library: Runner.Process runs the seed's 19-step loop for one user turn of
// any engine, with no engine-specific code — everything comes from the
// engine definition and the registry.
//
// Steps 2-3 of the seed (extraction) run in the extractor service, which
// publishes turn.extracted; Process takes that result as its Input (see
// FromContract and FromExtraction), installs it as step 2 and derives the
// extraction log rows from it, and computes saturation (step 3) from the
// extractor's new concept count, because saturation is working-memory
// state. The other steps run in the seed's order: socio-emotional tracking,
// obligations and completeness, phase transition evaluation and execution,
// background task dispatch, technique selection, context assembly,
// compression (with a checkpoint first), response generation (a degraded
// fallback reply when the model fails), QA, mode classification, telemetry,
// sidebar, exit transitions, and the new state with its hash.
//
// Process is pure given its dependencies: it neither reads nor writes a
// store and publishes nothing. Its Result carries the reply, the new state,
// the sidebar and every effect to persist or publish (log rows, checkpoints,
// tasks to dispatch, a fired exit transition), so the service can commit
// them in one transaction with its inbox and outbox.
package runner
