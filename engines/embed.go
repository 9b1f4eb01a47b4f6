// Package engines holds the engine definitions shipped with Praetor, and the
// JSON Schema of their format, embedded in the binary. README.md documents
// every key of the format.
package engines

import "embed"

// FS holds every *.yaml engine file and engine.schema.json.
//
//go:embed *.yaml engine.schema.json
var FS embed.FS
