// Package engine is the data model of Praetor's conversational engines (seed
// 000, the Engine Framework): an engine Definition with the seed's 13
// configurable surfaces, loaded from YAML and validated; the Registry of what
// engines name but cannot define (custom evaluators, task handlers,
// technique ids); and WorkingMemory, a session's whole state, with its
// canonical JSON and StateHash.
//
// Loading is strict. Parse checks every key against the Go types before
// decoding (an unknown or misspelt key is an error, with a suggestion), and
// Validate runs the seed's checks (identity, phase graph and order,
// references, weights, allocation, ratio, registered names). Every Issue
// names the file, the path inside it (phases[2].transition_triggers[0].category),
// the line and column, and the rule; warnings are kept apart from errors.
//
// The components that act on working memory live in subpackages, each pure:
// obligation (status from fields), completeness (seven models), phase (state
// machine), extraction (pipeline and log), technique (library, schedulers,
// mode classifiers), contextasm (context assembly and compression), sidebar,
// and strategy (task failure, journey compression). services/runner runs
// them in the seed's 19 steps.
package engine
