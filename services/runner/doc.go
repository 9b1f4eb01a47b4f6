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
// tasks to dispatch, a fired exit transition with its handoff, the I-PASS
// check of a first reply after a handoff), so the service can commit them in
// one transaction with its inbox and outbox. Merge is its counterpart for a
// background task's outcome between turns.
//
// # Handoffs
//
// At step 17 the first exit transition whose conditions hold maps working
// memory to an EngineHandoff (the context mapper registered for the
// transition) and validates it. A valid handoff fires the transition once:
// the reply ends by saying where the conversation goes, in place of the
// questions it closed with (the user's next message goes to the target, so
// the source could never hear their answers; a session of memory version 1
// keeps them, and its handoff's decisions record no key, options or
// question, as the builds before decision keys wrote them), and the service
// writes eng_handoffs, marks the session handed_off and publishes
// handoff.created with the turn. A handoff that fails validation is not
// written: the reasons are logged, counted and kept in working memory
// (HandoffRejection, which the API shows), and the session goes on. A
// consumer of handoff.created starts the target engine's session with the
// handoff in its working memory and publishes its session.started, handoff
// included, so a replay starts it alike.
//
// The first reply of the target session is the answer to the user's next
// message, which goes to the target session: the gateway says so (the turn
// that handed off names the target session, the stream sends a "handoff"
// event once it exists, the old session refuses messages and names it). A
// message the gateway took just before the handoff committed reaches the
// old session after it: that engine does not answer it (Process returns
// ErrHandedOff); its turn is answered, degraded, with where to send it.
// The target engine does not greet on its own: a greeting would be a model
// call outside any turn, with no user message to answer, that a replay
// could not place. Its context opens with the handoff's executive summary
// and, for that first reply, the instruction to acknowledge it; the reply
// is then checked (I-PASS) and the verdict stored with the handoff, never
// blocking.
//
// # Background tasks and concurrency
//
// Tasks dispatched at step 8 run in the background service; their answers
// (task.completed, task.failed on PRAETOR_TASKS) are routed by the runner
// onto the session's subject of the turns stream (task.returned), so the
// keyed consumer merges them between turns, in the session's order, and a
// replay of the session merges them at the same place. A session that has
// handed off tries nothing again (a failure settles the task), and passes a
// result on to the handoff's target session as a task.returned of that
// session (from_session_id set), which merges it as a completed task: the
// research the source started serves the engine the conversation went on
// with. An attempt nobody answers (the workers are down, or lost it) is
// given up on without waiting for a turn: a fourth consumer,
// runner-deadlines, takes every session's task.dispatched, puts it back on
// the stream until the deadline it carries (twice the attempt's timeout
// after it could start, the one the workers keep), and then, if the
// session still waits for that attempt, routes a failure onto the session's
// subject like a worker's, so the task's strategy (retry, stall, ...) goes
// on and a replay folds it; any replica may do it, and the failure's id is
// derived from the dispatch, so it is merged once; a store outage delays
// that until the store is back, and never uses the watch up. A turn still
// fails an overdue attempt too (tasks.Overdue), as it always did. Each
// write of a session also names the version it read
// (conversation.SaveSession); a write that finds another is refused and its
// work redone on the fresh state, which guards against overlapping handlers
// (one outliving its ack wait) on SQLite and PostgreSQL alike.
package runner
