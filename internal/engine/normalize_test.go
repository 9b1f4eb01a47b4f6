package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	fastjson "github.com/segmentio/encoding/json"
)

// A memory decoded from JSON whose raw values are spaced out, key-sorted
// and unescaped as PostgreSQL's JSONB returns them equals, once normalized,
// its Clone — the memory a turn used to work on.
func TestNormalizeDecodedEqualsClone(t *testing.T) {
	def := minimalDef(t)
	m := NewWorkingMemory(def, "s1", "p1")
	m.UpdatedAt = time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	m.Extraction.Fields["basics.goal"] = ExtractedField{Value: json.RawMessage(`{"z": 1, "a": ["x <y> & z", 2.50]}`),
		Confidence: 0.8, ExtractedFromTurns: []int{1},
		SupersededPrevious: &SupersededValue{Value: json.RawMessage(`[ "old" ]`), AtTurn: 1}}
	m.Extraction.Fields["basics.name"] = ExtractedField{Value: json.RawMessage(`"Acme"`)}
	m.InboundHandoff = json.RawMessage(`{"b": 2, "a": "<tag>"}`)
	m.BackgroundTasks.Completed = []TaskRecord{{TaskID: "t1", Result: json.RawMessage(`{"summary": "ok",  "n": [1, 2]}`)},
		{TaskID: "t2"}}
	m.History = append(m.History, Message{Role: RoleUser, Content: "Hello <b>", Turn: 1})
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// As JSONB gives it back: spaces after colons and commas, raw "<".
	spaced := strings.NewReplacer(`":`, `": `, `,"`, `, "`, `\u003c`, `<`, `\u003e`, `>`, `\u0026`, `&`).Replace(string(raw))
	for name, text := range map[string]string{"json.Marshal": string(raw), "jsonb": spaced} {
		var decoded WorkingMemory
		if err := json.Unmarshal([]byte(text), &decoded); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := decoded.Clone()
		if err := decoded.NormalizeDecoded(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&decoded, want) {
			g, _ := json.Marshal(&decoded)
			w, _ := json.Marshal(want)
			t.Errorf("%s: normalized memory differs from its clone:\n got %s\nwant %s", name, g, w)
		}
		if string(decoded.InboundHandoff) != `{"b":2,"a":"\u003ctag\u003e"}` {
			t.Errorf("%s: inbound handoff = %s", name, decoded.InboundHandoff)
		}
	}
}

// FuzzMarshalsAsItself checks the shortcut of NormalizeDecoded: whenever it
// says json.Marshal would return a valid raw value unchanged, it does.
func FuzzMarshalsAsItself(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": 1}`, `"x <y>"`, `"\u003c"`, `["a","b\"c",{"d":null}]`, `"\u2028"`,
		"\"\u2028\"", `1.50`, `"a\\"`, `" "`, "\"\xff\"", `{"k":"v"}` + " ", `true`, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := json.RawMessage(s)
		if !json.Valid(raw) {
			return
		}
		b, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		if marshalsAsItself(raw) && string(b) != s {
			t.Errorf("marshalsAsItself(%q), but json.Marshal writes %q", s, b)
		}
	})
}

// BenchmarkDecodeMemory decodes a real working memory
// (testdata/working_memory.json) as the runner service does for a turn:
// segmentio's decoder, then NormalizeDecoded.
func BenchmarkDecodeMemory(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "working_memory.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var m WorkingMemory
		if err := fastjson.Unmarshal(raw, &m); err != nil {
			b.Fatal(err)
		}
		if err := m.NormalizeDecoded(); err != nil {
			b.Fatal(err)
		}
	}
}
