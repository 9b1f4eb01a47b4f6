// Package builtin wires what ships with Praetor: a registry with the
// technique library, the custom evaluators of the exploration,
// business-profile, ideation and project-discovery engines and the task
// handler names the shipped engines use, and the embedded engines directory
// as a load source.
package builtin

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/praetorhq/praetor/engines"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/evaluators/businessprofile"
	"github.com/praetorhq/praetor/internal/engine/evaluators/exploration"
	"github.com/praetorhq/praetor/internal/engine/evaluators/ideation"
	"github.com/praetorhq/praetor/internal/engine/evaluators/projectdiscovery"
	"github.com/praetorhq/praetor/internal/engine/technique"
)

// TaskHandlers are the background task handlers the shipped engines name,
// with what each does; the background service implements them.
func TaskHandlers() map[string]string {
	return map[string]string{
		"research.competitors":        "look up existing products that solve a problem",
		"research.solution_landscape": "research solution options, precedents and typical costs",
	}
}

// Registry returns a new registry with everything built in.
func Registry() (*engine.Registry, error) {
	reg := engine.NewRegistry()
	technique.Register(reg)
	for _, set := range []struct {
		engine     string
		evaluators map[string]engine.Evaluator
	}{
		{"exploration", exploration.Evaluators()},
		{"business-profile", businessprofile.Evaluators()},
		{"ideation", ideation.Evaluators()},
		{"project-discovery", projectdiscovery.Evaluators()},
	} {
		for _, name := range slices.Sorted(maps.Keys(set.evaluators)) {
			if err := reg.RegisterEvaluator(name, set.evaluators[name]); err != nil {
				return nil, fmt.Errorf("builtin: %s evaluators: %w", set.engine, err)
			}
		}
	}
	h := TaskHandlers()
	for _, name := range []string{"research.competitors", "research.solution_landscape"} {
		if err := reg.RegisterTaskHandler(name, h[name]); err != nil {
			return nil, fmt.Errorf("builtin: %w", err)
		}
	}
	return reg, nil
}

// Source is the engines shipped with Praetor, embedded in the binary, with
// the frozen copies of their released versions (engines/history), which
// replays of the sessions recorded on them need.
func Source() engine.Source {
	// The patterns are valid: Glob cannot fail.
	files, _ := fs.Glob(engines.FS, "*.yaml")
	frozen, _ := fs.Glob(engines.FS, "history/*.yaml")
	return engine.Source{FS: engines.FS, Dir: ".", Label: "praetor:engines", Files: append(files, frozen...)}
}

// Load loads the shipped engines and those of dirs (praetor's
// --engines-dir) against reg.
func Load(reg *engine.Registry, dirs ...string) (*engine.Catalog, engine.Report, error) {
	srcs := make([]engine.Source, len(dirs))
	for i, d := range dirs {
		srcs[i] = engine.DirSource(d)
	}
	return LoadWith(reg, srcs...)
}

// LoadWith loads the shipped engines and those of srcs against reg.
func LoadWith(reg *engine.Registry, srcs ...engine.Source) (*engine.Catalog, engine.Report, error) {
	return engine.Load(reg, append([]engine.Source{Source()}, srcs...)...)
}
