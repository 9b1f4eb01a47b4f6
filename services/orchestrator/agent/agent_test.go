package agent

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/pkg/events"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestCheck(t *testing.T) {
	t.Parallel()
	work := Task{TaskID: "t", Kind: KindWork, Outputs: []string{"a.md", "b.json", "c.yaml"}}
	good := func() Result {
		return Result{Outputs: map[string][]byte{"a.md": []byte("# A"), "b.json": []byte(`{"x":1}`), "c.yaml": []byte("x: 1\n")},
			Handover: json.RawMessage(`{"k":"v"}`)}
	}
	cases := []struct {
		name   string
		task   Task
		change func(*Result)
		max    int64
		want   string
	}{
		{"valid", work, func(*Result) {}, 0, ""},
		{"missing", work, func(r *Result) { delete(r.Outputs, "a.md") }, 0, "output a.md: missing"},
		{"empty", work, func(r *Result) { r.Outputs["a.md"] = nil }, 0, "output a.md: empty"},
		{"too large", work, func(*Result) {}, 4, "output b.json: 7 bytes, more than the limit of 4"},
		{"malformed json", work, func(r *Result) { r.Outputs["b.json"] = []byte(`{"x":`) }, 0, "output b.json: malformed JSON"},
		{"malformed yaml", work, func(r *Result) { r.Outputs["c.yaml"] = []byte("x: [1\n") }, 0, "output c.yaml: malformed YAML"},
		{"undeclared", work, func(r *Result) { r.Outputs["z.md"] = []byte("z") }, 0, "outputs z.md were not declared"},
		{"handover not object", work, func(r *Result) { r.Handover = json.RawMessage(`[1]`) }, 0, "output handover: must be a JSON object"},
		{"approval missing", Task{Kind: KindApproval}, func(r *Result) { r.Outputs = nil }, 0, "an approval task must approve or refuse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := good()
			tc.change(&r)
			err := Check(tc.task, r, tc.max)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var oe *OutputError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an OutputError with %q", err, tc.want)
			}
			if events.IsPermanent(err) {
				t.Fatal("an output problem is permanent; it should be retryable")
			}
		})
	}
	err := Check(Task{Kind: KindApproval}, Result{Approval: &Approval{Approved: false, Reason: "too vague"}}, 0)
	var re *RejectedError
	if !errors.As(err, &re) || re.Reason != "too vague" || !events.IsPermanent(err) {
		t.Fatalf("refused approval = %v, want a permanent RejectedError", err)
	}
	if err := Check(Task{Kind: KindApproval}, Result{Approval: &Approval{Approved: true}}, 0); err != nil {
		t.Fatalf("approved: %v", err)
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	task := Task{RunID: "r", TaskID: "design-l1", DispatchID: "r/design-l1/2", Attempt: 2, Agent: "architect",
		Kind: KindWork, Outputs: []string{"design-l1.md"}}
	c := Context{
		Instructions: "Write the level-1 design from the requirements.",
		Constitution: "Merged from, lowest precedence first: project (rules.md).\n\n### Use UTC {#utc}\n\n_Source: project — rules.md:1_\n\nAll times in UTC.\n",
		Handover:     []Handover{{TaskID: "define-requirements", State: json.RawMessage(`{"open_questions":["auth?"],"summary":"3 features"}`)}},
		Inputs: []Input{{Name: "requirements.md", Source: "output requirements.md of task define-requirements",
			Content: "# Requirements\n\nExample:\n```go\nfmt.Println(1)\n```\n"}},
		Definition: "id: design-l1\nagent: architect\n",
	}
	got := Render(task, c)
	golden := filepath.Join("testdata", "render.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("Render differs from %s (run with -update after checking):\n%s", golden, got)
	}
	// The attempt and run do not change the text.
	task.Attempt, task.RunID, task.DispatchID = 1, "other", "other/design-l1/1"
	if Render(task, c) != got {
		t.Fatal("Render depends on the run or the attempt")
	}
	// Content with a long backtick run gets a longer fence.
	if !strings.Contains(got, "````\n# Requirements") {
		t.Fatal("input fence is not longer than the content's backticks")
	}
}

func TestRouter(t *testing.T) {
	t.Parallel()
	var got Task
	r := NewRouter(map[string]Runtime{"a": runtimeFunc(func(_ context.Context, t Task, _ Context) (Result, error) {
		got = t
		return Result{}, nil
	})})
	if _, err := r.Dispatch(context.Background(), Task{TaskID: "x", Agent: "a"}, Context{}); err != nil || got.TaskID != "x" {
		t.Fatalf("dispatch to a: %v %+v", err, got)
	}
	_, err := r.Dispatch(context.Background(), Task{Agent: "b"}, Context{})
	if !errors.Is(err, ErrUnknownAgent) || !events.IsPermanent(err) {
		t.Fatalf("unknown agent = %v, want permanent ErrUnknownAgent", err)
	}
	if names := r.Agents(); len(names) != 1 || names[0] != "a" {
		t.Fatalf("Agents = %v", names)
	}
}

type runtimeFunc func(context.Context, Task, Context) (Result, error)

func (f runtimeFunc) Dispatch(ctx context.Context, t Task, c Context) (Result, error) {
	return f(ctx, t, c)
}
