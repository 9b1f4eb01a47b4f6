package engine

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite engines/engine.schema.json")

const schemaFile = "../../engines/engine.schema.json"

func TestJSONSchemaUpToDate(t *testing.T) {
	got, err := JSONSchema(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date with the Go types; run go test ./internal/engine -run TestJSONSchemaUpToDate -update", schemaFile)
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return s
}

// yamlToJSON reads a YAML file as the JSON instance an editor would check.
func yamlToJSON(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestShippedEnginesMatchTheSchema(t *testing.T) {
	s := compileSchema(t)
	files, err := filepath.Glob("../../engines/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no engines found: %v", err)
	}
	files = append(files, "testdata/minimal.yaml")
	for _, f := range files {
		if err := s.Validate(yamlToJSON(t, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSchemaRejectsUnknownKeys(t *testing.T) {
	s := compileSchema(t)
	inst := yamlToJSON(t, "testdata/minimal.yaml").(map[string]any)
	inst["phases"].([]any)[0].(map[string]any)["colour"] = "blue"
	if err := s.Validate(inst); err == nil {
		t.Error("schema accepted an unknown key")
	}
}
