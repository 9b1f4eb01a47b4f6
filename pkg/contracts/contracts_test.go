package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/events"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var at = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)

// samples holds one valid payload of every catalog type.
var samples = map[string]Payload{
	"session.started": SessionStarted{TenantID: "acme", SessionID: "s1", ProjectID: "p1", EngineID: "project-discovery",
		EngineVersion: "1.0.0", StartedAt: at},
	"turn.received": TurnReceived{TenantID: "acme", SessionID: "s1", TurnID: "turn-1",
		Message: "I need a tool to track my team's tasks.", ReceivedAt: at},
	"turn.extracted": TurnExtracted{TenantID: "acme", SessionID: "s1", TurnID: "turn-1", TurnNumber: 1,
		Message: "Actually, a mobile app.", Extraction: json.RawMessage(`{"purpose.core_problem":{"value":"mobile app"}}`),
		FieldsUpdated: []string{"purpose.core_problem"},
		Superseded: []Supersession{{FieldPath: "purpose.core_problem", OldValue: json.RawMessage(`"website"`),
			NewValue: json.RawMessage(`"mobile app"`), Reason: "user corrected"}}},
	"turn.responded": TurnResponded{TenantID: "acme", SessionID: "s1", TurnID: "turn-1", TurnNumber: 1,
		Text: "Who will use it first?", Phase: "CORE_CAPTURE", Completeness: 0.25,
		Sidebar: json.RawMessage(`{"sections":[]}`), Provider: "offline", StateHash: "9f2c"},
	"handoff.created": HandoffCreated{TenantID: "acme", HandoffID: "h1", ProjectID: "p1",
		SourceEngineID: "exploration", SourceSessionID: "s1", TargetEngineID: "project-discovery",
		TargetSessionID: "s2", Payload: json.RawMessage(`{"metadata":{}}`)},
	"task.dispatched": TaskDispatched{TenantID: "acme", TaskID: "task-1", Kind: "research", Handler: "research",
		OwnerID: "s1", Attempt: 1, Timeout: 30 * time.Second, Input: json.RawMessage(`{"topic":"crm"}`)},
	"task.completed": TaskCompleted{TenantID: "acme", TaskID: "task-1", Kind: "research", OwnerID: "s1", Attempt: 1,
		Output: json.RawMessage(`{"findings":[]}`)},
	"task.failed": TaskFailed{TenantID: "acme", TaskID: "task-1", Kind: "research", OwnerID: "s1", Attempt: 2,
		Error: "timeout"},
	"sim.episode.started":  SimEpisodeStarted{TenantID: "acme", RunID: "sim1", EpisodeID: "ep1", Seed: 7},
	"sim.episode.step":     SimEpisodeStep{TenantID: "acme", RunID: "sim1", EpisodeID: "ep1", Step: 3, AgentID: "buyer"},
	"sim.episode.finished": SimEpisodeFinished{TenantID: "acme", RunID: "sim1", EpisodeID: "ep1", Outcome: "agreement"},
	"llm.call.recorded": LLMCallRecorded{TenantID: "acme", Scope: "s1", RequestHash: "ab12", Provider: "offline",
		Model: "offline-1", Purpose: "response", Content: "Hello", Usage: LLMUsage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12},
		Latency: 3 * time.Millisecond},
}

func TestEveryTypeHasASample(t *testing.T) {
	for _, s := range Catalog() {
		if _, ok := samples[s.Name]; !ok {
			t.Errorf("catalog type %s has no sample (and so no golden file)", s.Name)
		}
	}
	if len(samples) != len(Catalog()) {
		t.Errorf("%d samples for %d catalog types", len(samples), len(Catalog()))
	}
}

func TestCatalogShape(t *testing.T) {
	for _, s := range Catalog() {
		if !strings.HasPrefix(s.Type, "dev.praetor.") || !strings.HasSuffix(s.Type, ".v1") {
			t.Errorf("%s: type %q is not reverse-DNS and versioned", s.Name, s.Type)
		}
		def, ok := Stream(s.Stream)
		if !ok {
			t.Errorf("%s: unknown stream %s", s.Name, s.Stream)
			continue
		}
		if pattern := def.Subjects[0]; !subjectMatches(pattern, s.SubjectPrefix()+".t.k") {
			t.Errorf("%s: subject %s.t.k is not captured by %s's %s", s.Name, s.SubjectPrefix(), s.Stream, pattern)
		}
	}
}

