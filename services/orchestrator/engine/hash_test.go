package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

// The direct encoding of an event is CanonicalJSON's, byte for byte, or
// declines; a decline falls back to CanonicalJSON.
func TestCanonicalEventMatchesCanonicalJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)
	cases := []struct {
		name  string
		ev    Event
		plain bool // the direct encoding must take it
	}{
		{"work requested", Event{Seq: 2, At: at, Type: EventWorkRequested, RunID: "r-1", TaskID: "a", Attempt: 1,
			DispatchID: "r-1/a/1", Status: string(TaskRunning)}, true},
		{"answered with outputs and handover", Event{Seq: 3, At: at, Type: EventAgentResponded, RunID: "r-1", TaskID: "a",
			Attempt: 1, DispatchID: "r-1/a/1", Status: string(TaskCompleted),
			Outputs:  []OutputRef{{Name: "a.md", Path: "r-1/a/a.md", SHA256: "ab12", Size: 42}, {Name: "b", Path: "p", SHA256: "", Size: 0}},
			Handover: json.RawMessage(`{"a":[1,2.50,{"b":null}],"z":"x<y>&z"}`)}, true},
		{"failed", Event{Seq: 4, At: at, Type: EventAgentResponded, RunID: "r-1", TaskID: "a", Attempt: 2,
			DispatchID: "r-1/a/2", Status: string(TaskPending),
			Error: &TaskError{Kind: ErrorAgent, Message: "model refused: too <long> & slow", Retryable: true, Attempt: 2}}, true},
		{"error with zero fields", Event{Seq: 4, At: at, Type: EventAgentResponded, RunID: "r", Error: &TaskError{}}, true},
		{"annotated", Event{Seq: 5, At: at, Type: EventAnnotated, RunID: "r-1", Key: "review", Value: json.RawMessage(`{"ok":true,"score":0.9}`)}, true},
		{"finalized", Event{Seq: 6, At: at, Type: EventRunFinalized, RunID: "r-1", Status: string(RunFailed), Reason: "task a failed: boom"}, true},
		{"zero time", Event{Seq: 1, Type: EventRunFinalized, RunID: "r"}, true},
		{"local time", Event{Seq: 1, At: at.In(time.FixedZone("x", 3600)), Type: EventRunFinalized, RunID: "r"}, true},
		{"quotes in a message", Event{Seq: 7, At: at, Type: EventAgentResponded, RunID: "r-1",
			Error: &TaskError{Kind: ErrorAgent, Message: "exit 1: \"no\"\n\tat line 3 \\ é \u2028"}}, false},
		{"invalid utf-8", Event{Seq: 7, At: at, Type: EventAgentResponded, RunID: "r-1", Reason: "bad \xff byte"}, false},
		{"started", Event{Seq: 1, At: at, Type: EventRunStarted, RunID: "r-1", Status: string(RunRunning),
			Start: &StartInfo{RunID: "r-1", Plan: Plan{Tasks: []PlanTask{task("a")}}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := CanonicalJSON(c.ev)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendCanonicalEvent(nil, c.ev)
			if ok != c.plain {
				t.Fatalf("direct encoding took it = %v, want %v", ok, c.plain)
			}
			if ok && string(got) != string(want) {
				t.Fatalf("direct encoding\n%s\nCanonicalJSON\n%s", got, want)
			}
			// chain hashes what CanonicalJSON gives, whichever way it encodes.
			h, err := chain("prev", c.ev)
			if err != nil {
				t.Fatal(err)
			}
			if h != slowChain(t, "prev", c.ev) {
				t.Fatal("chain differs from the hash of CanonicalJSON")
			}
		})
	}
}

func slowChain(t *testing.T, prev string, e Event) string {
	t.Helper()
	b, err := CanonicalJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte(prev), b...))
	return hex.EncodeToString(sum[:])
}

// Transitions canonicalize the raw values they put in events (a handover,
// an annotation), which the direct encoding copies as they are: the log
// hash of a run fed untidy JSON is still that of CanonicalJSON.
func TestLogHashOfUntidyRawValues(t *testing.T) {
	t.Parallel()
	s := start(t, diamond(), Limits{})
	s, _ = step(t, s, t0, request("a"))
	r := okResponse(s, "a")
	r.Handover = json.RawMessage(" {\"z\": [1, 2.50], \"a\": \"<b>\" } ")
	n, ev, err := ApplyResponse(s, r, Next(s, t0))
	if err != nil {
		t.Fatal(err)
	}
	if n.LogHash != slowChain(t, s.LogHash, ev) {
		t.Fatal("the log hash of a response differs from the hash of its CanonicalJSON")
	}
	n2, ev2, err := ApplyAction(n, Action{Type: Annotate, Key: "k", Value: json.RawMessage(`{"y": 1, "x": "&"}`)}, Next(n, t0))
	if err != nil {
		t.Fatal(err)
	}
	if n2.LogHash != slowChain(t, n.LogHash, ev2) {
		t.Fatal("the log hash of an annotation differs from the hash of its CanonicalJSON")
	}
}

// A Duration is written as json.Marshal writes its string.
func TestDurationJSON(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, time.Nanosecond, 1500 * time.Nanosecond, 90 * time.Second, -time.Hour, 26*time.Hour + 3*time.Millisecond} {
		got, err := json.Marshal(Duration(d))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(d.String())
		if string(got) != string(want) {
			t.Errorf("Duration(%v) = %s, want %s", d, got, want)
		}
		var back Duration
		if err := json.Unmarshal(got, &back); err != nil || time.Duration(back) != d {
			t.Errorf("Duration(%v) read back as %v (%v)", d, time.Duration(back), err)
		}
	}
}
