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

// canonicalRequest holds the fields that decide the answer, in a fixed
// order. TenantID, Scope and CallID say whom a call is for, not what it
// asks, and stay out.
type canonicalRequest struct {
	V           int              `json:"v"`
	Model       string           `json:"model"`
	Messages    []Message        `json:"messages"`
	JSON        bool             `json:"json"`
	Schema      *canonicalSchema `json:"schema,omitempty"`
	Temperature any              `json:"temperature,omitempty"`
	MaxTokens   int              `json:"max_tokens"`
	Seed        *int64           `json:"seed,omitempty"`
	Purpose     string           `json:"purpose"`
}

type canonicalSchema struct {
	Name string          `json:"name"`
	JSON json.RawMessage `json:"json"`
}

// CanonicalJSON is the form of req that Hash digests: the fields that decide
// the answer, with the schema re-encoded with sorted keys and no spaces, so
// equal requests give equal bytes. Recorders keep it as the request.
func CanonicalJSON(req Request) []byte { return AppendCanonicalJSON(nil, req) }

// AppendCanonicalJSON appends CanonicalJSON(req) to dst and returns the
// extended buffer: a caller encoding a prompt of tens of kilobytes for every
// call reuses one buffer instead of allocating one a call.
func AppendCanonicalJSON(dst []byte, req Request) []byte {
	c := canonicalRequest{
		V:         canonicalVersion,
		Model:     req.Model,
		Messages:  req.Messages,
		JSON:      req.JSON || req.Schema != nil,
		MaxTokens: req.MaxTokens,
		Seed:      req.Seed,
		Purpose:   req.Purpose,
	}
	if t := req.Temperature; t != nil {
		// JSON has no NaN or infinity; spell them so they still hash.
		if math.IsNaN(*t) || math.IsInf(*t, 0) {
			c.Temperature = strconv.FormatFloat(*t, 'g', -1, 64)
		} else {
			c.Temperature = *t
		}
	}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	if req.Schema != nil {
		c.Schema = &canonicalSchema{Name: req.Schema.Name, JSON: canonicalSchemaJSON(req.Schema.JSON)}
	}
	// An Encoder writes what Marshal returns, and a newline, into the
	// caller's buffer.
	buf := bytes.NewBuffer(dst)
	if err := json.NewEncoder(buf).Encode(c); err != nil {
		// Every field is a string, a finite number, a bool or JSON that
		// canonicalJSONValue has checked: encoding cannot fail.
		panic("llm: canonical request: " + err.Error())
	}
	out := buf.Bytes()
	return out[:len(out)-1]
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
