package definition

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/praetorhq/praetor/internal/textdist"
)

// The rules a definition can break. Every *Error wraps one, so callers test
// with errors.Is(err, definition.ErrCycle).
var (
	ErrSyntax            = errors.New("invalid YAML")
	ErrTooLarge          = errors.New("file too large")
	ErrUnknownKey        = errors.New("unknown key")
	ErrDuplicateKey      = errors.New("duplicate key")
	ErrType              = errors.New("wrong type")
	ErrRequired          = errors.New("required")
	ErrInvalidValue      = errors.New("invalid value")
	ErrBadDuration       = errors.New("bad duration")
	ErrDuplicateID       = errors.New("duplicate task id")
	ErrUnknownDependency = errors.New("unknown dependency")
	ErrCycle             = errors.New("dependency cycle")
	ErrUnknownAgent      = errors.New("unknown agent")
	ErrBadInput          = errors.New("bad input")
	ErrMissingInput      = errors.New("missing input file")
	ErrMissingFile       = errors.New("missing file")
	ErrConstitution      = errors.New("bad constitution")
)

// Error is one problem in a definition file: where it is (file, path in the
// document, line and column), which rule it breaks, and what to do.
type Error struct {
	File string
	// Path is the field's path in the document, e.g. tasks[2].depends_on[0].
	Path string
	// Line and Col are 1-based; zero when the problem has no position (a
	// file that cannot be read). A YAML syntax error has a Line and no Col:
	// the parser gives none.
	Line, Col int
	Rule      error
	Detail    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Line > 0 && e.Col > 0 {
		fmt.Fprintf(&b, ":%d", e.Col)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Rule.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the rule.
func (e *Error) Unwrap() error { return e.Rule }

// ValidationError holds every problem found in the files of one load, in
// file and line order, so a user fixes them all in one pass.
type ValidationError struct {
	Errors []*Error
}

func (v *ValidationError) Error() string {
	lines := make([]string, 0, len(v.Errors)+1)
	n := len(v.Errors)
	noun := "problems"
	if n == 1 {
		noun = "problem"
	}
	lines = append(lines, fmt.Sprintf("%d %s in workflow definition:", n, noun))
	for _, e := range v.Errors {
		lines = append(lines, "  "+e.Error())
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns every problem, so errors.Is finds any rule.
func (v *ValidationError) Unwrap() []error {
	out := make([]error, len(v.Errors))
	for i, e := range v.Errors {
		out[i] = e
	}
	return out
}

// problems collects errors while a file is checked.
type problems struct {
	file string
	pos  positions
	errs []*Error
}

// at records a problem at the value of path (or at the key, for keys).
func (p *problems) at(path string, rule error, format string, args ...any) {
	pos := p.pos.value(path)
	p.errs = append(p.errs, &Error{File: p.file, Path: path, Line: pos.line, Col: pos.col,
		Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (p *problems) atKey(path string, rule error, format string, args ...any) {
	pos := p.pos.key(path)
	p.errs = append(p.errs, &Error{File: p.file, Path: path, Line: pos.line, Col: pos.col,
		Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// join returns the collected errors as a *ValidationError, or nil.
func join(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return &ValidationError{Errors: errs}
}

// suggest returns ` (did you mean "x"?)` for the closest candidate, if close.
func suggest(got string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := textdist.Levenshtein(strings.ToLower(got), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(got)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
