// Package strategy holds the pluggable strategies of the Engine Framework
// that are not a component of their own: mode classifiers (the seed's v1
// no-op, a heuristic one, and the LLM-driven one it leaves as TODO) and the
// config-driven task failure strategy (retry with exponential backoff,
// degrade, stall, proceed-with-gap). The technique schedulers live in
// package technique and the journey compressor (summarize_old) in package
// contextasm.
package strategy
