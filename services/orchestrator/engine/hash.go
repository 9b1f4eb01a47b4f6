package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// CanonicalJSON encodes v as canonical JSON: object keys sorted at every
// level, no insignificant whitespace, numbers as written. Two values with the
// same meaning encode to the same bytes whatever their Go field order or the
// key order of embedded raw JSON.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonicalize(raw)
}

// canonicalize re-encodes raw JSON canonically. Numbers are kept as their
// literal text (json.Number), so no float rounding changes a value.
func canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Hash is the SHA-256 (hex) of the state's canonical JSON. A replay that
// rebuilds the same state, history included (LogHash), has the same hash.
func Hash(s State) (string, error) {
	b, err := CanonicalJSON(s)
	if err != nil {
		return "", fmt.Errorf("hash state: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// chain extends a log hash with one event.
func chain(prev string, e Event) (string, error) {
	b, err := CanonicalJSON(e)
	if err != nil {
		return "", fmt.Errorf("hash event %d: %w", e.Seq, err)
	}
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}
