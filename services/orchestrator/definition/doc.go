// Package definition reads the files that define workflow runs — workflow
// YAML, agent registry YAML and constitutions — and checks them before
// anything runs.
//
// A workflow is a DAG of tasks (id, agent, depends_on, inputs, outputs,
// retries, timeout, constitution). A registry maps agent names to a runtime
// adapter (mock, llm or command) and its settings. Constitutions are merged
// per task by the constitution package.
//
// Every problem is reported with the file, the path of the field in the
// document with its line and column (from the yaml.v3 node tree), and the
// rule broken — unknown key, wrong type, duplicate id, unknown dependency, a
// dependency cycle named in full (a -> b -> c -> a), unknown agent, missing
// input or constitution file, bad durations — all in one *ValidationError so
// the user fixes everything in one pass. Load gives a Bundle: the resolved
// tasks in dependency order, the engine plan and limits, each task's inputs
// and merged constitution.
//
// The JSON Schemas of workflow and registry files are generated from these
// types (package schema holds the committed files and the test that keeps
// them current).
package definition
