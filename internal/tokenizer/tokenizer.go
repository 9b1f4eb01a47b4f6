// Package tokenizer counts tokens as OpenAI's models do, with tiktoken
// encodings loaded from ranks embedded in the binary (no network, ever).
//
// One Tokenizer exists per encoding in a process, and it remembers counts:
// prompts and contexts repeat most of their text from one turn to the next,
// and tiktoken-go spends microseconds a token. With cl100k_base (the
// default) text is counted by chunks of lines whose counts add up exactly to
// the whole text's; with the other encodings whole texts are remembered.
package tokenizer

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Default is the encoding used when none is named.
const Default = "cl100k_base"

// maxCachedBytes bounds the text a Tokenizer remembers; past it, it starts
// afresh.
const maxCachedBytes = 16 << 20

// Tokenizer counts and truncates text in one encoding. It is safe for
// concurrent use.
type Tokenizer struct {
	enc      *tiktoken.Tiktoken
	encoding string
	chunked  bool

	mu     sync.Mutex
	counts map[string]int
	bytes  int
}

var (
	loaderOnce sync.Once
	instances  sync.Map // encoding → func() (*Tokenizer, error)
)

// New returns the process's tokenizer of an encoding (cl100k_base,
// o200k_base, p50k_base, r50k_base); "" means Default.
func New(encoding string) (*Tokenizer, error) {
	if encoding == "" {
		encoding = Default
	}
	load, _ := instances.LoadOrStore(encoding, sync.OnceValues(func() (*Tokenizer, error) {
		// tiktoken-go's loader is a package global; the embedded one
		// replaces the default, which would download the ranks.
		loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
		enc, err := tiktoken.GetEncoding(encoding)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", encoding, err)
		}
		return &Tokenizer{enc: enc, encoding: encoding, chunked: encoding == "cl100k_base", counts: map[string]int{}}, nil
	}))
	return load.(func() (*Tokenizer, error))()
}

// Encoding names the tokenizer's encoding.
func (t *Tokenizer) Encoding() string { return t.encoding }

// Count returns the number of tokens of text. Text that spells a special
// token ("<|endoftext|>") counts as plain text, as it does in a message.
func (t *Tokenizer) Count(text string) int {
	if !t.chunked {
		return t.countCached(text)
	}
	// One look-up pass under the lock; the chunks not yet counted are
	// encoded after it, outside.
	n := 0
	var missed []string
	t.mu.Lock()
	forChunks(text, func(c string) {
		if k, ok := t.counts[c]; ok {
			n += k
		} else {
			missed = append(missed, c)
		}
	})
	t.mu.Unlock()
	for _, c := range missed {
		n += t.countCached(c)
	}
	return n
}

func (t *Tokenizer) countCached(text string) int {
	if text == "" {
		return 0
	}
	t.mu.Lock()
	n, ok := t.counts[text]
	t.mu.Unlock()
	if ok {
		return n
	}
	n = len(t.enc.EncodeOrdinary(text))
	t.mu.Lock()
	if _, ok := t.counts[text]; !ok { // another goroutine may have counted it meanwhile
		if t.bytes+len(text) > maxCachedBytes {
			t.counts, t.bytes = map[string]int{}, 0
		}
		// A copy: text is often a chunk of a whole prompt, which the key
		// would otherwise keep alive.
		t.counts[strings.Clone(text)] = n
		t.bytes += len(text)
	}
	t.mu.Unlock()
	return n
}

// Truncate returns the longest prefix of text within max tokens, and
// whether it cut anything. A cut inside a multi-byte character drops that
// character.
func (t *Tokenizer) Truncate(text string, max int) (string, bool) {
	if max <= 0 {
		return "", text != ""
	}
	toks := t.enc.EncodeOrdinary(text)
	if len(toks) <= max {
		return text, false
	}
	return strings.ToValidUTF8(t.enc.Decode(toks[:max]), ""), true
}

// splitChunks cuts text right after the last line break of every run of
// whitespace that holds one. cl100k_base's pre-tokenizer never joins text
// across such a point (a whitespace run with line breaks ends at its last
// break, and what follows is spaces then a word, or nothing), and BPE never
// merges across pre-tokens, so the chunks' counts add up to the count of the
// whole text. FuzzChunkedCountIsExact checks it.
func splitChunks(text string) []string {
	var out []string
	forChunks(text, func(c string) { out = append(out, c) })
	return out
}

// forChunks calls f with each chunk of splitChunks, in order, without
// building the list: a prompt is counted at every call.
func forChunks(text string, f func(chunk string)) {
	start := 0
	for i := 0; i < len(text); i++ {
		next := strings.IndexAny(text[i:], "\n\r")
		if next < 0 {
			break
		}
		i += next
		last := i
		for j := i; j < len(text) && isSpace(text[j]); j++ {
			if text[j] == '\n' || text[j] == '\r' {
				last = j
			}
		}
		f(text[start : last+1])
		start, i = last+1, last
	}
	if start < len(text) {
		f(text[start:])
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
