package tokenizer

import (
	"bytes"
	"container/heap"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// encodings are the pre-tokenizer patterns of OpenAI's encodings (as
// published with tiktoken), by name; the ranks are the loader's embedded
// files of the same names.
var encodings = map[string]string{
	"cl100k_base": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"o200k_base": strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
	"p50k_base": `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
	"r50k_base": `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
}

// bpe encodes text with a byte-pair-encoding vocabulary, as tiktoken does,
// and holds the vocabulary in three flat arrays with no pointers in them:
// the garbage collector never traces a token. (A map of 100,000 token
// strings is 100,000 objects the collector marks at every cycle, several
// milliseconds a cycle for a process that only counts tokens.)
type bpe struct {
	pattern *regexp2.Regexp
	// scan, when set, cuts the pieces in place of pattern, as it does
	// (cl100kPieces for cl100k_base).
	scan func(text string, f func(piece []byte))
	// data holds every token's bytes, in rank order; token r is
	// data[ends[r-1]:ends[r]] (from 0 for r = 0), empty for a rank the
	// vocabulary lacks.
	data []byte
	ends []uint32
	// slots is an open-addressing index of the tokens by their bytes: rank
	// + 1, 0 for a free slot; its length is a power of two.
	slots []uint32
	seed  maphash.Seed
}

// loadBPE reads an encoding's ranks from the embedded file "<name>.tiktoken"
// (lines "<base64 token> <rank>").
func loadBPE(name string) (*bpe, error) {
	pat, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("unknown encoding %q", name)
	}
	re, err := regexp2.Compile(pat, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%s: pattern: %w", name, err)
	}
	file, err := assets.Assets.ReadFile(name + ".tiktoken")
	if err != nil {
		return nil, err
	}
	b, err := parseRanks(name+".tiktoken", file, re)
	if err == nil && name == "cl100k_base" {
		b.scan = cl100kPieces
	}
	return b, err
}

// maxRank bounds the ranks a file may give (the largest vocabulary,
// o200k_base, has 200,000 tokens).
const maxRank = 1 << 24

// parseRanks reads a ranks file (lines "<base64 token> <rank>") into a bpe.
func parseRanks(file string, data []byte, pattern *regexp2.Regexp) (*bpe, error) {
	type entry struct{ start, end, rank uint32 }
	entries := make([]entry, 0, bytes.Count(data, []byte{'\n'})+1)
	toks := make([]byte, 0, base64.StdEncoding.DecodedLen(len(data)))
	top := -1
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		tok, rank, ok := bytes.Cut(line, []byte{' '})
		r, err := strconv.Atoi(string(rank))
		if !ok || err != nil || r < 0 || r >= maxRank {
			return nil, fmt.Errorf("%s line %d: want \"<base64 token> <rank>\" with a rank in [0, %d)", file, n+1, maxRank)
		}
		start := len(toks)
		toks = toks[:start+base64.StdEncoding.DecodedLen(len(tok))]
		k, err := base64.StdEncoding.Decode(toks[start:], tok)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s line %d: token: %w", file, n+1, err)
		case k == 0:
			return nil, fmt.Errorf("%s line %d: empty token", file, n+1)
		}
		toks = toks[:start+k]
		entries = append(entries, entry{uint32(start), uint32(start + k), uint32(r)})
		top = max(top, r)
	}
	// Lay the tokens out by rank.
	b := &bpe{pattern: pattern, ends: make([]uint32, top+1), seed: maphash.MakeSeed()}
	at := make([]int32, top+1)
	for i := range at {
		at[i] = -1
	}
	for i, e := range entries {
		if at[e.rank] >= 0 {
			return nil, fmt.Errorf("%s: rank %d twice", file, e.rank)
		}
		at[e.rank] = int32(i)
	}
	b.data = make([]byte, 0, len(toks))
	for r, i := range at {
		if i >= 0 {
			b.data = append(b.data, toks[entries[i].start:entries[i].end]...)
		}
		b.ends[r] = uint32(len(b.data))
	}
	b.slots = make([]uint32, 1<<bits.Len(uint(2*len(entries))))
	for r := range b.ends {
		tok := b.token(r)
		if len(tok) == 0 {
			continue
		}
		if _, dup := b.rank(tok); dup {
			return nil, fmt.Errorf("%s: token %q twice", file, tok)
		}
		mask := uint64(len(b.slots) - 1)
		for s := maphash.Bytes(b.seed, tok) & mask; ; s = (s + 1) & mask {
			if b.slots[s] == 0 {
				b.slots[s] = uint32(r) + 1
				break
			}
		}
	}
	return b, nil
}

// token returns the bytes of rank r (empty for a rank out of the
// vocabulary).
func (b *bpe) token(r int) []byte {
	if r < 0 || r >= len(b.ends) {
		return nil
	}
	start := uint32(0)
	if r > 0 {
		start = b.ends[r-1]
	}
	return b.data[start:b.ends[r]]
}

// rank returns the rank of a token.
func (b *bpe) rank(tok []byte) (int, bool) {
	mask := uint64(len(b.slots) - 1)
	for s := maphash.Bytes(b.seed, tok) & mask; ; s = (s + 1) & mask {
		v := b.slots[s]
		if v == 0 {
			return 0, false
		}
		if r := int(v - 1); bytes.Equal(b.token(r), tok) {
			return r, true
		}
	}
}

