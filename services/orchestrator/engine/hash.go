package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
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
	b, ok := appendCanonicalEvent(make([]byte, 0, 512), e)
	if !ok {
		var err error
		if b, err = CanonicalJSON(e); err != nil {
			return "", fmt.Errorf("hash event %d: %w", e.Seq, err)
		}
	}
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// appendCanonicalEvent appends CanonicalJSON(e) to b, written directly
// rather than marshalled, decoded into maps and marshalled again: every
// transition hashes its event, and on a large run that round trip was a
// good part of the run loop's time. It covers the events transitions emit —
// strings of plain ASCII, raw values (handover, annotation) canonical
// already, as the transitions make them — and reports false for anything
// else (RUN_STARTED's plan, an error message with quotes), which the caller
// then encodes the slow way. TestCanonicalEventMatchesCanonicalJSON holds
// the two to the same bytes.
func appendCanonicalEvent(b []byte, e Event) ([]byte, bool) {
	if e.Start != nil || e.At.Year() < 0 || e.At.Year() > 9999 {
		return b, false
	}
	ok := true
	str := func(s string) {
		if !plainString(s) {
			ok = false
			return
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	// Keys in sorted order, as canonicalize writes them.
	b = append(b, `{"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.DispatchID != "" {
		b = append(b, `,"dispatch_id":`...)
		str(e.DispatchID)
	}
	if e.Error != nil {
		b = append(b, `,"error":{"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Error.Attempt), 10)
		b = append(b, `,"kind":`...)
		str(string(e.Error.Kind))
		b = append(b, `,"message":`...)
		str(e.Error.Message)
		b = append(b, `,"retryable":`...)
		b = strconv.AppendBool(b, e.Error.Retryable)
		b = append(b, '}')
	}
	if len(e.Handover) > 0 {
		b = append(b, `,"handover":`...)
		b = append(b, e.Handover...)
	}
	if e.Key != "" {
		b = append(b, `,"key":`...)
		str(e.Key)
	}
	if len(e.Outputs) > 0 {
		b = append(b, `,"outputs":[`...)
		for i, o := range e.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			str(o.Name)
			b = append(b, `,"path":`...)
			str(o.Path)
			b = append(b, `,"sha256":`...)
			str(o.SHA256)
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, o.Size, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		str(e.Reason)
	}
	b = append(b, `,"run_id":`...)
	str(e.RunID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	if e.Status != "" {
		b = append(b, `,"status":`...)
		str(e.Status)
	}
	if e.TaskID != "" {
		b = append(b, `,"task_id":`...)
		str(e.TaskID)
	}
	b = append(b, `,"type":`...)
	str(string(e.Type))
	if len(e.Value) > 0 {
		b = append(b, `,"value":`...)
		b = append(b, e.Value...)
	}
	b = append(b, '}')
	return b, ok
}

// plainString reports whether s is printable ASCII with nothing JSON
// escapes: its JSON form is s in quotes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
