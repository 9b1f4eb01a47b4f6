package offline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Bounds on what a schema can make MinimalJSON build: nesting (a recursive
// schema whose nodes require children), values in all, and the minItems and
// minLength it honours. A schema past them is refused, not obeyed.
const (
	maxDepth  = 32
	maxValues = 10_000
	maxItems  = 1_000
	maxLength = 10_000
)

// words fill required strings: short, readable, obviously placeholders.
var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}

// MinimalJSON returns the smallest JSON value that a JSON Schema accepts, as
// far as it can tell: an object with only the required properties, arrays
// of minItems items, numbers at the lowest allowed value (or 0), false for
// booleans, the first enum value, and short words for strings, chosen by src
// (nil picks the first). It reads type, properties, required,
// additionalProperties, items, prefixItems, min/maxItems, enum, const,
// min/maxLength, format, minimum, maximum, exclusive bounds, multipleOf,
// allOf, anyOf, oneOf and local $refs. A pattern it cannot satisfy is
// ignored, so validate the result when the schema has one.
func MinimalJSON(schema json.RawMessage, src rand.Source) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	g := &generator{root: root, src: src}
	v, err := g.value(root, 0, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

type generator struct {
	root   any
	src    rand.Source
	values int
}

func (g *generator) pick(n int) int {
	if g.src == nil || n <= 0 {
		return 0
	}
	return int(g.src.Uint64() % uint64(n))
}

// value generates for schema s; index distinguishes array items so that
// uniqueItems holds.
func (g *generator) value(s any, depth, index int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("schema nests deeper than 32 levels; is a required property recursive?")
	}
	if g.values++; g.values > maxValues {
		return nil, fmt.Errorf("schema asks for more than %d values", maxValues)
	}
	switch s := s.(type) {
	case bool:
		if !s {
			return nil, errors.New("schema false admits no value")
		}
		return map[string]any{}, nil
	case map[string]any:
		return g.object(s, depth, index)
	default:
		return nil, fmt.Errorf("a schema must be an object or a boolean, not %T", s)
	}
}

func (g *generator) object(s map[string]any, depth, index int) (any, error) {
	if ref, ok := s["$ref"].(string); ok {
		target, err := g.resolve(ref)
		if err != nil {
			return nil, err
		}
		return g.value(target, depth+1, index)
	}
	if c, ok := s["const"]; ok {
		return c, nil
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[min(index, len(e)-1)], nil
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		merged, err := g.merge(s, all)
		if err != nil {
			return nil, err
		}
		return g.value(merged, depth+1, index)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			return g.value(preferNonNull(alts), depth+1, index)
		}
	}
	switch typeOf(s) {
	case "null":
		return nil, nil
	case "boolean":
		return index%2 == 1, nil
	case "integer":
		return integer(s, index)
	case "number":
		return number(s, index)
	case "string":
		return g.str(s, index)
	case "array":
		return g.array(s, depth, index)
	default:
		return g.props(s, depth)
	}
}

// typeOf is the schema's type, the first non-null one when it lists several,
// or the type its keywords imply.
func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				return x
			}
		}
		if len(t) > 0 {
			return "null"
		}
	}
	for _, k := range []string{"properties", "required", "additionalProperties"} {
		if _, ok := s[k]; ok {
			return "object"
		}
	}
	for _, k := range []string{"items", "prefixItems", "minItems"} {
		if _, ok := s[k]; ok {
			return "array"
		}
	}
	for _, k := range []string{"minLength", "maxLength", "pattern", "format"} {
		if _, ok := s[k]; ok {
			return "string"
		}
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		if _, ok := s[k]; ok {
			return "number"
		}
	}
	return "object"
}