// pieces calls f with each pre-token of text, as tiktoken cuts it: the
// pattern runs over the text's runes (an invalid byte becomes U+FFFD), and
// each piece is the UTF-8 of its runes, in a buffer reused for the next
// piece (f must not keep it).
func (b *bpe) pieces(text string, f func(piece []byte)) {
	if b.scan != nil {
		b.scan(text, f)
		return
	}
	b.patternPieces(text, f)
}

// patternPieces is pieces by running the pattern with regexp2 (about 30
// times slower than cl100kPieces on the engines' YAML).
func (b *bpe) patternPieces(text string, f func(piece []byte)) {
	runes := []rune(text)
	var buf []byte
	m, _ := b.pattern.FindRunesMatch(runes)
	for m != nil {
		buf = buf[:0]
		for _, r := range runes[m.Index : m.Index+m.Length] {
			buf = utf8.AppendRune(buf, r)
		}
		f(buf)
		m, _ = b.pattern.FindNextMatch(m)
	}
}

// count returns the number of tokens of text, encoded with no special
// tokens.
func (b *bpe) count(text string) int {
	n := 0
	var parts []part
	b.pieces(text, func(p []byte) {
		if _, ok := b.rank(p); ok {
			n++
			return
		}
		parts = b.merge(p, parts[:0])
		n += len(parts) - 1
	})
	return n
}

// encode returns the ranks of text's tokens, encoded with no special tokens.
func (b *bpe) encode(text string) []int {
	var (
		out   []int
		parts []part
	)
	b.pieces(text, func(p []byte) {
		if r, ok := b.rank(p); ok {
			out = append(out, r)
			return
		}
		parts = b.merge(p, parts[:0])
		for i := range len(parts) - 1 {
			r, _ := b.rank(p[parts[i].start:parts[i+1].start])
			out = append(out, r)
		}
	})
	return out
}

// decode returns the bytes of tokens; ranks out of the vocabulary give none.
func (b *bpe) decode(ranks []int) []byte {
	var out []byte
	for _, r := range ranks {
		out = append(out, b.token(r)...)
	}
	return out
}

// part is a token of a piece being merged: where it starts, and the rank of
// it joined with the next one (noMerge when the vocabulary has no such
// token).
type part struct {
	start int
	rank  int
}

const noMerge = math.MaxInt

// merge cuts piece into its tokens by byte-pair merging: starting from
// single bytes, it joins the adjacent pair whose join has the lowest rank
// (the leftmost of equals) until no pair joins into a token. It returns the
// tokens' starts followed by len(piece), in parts (reused).
func (b *bpe) merge(piece []byte, parts []part) []part {
	if len(piece) > longPiece {
		return b.mergeLong(piece, parts)
	}
	return b.mergeShort(piece, parts)
}

// mergeShort is merge by scanning the parts for the lowest join at every
// step.
func (b *bpe) mergeShort(piece []byte, parts []part) []part {
	for i := range len(piece) + 1 {
		parts = append(parts, part{start: i, rank: noMerge})
	}
	// pair is the rank of the token that joins parts[i] and parts[i+1].
	pair := func(i int) int {
		if i+2 >= len(parts) {
			return noMerge
		}
		if r, ok := b.rank(piece[parts[i].start:parts[i+2].start]); ok {
			return r
		}
		return noMerge
	}
	for i := range len(parts) - 2 {
		parts[i].rank = pair(i)
	}
	for len(parts) > 1 {
		lowest, at := noMerge, -1
		for i := range len(parts) - 1 {
			if parts[i].rank < lowest {
				lowest, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = pair(at)
		if at > 0 {
			parts[at-1].rank = pair(at - 1)
		}
	}
	return parts
}

// longPiece is the length past which a piece is merged by mergeLong:
// mergeShort is quadratic in the piece's length (a 20 kB word took 110 ms).
const longPiece = 256

// mergeLong is merge in O(n log n): the parts form a linked list by their
// starts, and the candidate joins a heap ordered as merge chooses (lowest
// rank, then leftmost); a join whose parts have changed since it was pushed
// is skipped when it comes up.
func (b *bpe) mergeLong(piece []byte, parts []part) []part {
	n := len(piece)
	next := make([]int, n) // start of a part -> start of the next (n at the end)
	prev := make([]int, n) // start of a part -> start of the previous (-1 first)
	alive := make([]bool, n)
	for i := range n {
		next[i], prev[i], alive[i] = i+1, i-1, true
	}
	var h joins
	push := func(s int) {
		if s < 0 || next[s] >= n {
			return
		}
		end := next[next[s]]
		if r, ok := b.rank(piece[s:end]); ok {
			heap.Push(&h, join{rank: r, start: s, end: end})
		}
	}
	for s := range n - 1 {
		push(s)
	}
	for h.Len() > 0 {
		j := heap.Pop(&h).(join)
		right := next[j.start]
		if !alive[j.start] || right >= n || next[right] != j.end {
			continue // a part of it was joined to another meanwhile
		}
		// Join the part at j.start with the one after it.
		alive[right] = false
		next[j.start] = next[right]
		if next[right] < n {
			prev[next[right]] = j.start
		}
		push(j.start)
		push(prev[j.start])
	}
	for s := 0; s < n; s = next[s] {
		parts = append(parts, part{start: s, rank: noMerge})
	}
	return append(parts, part{start: n, rank: noMerge})
}

// join is a candidate join of the part starting at start with the next one,
// which together end at end.
type join struct{ rank, start, end int }

type joins []join

func (h joins) Len() int { return len(h) }
func (h joins) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].start < h[j].start
}
func (h joins) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *joins) Push(x any)   { *h = append(*h, x.(join)) }
func (h *joins) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
