package engine

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/praetorhq/praetor/internal/textdist"
	"gopkg.in/yaml.v3"
)

// maxNodes bounds the nodes the strict walk visits, so a document that
// multiplies itself through aliases is refused instead of exhausting memory.
const maxNodes = 200_000

// strictWalker checks a YAML node tree against a Go type before decoding:
// every key must be known, every value must have the right shape. It records
// the position of every path so that later findings can name line:col.
type strictWalker struct {
	file   string
	pos    map[string]Pos
	report Report
	nodes  int
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

func (w *strictWalker) errorf(n *yaml.Node, path, rule, format string, args ...any) {
	w.report.Add(Issue{
		Severity: SeverityError, File: w.file, Path: path,
		Pos: Pos{n.Line, n.Column}, Rule: rule, Message: fmt.Sprintf(format, args...),
	})
}

func (w *strictWalker) walk(n *yaml.Node, t reflect.Type, path string) {
	w.nodes++
	if w.nodes > maxNodes {
		if w.nodes == maxNodes+1 {
			w.errorf(n, path, "too-complex", "document expands to more than %d nodes (aliases?)", maxNodes)
		}
		return
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	if _, seen := w.pos[path]; !seen {
		w.pos[path] = Pos{n.Line, n.Column}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) {
		return // a null leaves the zero value, like an absent key
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, path, "type", "want a single value, got %s", kindName(n))
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			_, msg := yamlErrorLine(err)
			w.errorf(n, path, "type", "%s", msg)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkStruct(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.errorf(n, path, "type", "want a list, got %s", kindName(n))
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.errorf(n, path, "type", "want a mapping, got %s", kindName(n))
			return
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				w.errorf(k, path, "type", "mapping keys must be plain strings")
				continue
			}
			if line, dup := seen[k.Value]; dup {
				w.errorf(k, join(path, k.Value), "duplicate-key", "key %q already defined at line %d", k.Value, line)
				continue
			}
			seen[k.Value] = k.Line
			w.pos[join(path, k.Value)] = Pos{k.Line, k.Column}
			w.walk(v, t.Elem(), join(path, k.Value))
		}
	case reflect.Interface:
		// Free-form value (a cue's literal): any YAML is accepted.
	default:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, path, "type", "want %s, got %s", scalarName(t), kindName(n))
			return
		}
		v := reflect.New(t)
		if err := n.Decode(v.Interface()); err != nil {
			w.errorf(n, path, "type", "want %s, got %q", scalarName(t), n.Value)
		}
	}
}

// yamlField is a struct field as YAML sees it.
type yamlField struct {
	typ reflect.Type
}

func (w *strictWalker) walkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.errorf(n, path, "type", "want a mapping, got %s", kindName(n))
		return
	}
	fields := map[string]yamlField{}
	collectFields(t, fields)
	seen := map[string]int{}
	var visit func(m *yaml.Node, depth int)
	visit = func(m *yaml.Node, depth int) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" && depth < 8 {
				// Merge key: the keys of the merged mapping(s) belong here.
				for v.Kind == yaml.AliasNode && v.Alias != nil {
					v = v.Alias
				}
				switch v.Kind {
				case yaml.MappingNode:
					visit(v, depth+1)
				case yaml.SequenceNode:
					for _, e := range v.Content {
						for e.Kind == yaml.AliasNode && e.Alias != nil {
							e = e.Alias
						}
						if e.Kind == yaml.MappingNode {
							visit(e, depth+1)
						}
					}
				}
				continue
			}
			if k.Kind != yaml.ScalarNode {
				w.errorf(k, path, "type", "mapping keys must be plain strings")
				continue
			}
			p := join(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				w.errorf(k, p, "unknown-key", "unknown key %q%s; allowed keys: %s",
					k.Value, suggest(k.Value, fields), strings.Join(sortedKeys(fields), ", "))
				continue
			}
			if line, dup := seen[k.Value]; dup && depth == 0 {
				w.errorf(k, p, "duplicate-key", "key %q already defined at line %d", k.Value, line)
				continue
			}
			seen[k.Value] = k.Line
			w.pos[p] = Pos{k.Line, k.Column}
			w.walk(v, f.typ, p)
		}
	}
	visit(n, 0)
}

// collectFields gathers the YAML keys of a struct, following inline fields.
func collectFields(t reflect.Type, into map[string]yamlField) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			collectFields(ft, into)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		into[name] = yamlField{typ: f.Type}
	}
}

// suggest proposes the closest allowed key for a misspelt one.
func suggest(key string, fields map[string]yamlField) string {
	return suggestName(key, sortedKeys(fields))
}

// suggestName proposes the closest of names for a misspelt name, as
// " (did you mean %q?)", or "" when none is close.
func suggestName(name string, names []string) string {
	best, bestD := "", 4
	for _, k := range names {
		if d := editDistance(name, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of two keys; long ones are not
// compared (a key of more than 64 bytes is no typo of a known one).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	return textdist.Levenshtein(a, b)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func scalarName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return t.Kind().String()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// lookupPos finds the position of a path, or of its nearest ancestor.
func lookupPos(pos map[string]Pos, path string) Pos {
	for path != "" {
		if p, ok := pos[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return Pos{}
}
