// Package schema holds the JSON Schemas of workflow and agent registry files,
// generated from the Go types of package definition (field comments become
// descriptions) and committed so editors and `praetor validate` can use them.
// The test regenerates them and fails when the committed files are stale:
// run `go test ./services/orchestrator/schema -update` after changing the
// types.
package schema

import (
	_ "embed"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/praetorhq/praetor/services/orchestrator/definition"
)

// Schema ids: where the committed files live in the repository.
const (
	WorkflowID = "https://github.com/praetorhq/praetor/services/orchestrator/schema/workflow.schema.json"
	RegistryID = "https://github.com/praetorhq/praetor/services/orchestrator/schema/registry.schema.json"
)

// Workflow is the JSON Schema of a workflow file.
//
//go:embed workflow.schema.json
var Workflow []byte

// Registry is the JSON Schema of an agent registry file.
//
//go:embed registry.schema.json
var Registry []byte

// Generate reflects the schemas of the definition types. comments, when not
// nil, maps fully qualified type and field names to descriptions (see
// jsonschema.Reflector.AddGoComments).
func Generate(comments map[string]string) (workflow, registry *jsonschema.Schema) {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		Anonymous:                  true,
		CommentMap:                 comments,
	}
	workflow = r.ReflectFromType(reflect.TypeFor[definition.Workflow]())
	workflow.ID = WorkflowID
	workflow.Title = "Praetor workflow"
	registry = r.ReflectFromType(reflect.TypeFor[definition.Registry]())
	registry.ID = RegistryID
	registry.Title = "Praetor agent registry"
	return workflow, registry
}
