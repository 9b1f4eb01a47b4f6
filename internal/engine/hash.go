package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/bufpool"
)

// StateHash is the SHA-256 (hex) of the canonical JSON of a working memory.
// Two memories with the same content hash the same, whatever the key order
// or number spelling inside their raw JSON values, so a replay can prove it
// rebuilt the live state.
func StateHash(m *WorkingMemory) (string, error) {
	b, err := CanonicalJSON(m)
	if err != nil {
		return "", fmt.Errorf("state hash: %w", err)
	}
	return HashCanonical(b), nil
}

// HashCanonical is the SHA-256 (hex) of canonical JSON, for callers that
// already hold it (a checkpoint snapshot): StateHash(m) ==
// HashCanonical(CanonicalJSON(m)).
func HashCanonical(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON encodes v as compact JSON with object keys sorted, strings
// escaped minimally (quote, backslash, control characters; no HTML escaping),
// integers written as integers and other numbers in Go's shortest float
// form.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// Canonicalize rewrites a JSON document in canonical form (see CanonicalJSON).
// Two documents that decode to the same value (encoding/json into any, with
// numbers as json.Number, the last of duplicate keys winning) have the same
// canonical form. It works on the bytes in one pass, without building the
// decoded value: the state of a session is canonicalized on every turn.
func Canonicalize(raw []byte) ([]byte, error) {
	return appendCanonical(make([]byte, 0, len(raw)), raw)
}

// CanonicalHash is HashCanonical(Canonicalize(raw)) without keeping the
// canonical form: it is written into a reused buffer. The runner hashes a
// session's working memory, tens of kilobytes, on every turn, and needs its
// canonical form only on the turns it snapshots.
func CanonicalHash(raw []byte) (string, error) {
	buf := canonicalBufs.Get()
	canonical, err := appendCanonical(*buf, raw)
	if err != nil {
		canonicalBufs.Put(buf, *buf)
		return "", err
	}
	defer canonicalBufs.Put(buf, canonical)
	return HashCanonical(canonical), nil
}

// canonicalBufs holds CanonicalHash's buffers.
var canonicalBufs = bufpool.New(maxPooledScratch)

// appendCanonical appends raw's canonical form to dst.
func appendCanonical(dst, raw []byte) ([]byte, error) {
	c := canonicalizers.Get().(*canonicalizer)
	defer func() {
		// Only the scratch space is kept for the next call, holding on to
		// no input.
		c.in, c.pos, c.out = nil, 0, nil
		clear(c.members[:cap(c.members)])
		c.members = c.members[:0]
		if cap(c.scratch) > maxPooledScratch {
			c.scratch = nil
		}
		if cap(c.members) > maxPooledMembers {
			c.members = nil
		}
		canonicalizers.Put(c)
	}()
	c.in, c.out = raw, dst
	c.skipSpace()
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return nil, errors.New("canonical json: data after the JSON value")
	}
	return c.out, nil
}

// canonicalizers keeps the scratch space of Canonicalize (the members
// stack, the copy an object is sorted from) between calls: a working
// memory is canonicalized on every turn.
var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// Bounds of what a pooled canonicalizer keeps: the sort copy, in bytes,
// and the members stack.
const (
	maxPooledScratch = 1 << 20
	maxPooledMembers = 1 << 12
)

// maxCanonicalDepth is encoding/json's nesting limit, kept so the same
// documents are refused.
const maxCanonicalDepth = 10000

// canonicalizer writes the canonical form of in to out. Object members are
// written as they come; an object whose keys are not already in order is
// then rewritten in place from a copy of its members.
type canonicalizer struct {
	in      []byte
	pos     int
	out     []byte
	members []member // a stack: each open object's members above its base
	scratch []byte
	// shapes remembers the key order of objects sorted before: JSON
	// encoded from Go structs repeats a few shapes (a message, an extracted
	// field) many times, and checking a member list against a known shape
	// costs less than sorting it.
	shapes    []shape
	nextShape int // the shape replaced next once shapes is full
}

// shape is the key order of an object: its keys as they came, and the
// members to write (indexes into them) in key order, later duplicates
// winning.
type shape struct {
	keys  [][]byte
	order []int
}