func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	if len(p) != len(s) {
		return false
	}
	for i := range p {
		if p[i] != "*" && p[i] != s[i] {
			return false
		}
	}
	return true
}

// TestGolden pins the wire form of every event type (structured JSON of the
// CloudEvent) and checks it decodes back to the same payload.
func TestGolden(t *testing.T) {
	for name, p := range samples {
		t.Run(name, func(t *testing.T) {
			ev, err := NewEvent(Meta{ID: "evt-" + name, Source: "/praetor/test", Time: at}, p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(ev, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/contracts -update to create it)", err)
			}
			if !bytes.Equal(append(got, '\n'), want) {
				t.Errorf("wire form changed; if on purpose, bump the type version or run -update:\n%s", got)
			}
			var back event.Event
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			decoded, err := Decode(back)
			if err != nil {
				t.Fatalf("golden event does not decode: %v", err)
			}
			a, _ := json.Marshal(decoded)
			b, _ := json.Marshal(p)
			if !bytes.Equal(a, b) {
				t.Errorf("decoded payload\n%s\nwant\n%s", a, b)
			}
			subject, err := Subject(back)
			tenant, key := p.Partition()
			if want := p.Spec().SubjectPrefix() + "." + tenant + "." + key; err != nil || subject != want {
				t.Errorf("subject = %q, %v; want %q", subject, err, want)
			}
		})
	}
}

func TestDecodeRejectsBrokenContracts(t *testing.T) {
	good := MustEvent(Meta{ID: "x", Time: at}, samples["turn.received"])
	cases := map[string]func(ev *event.Event){
		"unknown type":    func(ev *event.Event) { ev.SetType("dev.praetor.nope.v1") },
		"not json":        func(ev *event.Event) { ev.DataEncoded = []byte("{") },
		"cut short":       func(ev *event.Event) { ev.DataEncoded = []byte(`{"garbage":`) },
		"missing message": func(ev *event.Event) { ev.DataEncoded = []byte(`{"tenant_id":"acme","session_id":"s1","turn_id":"t"}`) },
		"bad session": func(ev *event.Event) {
			ev.DataEncoded = []byte(`{"tenant_id":"acme","session_id":"s 1","turn_id":"t","message":"m"}`)
		},
		"tenant mismatch":  func(ev *event.Event) { ev.SetExtension(ExtTenant, "other") },
		"key mismatch":     func(ev *event.Event) { ev.SetExtension(ExtPartitionKey, "s9") },
		"wrong media type": func(ev *event.Event) { ev.SetDataContentType("text/plain") },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			ev := good.Clone()
			mutate(&ev)
			_, err := Decode(ev)
			if !errors.Is(err, ErrContract) || !events.IsPermanent(err) {
				t.Fatalf("Decode = %v, want a permanent contract violation", err)
			}
			// The reason ends with what is wrong, not a separator: the JSON
			// decoder appends ": " and the rest of the input, none when
			// the data ends early.
			if msg := err.Error(); strings.HasSuffix(msg, ": ") || strings.HasSuffix(msg, ":") {
				t.Errorf("Decode = %q, want a reason that ends cleanly", msg)
			}
		})
	}
	if _, err := DecodeAs[TurnResponded](good); !errors.Is(err, ErrContract) {
		t.Errorf("DecodeAs with the wrong type = %v, want a contract violation", err)
	}
	if got, err := DecodeAs[TurnReceived](good); err != nil || got.Message == "" {
		t.Errorf("DecodeAs = %+v, %v", got, err)
	}
}

func TestNewEventValidates(t *testing.T) {
	_, err := NewEvent(Meta{}, TurnReceived{TenantID: "acme", SessionID: "s1", TurnID: "t"})
	if err == nil || !strings.Contains(err.Error(), "message is required") {
		t.Fatalf("err = %v, want the missing field named", err)
	}
	_, err = NewEvent(Meta{}, TurnReceived{TenantID: "ac.me", SessionID: "s1", TurnID: "t", Message: "m"})
	if err == nil || !strings.Contains(err.Error(), "tenant_id") {
		t.Fatalf("err = %v, want the invalid tenant named", err)
	}
}

