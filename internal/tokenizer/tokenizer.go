// Package tokenizer counts tokens as OpenAI's models do, with tiktoken
// encodings whose ranks are embedded in the binary (no network, ever).
//
// One Tokenizer exists per encoding in a process. It holds its vocabulary in
// flat arrays the garbage collector never traces (see bpe), and it remembers
// counts: prompts and contexts repeat most of their text from one turn to
// the next. With cl100k_base (the default) text is counted by chunks of
// lines whose counts add up exactly to the whole text's; with the other
// encodings whole texts are remembered. The counts are remembered by a
// 128-bit digest of the text, not the text, so the memory is pointer-free
// too.
package tokenizer

import (
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Default is the encoding used when none is named.
const Default = "cl100k_base"

// maxCached bounds the counts a Tokenizer remembers (about 40 bytes each);
// past it, it starts afresh.
const maxCached = 1 << 18

// Tokenizer counts and truncates text in one encoding. It is safe for
// concurrent use.
type Tokenizer struct {
	bpe      *bpe
	encoding string
	chunked  bool

	seeds  [2]maphash.Seed
	mu     sync.Mutex
	counts map[textKey]int32
}

// textKey names a text in the cache: two independent 64-bit hashes, so
// that two texts of a process sharing one is not a concern.
type textKey [2]uint64

var instances sync.Map // encoding → func() (*Tokenizer, error)

// New returns the process's tokenizer of an encoding (cl100k_base,
// o200k_base, p50k_base, r50k_base); "" means Default.
func New(encoding string) (*Tokenizer, error) {
	if encoding == "" {
		encoding = Default
	}
	if _, known := encodings[encoding]; !known {
		// Refused before it is kept: any string could be asked for.
		return nil, fmt.Errorf("tokenizer: unknown encoding %q (known: %s)", encoding,
			strings.Join(slices.Sorted(maps.Keys(encodings)), ", "))
	}
	load, _ := instances.LoadOrStore(encoding, sync.OnceValues(func() (*Tokenizer, error) {
		b, err := loadBPE(encoding)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		return &Tokenizer{bpe: b, encoding: encoding, chunked: encoding == "cl100k_base",
			seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, counts: map[textKey]int32{}}, nil
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
		if k, ok := t.counts[t.key(c)]; ok {
			n += int(k)
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

func (t *Tokenizer) key(text string) textKey {
	return textKey{maphash.String(t.seeds[0], text), maphash.String(t.seeds[1], text)}
}

func (t *Tokenizer) countCached(text string) int {
	if text == "" {
		return 0
	}
	d := t.key(text)
	t.mu.Lock()
	n, ok := t.counts[d]
	t.mu.Unlock()
	if ok {
		return int(n)
	}
	n = int32(t.bpe.count(text))
	t.mu.Lock()
	if len(t.counts) >= maxCached {
		clear(t.counts)
	}
	t.counts[d] = n
	t.mu.Unlock()
	return int(n)
}

// Rank returns the rank of text as one token of the encoding, and false
// when text is not one token. BPE merges its most frequent pairs first, so
// of two tokens the one of lower rank was the more common in the text the
// encoding was made from (" London" is 7295 in cl100k_base, " london"
// 63146).
func (t *Tokenizer) Rank(text string) (int, bool) { return t.bpe.rank([]byte(text)) }

// Truncate returns the longest prefix of text within max tokens, and
// whether it cut anything. A cut inside a multi-byte character drops that
// character.
func (t *Tokenizer) Truncate(text string, max int) (string, bool) {
	if max <= 0 {
		return "", text != ""
	}
	toks := t.bpe.encode(text)
	if len(toks) <= max {
		return text, false
	}
	return strings.ToValidUTF8(string(t.bpe.decode(toks[:max])), ""), true
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
	breaks := breakFinder{text: text, nl: -1, cr: -1}
	for i := 0; i < len(text); i++ {
		next := breaks.next(i)
		if next < 0 {
			break
		}
		i = next
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

// breakFinder finds the line breaks ('\n' or '\r') of a text from offsets
// that only grow, in vectorized scans (strings.IndexByte) rather than
// IndexAny's loop over bytes: prompts are counted at every call. It
// remembers where the next of each kind is, so that every byte is scanned
// once for each, however the two kinds alternate.
type breakFinder struct {
	text   string
	nl, cr int // the next '\n' and '\r' at or after the last offset asked (len(text): none); -1 before the first
}

// next returns the index of the first line break at or after i, or -1.
func (b *breakFinder) next(i int) int {
	if b.nl < i {
		b.nl = indexFrom(b.text, i, '\n')
	}
	if b.cr < i {
		b.cr = indexFrom(b.text, i, '\r')
	}
	if n := min(b.nl, b.cr); n < len(b.text) {
		return n
	}
	return -1
}

func indexFrom(s string, i int, c byte) int {
	if j := strings.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return len(s)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