// Bounds of the remembered shapes: how many, the members of the largest,
// and the bytes of its keys.
const (
	maxShapes        = 32
	maxShapeMembers  = 64
	maxShapeKeyBytes = 4096
)

// member is one "key":value written to out[start:end], with its decoded key
// (a slice of the input when it needed no decoding).
type member struct {
	key        []byte
	start, end int
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("canonical json: offset %d: "+format, append([]any{c.pos}, args...)...)
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	if c.pos >= len(c.in) {
		return c.errorf("unexpected end of JSON input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		if depth >= maxCanonicalDepth {
			return c.errorf("exceeded max depth")
		}
		return c.object(depth + 1)
	case b == '[':
		if depth >= maxCanonicalDepth {
			return c.errorf("exceeded max depth")
		}
		return c.array(depth + 1)
	case b == '"':
		s, plain, err := c.str()
		if err != nil {
			return err
		}
		c.appendStr(s, plain)
		return nil
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(c.in)-c.pos >= len(lit) && string(c.in[c.pos:c.pos+len(lit)]) == lit {
				c.out = append(c.out, lit...)
				c.pos += len(lit)
				return nil
			}
		}
		return c.errorf("invalid character %q looking for a value", b)
	}
}

func (c *canonicalizer) array(depth int) error {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		c.skipSpace()
		if err := c.value(depth); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.errorf("unexpected end of JSON input")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return c.errorf("invalid character %q after array element", c.in[c.pos])
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	c.pos++ // {
	c.out = append(c.out, '{')
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return c.errorf("looking for the beginning of an object key string")
		}
		start := len(c.out)
		key, plain, err := c.str()
		if err != nil {
			return err
		}
		c.appendStr(key, plain)
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return c.errorf("looking for ':' after an object key")
		}
		c.pos++
		c.out = append(c.out, ':')
		c.skipSpace()
		if err := c.value(depth); err != nil {
			return err
		}
		c.members = append(c.members, member{key: key, start: start, end: len(c.out)})
		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.errorf("unexpected end of JSON input")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case '}':
			c.pos++
			c.sortMembers(c.members[base:])
			c.out = append(c.out, '}')
			return nil
		default:
			return c.errorf("invalid character %q after object key:value pair", c.in[c.pos])
		}
	}
}

// sortMembers rewrites the members of the object being closed (the tail of
// out) in key order, keeping the last of duplicate keys, as decoding into a
// map would.
func (c *canonicalizer) sortMembers(ms []member) {
	ordered := true
	for i := 1; i < len(ms); i++ {
		if bytes.Compare(ms[i-1].key, ms[i].key) >= 0 {
			ordered = false
			break
		}
	}
	if ordered {
		return
	}
	order := c.order(ms)
	from := ms[0].start
	c.scratch = append(c.scratch[:0], c.out[from:]...)
	c.out = c.out[:from]
	for j, i := range order {
		if j > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.scratch[ms[i].start-from:ms[i].end-from]...)
	}
}

// order returns the members of ms to write, in key order, the last of
// duplicate keys winning: a remembered shape's, or a new one.
func (c *canonicalizer) order(ms []member) []int {
next:
	for _, sh := range c.shapes {
		if len(sh.keys) != len(ms) {
			continue
		}
		for i, k := range sh.keys {
			if !bytes.Equal(k, ms[i].key) {
				continue next
			}
		}
		return sh.order
	}
	order := make([]int, len(ms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(ms[a].key, ms[b].key) })
	kept := order[:0]
	for j, i := range order {
		if j+1 < len(order) && bytes.Equal(ms[order[j+1]].key, ms[i].key) {
			continue // a later duplicate wins
		}
		kept = append(kept, i)
	}
	keyBytes := 0
	for _, m := range ms {
		keyBytes += len(m.key)
	}
	if len(ms) <= maxShapeMembers && keyBytes <= maxShapeKeyBytes {
		sh := shape{keys: make([][]byte, len(ms)), order: kept}
		for i, m := range ms {
			sh.keys[i] = bytes.Clone(m.key)
		}
		if len(c.shapes) < maxShapes {
			c.shapes = append(c.shapes, sh)
		} else {
			c.shapes[c.nextShape] = sh
			c.nextShape = (c.nextShape + 1) % maxShapes
		}
	}
	return kept
}

