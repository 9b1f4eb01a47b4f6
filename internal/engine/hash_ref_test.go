package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// referenceCanonicalize is the first, simple implementation of Canonicalize
// (decode into any, write back sorted). The one-pass Canonicalize must give
// the same bytes, or fail where it fails: stored state hashes depend on it.
func referenceCanonicalize(raw []byte) ([]byte, error) {
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
	if err := referenceWrite(&buf, doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func referenceWrite(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		fmt.Fprint(buf, x)
	case json.Number:
		buf.WriteString(canonicalNumber(x))
	case string:
		referenceString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := referenceWrite(buf, e); err != nil {
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
			referenceString(buf, k)
			buf.WriteByte(':')
			if err := referenceWrite(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unexpected %T", v)
	}
	return nil
}

func referenceString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
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

var canonicalCases = []string{
	`{"b":1,"a":[true,null,"x"]}`,
	` { "a" : 1.0 , "b" : 1e2 } `,
	`{"s":"<&>"}`, `0.1`, `12345678901234567890`, `-0`, `-0.0`, `2.5e-7`, `1E400`, `-1e-400`,
	`{"n":{"z":{},"y":[]}}`,
	`{"a":1,"a":2}`, `{"b":{"x":1,"x":[2]},"a":0,"b":3}`,
	`{"\u0062":1,"a":2,"b":0}`,
	`"a\"b\\c"`, `"line\nbreak\ttab\u0001"`, `"\u00e9\u2028<>&"`, `"\ud800"`, `"\ud83d\ude00"`,
	"\"bad \xff byte\"", "{\"k\xff\":1,\"k\":2}", `"\/"`,
	`[]`, `{}`, `[ ]`, `{ }`, `[1,[2,[3,{"z":1,"a":2}]]]`,
	`true`, `false`, `null`,
	// refused
	``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `1 2`, `"x`, "\"a\x01\"",
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `tru`, `truex`, `nul`, `"\x"`, `"\u12"`, `[1]]`, `{"a":1}}`,
	`"\`, `{"a":1 "b":2}`, "\xef\xbb\xbf1",
}

func TestCanonicalizeMatchesReference(t *testing.T) {
	for _, in := range canonicalCases {
		checkCanonical(t, []byte(in))
	}
	// Working memories, as the runner hashes them every turn.
	def := minimalDef(t)
	m := NewWorkingMemory(def, "s1", "p1")
	m.Extraction.Fields["basics.goal"] = ExtractedField{Value: json.RawMessage(`{"y":"z","x":1.50,"w":[3,2,1]}`),
		Confidence: 0.8, ExtractedFromTurns: []int{1}}
	m.History = append(m.History, Message{Role: RoleUser, Content: "Hi <there> & \"you\"\n\ttab \u2028", Turn: 1})
	// And one of the turn-path benchmark, at turn 13.
	for _, m := range []*WorkingMemory{m, realMemory(t)} {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		checkCanonical(t, raw)
	}
}

// TestCanonicalizeRemembersShapes checks the remembered key orders (see
// canonicalizer.shapes) against the reference: a shape met again, one of
// the same length with other keys or a duplicate key, more shapes than are
// remembered, and an object too large to remember.
func TestCanonicalizeRemembersShapes(t *testing.T) {
	docs := []string{
		`[{"b":1,"a":2},{"b":3,"a":4},{"b":5,"c":6},{"b":7,"a":8,"a":9},{"b":7,"b":8},{"c":1,"a":2},{"b":{"b":1,"a":2},"a":0}]`,
		`{"b":{"b":1,"a":2},"a":[{"b":3,"a":4}]}`,
	}
	var many, large strings.Builder
	many.WriteByte('[')
	for i := range 2*maxShapes + 5 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"k%02d":%d,"a":%d}`, i%(maxShapes+3), i, -i)
	}
	many.WriteByte(']')
	large.WriteByte('{')
	for i := range maxShapeMembers + 10 {
		if i > 0 {
			large.WriteByte(',')
		}
		fmt.Fprintf(&large, `"m%03d":%d`, maxShapeMembers+10-i, i)
	}
	large.WriteByte('}')
	docs = append(docs, many.String(), large.String(), large.String())
	longKeys := `{"b` + strings.Repeat("x", maxShapeKeyBytes) + `":1,"a":2}`
	docs = append(docs, longKeys, longKeys)
	// Twice: the second round finds the shapes of the first remembered.
	for range 2 {
		for _, d := range docs {
			checkCanonical(t, []byte(d))
		}
	}

	// What is remembered: not the shape of keys too long, nor of an
	// object already in order.
	c := &canonicalizer{}
	for _, tc := range []struct {
		doc    string
		shapes int
	}{{longKeys, 0}, {`{"a":1,"b":2}`, 0}, {`{"b":1,"a":2}`, 1}, {`[{"b":1,"a":2},{"b":3,"a":4}]`, 1}, {`{"c":1,"a":2}`, 2}} {
		c.in, c.pos, c.out = []byte(tc.doc), 0, nil
		if err := c.value(0); err != nil {
			t.Fatal(err)
		}
		if len(c.shapes) != tc.shapes {
			t.Errorf("after %.40s: %d shapes remembered, want %d", tc.doc, len(c.shapes), tc.shapes)
		}
	}
}

func checkCanonical(t *testing.T, in []byte) {
	t.Helper()
	want, werr := referenceCanonicalize(in)
	got, gerr := Canonicalize(in)
	switch {
	case (werr == nil) != (gerr == nil):
		t.Errorf("Canonicalize(%q): error %v, reference error %v", in, gerr, werr)
	case werr == nil && !bytes.Equal(got, want):
		t.Errorf("Canonicalize(%q) = %s, reference %s", in, got, want)
	}
}

func FuzzCanonicalizeMatchesReference(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkCanonical(t, in) })
}

// BenchmarkCanonicalJSON canonicalizes a small working memory and a real
// one: project-discovery's at turn 13 of the turn-path benchmark
// (testdata/working_memory.json, 16 kB as json.Marshal writes it).
func BenchmarkCanonicalJSON(b *testing.B) {
	def := minimalDef(b)
	small := NewWorkingMemory(def, "s1", "p1")
	for i := range 20 {
		small.History = append(small.History, Message{Role: RoleUser, Content: fmt.Sprintf("message %d with some words in it, like a user would write", i), Turn: i})
	}
	for _, c := range []struct {
		name string
		m    *WorkingMemory
	}{{"small", small}, {"turn13", realMemory(b)}} {
		raw, err := json.Marshal(c.m)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []struct {
			name string
			fn   func([]byte) ([]byte, error)
		}{{"reference", referenceCanonicalize}, {"onepass", Canonicalize}} {
			b.Run(c.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := f.fn(raw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// realMemory is a working memory of the turn-path benchmark.
func realMemory(tb testing.TB) *WorkingMemory {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "working_memory.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var m WorkingMemory
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatal(err)
	}
	return &m
}
