package extraction

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
)

// Answer is the extraction model's answer: the values it found in the user's
// message, keyed by field path, and the obligations the user put off.
type Answer struct {
	Fields              map[string]FieldAnswer `json:"fields"`
	DeferredObligations []string               `json:"deferred_obligations,omitempty"`
}

// FieldAnswer is one extracted value.
type FieldAnswer struct {
	Value      json.RawMessage `json:"value"`
	Confidence float64         `json:"confidence"`
	Reasoning  string          `json:"reasoning,omitempty"`
}

// ErrBadAnswer is wrapped by every reason an answer cannot be used; the
// message says what to fix, so it can be sent back to the model.
var ErrBadAnswer = errors.New("extraction answer is not valid")

// ParseAnswer reads and checks a model's answer against the engine's
// extraction schema: a JSON object (a ```json fence is tolerated) with a
// "fields" object whose keys are schema paths and whose entries carry a value
// of the field's type (null meaning "known to be none") and a confidence in
// [0,1]. Obvious slips are coerced: a number for a string field becomes a
// string, "yes" for a boolean becomes true, a single string for an array
// becomes a one-item array. Null entries are dropped. Every other problem is
// an error wrapping ErrBadAnswer that names the path.
func ParseAnswer(def *engine.Definition, content string) (Answer, error) {
	raw := stripFence(content)
	var top map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return Answer{}, fmt.Errorf("%w: not a JSON object: %v", ErrBadAnswer, err)
	}
	for k := range top {
		if k != "fields" && k != "deferred_obligations" {
			return Answer{}, fmt.Errorf("%w: unknown key %q; use only fields and deferred_obligations", ErrBadAnswer, k)
		}
	}
	ans := Answer{Fields: map[string]FieldAnswer{}}
	if d, ok := top["deferred_obligations"]; ok && !isNull(d) {
		if err := json.Unmarshal(d, &ans.DeferredObligations); err != nil {
			return Answer{}, fmt.Errorf("%w: deferred_obligations must be a list of obligation ids", ErrBadAnswer)
		}
		for _, id := range ans.DeferredObligations {
			if _, ok := def.Obligation(id); !ok {
				return Answer{}, fmt.Errorf("%w: deferred_obligations: %q is not an obligation", ErrBadAnswer, id)
			}
		}
	}
	fieldsRaw, ok := top["fields"]
	if !ok {
		return Answer{}, fmt.Errorf("%w: missing \"fields\" object", ErrBadAnswer)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(fieldsRaw, &fields); err != nil {
		return Answer{}, fmt.Errorf("%w: \"fields\" must be an object keyed by field path", ErrBadAnswer)
	}
	paths := make([]string, 0, len(fields))
	for p := range fields {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		entry := fields[path]
		if isNull(entry) {
			continue
		}
		fd, ok := def.Field(path)
		if !ok {
			return Answer{}, fmt.Errorf("%w: fields.%s is not a field of the schema", ErrBadAnswer, path)
		}
		var fa struct {
			Value      json.RawMessage `json:"value"`
			Confidence *float64        `json:"confidence"`
			Reasoning  string          `json:"reasoning"`
		}
		if err := json.Unmarshal(entry, &fa); err != nil {
			return Answer{}, fmt.Errorf("%w: fields.%s must be an object {value, confidence, reasoning}", ErrBadAnswer, path)
		}
		if fa.Value == nil {
			return Answer{}, fmt.Errorf("%w: fields.%s has no value", ErrBadAnswer, path)
		}
		if fa.Confidence == nil || *fa.Confidence < 0 || *fa.Confidence > 1 {
			return Answer{}, fmt.Errorf("%w: fields.%s needs a confidence between 0 and 1", ErrBadAnswer, path)
		}
		v, err := Coerce(fd.ValueType, fa.Value)
		if err != nil {
			return Answer{}, fmt.Errorf("%w: fields.%s: %v", ErrBadAnswer, path, err)
		}
		ans.Fields[path] = FieldAnswer{Value: v, Confidence: *fa.Confidence, Reasoning: fa.Reasoning}
	}
	return ans, nil
}

