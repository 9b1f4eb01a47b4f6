package engine

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/invopop/jsonschema"
)

// SchemaID is the $id of the engine JSON Schema.
const SchemaID = "https://praetor.dev/schemas/engine.schema.json"

const packagePath = "github.com/praetorhq/praetor/internal/engine"

// JSONSchema generates the JSON Schema of the engine file format from the Go
// types: YAML key names, required keys, enumerations, ranges, and no keys
// beyond those defined. When sourceDir is this package's source directory the
// Go doc comments become the schema's descriptions; "" leaves them out. The
// committed copy is engines/engine.schema.json (regenerate it with
// go test ./internal/engine -run TestJSONSchemaUpToDate -update).
func JSONSchema(sourceDir string) ([]byte, error) {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		AllowAdditionalProperties:  false,
	}
	if sourceDir != "" {
		comments, err := goComments(sourceDir)
		if err != nil {
			return nil, fmt.Errorf("engine schema: %w", err)
		}
		r.CommentMap = comments
	}
	s := r.Reflect(&Definition{})
	s.ID = SchemaID
	s.Title = "Praetor engine definition"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// goComments reads the doc comments of this package's exported types and
// their fields, keyed as the reflector looks them up.
func goComments(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		var genDoc, typ string
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.GenDecl:
				genDoc = x.Doc.Text()
			case *ast.TypeSpec:
				typ = ""
				if !x.Name.IsExported() {
					return true
				}
				typ = x.Name.Name
				txt := x.Doc.Text()
				if txt == "" {
					txt = genDoc
				}
				out[packagePath+"."+typ] = oneLine(txt)
			case *ast.Field:
				txt := x.Doc.Text()
				if txt == "" {
					txt = x.Comment.Text()
				}
				if typ == "" || txt == "" {
					return true
				}
				for _, n := range x.Names {
					if n.IsExported() {
						out[packagePath+"."+typ+"."+n.Name] = oneLine(txt)
					}
				}
			}
			return true
		})
	}
	return out, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
