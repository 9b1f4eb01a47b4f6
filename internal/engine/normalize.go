package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// NormalizeDecoded makes a memory just decoded from JSON equal to its Clone,
// without Clone's encoding and decoding of the whole memory: decoding
// already gives every field but the raw JSON values their Clone form, and
// those are rewritten as json.Marshal writes them (compact, HTML-escaped).
// A memory read back from PostgreSQL's JSONB needs it: JSONB spaces its raw
// values out, and a turn must see the same bytes live as in a replay. The
// runner service calls it on the memory it decodes for a turn, which it
// then hands over (Runner.processOwned) instead of having it copied.
func (m *WorkingMemory) NormalizeDecoded() error {
	return normalizeRaw(reflect.ValueOf(m).Elem(), false)
}

// normalizeRaw rewrites the json.RawMessage values reachable from v, which
// must be settable, as json.Marshal writes them; omitEmpty says v is a
// field tagged omitempty, which json.Marshal leaves out when empty.
func normalizeRaw(v reflect.Value, omitEmpty bool) error {
	if v.Type() == rawMessageType {
		raw := v.Interface().(json.RawMessage)
		if len(raw) == 0 && omitEmpty {
			return nil // left out, so decoded as nil
		}
		if marshalsAsItself(raw) {
			return nil
		}
		b, err := json.Marshal(raw) // nil becomes null
		if err != nil {
			return fmt.Errorf("normalize raw json: %w", err)
		}
		if string(b) != string(raw) {
			v.Set(reflect.ValueOf(json.RawMessage(b)))
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return normalizeRaw(v.Elem(), false)
		}
	case reflect.Struct:
		for _, f := range rawFields(v.Type()) {
			if err := normalizeRaw(v.Field(f.index), f.omitEmpty); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if !mayHoldRaw(v.Type().Elem()) {
			return nil
		}
		for i := range v.Len() {
			if err := normalizeRaw(v.Index(i), false); err != nil {
				return err
			}
		}
	case reflect.Map:
		if !mayHoldRaw(v.Type().Elem()) {
			return nil
		}
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			if err := normalizeRaw(e, false); err != nil {
				return err
			}
			v.SetMapIndex(iter.Key(), e)
		}
	}
	return nil
}

// marshalsAsItself reports whether json.Marshal would return raw, valid JSON
// as decoding leaves it, unchanged: it is compact (no space outside
// strings) and holds nothing json.Marshal escapes ('<', '>', '&', U+2028,
// U+2029). Most raw values of a memory are, and are then not encoded again.
func marshalsAsItself(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false // json.Marshal writes null
	}
	inString, escaped := false, false
	for i, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9):
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// rawField is a struct field that may hold raw JSON.
type rawField struct {
	index     int
	omitEmpty bool
}

var structRawFields sync.Map // reflect.Type -> []rawField

// rawFields lists the fields of struct type t that json encodes and that may
// hold a json.RawMessage.
func rawFields(t reflect.Type) []rawField {
	if v, ok := structRawFields.Load(t); ok {
		return v.([]rawField)
	}
	var out []rawField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" || !mayHoldRaw(f.Type) {
			continue
		}
		out = append(out, rawField{index: i, omitEmpty: slices.Contains(strings.Split(tag, ",")[1:], "omitempty")})
	}
	structRawFields.Store(t, out)
	return out
}

var holdsRaw sync.Map // reflect.Type -> bool

// mayHoldRaw reports whether values of t can hold a json.RawMessage.
func mayHoldRaw(t reflect.Type) bool {
	if v, ok := holdsRaw.Load(t); ok {
		return v.(bool)
	}
	b := mayHold(t, map[reflect.Type]bool{})
	holdsRaw.Store(t, b)
	return b
}

func mayHold(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == rawMessageType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return mayHold(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && mayHold(t.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Interface:
		return true
	}
	return false
}