// Coerce checks a value against a value type, fixing obvious slips, and
// returns it as compact JSON.
func Coerce(t engine.ValueType, v json.RawMessage) (json.RawMessage, error) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("value is not JSON: %v", err)
	}
	if x == nil {
		return json.RawMessage("null"), nil
	}
	var out any
	switch t {
	case engine.TypeString:
		switch y := x.(type) {
		case string:
			out = strings.TrimSpace(y)
		case json.Number:
			out = y.String()
		case bool:
			out = strconv.FormatBool(y)
		case []any:
			parts := make([]string, 0, len(y))
			for _, e := range y {
				parts = append(parts, fmt.Sprint(e))
			}
			out = strings.Join(parts, ", ")
		default:
			return nil, errors.New("value must be a string")
		}
	case engine.TypeNumber:
		switch y := x.(type) {
		case json.Number:
			out = y
		case string:
			n, err := strconv.ParseFloat(strings.TrimSpace(y), 64)
			if err != nil {
				return nil, fmt.Errorf("value must be a number, got %q", y)
			}
			out = n
		default:
			return nil, errors.New("value must be a number")
		}
	case engine.TypeBoolean:
		switch y := x.(type) {
		case bool:
			out = y
		case string:
			switch strings.ToLower(strings.TrimSpace(y)) {
			case "true", "yes", "y":
				out = true
			case "false", "no", "n":
				out = false
			default:
				return nil, fmt.Errorf("value must be true or false, got %q", y)
			}
		default:
			return nil, errors.New("value must be true or false")
		}
	case engine.TypeArray:
		switch y := x.(type) {
		case []any:
			out = y
		case string, json.Number, bool, map[string]any:
			out = []any{y}
		}
	case engine.TypeObject:
		y, ok := x.(map[string]any)
		if !ok {
			return nil, errors.New("value must be an object")
		}
		out = y
	default:
		return nil, fmt.Errorf("unknown value type %q", t)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimPrefix(s, "json")
		if i := strings.LastIndex(s, "```"); i >= 0 {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}

func isNull(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || bytes.Equal(b, []byte("null"))
}

// AnswerSchema is the JSON Schema of an answer for the engine, so providers
// that support structured output can constrain the model.
func AnswerSchema(def *engine.Definition) json.RawMessage {
	props := map[string]any{}
	for _, f := range def.ExtractionSchema.Fields {
		var vt any
		switch f.ValueType {
		case engine.TypeString:
			vt = []string{"string", "null"}
		case engine.TypeNumber:
			vt = []string{"number", "null"}
		case engine.TypeBoolean:
			vt = []string{"boolean", "null"}
		case engine.TypeArray:
			vt = []string{"array", "null"}
		case engine.TypeObject:
			vt = []string{"object", "null"}
		}
		props[f.Path] = map[string]any{
			"type":        "object",
			"description": f.DisplayName + ": " + f.Description,
			"required":    []string{"value", "confidence"},
			"properties": map[string]any{
				"value":      map[string]any{"type": vt},
				"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
				"reasoning":  map[string]any{"type": "string"},
			},
			"additionalProperties": false,
		}
	}
	ids := []string{}
	for _, o := range def.Obligations {
		ids = append(ids, o.ID)
	}
	s := map[string]any{
		"$schema":  "https://json-schema.org/draft/2020-12/schema",
		"type":     "object",
		"required": []string{"fields"},
		"properties": map[string]any{
			"fields":               map[string]any{"type": "object", "properties": props, "additionalProperties": false},
			"deferred_obligations": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": ids}},
		},
		"additionalProperties": false,
	}
	b, _ := json.Marshal(s) // maps of plain values always encode
	return b
}
