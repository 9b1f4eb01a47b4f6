package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the committed schema files")

func render(t *testing.T, s *jsonschema.Schema) []byte {
	t.Helper()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestSchemasAreCurrent fails when the committed schemas differ from what
// the definition types generate.
func TestSchemasAreCurrent(t *testing.T) {
	r := &jsonschema.Reflector{}
	if err := r.AddGoComments("github.com/praetorhq/praetor/services/orchestrator/schema", "../definition"); err != nil {
		t.Fatalf("read definition comments: %v", err)
	}
	wf, reg := Generate(r.CommentMap)
	for name, want := range map[string][]byte{"workflow.schema.json": render(t, wf), "registry.schema.json": render(t, reg)} {
		if *update {
			if err := os.WriteFile(name, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go test ./services/orchestrator/schema -update", name)
		}
	}
	if !strings.Contains(string(render(t, wf)), "Outputs name the files a successful attempt must produce.") {
		t.Error("field comments are missing from the workflow schema")
	}
}

func compile(t *testing.T, id string, doc []byte) *sjs.Schema {
	t.Helper()
	v, err := sjs.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource(id, v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatalf("compile %s: %v", id, err)
	}
	return s
}

func yamlInstance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestExamplesMatchSchemas validates every shipped example against the
// committed schemas, and checks the schemas reject what the loader rejects.
func TestExamplesMatchSchemas(t *testing.T) {
	wf := compile(t, WorkflowID, Workflow)
	reg := compile(t, RegistryID, Registry)
	root := filepath.Join("..", "..", "..", "examples")
	for dir, s := range map[string]*sjs.Schema{"workflows": wf, "agents": reg} {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if len(files) == 0 {
			t.Fatalf("no examples under %s", filepath.Join(root, dir))
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(yamlInstance(t, data)); err != nil {
				t.Errorf("%s does not match its schema: %v", f, err)
			}
		}
	}
	bad := map[string]string{
		"unknown key":      "name: wf\ntasks:\n  - id: a\n    retires: 1\n",
		"no tasks":         "name: wf\n",
		"bad duration":     "name: wf\ntasks:\n  - id: a\n    timeout: 30\n",
		"bad kind":         "name: wf\ntasks:\n  - id: a\n    kind: review\n",
		"negative retries": "name: wf\ntasks:\n  - id: a\n    retries: -1\n",
	}
	for name, doc := range bad {
		if err := wf.Validate(yamlInstance(t, []byte(doc))); err == nil {
			t.Errorf("workflow schema accepts %s", name)
		}
	}
	if err := reg.Validate(yamlInstance(t, []byte("agents:\n  a:\n    kind: robot\n"))); err == nil {
		t.Error("registry schema accepts an unknown kind")
	}
}
