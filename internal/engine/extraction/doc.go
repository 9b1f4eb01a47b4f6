// Package extraction is the per-turn extraction pipeline of the Engine
// Framework: it builds the prompt the extraction model reads (field
// definitions with their cues, the current state, the obligation the last
// reply asked for, the recent conversation and the user's message, each in
// a tagged JSON block), checks the model's answer against the schema
// (re-asking with the error, then degrading), and applies it to the
// extraction state with provenance: confidence thresholds per field,
// supersession of changed values with the reason, lists that grow, and
// conflicts resolved in favour of explicit corrections. The prompt is
// versioned (PromptVersion): a session keeps the version it started with,
// recorded in its State, so that its requests, and the hashes its recorded
// model answers are found by, stay what they were. Every applied value
// becomes an eng_extractions_log row typed new, update or supersede, with a
// link from the superseded row to the message that replaced it. Apply and
// Diff are pure; Pipeline adds the model call.
package extraction
