package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultMaxOutputBytes bounds one output unless configured otherwise.
const DefaultMaxOutputBytes = 8 << 20

// Check verifies a result against its task, whatever runtime produced it:
// every declared output present, none undeclared, none empty or larger than
// maxBytes, outputs named *.json or *.yaml/*.yml well-formed, the handover a
// JSON object, an approval task's decision present. A refused approval is
// returned as a *RejectedError (permanent); everything else as an
// *OutputError.
func Check(t Task, r Result, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOutputBytes
	}
	var problems []error
	for _, name := range t.Outputs {
		content, ok := r.Outputs[name]
		switch {
		case !ok:
			problems = append(problems, &OutputError{Output: name, Reason: "missing: the agent did not produce it"})
		case len(content) == 0:
			problems = append(problems, &OutputError{Output: name, Reason: "empty"})
		case int64(len(content)) > maxBytes:
			problems = append(problems, &OutputError{Output: name, Reason: fmt.Sprintf("%d bytes, more than the limit of %d", len(content), maxBytes)})
		default:
			if err := wellFormed(name, content); err != nil {
				problems = append(problems, &OutputError{Output: name, Reason: err.Error()})
			}
		}
	}
	var extra []string
	for name := range r.Outputs {
		if !slices.Contains(t.Outputs, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		problems = append(problems, &OutputError{Reason: fmt.Sprintf("outputs %s were not declared (declared: %s)",
			strings.Join(extra, ", "), strings.Join(t.Outputs, ", "))})
	}
	if len(r.Handover) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(r.Handover, &obj); err != nil || obj == nil {
			problems = append(problems, &OutputError{Output: "handover", Reason: "must be a JSON object"})
		}
	}
	if t.Kind == KindApproval && r.Approval == nil {
		problems = append(problems, &OutputError{Output: "approval", Reason: "an approval task must approve or refuse"})
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	if t.Kind == KindApproval && !r.Approval.Approved {
		return Rejected(r.Approval.Reason)
	}
	return nil
}

// wellFormed checks the formats the orchestrator can recognise by name.
func wellFormed(name string, content []byte) error {
	switch strings.ToLower(path.Ext(name)) {
	case ".json":
		if !json.Valid(content) {
			var v any
			err := json.Unmarshal(content, &v)
			return fmt.Errorf("malformed JSON: %v", err)
		}
	case ".yaml", ".yml":
		dec := yaml.NewDecoder(bytes.NewReader(content))
		for {
			var v any
			err := dec.Decode(&v)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("malformed YAML: %v", err)
			}
		}
	}
	return nil
}
