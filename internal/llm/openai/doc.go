// Package openai is the llm adapter for OpenAI's Chat Completions API and
// every server that speaks it (Azure OpenAI behind a compatible gateway,
// vLLM, Ollama, llama.cpp), chosen by base URL, key and model. It is built on
// github.com/sashabaranov/go-openai.
//
// A Request maps to one chat completion: messages as given; JSON to
// response_format json_object; a Schema to response_format json_schema,
// strict when the Schema asks for it; temperature, max_tokens and seed when
// the request sets them, except what reasoning models (o1, o3, o4, gpt-5 ...)
// do not take: their max_tokens goes as max_completion_tokens and their
// temperature is left out.
//
// Each attempt has its own timeout. Rate limits (429), server errors (5xx),
// 408, 409, timeouts and connection failures are retried with exponential
// backoff and jitter; a Retry-After (or retry-after-ms) the server sends is
// honoured instead of the backoff. A whole call, retries and waits included,
// ends by Config.MaxElapsed (4 minutes, inside the 5 a turn's handler has),
// with the last failure. Other failures are returned at once as an
// *llm.APIError whose category (llm.ErrUnauthorized, llm.ErrBadRequest,
// llm.ErrBadResponse ...) callers test with errors.Is.
package openai
