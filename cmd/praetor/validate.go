package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
		Usage:     "praetor validate [--json] DIR ...",
		ShortHelp: "check engine YAML files: errors name the file, the path in it and the rule",
		LongHelp: strings.TrimSpace(`
Loads the engines shipped with Praetor and those of each DIR, runs every check
(identity, phase graph, obligations, completeness model, context allocation,
information ratio, exit transition targets, techniques, task handlers and
evaluators), and prints the errors and warnings. Exits 1 when there is an
error. The JSON Schema of the format is engines/engine.schema.json.`),
		Flags: fs,
		Exec: func(_ context.Context, dirs []string) error {
			if len(dirs) == 0 {
				return fmt.Errorf("validate needs a directory of engine YAML files: praetor validate DIR")
			}
			for _, d := range dirs {
				if st, err := os.Stat(d); err != nil || !st.IsDir() {
					return fmt.Errorf("%s is not a directory", d)
				}
			}
			reg, err := builtin.Registry()
			if err != nil {
				return err
			}
			cat, report, loadErr := builtin.Load(reg, dirs...)
			var invalid *engine.InvalidError
			if loadErr != nil && !asInvalid(loadErr, &invalid) {
				return loadErr
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
				fmt.Fprintf(g.stdout, "%d errors, %d warnings; engines loaded: %s\n", len(report.Errors), len(report.Warnings),
					strings.Join(cat.IDs(), ", "))
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
