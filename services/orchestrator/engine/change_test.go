package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// A Change gives the very states and events of the transitions applied one
// by one, and never modifies a state it has returned.
func TestChangeMatchesSingleTransitions(t *testing.T) {
	t.Parallel()
	p := diamond()
	p.Tasks[1].Retries = 1
	s0 := start(t, p, Limits{RetryBackoff: Duration(time.Second)})

	// The same script, as steps on a state and as steps of one change.
	type stepFn struct {
		single func(State, Ctx) (State, Event, error)
		change func(*Change, Ctx) (Event, error)
	}
	act := func(a Action) stepFn {
		return stepFn{
			func(s State, c Ctx) (State, Event, error) { return ApplyAction(s, a, c) },
			func(ch *Change, c Ctx) (Event, error) { return ch.ApplyAction(a, c) },
		}
	}
	resp := func(r func(State) Response) stepFn {
		return stepFn{
			func(s State, c Ctx) (State, Event, error) { return ApplyResponse(s, r(s), c) },
			func(ch *Change, c Ctx) (Event, error) { return ch.ApplyResponse(r(ch.s), c) },
		}
	}
	script := []stepFn{
		act(Action{Type: RequestWork, TaskID: "a"}),
		resp(func(s State) Response { return okResponse(s, "a") }),
		act(Action{Type: RequestWork, TaskID: "b"}),
		act(Action{Type: RequestWork, TaskID: "c"}),
		act(Action{Type: Annotate, TaskID: "c", Key: "note", Value: json.RawMessage(`{"y":2,"x":1}`)}),
		resp(func(s State) Response { return failResponse(s, "b", true) }),
		resp(func(s State) Response { return okResponse(s, "c") }),
	}

	var (
		single    []State
		singleEvs []Event
	)
	s := s0
	for i, st := range script {
		n, ev, err := st.single(s, Next(s, t0.Add(time.Duration(i)*time.Second)))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		s = n
		single = append(single, n)
		singleEvs = append(singleEvs, ev)
	}

	ch := NewChange(s0)
	var taken []State
	for i, st := range script {
		ev, err := st.change(ch, ch.Next(t0.Add(time.Duration(i)*time.Second)))
		if err != nil {
			t.Fatalf("change step %d: %v", i, err)
		}
		if !reflect.DeepEqual(ev, singleEvs[i]) {
			t.Fatalf("change step %d emitted %+v, want %+v", i, ev, singleEvs[i])
		}
		if i%2 == 0 { // take some states midway: later steps must not touch them
			got := ch.State()
			if mustHash(t, got) != mustHash(t, single[i]) {
				t.Fatalf("change state after step %d differs from the single transitions'", i)
			}
			taken = append(taken, got.Clone())
			taken = append(taken, got)
		}
	}
	if mustHash(t, ch.State()) != mustHash(t, s) {
		t.Fatal("the change's final state differs from the single transitions'")
	}
	for i := 0; i < len(taken); i += 2 {
		if !reflect.DeepEqual(taken[i], taken[i+1]) {
			t.Fatalf("state %d taken from the change was modified by a later step", i/2)
		}
	}
	if mustHash(t, s0) != mustHash(t, start(t, p, Limits{RetryBackoff: Duration(time.Second)})) {
		t.Fatal("the change modified the state it started from")
	}
}

// A transition that fails leaves the change as it was.
func TestChangeFailedTransitionChangesNothing(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	ch := NewChange(s)
	if _, err := ch.ApplyAction(Action{Type: RequestWork, TaskID: "a"}, ch.Next(t0)); err != nil {
		t.Fatal(err)
	}
	before := mustHash(t, ch.State())
	if _, err := ch.ApplyAction(Action{Type: RequestWork, TaskID: "b"}, ch.Next(t0)); !errors.Is(err, ErrInvalidAction) {
		t.Fatalf("requesting b before a completed: %v, want ErrInvalidAction", err)
	}
	if _, err := ch.ApplyResponse(Response{TaskID: "a", Attempt: 1, DispatchID: "wrong", OK: true}, ch.Next(t0)); !errors.Is(err, ErrStaleResponse) {
		t.Fatalf("stale response: %v, want ErrStaleResponse", err)
	}
	if got := mustHash(t, ch.State()); got != before {
		t.Fatal("a failed transition changed the change's state")
	}
}
