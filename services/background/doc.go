// Package background is the background service of seed 000's Background
// Task Manager: the worker pool that runs the conversational engines'
// background tasks (research, analysis) apart from the turns, and scales on
// its own (praetor serve --services background; more replicas, more workers
// on the same durable consumer).
//
// The runner dispatches a task attempt as task.dispatched (kind
// "background"); a worker runs the handler the task names — Go code
// registered by name in Handlers, like custom evaluators — within the
// attempt's timeout (from the task's estimated duration), and answers with
// task.completed or task.failed. A panicking handler, an unknown handler or
// a bad input is a permanent failure: retrying cannot help, so the task's
// failure strategy skips its retries. The answer commits with the worker's
// inbox row, so an attempt whose worker dies mid-task is run again by
// another worker and answered once. What a failure leads to (retry with
// backoff, degrade, stall, proceed-with-gap) is decided by the session's
// runner, which owns the task's definition: a retry comes back as a new
// attempt whose not_before the worker waits for.
//
// DefaultHandlers are the research handlers the shipped engines name; they
// ask the LLM port for findings (the offline provider answers them
// deterministically).
package background
