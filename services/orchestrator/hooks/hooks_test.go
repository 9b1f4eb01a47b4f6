package hooks

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunOrderMatchingAndErrors(t *testing.T) {
	t.Parallel()
	r := New()
	var got []string
	rec := func(name string) Func {
		return func(_ context.Context, e Event) error {
			got = append(got, name+":"+e.TaskID)
			return nil
		}
	}
	r.OnPreTask("*", rec("all-1"))
	r.OnPreTask("design-l1", rec("design"))
	r.OnPreTask("other", rec("other"))
	r.OnPreTask("*", rec("all-2"))
	r.OnPostTask("*", rec("post"))

	if _, err := r.Run(context.Background(), Event{Point: PreTask, TaskID: "design-l1"}); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ","); s != "all-1:design-l1,design:design-l1,all-2:design-l1" {
		t.Fatalf("order = %s, want registration order of the matching hooks", s)
	}

	veto := errors.New("not on fridays")
	r.OnPreTask("*", func(context.Context, Event) error { return veto })
	r.OnPreTask("*", rec("after-veto"))
	got = nil
	_, err := r.Run(context.Background(), Event{Point: PreTask, TaskID: "x"})
	var he *Error
	if !errors.Is(err, veto) || !errors.As(err, &he) || he.Index != 4 || he.Pattern != "*" {
		t.Fatalf("err = %v, want the veto from hook #5", err)
	}
	if strings.Contains(strings.Join(got, ","), "after-veto") {
		t.Fatal("a pre-task hook ran after an error")
	}

	// on-failure hooks all run; errors and panics are joined.
	r.OnFailure("*", func(context.Context, Event) error { panic("boom") })
	r.OnFailure("*", func(_ context.Context, e Event) error { return e.Annotate("alert", map[string]string{"to": "ops"}) })
	r.OnFailure("*", func(context.Context, Event) error { return errors.New("pager down") })
	notes, err := r.Run(context.Background(), Event{Point: OnFailure, TaskID: "x"})
	if err == nil || !strings.Contains(err.Error(), "hook panicked: boom") || !strings.Contains(err.Error(), "pager down") {
		t.Fatalf("on-failure errors = %v", err)
	}
	if len(notes) != 1 || notes[0].Key != "alert" || string(notes[0].Value) != `{"to":"ops"}` || notes[0].TaskID != "x" {
		t.Fatalf("annotations = %+v", notes)
	}
	var nilReg *Registry
	if n, err := nilReg.Run(context.Background(), Event{Point: PreTask}); n != nil || err != nil {
		t.Fatal("nil registry ran something")
	}
	if err := (Event{}).Annotate("k", 1); err == nil {
		t.Fatal("Annotate outside a hook succeeded")
	}
}

func TestHas(t *testing.T) {
	t.Parallel()
	r := New()
	r.OnFailure("a", func(context.Context, Event) error { return nil })
	r.OnLoopExit(AllTasks, func(context.Context, Event) error { return nil })
	cases := []struct {
		point Point
		task  string
		want  bool
	}{
		{OnFailure, "a", true},
		{OnFailure, "b", false},
		{OnLoopExit, "b", true},
		{PreTask, "a", false},
	}
	for _, c := range cases {
		if got := r.Has(c.point, c.task); got != c.want {
			t.Errorf("Has(%s, %s) = %v, want %v", c.point, c.task, got, c.want)
		}
	}
	var nilReg *Registry
	if nilReg.Has(OnFailure, "a") {
		t.Error("a nil registry has a hook")
	}
}