// str reads a string token and returns its decoded value, as encoding/json
// decodes it (invalid UTF-8 and lone surrogates become U+FFFD). A string
// without escapes comes back as a slice of the input, and plain reports it:
// its canonical form is then the token itself.
func (c *canonicalizer) str() (s []byte, plain bool, err error) {
	start := c.pos
	c.pos++       // "
	var seen byte // the union of the classes of the bytes read
	for c.pos < len(c.in) {
		k := strClass[c.in[c.pos]]
		if k == 0 {
			c.pos++
			continue
		}
		switch k {
		case classQuote:
			c.pos++
			body := c.in[start+1 : c.pos-1]
			if seen == 0 || seen == classHigh && utf8.Valid(body) {
				return body, true, nil
			}
			var d string
			if err := json.Unmarshal(c.in[start:c.pos], &d); err != nil {
				return nil, false, fmt.Errorf("canonical json: %w", err)
			}
			return []byte(d), false, nil
		case classEscape:
			seen |= k
			c.pos += 2 // the escape itself is checked by json.Unmarshal
		case classControl:
			return nil, false, c.errorf("invalid character %q in string literal", c.in[c.pos])
		default: // classHigh
			seen |= k
			c.pos++
		}
	}
	return nil, false, c.errorf("unexpected end of JSON input")
}

// Classes of a byte inside a string token (strClass); 0 is a plain ASCII
// character, the common case, which the scanner steps over.
const (
	classQuote   = 1 << iota // the closing quote
	classEscape              // a backslash
	classControl             // a control character: refused, as by encoding/json
	classHigh                // a byte of a multi-byte UTF-8 sequence (or invalid)
)

var strClass = func() (t [256]byte) {
	for b := range 0x20 {
		t[b] = classControl
	}
	t['"'], t['\\'] = classQuote, classEscape
	for b := 0x80; b < 0x100; b++ {
		t[b] = classHigh
	}
	return t
}()

// appendStr appends the canonical form of a string str returned.
func (c *canonicalizer) appendStr(s []byte, plain bool) {
	if plain {
		// No escapes and valid UTF-8: no byte needs escaping either (a raw
		// control character would have been refused).
		c.out = append(c.out, '"')
		c.out = append(c.out, s...)
		c.out = append(c.out, '"')
		return
	}
	c.out = appendCanonicalString(c.out, s)
}

func (c *canonicalizer) number() error {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.in[c.pos] == '-' {
		c.pos++
	}
	switch {
	case c.pos < len(c.in) && c.in[c.pos] == '0':
		c.pos++
	case digits() == 0:
		return c.errorf("invalid number")
	}
	integer := true
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		integer = false
		if digits() == 0 {
			return c.errorf("invalid number: no digits after the decimal point")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		integer = false
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return c.errorf("invalid number: no digits in the exponent")
		}
	}
	lit := c.in[start:c.pos]
	if integer && string(lit) != "-0" {
		// The grammar allows no leading zeros: the literal is already the
		// integer's canonical form.
		c.out = append(c.out, lit...)
		return nil
	}
	c.out = append(c.out, canonicalNumber(json.Number(lit))...)
	return nil
}

func canonicalNumber(n json.Number) string {
	if !strings.ContainsAny(string(n), ".eE") {
		// An integer literal keeps every digit, however large.
		if i, ok := new(big.Int).SetString(string(n), 10); ok {
			return i.String()
		}
	}
	if f, err := strconv.ParseFloat(string(n), 64); err == nil {
		if f == float64(int64(f)) && f >= -1<<53 && f <= 1<<53 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(n)
}

const hexDigits = "0123456789abcdef"

// appendCanonicalString appends s as a JSON string: quote, backslash and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, nothing else.
func appendCanonicalString(out []byte, s []byte) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case b == '"':
			out = append(out, '\\', '"')
		case b == '\\':
			out = append(out, '\\', '\\')
		case b == '\n':
			out = append(out, '\\', 'n')
		case b == '\r':
			out = append(out, '\\', 'r')
		case b == '\t':
			out = append(out, '\\', 't')
		case b < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		default:
			out = append(out, b)
		}
		i++
	}
	return append(out, '"')
}
