// Package offline is the llm adapter that needs no model and no network:
// the default provider when no API key is set, so `praetor dev` and the tests
// run anywhere. Its answers are deterministic: the same request and seed give
// the same content and usage in every process, because everything it derives
// comes from SHA-256 of (seed, llm.Hash(request)).
//
// What it answers depends on the request's Purpose:
//
//   - a Skill registered for the purpose (Handle) writes the answer; the
//     conversational engines register their rule-based extraction and reply
//     skills this way;
//   - otherwise, a request with a Schema gets the smallest object the schema
//     accepts, filled with deterministic values; a JSON request without one
//     gets {};
//   - otherwise, a short deterministic reply that picks up the user's last
//     message.
//
// Token usage is counted with a real tokenizer (tiktoken's cl100k_base, its
// ranks embedded in the binary), the way OpenAI counts chat prompts, so
// budgets and metrics behave as they would with a model.
package offline
