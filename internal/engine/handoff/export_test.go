package handoff

// BuiltinFields returns the fields of the shipped engines' mappers, by
// mapper name.
func BuiltinFields() map[string]Fields { return builtinFields() }

// IsListLabel reports whether label is that of constraints mapped from a
// list field.
func IsListLabel(label string) bool { return listLabels[label] }