func (g *generator) props(s map[string]any, depth int) (any, error) {
	out := map[string]any{}
	required, _ := s["required"].([]any)
	props, _ := s["properties"].(map[string]any)
	for _, r := range required {
		name, ok := r.(string)
		if !ok {
			continue
		}
		ps, ok := props[name]
		if !ok {
			ps = s["additionalProperties"]
			if ps == nil {
				ps = true
			}
		}
		v, err := g.value(ps, depth+1, 0)
		if err != nil {
			return nil, fmt.Errorf("/%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func (g *generator) array(s map[string]any, depth, _ int) (any, error) {
	n := 0
	if m, ok := num(s["minItems"]); ok {
		if m > maxItems {
			return nil, fmt.Errorf("minItems %v is more than the %d offline answers build", m, maxItems)
		}
		n = int(m)
	}
	prefix, _ := s["prefixItems"].([]any)
	items := s["items"]
	if arr, ok := items.([]any); ok {
		// Draft 4-7 tuple form.
		prefix, items = arr, s["additionalItems"]
	}
	if items == nil {
		items = true
	}
	out := make([]any, 0, n)
	for i := range n {
		is := items
		if i < len(prefix) {
			is = prefix[i]
		}
		v, err := g.value(is, depth+1, i)
		if err != nil {
			return nil, fmt.Errorf("/%d: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (g *generator) str(s map[string]any, index int) (string, error) {
	var v string
	switch s["format"] {
	case "date-time":
		v = fmt.Sprintf("2024-01-%02dT00:00:00Z", 1+index%28)
	case "date":
		v = fmt.Sprintf("2024-01-%02d", 1+index%28)
	case "time":
		v = fmt.Sprintf("00:00:%02dZ", index%60)
	case "email":
		v = fmt.Sprintf("user%d@example.com", index)
	case "uri", "url", "iri":
		v = fmt.Sprintf("https://example.com/%d", index)
	case "uuid":
		v = fmt.Sprintf("00000000-0000-4000-8000-%012d", index)
	default:
		v = words[g.pick(len(words))]
		if index > 0 {
			v += "-" + strconv.Itoa(index)
		}
	}
	if m, ok := num(s["minLength"]); ok {
		if m > maxLength {
			return "", fmt.Errorf("minLength %v is more than the %d offline answers build", m, maxLength)
		}
		if pad := int(m) - len([]rune(v)); pad > 0 {
			v += strings.Repeat("x", pad)
		}
	}
	if m, ok := num(s["maxLength"]); ok && m >= 0 && len([]rune(v)) > int(m) {
		v = string([]rune(v)[:int(m)])
	}
	return v, nil
}

// integer picks the allowed integer nearest 0, plus index so that the
// items of an array differ.
func integer(s map[string]any, index int) (any, error) {
	lo, hi := bounds(s)
	lo, hi = math.Ceil(lo), math.Floor(hi)
	if ex, ok := num(s["exclusiveMinimum"]); ok && lo <= ex {
		lo = math.Floor(ex) + 1
	}
	if ex, ok := num(s["exclusiveMaximum"]); ok && hi >= ex {
		hi = math.Ceil(ex) - 1
	}
	v := spread(clamp(0, lo, hi), index, hi)
	if m, ok := num(s["multipleOf"]); ok && m > 0 {
		v = math.Ceil(v/m) * m
	}
	if v < lo || v > hi {
		return nil, fmt.Errorf("no integer within [%v, %v]", lo, hi)
	}
	return int64(v), nil
}

// number picks the allowed number nearest 0, plus index.
func number(s map[string]any, index int) (any, error) {
	lo, hi := bounds(s)
	exLo, hasExLo := num(s["exclusiveMinimum"])
	exHi, hasExHi := num(s["exclusiveMaximum"])
	loOpen, hiOpen := false, false
	if hasExLo && exLo >= lo {
		lo, loOpen = exLo, true
	}
	if hasExHi && exHi <= hi {
		hi, hiOpen = exHi, true
	}
	v := clamp(0, lo, hi)
	if (loOpen && v == lo) || (hiOpen && v == hi) {
		switch {
		case !math.IsInf(lo, 0) && !math.IsInf(hi, 0):
			v = lo + (hi-lo)/2
		case loOpen && v == lo:
			v = lo + 1
		default:
			v = hi - 1
		}
	}
	v = spread(v, index, hi)
	if m, ok := num(s["multipleOf"]); ok && m > 0 {
		v = math.Ceil(v/m) * m
	}
	if v < lo || v > hi || (loOpen && v == lo) || (hiOpen && v == hi) {
		return nil, fmt.Errorf("no number within (%v, %v)", lo, hi)
	}
	return v, nil
}

// spread adds index to v while it stays below hi.
func spread(v float64, index int, hi float64) float64 {
	if w := v + float64(index); w < hi || (w == hi && index == 0) {
		return w
	}
	return v
}

func bounds(s map[string]any) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if m, ok := num(s["minimum"]); ok {
		lo = m
	}
	if m, ok := num(s["maximum"]); ok {
		hi = m
	}
	return lo, hi
}

// clamp returns the value of [lo, hi] nearest v.
func clamp(v, lo, hi float64) float64 {
	return math.Max(lo, math.Min(v, hi))
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// merge folds allOf's subschemas into one object schema: their properties
// and required lists joined, and the first of any other keyword.
func (g *generator) merge(s map[string]any, all []any) (map[string]any, error) {
	out := map[string]any{}
	props := map[string]any{}
	var required []any
	parts := append([]any{withoutKey(s, "allOf")}, all...)
	for _, p := range parts {
		// Follow a part that is a reference, but not round a cycle.
		for hops := 0; ; hops++ {
			m, ok := p.(map[string]any)
			if !ok {
				break
			}
			ref, isRef := m["$ref"].(string)
			if !isRef {
				break
			}
			if hops == maxDepth {
				return nil, fmt.Errorf("$ref %q: references go round in a cycle", ref)
			}
			target, err := g.resolve(ref)
			if err != nil {
				return nil, err
			}
			p = target
		}
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			switch k {
			case "properties":
				if pm, ok := v.(map[string]any); ok {
					for name, ps := range pm {
						if _, seen := props[name]; !seen {
							props[name] = ps
						}
					}
				}
			case "required":
				if r, ok := v.([]any); ok {
					for _, name := range r {
						if !slices.Contains(required, name) {
							required = append(required, name)
						}
					}
				}
			default:
				if _, seen := out[k]; !seen {
					out[k] = v
				}
			}
		}
	}
	if len(props) > 0 {
		out["properties"] = props
	}
	if len(required) > 0 {
		out["required"] = required
	}
	delete(out, "allOf")
	return out, nil
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// preferNonNull picks the first alternative that is not just null, so an
// optional-by-nullability field still gets a value.
func preferNonNull(alts []any) any {
	for _, a := range alts {
		if m, ok := a.(map[string]any); ok && m["type"] == "null" {
			continue
		}
		return a
	}
	return alts[0]
}

// resolve follows a local reference, "#" or "#/json/pointer".
func (g *generator) resolve(ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only references inside the schema are supported", ref)
	}
	ptr, err := url.PathUnescape(ptr)
	if err != nil {
		return nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	cur := g.root
	if ptr == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q: no %q", ref, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("$ref %q: no index %q", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("$ref %q: cannot descend into %T", ref, cur)
		}
	}
	return cur, nil
}
