package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Severity says whether an issue blocks loading.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Pos is a line and column in a YAML file, 1-based; 0 is unknown (a YAML
// syntax error has a line and no column).
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Issue is one finding of the loader or validator: where (file, path inside
// it, line:col), which rule, and what to fix.
type Issue struct {
	Severity Severity `json:"severity"`
	File     string   `json:"file,omitempty"`
	// Path locates the value inside the engine, e.g.
	// phases[2].transition_triggers[0].category ("" for the whole file).
	Path string `json:"path,omitempty"`
	Pos  Pos    `json:"pos"`
	// Rule names the check, e.g. phase-graph or unknown-key.
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// String renders "file:line:col: path: message [rule]", or "file:line: …"
// when the column is unknown.
func (i Issue) String() string {
	var b strings.Builder
	if i.File != "" {
		b.WriteString(i.File)
		if i.Pos.Line > 0 {
			fmt.Fprintf(&b, ":%d", i.Pos.Line)
		}
		if i.Pos.Line > 0 && i.Pos.Column > 0 {
			fmt.Fprintf(&b, ":%d", i.Pos.Column)
		}
		b.WriteString(": ")
	}
	if i.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	if i.Path != "" {
		b.WriteString(i.Path)
		b.WriteString(": ")
	}
	b.WriteString(i.Message)
	if i.Rule != "" {
		fmt.Fprintf(&b, " [%s]", i.Rule)
	}
	return b.String()
}

// Report is the outcome of validating one or more engines.
type Report struct {
	Errors   []Issue `json:"errors"`
	Warnings []Issue `json:"warnings"`
}

// Valid reports whether there are no errors.
func (r Report) Valid() bool { return len(r.Errors) == 0 }

// Add appends an issue to the list of its severity.
func (r *Report) Add(i Issue) {
	if i.Severity == SeverityWarning {
		r.Warnings = append(r.Warnings, i)
		return
	}
	i.Severity = SeverityError
	r.Errors = append(r.Errors, i)
}

// Merge appends another report.
func (r *Report) Merge(o Report) {
	r.Errors = append(r.Errors, o.Errors...)
	r.Warnings = append(r.Warnings, o.Warnings...)
}

// ErrorMessages returns the messages of the errors (the seed's errors: string[]).
func (r Report) ErrorMessages() []string {
	out := make([]string, len(r.Errors))
	for i, e := range r.Errors {
		out[i] = e.Message
	}
	return out
}

// Sort orders issues by file, line, column, path and message, so output is
// stable.
func (r *Report) Sort() {
	less := func(s []Issue) func(i, j int) bool {
		return func(i, j int) bool {
			a, b := s[i], s[j]
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Pos.Line != b.Pos.Line {
				return a.Pos.Line < b.Pos.Line
			}
			if a.Pos.Column != b.Pos.Column {
				return a.Pos.Column < b.Pos.Column
			}
			if a.Path != b.Path {
				return a.Path < b.Path
			}
			return a.Message < b.Message
		}
	}
	sort.SliceStable(r.Errors, less(r.Errors))
	sort.SliceStable(r.Warnings, less(r.Warnings))
}

// Err returns nil when valid, else an *InvalidError listing the errors.
func (r Report) Err() error {
	if r.Valid() {
		return nil
	}
	return &InvalidError{Issues: append([]Issue(nil), r.Errors...)}
}

// ErrInvalid is wrapped by every error about an invalid engine definition.
var ErrInvalid = errors.New("invalid engine definition")

// InvalidError lists the errors found in engine definitions.
type InvalidError struct {
	Issues []Issue
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d error(s)", ErrInvalid, len(e.Issues))
	for _, i := range e.Issues {
		b.WriteString("\n  ")
		b.WriteString(i.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }
