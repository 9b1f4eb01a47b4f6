package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"sync"
)

// canonicalVersion is part of every canonical form, so a change to what is
// hashed changes every hash instead of silently colliding with old records.
const canonicalVersion = 1

// A canonical request holds the fields that decide the answer, in a fixed
// order: canonicalHead's, then the schema, then canonicalTail's. TenantID,
// Scope and CallID say whom a call is for, not what it asks, and stay out.
type canonicalHead struct {
	V        int       `json:"v"`
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	JSON     bool      `json:"json"`
}

type canonicalTail struct {
	Temperature any    `json:"temperature,omitempty"`
	MaxTokens   int    `json:"max_tokens"`
	Seed        *int64 `json:"seed,omitempty"`
	Purpose     string `json:"purpose"`
}

// CanonicalJSON is the form of req that Hash digests: the fields that decide
// the answer, with the schema re-encoded with sorted keys and no spaces, so
// equal requests give equal bytes. Recorders keep it as the request.
func CanonicalJSON(req Request) []byte { return AppendCanonicalJSON(nil, req) }

// AppendCanonicalJSON appends CanonicalJSON(req) to dst and returns the
// extended buffer: a caller encoding a prompt of tens of kilobytes for every
// call reuses one buffer instead of allocating one a call.
func AppendCanonicalJSON(dst []byte, req Request) []byte {
	head := canonicalHead{V: canonicalVersion, Model: req.Model, Messages: req.Messages, JSON: req.JSON || req.Schema != nil}
	if head.Messages == nil {
		head.Messages = []Message{}
	}
	tail := canonicalTail{MaxTokens: req.MaxTokens, Seed: req.Seed, Purpose: req.Purpose}
	if t := req.Temperature; t != nil {
		// JSON has no NaN or infinity; spell them so they still hash.
		if math.IsNaN(*t) || math.IsInf(*t, 0) {
			tail.Temperature = strconv.FormatFloat(*t, 'g', -1, 64)
		} else {
			tail.Temperature = *t
		}
	}
	// An Encoder writes what Marshal returns, and a newline, into the
	// caller's buffer. Every field is a string, a finite number or a bool:
	// encoding cannot fail.
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	encode := func(v any) {
		if err := enc.Encode(v); err != nil {
			panic("llm: canonical request: " + err.Error())
		}
		buf.Truncate(buf.Len() - 1) // the newline
	}
	encode(head)
	buf.Truncate(buf.Len() - 1) // the closing brace: the members go on
	if req.Schema != nil {
		// The schema's canonical form (cached) is spliced in as it is: as a
		// json.RawMessage the encoder would scan and compact it again at
		// every call, and it is the largest part after the messages.
		buf.WriteString(`,"schema":{"name":`)
		encode(req.Schema.Name)
		buf.WriteString(`,"json":`)
		buf.Write(canonicalSchemaJSON(req.Schema.JSON))
		if req.Schema.Strict {
			// Only when set, so that the hashes of every request recorded
			// before the field existed stay as they were.
			buf.WriteString(`,"strict":true`)
		}
		buf.WriteByte('}')
	}
	at := buf.Len()
	encode(tail) // {"max_tokens":…}: never empty, its brace becomes a comma
	buf.Bytes()[at] = ','
	return buf.Bytes()
}

// Hash identifies a request by what it asks: the SHA-256, in hex, of
// CanonicalJSON(req). Two requests with the same hash get the same answer
// from a deterministic provider, and a replayer serves one's recorded answer
// to the other.
func Hash(req Request) string {
	return HashCanonical(CanonicalJSON(req))
}

// HashCanonical is Hash for a request already in its canonical form.
func HashCanonical(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// schemaCache holds canonical forms of schemas: a caller sends the same
// schema with every request, and re-encoding a large one costs more than the
// rest of the request.
var schemaCache struct {
	sync.Mutex
	m map[string]json.RawMessage
}

const maxCachedSchemas = 256

func canonicalSchemaJSON(raw json.RawMessage) json.RawMessage {
	schemaCache.Lock()
	c, ok := schemaCache.m[string(raw)]
	schemaCache.Unlock()
	if ok {
		return c
	}
	c = canonicalJSONValue(raw)
	schemaCache.Lock()
	if schemaCache.m == nil || len(schemaCache.m) >= maxCachedSchemas {
		schemaCache.m = map[string]json.RawMessage{}
	}
	schemaCache.m[string(raw)] = c
	schemaCache.Unlock()
	return c
}

// canonicalJSONValue re-encodes a JSON document with sorted object keys and
// numbers kept as written. A document that is not JSON is kept as a JSON
// string of its bytes, so it still hashes, and differently from any JSON.
func canonicalJSONValue(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		s, _ := json.Marshal(string(raw))
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		s, _ := json.Marshal(string(raw))
		return s
	}
	return b
}
