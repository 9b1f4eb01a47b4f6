package runner

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// goldenStart is the session.started of a golden file's session.
func goldenStart(t *testing.T, evs []event.Event) contracts.SessionStarted {
	t.Helper()
	for _, ev := range evs {
		if ev.Type() == contracts.SessionStartedSpec.Type {
			s, err := contracts.DecodeAs[contracts.SessionStarted](ev)
			if err != nil {
				t.Fatal(err)
			}
			return *s
		}
	}
	t.Fatal("no session.started")
	return contracts.SessionStarted{}
}

// A replay rebuilds the handoff of the turn that hands off as the live run
// published it, and compares it with the one recorded for it: the golden
// exploration session's handoff is the one its project-discovery session
// started with, whether the record is that session.started or the
// handoff.created; a recorded payload that differs (a decision's reasoning,
// a constraint more) is a divergence that says where it differs, though
// every state hash matches; without a record the handoff is reported
// unchecked.
func TestReplayComparesTheHandoffWithTheRecordedOne(t *testing.T) {
	t.Parallel()
	evs, calls := readGolden(t, filepath.Join("testdata", "golden", "handoff-exploration.jsonl.gz"))
	targetEvs, _ := readGolden(t, filepath.Join("testdata", "golden", "handoff-project-discovery.jsonl.gz"))
	target := goldenStart(t, targetEvs)
	if target.InboundHandoff == nil {
		t.Fatal("the golden project-discovery session started without a handoff")
	}
	recorded := func(edit func(h *contracts.EngineHandoff)) json.RawMessage {
		h := *target.InboundHandoff
		h.ActionList.DecisionsReached = slices.Clone(h.ActionList.DecisionsReached)
		h.ActionList.ConstraintsIdentified = slices.Clone(h.ActionList.ConstraintsIdentified)
		if edit != nil {
			edit(&h)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	asCreated := func(payload json.RawMessage) HandoffPayloads {
		ev, err := contracts.NewEvent(contracts.Meta{ID: "created", Source: "/test", Time: target.StartedAt},
			contracts.HandoffCreated{TenantID: target.TenantID, HandoffID: target.InboundHandoffID, ProjectID: target.ProjectID,
				SourceEngineID: "exploration", SourceSessionID: target.InboundHandoff.Metadata.SessionID,
				TargetEngineID: target.EngineID, TargetSessionID: target.SessionID, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		p := HandoffPayloads{}
		if err := p.Add(ev); err != nil {
			t.Fatal(err)
		}
		return p
	}
	started := HandoffPayloads{}
	for _, ev := range targetEvs {
		if err := started.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	// The target's session.started with a member in its inbound handoff
	// that this build's EngineHandoff does not have: one the live build
	// wrote and this one no longer does.
	startedWithMore := HandoffPayloads{}
	for _, ev := range targetEvs {
		if ev.Type() == contracts.SessionStartedSpec.Type {
			ev = withInboundMember(t, ev, "retired_field", `"carried"`)
		}
		if err := startedWithMore.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	n := len(target.InboundHandoff.ActionList.ConstraintsIdentified)
	for _, tc := range []struct {
		name    string
		records HandoffRecords
		// checked: the replay has the handoff's record; want: what it
		// says differs, each line's beginning (none: it matches).
		checked bool
		want    []string
	}{
		{name: "the target's session.started", records: started, checked: true},
		{name: "the handoff.created", records: asCreated(recorded(nil)), checked: true},
		{name: "another reasoning", checked: true, records: asCreated(recorded(func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached[0].Reasoning = "Because the studio owner said so, for no other reason."
		})), want: []string{`action_list.decisions_reached[0].reasoning: "I'll go with the off-the-shelf tool because it is cheap ` +
			`and fast to start; cost versus flexibility" (recorded "Because the studio owner said so, for no other reason.")`}},
		{name: "a constraint more", checked: true, records: asCreated(recorded(func(h *contracts.EngineHandoff) {
			h.ActionList.ConstraintsIdentified = append(h.ActionList.ConstraintsIdentified,
				contracts.IdentifiedConstraint{Constraint: "HIPAA applies"})
		})), want: []string{fmt.Sprintf(`action_list.constraints_identified[%d]: absent, %d items `+
			`(recorded {"constraint":"HIPAA applies","implication":""})`, n, n)}},
		{name: "a member this build does not write", checked: true, records: startedWithMore,
			want: []string{`retired_field: absent (recorded "carried")`}},
		{name: "no record", records: HandoffPayloads{}},
		{name: "no records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := replayGoldenEvents(t, evs, calls, ReplayOptions{Handoffs: tc.records})
			if err != nil {
				t.Fatal(err)
			}
			var handoffs []*ReplayedHandoff
			for _, step := range res.Turns {
				if !step.Match {
					t.Fatalf("turn %d diverges: state %s, the live run's %s", step.TurnNumber, step.StateHash, step.RecordedHash)
				}
				if step.Handoff != nil {
					handoffs = append(handoffs, step.Handoff)
				}
			}
			if len(handoffs) != 1 {
				t.Fatalf("%d handoffs rebuilt, want the one of the last turn", len(handoffs))
			}
			h := handoffs[0]
			if h.HandoffID != target.InboundHandoffID || h.TargetSessionID != target.SessionID || h.TargetEngineID != target.EngineID {
				t.Errorf("handoff %s to %s (session %s), want %s to %s (session %s)", h.HandoffID, h.TargetEngineID,
					h.TargetSessionID, target.InboundHandoffID, target.EngineID, target.SessionID)
			}
			if want, _ := engine.Canonicalize(recorded(nil)); string(h.Payload) != string(want) || h.PayloadHash != engine.HashCanonical(want) {
				t.Errorf("payload %s (hash %s), want the live run's %s", h.Payload, h.PayloadHash, want)
			}
			if h.Checked != tc.checked || (h.RecordedHash != "") != tc.checked {
				t.Errorf("checked %t against a record of hash %q, want checked %t", h.Checked, h.RecordedHash, tc.checked)
			}
			// A handoff without a record is neither a match nor a
			// divergence: nothing says whether it is the live run's.
			wantMatch, wantDiverged := tc.checked && len(tc.want) == 0, tc.checked && len(tc.want) > 0
			if h.Match != wantMatch || res.Diverged != wantDiverged {
				t.Errorf("handoff match %t, replay diverged %t; want %t and %t", h.Match, res.Diverged, wantMatch, wantDiverged)
			}
			if len(h.Differences) != len(tc.want) {
				t.Fatalf("differences %q, want %q", h.Differences, tc.want)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(h.Differences[i], want) {
					t.Errorf("difference %q, want %q", h.Differences[i], want)
				}
			}
		})
	}
}

// A recorded payload that is not JSON ends the replay with an error naming
// the turn and the handoff: it can be compared with nothing.
func TestReplayRefusesARecordedHandoffThatIsNotJSON(t *testing.T) {
	t.Parallel()
	evs, calls := readGolden(t, filepath.Join("testdata", "golden", "handoff-exploration.jsonl.gz"))
	targetEvs, _ := readGolden(t, filepath.Join("testdata", "golden", "handoff-project-discovery.jsonl.gz"))
	id := goldenStart(t, targetEvs).InboundHandoffID
	_, err := replayGoldenEvents(t, evs, calls, ReplayOptions{Handoffs: HandoffPayloads{id: json.RawMessage(`{"metadata":`)}})
	if err == nil || !strings.Contains(err.Error(), "turn 10 (") || !strings.Contains(err.Error(), "handoff "+id+": the recorded payload is not JSON") {
		t.Errorf("replay: %v, want the turn and the handoff named", err)
	}
}

// jsonDifferences names each path where two documents differ, with both
// values, and how many more past its limit.
func TestJSONDifferences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, got, want string
		limit           int
		diff            []string
	}{
		{"same", `{"a":[1,{"b":"x"}]}`, `{"a":[1,{"b":"x"}]}`, 8, nil},
		{"a value", `{"a":{"b":"x"}}`, `{"a":{"b":"y"}}`, 8, []string{`a.b: "x" (recorded "y")`}},
		{"a member less", `{"a":1}`, `{"a":1,"b":[2]}`, 8, []string{`b: absent (recorded [2])`}},
		{"a member more", `{"a":1,"b":null}`, `{"a":1}`, 8, []string{`b: null (recorded: absent)`}},
		{"an item more", `[1,2]`, `[1]`, 8, []string{`[1]: 2 (recorded: absent, 1 items)`}},
		{"an item less", `{"l":[1]}`, `{"l":[1,{"k":2}]}`, 8, []string{`l[1]: absent, 1 items (recorded {"k":2})`}},
		{"another type", `{"a":[]}`, `{"a":{}}`, 8, []string{`a: [] (recorded {})`}},
		{"null for a list", `{"a":null}`, `{"a":[]}`, 8, []string{`a: null (recorded [])`}},
		{"the whole", `1`, `"1"`, 8, []string{`(the payload): 1 (recorded "1")`}},
		{"a long value differing past a line's worth", `{"r":"` + strings.Repeat("x", 130) + `y"}`, `{"r":"` + strings.Repeat("x", 130) + `z"}`, 8,
			[]string{`r: …` + strings.Repeat("x", 30) + `y" (recorded …` + strings.Repeat("x", 30) + `z")`}},
		{"a long value differing early", `{"r":"y` + strings.Repeat("x", 130) + `"}`, `{"r":"z` + strings.Repeat("x", 130) + `"}`, 8,
			[]string{`r: "y` + strings.Repeat("x", 118) + `… (recorded "z` + strings.Repeat("x", 118) + `…)`}},
		{"past the limit", `{"a":1,"b":2,"c":3}`, `{"a":0,"b":0,"c":0}`, 2, []string{`a: 1 (recorded 0)`, `b: 2 (recorded 0)`, `and 1 more`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := jsonDifferences([]byte(tc.got), []byte(tc.want), tc.limit)
			if !slices.Equal(got, tc.diff) {
				t.Errorf("differences %q, want %q", got, tc.diff)
			}
		})
	}
}

// withInboundMember is the session.started ev with the member name: value
// (JSON) added to its inbound handoff, as its data holds it.
func withInboundMember(t *testing.T, ev event.Event, name, value string) event.Event {
	t.Helper()
	var data map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data(), &data); err != nil {
		t.Fatal(err)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(data["inbound_handoff"], &h); err != nil {
		t.Fatal(err)
	}
	h[name] = json.RawMessage(value)
	var err error
	if data["inbound_handoff"], err = json.Marshal(h); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	ev = ev.Clone()
	if err := ev.SetData(event.ApplicationJSON, b); err != nil {
		t.Fatal(err)
	}
	return ev
}

// A handoff of memory version 1 is written as builds before decision keys
// wrote it: no decision keeps a key, options or question, and no
// eliminated option a question (TestSessionOfMemoryVersion1HandsOffDecisionsWithoutQuestions
// plays a conversation that eliminates none). The handoff's lists are its
// own copies: the slices it was built from (the carried inbound handoff's)
// keep their fields.
func TestWithoutQuestionsWritesAVersion1Handoff(t *testing.T) {
	t.Parallel()
	decisions := []contracts.Decision{{Decision: "Xero", Confidence: 0.8, Reasoning: "cheapest for invoicing",
		Key: "exploration/decision.decision_made", Options: []string{"Xero", "QuickBooks"}, Question: "Which tool for invoicing?"}}
	eliminated := []contracts.EliminatedOption{{Option: "QuickBooks", Reasons: []string{"too dear"}, Question: "Which tool for invoicing?"}}
	h := contracts.EngineHandoff{ActionList: contracts.ActionList{DecisionsReached: decisions, OptionsEliminated: eliminated}}
	withoutQuestions(&h)
	want := contracts.ActionList{
		DecisionsReached:  []contracts.Decision{{Decision: "Xero", Confidence: 0.8, Reasoning: "cheapest for invoicing"}},
		OptionsEliminated: []contracts.EliminatedOption{{Option: "QuickBooks", Reasons: []string{"too dear"}}},
	}
	got, _ := json.Marshal(h.ActionList)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("action list %s, want %s", got, wantJSON)
	}
	if decisions[0].Key == "" || decisions[0].Question == "" || len(decisions[0].Options) == 0 || eliminated[0].Question == "" {
		t.Errorf("the lists the handoff was built from lost their fields: %+v, %+v", decisions, eliminated)
	}
}
