// Package scope is the seed's ScopeEngine: it resolves the (project, focus)
// of a memory request to a state and gates reads and writes on it.
//
// The states and their gates:
//
//	unresolved        no project id                      reads: nothing   writes: blocked
//	uncertain         project id, no Project node        reads: project   writes: blocked
//	resolved_project  Project node, no (existing) focus  reads: project, global           writes: project, global
//	resolved_focus    Project and FocusArea nodes        reads: focus, project, global    writes: focus, project, global
//
// Classify is pure; Engine.Resolve reads the facts it needs through the
// graph port.
package scope
