// Package contextasm is the context assembler of the Engine Framework: it
// builds the context the response model reads each turn, within the
// engine's token budget counted with a real tokenizer (tiktoken, loaded
// offline), in the seed's seven-section order — inbound handoff at the top,
// phase instructions with the active techniques, obligations (with the one
// to ask for next), background intelligence, conversation history in the
// middle, extraction summary, and the user's message at the bottom — with
// the configured allocation of the budget between obligations, history,
// background intelligence and extraction summary. When history overflows
// its budget it is compressed by the engine's strategy: summarize_old
// (default; an LLM summarizer in production, a deterministic one offline),
// sliding_window or extractive.
package contextasm
