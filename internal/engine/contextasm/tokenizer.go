package contextasm

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Tokenizer counts tokens the way the response model does.
type Tokenizer interface {
	Count(text string) int
	// Truncate returns the longest prefix of text within max tokens.
	Truncate(text string, max int) string
}

// DefaultEncoding is the tiktoken encoding used when an engine names none.
const DefaultEncoding = "cl100k_base"

// Tiktoken counts tokens with a tiktoken BPE encoding, loaded from the ranks
// embedded in tiktoken-go-loader: no network, ever.
type Tiktoken struct {
	enc *tiktoken.Tiktoken
}

// encoders holds one encoder per encoding for the whole process: building one
// parses megabytes of BPE ranks, and an encoder is immutable once built.
var encoders sync.Map // encoding name -> func() (*tiktoken.Tiktoken, error)

// NewTiktoken returns a tokenizer for an encoding (cl100k_base, o200k_base,
// p50k_base, r50k_base); "" means DefaultEncoding.
func NewTiktoken(encoding string) (*Tiktoken, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	load, _ := encoders.LoadOrStore(encoding, sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
		// The loader is a package global of tiktoken-go; every caller sets
		// the same offline loader, so setting it again is harmless.
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		return tiktoken.GetEncoding(encoding)
	}))
	enc, err := load.(func() (*tiktoken.Tiktoken, error))()
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", encoding, err)
	}
	return &Tiktoken{enc: enc}, nil
}

// Count returns the number of tokens of text; special-token text is counted
// as plain text.
func (t *Tiktoken) Count(text string) int {
	if text == "" {
		return 0
	}
	return len(t.enc.EncodeOrdinary(text))
}

// Truncate returns the longest prefix of text that has at most max tokens.
func (t *Tiktoken) Truncate(text string, max int) string {
	if max <= 0 {
		return ""
	}
	toks := t.enc.EncodeOrdinary(text)
	if len(toks) <= max {
		return text
	}
	return t.enc.Decode(toks[:max])
}

// Cached remembers token counts, so the lines that come back every turn
// (history, obligations) are tokenized once. It is safe for concurrent use;
// when it holds more than its byte budget of text it starts afresh.
type Cached struct {
	inner    Tokenizer
	maxBytes int

	mu    sync.Mutex
	m     map[string]int
	bytes int
}

// NewCached wraps a tokenizer; maxBytes bounds the remembered text (default 8 MiB).
func NewCached(inner Tokenizer, maxBytes int) *Cached {
	if maxBytes <= 0 {
		maxBytes = 8 << 20
	}
	return &Cached{inner: inner, maxBytes: maxBytes, m: map[string]int{}}
}

// Count implements Tokenizer.
func (c *Cached) Count(text string) int {
	c.mu.Lock()
	n, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.inner.Count(text)
	c.mu.Lock()
	if c.bytes+len(text) > c.maxBytes {
		c.m, c.bytes = map[string]int{}, 0
	}
	c.m[text] = n
	c.bytes += len(text)
	c.mu.Unlock()
	return n
}

// Truncate implements Tokenizer.
func (c *Cached) Truncate(text string, max int) string { return c.inner.Truncate(text, max) }
