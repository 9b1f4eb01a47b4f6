// Package orchestrator is Praetor's workflow service (seeds 002 and 004):
// DAGs of agent tasks defined in files, run by a deterministic engine,
// persisted after every change, resumable after a crash and replayable from
// their events.
//
// The pieces, each its own package:
//
//   - definition: workflow and agent registry YAML, constitutions, checked
//     with errors that name file, field and rule; the engine plan.
//   - constitution: rule files merged by precedence with provenance.
//   - engine: the pure core — state, transitions, scheduler, events, fold,
//     hash.
//   - agent: the runtime contract; agent/mock, agent/llmagent and
//     agent/command are the adapters.
//   - hooks: pre-task, post-task, on-failure and on-loop-exit hooks.
//   - executor: runs a run — dispatch, persist, resume — over the ports
//     Dispatcher, StateStore and ArtifactStore.
//   - filestore: the CLI-mode store (state file, event log, outputs).
//   - sqlstore: the same ports on PostgreSQL or SQLite, every change also
//     written to the outbox as workflow.* events; agent answers; leases.
//   - runevents: engine events as workflow.* contracts and back; rebuilding
//     a run from the stream.
//   - taskmsg: attempts and their answers as task.dispatched,
//     task.completed and task.failed events.
//   - dispatch: the Dispatcher over JetStream.
//   - worker: the agent-worker pool that runs dispatched attempts.
//   - schema: the JSON Schemas of the definition files.
//
// This package wires them: BuildRuntimes turns a registry into the runtimes
// of its agents; ServiceFactory and WorkerFactory are the orchestrator and
// agent-worker services of a node (praetor serve --services
// orchestrator,agent-worker), configured by Settings; Source records where a
// run's definition came from, to resume it.
package orchestrator
