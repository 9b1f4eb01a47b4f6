package offline

import (
	"fmt"
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/praetorhq/praetor/internal/llm"
)

// Encoding is the tokenizer offline counts with: GPT-4's, whose ranks load
// in about a tenth of a second (o200k_base takes three times as long and
// counts English within a few percent of it).
const Encoding = "cl100k_base"

// OpenAI's chat framing: every message costs a few tokens on top of its
// role and content, and every answer is primed with a few more.
const (
	tokensPerMessage = 3
	tokensPerReply   = 3
)

type tokenizer struct{ enc *tiktoken.Tiktoken }

// loadTokenizer loads the encoding once per process. tiktoken's loader is a
// package-level setting; the embedded loader replaces the default one, which
// would download the ranks.
var loadTokenizer = sync.OnceValues(func() (*tokenizer, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(Encoding)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", Encoding, err)
	}
	return &tokenizer{enc: enc}, nil
})

func (t *tokenizer) count(text string) int {
	if text == "" {
		return 0
	}
	// Ordinary encoding: text that spells a special token ("<|endoftext|>")
	// counts as text, as it does in a user's message.
	return len(t.enc.EncodeOrdinary(text))
}

func (t *tokenizer) prompt(msgs []llm.Message) int {
	n := tokensPerReply
	for _, m := range msgs {
		n += tokensPerMessage + t.count(string(m.Role)) + t.count(m.Content)
	}
	return n
}

// truncate cuts text to at most max tokens; ok is false when it fits.
func (t *tokenizer) truncate(text string, max int) (string, bool) {
	toks := t.enc.EncodeOrdinary(text)
	if len(toks) <= max {
		return text, false
	}
	// A cut inside a multi-byte character leaves half of it; drop that.
	return strings.ToValidUTF8(t.enc.Decode(toks[:max]), ""), true
}
