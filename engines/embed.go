// Package engines holds the engine definitions shipped with Praetor, the
// frozen copies of their released versions, and the JSON Schema of their
// format, embedded in the binary. README.md documents every key of the
// format, and how a version is released.
package engines

import "embed"

// FS holds every *.yaml engine file, engine.schema.json, and
// history/ENGINE_ID@VERSION.yaml, the frozen copy of each released version
// of each engine: sessions recorded on a version replay with it.
//
//go:embed *.yaml engine.schema.json history/*.yaml
var FS embed.FS
