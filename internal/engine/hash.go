package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
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
func Canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical json: data after the JSON value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		buf.WriteString(canonicalNumber(x))
	case string:
		writeString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unexpected %T", v)
	}
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

// writeString writes s as a JSON string: quote, backslash and control
// characters escaped, invalid UTF-8 replaced by U+FFFD, nothing else.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s { // ranging over a string yields U+FFFD for bad bytes
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[r>>4])
			buf.WriteByte(hexDigits[r&0xf])
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}