// FuzzDecode decodes arbitrary bytes as the data of every type: Decode must
// never panic, and what it accepts must re-encode to an event it accepts.
func FuzzDecode(f *testing.F) {
	for _, p := range samples {
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	f.Add([]byte(`{"tenant_id":1}`))
	f.Add([]byte(`null`))
	specs := Catalog()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range specs {
			ev := event.New()
			ev.SetID("fuzz")
			ev.SetType(s.Type)
			ev.SetSource("/fuzz")
			ev.SetExtension(ExtTenant, "acme")
			ev.SetExtension(ExtPartitionKey, "k1")
			ev.SetDataContentType(event.ApplicationJSON)
			ev.DataEncoded = data
			p, err := Decode(ev)
			if err != nil {
				continue
			}
			again, err := NewEvent(Meta{ID: "fuzz", Time: at}, p)
			if err != nil {
				t.Fatalf("%s: accepted payload does not re-encode: %v", s.Name, err)
			}
			if _, err := Decode(again); err != nil {
				t.Fatalf("%s: re-encoded payload rejected: %v", s.Name, err)
			}
		}
	})
}

// TestNewEventRaw checks that an event whose raw field is appended by
// NewEventRaw decodes to the payload NewEvent encodes with the field set,
// and that it refuses what it cannot append to.
func TestNewEventRaw(t *testing.T) {
	sidebar := json.RawMessage(`{"phase":{"current":"purpose","label":"Purpose \u003c1\u003e"},"progress":[0.5,{"x":null}]}`)
	full := TurnResponded{TenantID: "acme", SessionID: "s1", TurnID: "t1", TurnNumber: 3, Text: "Who uses it?",
		Phase: "purpose", Completeness: 0.25, Sidebar: sidebar, StateHash: "h"}
	meta := Meta{ID: "e1", Source: "/praetor/runner", Time: at}
	want, err := NewEvent(meta, full)
	if err != nil {
		t.Fatal(err)
	}
	stripped := full
	stripped.Sidebar = nil
	got, err := NewEventRaw(meta, stripped, "sidebar", sidebar)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(want.Data(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got.Data(), &b); err != nil {
		t.Fatalf("NewEventRaw data %s: %v", got.Data(), err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("NewEventRaw data %s,\nwant the same as %s", got.Data(), want.Data())
	}
	back, err := DecodeAs[TurnResponded](got)
	if err != nil || !bytes.Equal(back.Sidebar, sidebar) || back.Text != full.Text {
		t.Errorf("decoded %+v, %v; want the payload back with its sidebar", back, err)
	}
	if got.ID() != want.ID() || got.Type() != want.Type() || got.Extensions()[ExtPartitionKey] != want.Extensions()[ExtPartitionKey] {
		t.Errorf("attributes %v, want %v", got.Context, want.Context)
	}

	// AppendEventRaw writes the same data into the buffer it is given,
	// when it is large enough, from its start.
	buf := append(make([]byte, 0, 4096), "left over"...)
	into, err := AppendEventRaw(buf, meta, stripped, "sidebar", sidebar)
	if err != nil || !bytes.Equal(into.Data(), got.Data()) {
		t.Errorf("AppendEventRaw data %s, %v; want NewEventRaw's %s", into.Data(), err, got.Data())
	}
	if &into.DataEncoded[0] != &buf[:1][0] {
		t.Error("AppendEventRaw did not write into the buffer it was given")
	}

	// No raw: NewEvent's event. A field name that would need escaping, or
	// an invalid payload: refused.
	if e, err := NewEventRaw(meta, stripped, "sidebar", nil); err != nil || bytes.Contains(e.Data(), []byte("sidebar")) {
		t.Errorf("no raw: %s, %v", e.Data(), err)
	}
	if _, err := NewEventRaw(meta, stripped, `side"bar`, sidebar); err == nil {
		t.Error(`field side"bar: no error`)
	}
	if _, err := NewEventRaw(meta, full, "sidebar", sidebar); err == nil {
		t.Error("sidebar set in the payload too: no error")
	}
	if _, err := NewEventRaw(meta, stripped, "sidebars", sidebar); err == nil {
		t.Error("no field sidebars in the payload: no error")
	}
	bad := stripped
	bad.TurnID = ""
	if _, err := NewEventRaw(meta, bad, "sidebar", sidebar); err == nil {
		t.Error("invalid payload: no error")
	}
}
