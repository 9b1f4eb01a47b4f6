package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{` { "a" : 1.0 , "b" : 1e2 } `, `{"a":1,"b":100}`},
		{`{"s":"<&>"}`, `{"s":"<&>"}`},
		{`0.1`, `0.1`},
		{`12345678901234567890`, `12345678901234567890`},
		{`-0`, `0`},
		{`2.5e-7`, `2.5e-07`},
		{`{"n":{"z":{},"y":[]}}`, `{"n":{"y":[],"z":{}}}`},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil {
			t.Fatalf("canonicalize %s: %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("canonicalize %s = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestStateHashIgnoresRepresentationNotContent(t *testing.T) {
	def := minimalDef(t)
	build := func(value string, order []string) *WorkingMemory {
		m := NewWorkingMemory(def, "s1", "p1")
		for _, k := range order {
			m.Techniques.Cooldowns[k] = len(k)
			m.Completeness.ByCategory[k] = 0.5
		}
		m.Extraction.Fields["basics.goal"] = ExtractedField{Value: json.RawMessage(value), Confidence: 0.8, ExtractedFromTurns: []int{1}}
		m.InboundHandoff = json.RawMessage(`{"b": 2, "a": 1}`)
		return m
	}
	h1, err := StateHash(build(`{"x": 1, "y": "z"}`, []string{"alpha", "beta", "gamma"}))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := StateHash(build(`{"y":"z","x":1.0}`, []string{"gamma", "alpha", "beta"}))
	if err != nil {
		t.Fatal(err)
	}
	if h1 != h2 {
		t.Errorf("hashes differ for equal content: %s vs %s", h1, h2)
	}
	h3, err := StateHash(build(`{"y":"z","x":2}`, []string{"alpha", "beta", "gamma"}))
	if err != nil {
		t.Fatal(err)
	}
	if h3 == h1 {
		t.Error("hash unchanged after a value changed")
	}
}

func TestCloneIsDeep(t *testing.T) {
	m := NewWorkingMemory(minimalDef(t), "s1", "p1")
	m.Extraction.Fields["basics.goal"] = ExtractedField{Value: json.RawMessage(`"a"`), ExtractedFromTurns: []int{1}}
	c := m.Clone()
	c.Extraction.Fields["basics.goal"] = ExtractedField{Value: json.RawMessage(`"b"`)}
	c.Obligations.Items[0].Status = StatusSatisfied
	if m.Extraction.String("basics.goal") != "a" || m.Obligations.Items[0].Status != StatusPending {
		t.Error("changing the clone changed the original")
	}
	h1, _ := StateHash(m)
	h2, _ := StateHash(m.Clone())
	if h1 != h2 {
		t.Error("clone hashes differently")
	}
}

func TestCanonicalStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"a\"b\\c"`, `"a\"b\\c"`},
		{`"line\nbreak\ttab\u0001"`, `"line\nbreak\ttab\u0001"`},
		{`"\u00e9\u2028<>&"`, "\"é\u2028<>&\""},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonicalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
		var a, b string
		if json.Unmarshal([]byte(tt.in), &a) != nil || json.Unmarshal(got, &b) != nil || a != b {
			t.Errorf("%s does not decode to the same string", got)
		}
	}
	got, _ := CanonicalJSON("bad \xff byte")
	if string(got) != "\"bad \uFFFD byte\"" {
		t.Errorf("invalid UTF-8 = %q", got)
	}
}

func FuzzCanonicalize(f *testing.F) {
	f.Add(`{"b":[1,2.50,"x\u0000"],"a":{"c":null}}`)
	f.Add(`"\ud800"`)
	f.Fuzz(func(t *testing.T, s string) {
		c1, err := Canonicalize([]byte(s))
		if err != nil {
			return
		}
		c2, err := Canonicalize(c1)
		if err != nil || string(c1) != string(c2) {
			t.Fatalf("not idempotent: %s -> %s (%v)", c1, c2, err)
		}
		// Twice, so that the second writes into a reused buffer.
		for range 2 {
			if h, err := CanonicalHash([]byte(s)); err != nil || h != HashCanonical(c1) {
				t.Fatalf("CanonicalHash(%s) = %s, %v; want the hash of %s", s, h, err, c1)
			}
		}
		// Numbers as json.Number, as Canonicalize reads them: an integer of
		// 300 digits is past float64, not invalid.
		decode := func(b []byte) error {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var v any
			return d.Decode(&v)
		}
		if decode([]byte(s)) == nil && decode(c1) != nil {
			t.Fatalf("canonical form %s does not decode", c1)
		}
	})
}
