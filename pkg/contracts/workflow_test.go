package contracts

import (
	"encoding/json"
	"strings"
	"testing"
)

func init() {
	for name, p := range map[string]Payload{
		"workflow.requested": WorkflowRequested{TenantID: "acme", RunID: "run1", Workflow: "workflows/requirements-to-design.yaml",
			Seed: 42, RequestedAt: at},
		"workflow.started": WorkflowStarted{TenantID: "acme", RunID: "run1", Workflow: "requirements-to-design",
			Definition: json.RawMessage(`{"run_id":"run1","plan":{"tasks":[{"id":"design","agent":"architect","kind":"work"}]}}`),
			Seed:       42, StartedAt: at},
		"workflow.task.updated": WorkflowTaskUpdated{TenantID: "acme", RunID: "run1", Seq: 3, TaskID: "design",
			Transition: WorkflowAgentResponded, Status: "COMPLETED", Attempt: 1, DispatchID: "run1/design/1",
			Outputs:   []string{"design.md"},
			Artifacts: []WorkflowArtifact{{Name: "design.md", Path: "run1/design/design.md", SHA256: "9f86d081884c7d65", Size: 4}},
			Handover:  json.RawMessage(`{"decisions":["one service"]}`), At: at},
		"workflow.annotated": WorkflowAnnotated{TenantID: "acme", RunID: "run1", Seq: 4, TaskID: "design",
			Key: "reviewed-by", Value: json.RawMessage(`"design-overlay"`), At: at},
		"workflow.finished": WorkflowFinished{TenantID: "acme", RunID: "run1", Seq: 5, Status: "COMPLETED", At: at},
	} {
		samples[name] = p
	}
}

func TestWorkflowContracts(t *testing.T) {
	good := samples["workflow.task.updated"].(WorkflowTaskUpdated)
	cases := []struct {
		name   string
		p      Payload
		reason string // empty: valid
	}{
		{"completed", good, ""},
		{"failed with kind", func() Payload {
			w := good
			w.Status, w.Outputs, w.Artifacts, w.Handover = "FAILED", nil, nil, nil
			w.Error, w.ErrorKind, w.Retryable = "model refused", "agent", true
			return w
		}(), ""},
		{"no seq", func() Payload { w := good; w.Seq = 0; return w }(), "seq"},
		{"unknown transition", func() Payload { w := good; w.Transition = "GUESSED"; return w }(), "transition"},
		{"error without kind", func() Payload { w := good; w.Error = "boom"; return w }(), "error_kind"},
		{"artifact without hash", func() Payload { w := good; w.Artifacts = []WorkflowArtifact{{Name: "a"}}; return w }(), "artifacts[0].sha256"},
		{"annotation without value", WorkflowAnnotated{TenantID: "acme", RunID: "r", Seq: 2, Key: "k"}, "value"},
		{"finished without seq", WorkflowFinished{TenantID: "acme", RunID: "r", Status: "FAILED"}, "seq"},
		{"request without workflow", WorkflowRequested{TenantID: "acme", RunID: "r"}, "workflow"},
		{"run id not a token", WorkflowRequested{TenantID: "acme", RunID: "r/1", Workflow: "w.yaml"}, "run_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("Validate() = %v, want valid", err)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.reason)
			}
		})
	}
}

// Every workflow event of a run lands on the run's subject, so the
// partitioned stream keeps them in order.
func TestWorkflowSubjects(t *testing.T) {
	for _, name := range []string{"workflow.requested", "workflow.started", "workflow.task.updated", "workflow.annotated", "workflow.finished"} {
		ev := MustEvent(Meta{ID: "x", Time: at}, samples[name])
		subject, err := Subject(ev)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(subject, ".")
		if len(parts) != 5 || parts[1] != "workflow" || parts[3] != "acme" || parts[4] != "run1" {
			t.Errorf("%s: subject %s, want praetor.workflow.<event>.acme.run1", name, subject)
		}
	}
}
