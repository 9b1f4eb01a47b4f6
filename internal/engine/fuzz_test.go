package engine

import (
	"encoding/json"
	"os"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse feeds arbitrary bytes to the strict loader: it must never panic,
// must return either a definition or errors, and a definition it accepts
// must survive a YAML round trip unchanged.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("engine_id: x\nphases: [{id: A, order: 1}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("phases:\n  - &p {id: A}\n  - *p\n"))
	f.Add([]byte("context_config: {max_tokens: 1e99}\n"))
	f.Add([]byte("background_tasks: [{estimated_duration: 3s, failure_strategy: {retry_delay: 1h}}]\n"))
	f.Add([]byte("extraction_schema: {fields: [{cues: {values: [{when: [x], value: {a: [1, 2]}}]}}]}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		def, rep := Parse("fuzz.yaml", in)
		if def == nil {
			if rep.Valid() {
				t.Fatal("no definition and no error")
			}
			return
		}
		if !rep.Valid() {
			t.Fatalf("definition returned with errors: %v", rep.Err())
		}
		_ = Validate(def, ValidateEnv{}) // must not panic either
		want, err := json.Marshal(def)
		if err != nil {
			return // NaN or Inf: no JSON form to compare
		}
		out, err := yaml.Marshal(def)
		if err != nil {
			t.Fatalf("marshal accepted definition: %v", err)
		}
		again, rep := Parse("again.yaml", out)
		if again == nil {
			t.Fatalf("re-parse of\n%s\nfailed: %v", out, rep.Err())
		}
		got, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		// YAML writes a nil list as [], so compare with nulls as empty lists.
		if got, want := nullsAsLists(t, got), nullsAsLists(t, want); got != want {
			t.Fatalf("round trip changed the definition:\n got %s\nwant %s", got, want)
		}
	})
}

func nullsAsLists(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var fix func(any) any
	fix = func(v any) any {
		switch x := v.(type) {
		case nil:
			return []any{}
		case []any:
			for i := range x {
				x[i] = fix(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = fix(x[k])
			}
		}
		return v
	}
	out, err := json.Marshal(fix(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
