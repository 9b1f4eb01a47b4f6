package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
)

// exitError ends the process with a status and no further message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitError) ExitCode() int { return int(e) }

func validateCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var asJSON bool
	fs := ff.NewFlagSet("validate").SetParent(parent)
	fs.BoolVar(&asJSON, 0, "json", "print the report as JSON")
	return &ff.Command{
		Name:      "validate",
		Usage:     "praetor validate [--json] DIR|FILE ...",
		ShortHelp: "check engine YAML files: errors name the file, the path in it and the rule",
		LongHelp: strings.TrimSpace(`
Loads the engines shipped with Praetor and those of each DIR (its .yaml and
.yml files) or FILE, runs every check
(identity, phase graph, obligations, completeness model, context allocation,
information ratio, exit transition targets, techniques, task handlers and
evaluators), and prints the errors and warnings. Exits 1 when there is an
error. The JSON Schema of the format is engines/engine.schema.json.`),
		Flags: fs,
		Exec: func(_ context.Context, args []string) error {
			if len(args) == 0 {
				return usageError{"validate needs engine YAML files, or directories of them: praetor validate DIR|FILE ..."}
			}
			srcs, err := engineSources(args)
			if err != nil {
				return err
			}
			reg, err := builtin.Registry()
			if err != nil {
				return err
			}
			cat, report, loadErr := builtin.LoadWith(reg, srcs...)
			var invalid *engine.InvalidError
			if loadErr != nil && !asInvalid(loadErr, &invalid) {
				return loadErr
			}
			if err := warnFrozenOnly(&report, cat, srcs); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"valid": report.Valid(), "engines": cat.IDs(), "errors": nonNil(report.Errors), "warnings": nonNil(report.Warnings)}); err != nil {
					return err
				}
			} else {
				for _, e := range report.Errors {
					fmt.Fprintln(g.stdout, e)
				}
				for _, w := range report.Warnings {
					fmt.Fprintln(g.stdout, w)
				}
				fmt.Fprintf(g.stdout, "%d %s, %d %s; engines loaded: %s\n", len(report.Errors), plural(len(report.Errors), "error", "errors"),
					len(report.Warnings), plural(len(report.Warnings), "warning", "warnings"), strings.Join(cat.IDs(), ", "))
			}
			if !report.Valid() {
				return exitError(1)
			}
			return nil
		},
	}
}

func asInvalid(err error, target **engine.InvalidError) bool {
	ie, ok := err.(*engine.InvalidError)
	if ok {
		*target = ie
	}
	return ok
}

func nonNil(issues []engine.Issue) []engine.Issue {
	if issues == nil {
		return []engine.Issue{}
	}
	return issues
}

// engineSources returns the sources of validate's arguments: a directory's
// engine files, or a file. A directory without any, or a file that is not
// YAML, is an error: checking nothing must not pass for valid.
func engineSources(args []string) ([]engine.Source, error) {
	srcs := make([]engine.Source, 0, len(args))
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if ext := filepath.Ext(a); ext != ".yaml" && ext != ".yml" {
				return nil, fmt.Errorf("%s is not an engine file (.yaml or .yml)", a)
			}
			srcs = append(srcs, engine.FileSource(a))
			continue
		}
		src := engine.DirSource(a)
		files, err := engine.ListEngineFiles(src)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s has no engine files (.yaml or .yml; subdirectories are not read)", a)
		}
		srcs = append(srcs, src)
	}
	return srcs, nil
}

// warnFrozenOnly warns of each frozen version (ENGINE_ID@VERSION.yaml) of
// srcs whose engine no engine file defines: the loader takes it for
// replays alone, and an author who named an engine's only file so would
// see it listed nowhere and served by no one.
func warnFrozenOnly(report *engine.Report, cat *engine.Catalog, srcs []engine.Source) error {
	for _, src := range srcs {
		files, err := engine.ListEngineFiles(src)
		if err != nil {
			return err
		}
		for _, name := range files {
			id, version, ok := engine.FrozenName(path.Base(name))
			if !ok {
				continue
			}
			def, loaded := cat.Version(id, version)
			if _, served := cat.Get(id); served || !loaded {
				continue
			}
			report.Add(engine.Issue{Severity: engine.SeverityWarning, File: path.Join(src.Label, name), Pos: def.PosOf("engine_id"),
				Path: "engine_id", Rule: "frozen-only", Message: fmt.Sprintf("a frozen version of %s, loaded for replays only: "+
					"no engine file defines %s, so no session starts on it (name the file %s.yaml to start sessions on it)", id, id, id)})
		}
	}
	report.Sort()
	return nil
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
