package offline

import (
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/tokenizer"
)

// Encoding is the tokenizer offline counts with: GPT-4's, whose ranks load
// in about a tenth of a second (o200k_base takes three times as long and
// counts English within a few percent of it).
const Encoding = tokenizer.Default

// OpenAI's chat framing: every message costs a few tokens on top of its
// role and content, and every answer is primed with a few more.
const (
	tokensPerMessage = 3
	tokensPerReply   = 3
)

// promptTokens counts a chat's prompt as OpenAI does.
func promptTokens(tok *tokenizer.Tokenizer, msgs []llm.Message) int {
	n := tokensPerReply
	for _, m := range msgs {
		n += tokensPerMessage + tok.Count(string(m.Role)) + tok.Count(m.Content)
	}
	return n
}
