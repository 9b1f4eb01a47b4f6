package definition

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/yamlsyntax"
)

// MaxFileSize bounds a definition file.
const MaxFileSize = 1 << 20

type pos struct{ line, col int }

// positions maps a document path to where its value (and its key) sits, so
// semantic checks done on the decoded struct can still point at a line.
type positions struct {
	values map[string]pos
	keys   map[string]pos
}

func (p positions) value(path string) pos {
	if v, ok := p.values[path]; ok {
		return v
	}
	return p.nearest(path)
}

func (p positions) key(path string) pos {
	if v, ok := p.keys[path]; ok {
		return v
	}
	return p.value(path)
}

// nearest falls back to the closest recorded parent, for a field that is
// absent (a required key): the problem is then reported at its parent.
func (p positions) nearest(path string) pos {
	for path != "" {
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
		if v, ok := p.values[path]; ok {
			return v
		}
	}
	return p.values[""]
}

// decodeStrict parses data into out (a pointer to a struct) after checking
// the YAML tree against out's type: unknown keys, duplicate keys and wrong
// kinds are reported with their path and position instead of failing the
// decode with a bare line number.
func decodeStrict(file string, data []byte, out any) (positions, []*Error) {
	ps := positions{values: map[string]pos{}, keys: map[string]pos{}}
	p := &problems{file: file, pos: ps}
	if len(data) > MaxFileSize {
		p.errs = append(p.errs, &Error{File: file, Rule: ErrTooLarge,
			Detail: fmt.Sprintf("%d bytes, the limit is %d", len(data), MaxFileSize)})
		return ps, p.errs
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, problem := yamlsyntax.Locate(data, err)
		p.errs = append(p.errs, &Error{File: file, Line: line, Rule: ErrSyntax, Detail: problem})
		return ps, p.errs
	}
	if len(doc.Content) == 0 {
		p.errs = append(p.errs, &Error{File: file, Rule: ErrRequired, Detail: "the file is empty"})
		return ps, p.errs
	}
	root := doc.Content[0]
	w := walker{p: p, aliases: new(int), stop: new(bool), open: map[*yaml.Node]bool{}}
	w.walk(root, reflect.TypeOf(out).Elem(), "")
	if len(p.errs) > 0 {
		return ps, p.errs
	}
	if err := root.Decode(out); err != nil {
		// The walk checks what the decoder checks; this is a safety net.
		p.errs = append(p.errs, &Error{File: file, Line: root.Line, Col: root.Column, Rule: ErrType,
			Detail: strings.TrimPrefix(err.Error(), "yaml: ")})
	}
	return ps, p.errs
}

// walker checks a node tree against a Go type. It follows aliases, but
// only so far: a recursive alias, or more expansions than a definition
// plausibly needs (a "billion laughs" document), stops the walk.
type walker struct {
	p       *problems
	aliases *int
	stop    *bool
	open    map[*yaml.Node]bool
}

const maxAliasExpansions = 1000

var (
	durationType = reflect.TypeOf(Duration(0))
	anyType      = reflect.TypeOf((*any)(nil)).Elem()
)

func (w walker) record(n *yaml.Node, path string) {
	w.p.pos.values[path] = pos{n.Line, n.Column}
}

func (w walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if *w.stop {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || w.open[n.Alias] {
			w.p.at(path, ErrSyntax, "alias *%s refers to itself", n.Value)
			*w.stop = true
			return
		}
		if *w.aliases++; *w.aliases > maxAliasExpansions {
			w.p.at(path, ErrTooLarge, "more than %d alias expansions", maxAliasExpansions)
			*w.stop = true
			return
		}
		w.open[n.Alias] = true
		defer delete(w.open, n.Alias)
		n = n.Alias
	}
	w.record(n, path)
	if t == anyType || (t.Kind() == reflect.Map && t.Elem() == anyType) && n.Kind == yaml.MappingNode {
		w.dupKeys(n, path)
		return
	}
	if t.Kind() == reflect.Pointer {
		if isNull(n) {
			return
		}
		t = t.Elem()
	}
	if t == durationType {
		w.duration(n, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.mapping(n, t, path)
	case reflect.Map:
		if isNull(n) {
			return
		}
		if n.Kind != yaml.MappingNode {
			w.wrongKind(n, path, "a mapping")
			return
		}
		w.dupKeys(n, path)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := joinKey(path, k.Value)
			w.p.pos.keys[kp] = pos{k.Line, k.Column}
			w.walk(v, t.Elem(), kp)
		}
	case reflect.Slice:
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			w.wrongKind(n, path, "a list")
			return
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.wrongKind(n, path, "a string")
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			w.wrongKind(n, path, "an integer")
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			w.wrongKind(n, path, "a number")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			w.wrongKind(n, path, "true or false")
		}
	}
}

func (w walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		w.wrongKind(n, path, "a mapping")
		return
	}
	fields := map[string]reflect.StructField{}
	var names []string
	collectFields(t, fields, &names)
	w.dupKeys(n, path)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := joinKey(path, k.Value)
		w.p.pos.keys[kp] = pos{k.Line, k.Column}
		f, ok := fields[k.Value]
		if !ok {
			w.record(v, kp)
			w.p.atKey(kp, ErrUnknownKey, "%q is not a field here%s (fields: %s)",
				k.Value, suggest(k.Value, names), strings.Join(names, ", "))
			continue
		}
		w.walk(v, f.Type, kp)
	}
}

// collectFields lists the YAML keys of a struct, following inline fields.
func collectFields(t reflect.Type, into map[string]reflect.StructField, names *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") {
			collectFields(f.Type, into, names)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		into[name] = f
		*names = append(*names, name)
	}
}

func (w walker) dupKeys(n *yaml.Node, path string) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if first, dup := seen[k.Value]; dup {
			kp := joinKey(path, k.Value)
			w.p.errs = append(w.p.errs, &Error{File: w.p.file, Path: kp, Line: k.Line, Col: k.Column,
				Rule: ErrDuplicateKey, Detail: fmt.Sprintf("%q is already set at line %d", k.Value, first)})
			continue
		}
		seen[k.Value] = k.Line
	}
}

func (w walker) duration(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			w.p.at(path, ErrBadDuration, "%s has no unit: write a duration such as %ss or %sm", n.Value, n.Value, n.Value)
			return
		}
		w.wrongKind(n, path, "a duration such as 30s or 5m")
		return
	}
	if _, err := time.ParseDuration(n.Value); err != nil {
		w.p.at(path, ErrBadDuration, "%q is not a duration: write it as 90s, 5m or 1h30m", n.Value)
	}
}

func (w walker) wrongKind(n *yaml.Node, path, want string) {
	got := "a " + kindName(n)
	w.p.at(path, ErrType, "must be %s, not %s", want, got)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int":
			return "integer (" + n.Value + ")"
		case "!!float":
			return "number (" + n.Value + ")"
		case "!!bool":
			return "boolean (" + n.Value + ")"
		case "!!null":
			return "null"
		}
		return "string (" + strconv.Quote(n.Value) + ")"
	}
	return "node"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func joinKey(path, key string) string {
	if !plainKey.MatchString(key) {
		key = "[" + strconv.Quote(key) + "]"
		return path + key
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// errorsOf unwraps a load error into its problems, for tests and callers that
// want the list.
func errorsOf(err error) []*Error {
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Errors
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}

// Problems returns the individual problems of an error from Load, Parse
// Workflow or ParseRegistry (nil for any other error).
func Problems(err error) []*Error { return slices.Clone(errorsOf(err)) }
