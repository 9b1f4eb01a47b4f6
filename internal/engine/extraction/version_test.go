package extraction_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/internal/llm/record"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// listModel answers an extraction request for a list field as a model
// does what the prompt asks: the whole list as it stands after the message
// when the instructions ask for it, else only what the message names.
type listModel struct {
	path, added string
}

func (m *listModel) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	p, err := extraction.ParsePrompt(req)
	if err != nil {
		return nil, err
	}
	items := []string{m.added}
	if strings.Contains(req.Messages[0].Content, "complete list") {
		for _, f := range p.Fields {
			var cur []string
			if f.Path == m.path && json.Unmarshal(f.Current, &cur) == nil {
				items = append(cur, m.added)
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"fields": map[string]any{
		m.path: map[string]any{"value": items, "confidence": 0.9}}})
	return &llm.Response{Content: string(b)}, nil
}

// A user who adds to a list in a message that says "actually" keeps the
// items stored before. The prompt used to ask only for what the message
// gave evidence of, and the correction marker made the model's one new
// item replace the whole list.
func TestListGrownAfterACorrectionKeepsItsItems(t *testing.T) {
	def := enginetest.Definition()
	cur := extraction.Apply(def, engine.NewExtraction(), answer(t, map[string]any{
		"details.features": []any{[]string{"tasks", "deadlines"}, 0.9}}), "Tasks and deadlines.", meta(1)).Extraction
	model := &listModel{path: "details.features", added: "notifications"}
	p, err := extraction.New(extraction.Config{LLM: model})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Extract(context.Background(), extraction.Request{Def: def, Current: cur,
		Message: "Actually, we also need notifications.", Meta: meta(2)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if !res.Extraction.Decode("details.features", &got) {
		t.Fatalf("features = %s, want a list", res.Extraction.Fields["details.features"].Value)
	}
	if want := []string{"tasks", "deadlines", "notifications"}; !slices.Equal(got, want) {
		t.Errorf("features = %v, want %v", got, want)
	}
}

// pinnedDefinition is an engine defined here, not shared with other
// tests, so that the hashes pinned below change only with the prompt.
func pinnedDefinition() *engine.Definition {
	return &engine.Definition{EngineID: "pinned", Name: "Pinned", Version: "1.0.0",
		Obligations: []engine.Obligation{
			{ID: "tools_known", Description: "The tools are known", Fields: []string{"stack.tools"}, Question: "Which tools do you use?"},
			{ID: "team_known", Description: "The team size is known", Fields: []string{"team.size"}},
		},
		ExtractionSchema: engine.ExtractionSchema{Fields: []engine.FieldDefinition{
			{Path: "stack.tools", DisplayName: "Tools", Description: "Software the team uses", ValueType: engine.TypeArray,
				Cues: engine.Cues{Keywords: []string{"use", "tool"}}},
			{Path: "team.size", DisplayName: "Team size", Description: "People on the team", ValueType: engine.TypeNumber,
				ConfidenceThreshold: 0.8},
		}},
	}
}

var pinnedHistory = []engine.Message{{Role: engine.RoleUser, Content: "We use Xero and Slack.", Turn: 1, MessageID: "m1"},
	{Role: engine.RoleAssistant, Content: "Which tools do you use?", Turn: 1}}

const pinnedMessage = "Actually, we also use Stripe."

// The request hash of each prompt version for one input. A session keeps
// its version, and a recorded answer is found by the hash: once a version
// is released, its hash must not change. Version 1's is the hash of the
// prompt as it was before versions existed.
var pinnedHashes = map[extraction.PromptVersion]string{
	extraction.PromptV1: "1f18e8c062c3ac043923afbdec678a190d688ac4bb570d5a3b4713790e6f9d02",
	extraction.PromptV2: "658c63926bfa83b4d44d84eb7d4dcf1431503e2d2fd6448c1e34b7d04224333d",
}

func TestPromptVersionsKeepTheirRequests(t *testing.T) {
	cur := engine.NewExtraction()
	cur.Fields["stack.tools"] = engine.ExtractedField{Value: json.RawMessage(`["Xero","Slack"]`), Confidence: 0.9}
	for v, want := range pinnedHashes {
		in := extraction.PromptInput{Def: pinnedDefinition(), Current: cur, Message: pinnedMessage, Focus: "tools_known",
			History: pinnedHistory, Version: v}
		if got := llm.Hash(extraction.BuildRequest(in)); got != want {
			t.Errorf("version %d: request hash %s, want %s", v, got, want)
		}
	}
}

// A session whose state was stored before prompt versions were recorded
// goes on with version 1: its next turn asks the model the very request
// the code before versions asked, so a replayer holding the recorded
// answer of that request serves it, and the state saved after the turn
// records the version.
func TestStateWithoutAVersionKeepsVersion1(t *testing.T) {
	stored := []byte(`{"fields":{"stack.tools":{"value":["Xero","Slack"],"confidence":0.9,"extracted_from_turns":[1],` +
		`"last_updated_at_turn":1,"last_message_id":"m1"}}}`)
	st, err := extraction.DecodeState(stored, extraction.CurrentPromptVersion)
	if err != nil {
		t.Fatal(err)
	}
	if st.PromptVersion != extraction.PromptV1 {
		t.Fatalf("version of a state without one = %d, want %d", st.PromptVersion, extraction.PromptV1)
	}
	rp := record.NewReplayer([]contracts.LLMCallRecorded{{TenantID: "acme", Scope: "s1", Provider: "fake",
		RequestHash: pinnedHashes[extraction.PromptV1], Purpose: extraction.Purpose,
		Content: `{"fields":{"stack.tools":{"value":["Stripe"],"confidence":0.9}}}`}})
	p, err := extraction.New(extraction.Config{LLM: rp})
	if err != nil {
		t.Fatal(err)
	}
	m := meta(2)
	m.PromptVersion = st.PromptVersion
	res, err := p.Extract(context.Background(), extraction.Request{Def: pinnedDefinition(), Current: st.Extraction,
		Message: pinnedMessage, History: pinnedHistory, Focus: "tools_known", Meta: m, TenantID: "acme", Scope: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.Missed(); err != nil || res.Degraded {
		t.Fatalf("the recorded answer was not served: %v (degraded: %q)", err, res.DegradedReason)
	}
	te, err := res.Contract("acme", "s1", "t2", 2, pinnedMessage)
	if err != nil {
		t.Fatal(err)
	}
	next, err := extraction.DecodeState(te.Extraction, extraction.CurrentPromptVersion)
	if err != nil {
		t.Fatal(err)
	}
	if next.PromptVersion != extraction.PromptV1 || !next.Has("stack.tools") {
		t.Errorf("state after the turn = %s, want version 1 and the tools", te.Extraction)
	}
}

// A session with no state yet starts with the current version and
// records it.
func TestNewStateHasTheCurrentVersion(t *testing.T) {
	st, err := extraction.DecodeState(nil, extraction.CurrentPromptVersion)
	if err != nil || st.PromptVersion != extraction.CurrentPromptVersion || st.Fields == nil {
		t.Fatalf("DecodeState(nil) = %+v, %v; want an empty extraction at version %d", st, err, extraction.CurrentPromptVersion)
	}
	res := extraction.Apply(enginetest.Definition(), st.Extraction, answer(t, map[string]any{"basics.goal": []any{"ship", 0.9}}),
		"We want to ship.", meta(1))
	te, err := res.Contract("acme", "s1", "t1", 1, "We want to ship.")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(te.Extraction), fmt.Sprintf(`"prompt_version":%d`, extraction.CurrentPromptVersion)) {
		t.Errorf("state = %s, want the current prompt version recorded", te.Extraction)
	}
	if _, err := extraction.DecodeState([]byte(`{"fields":{},"prompt_version":99}`), extraction.CurrentPromptVersion); err == nil {
		t.Error("a state of an unknown prompt version was read")
	}
}

// A user of the offline provider who says the one competitor stored is not
// one, and names another, has the other alone: the provider answers the
// whole list, without the item taken back, as version 2 asks, and the
// answer is not taken for a model answering only the new items because it
// holds none of the stored ones.
func TestOfflineTakeBackOfTheOnlyItem(t *testing.T) {
	def, ok := enginetest.Shipped(t).Get("business-profile")
	if !ok {
		t.Fatal("business-profile not shipped")
	}
	o, err := offline.New(offline.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for purpose, skill := range offlineskill.Skills() {
		o.Handle(purpose, skill)
	}
	p, err := extraction.New(extraction.Config{LLM: o})
	if err != nil {
		t.Fatal(err)
	}
	m := enginetest.Memory(def)
	enginetest.Set(m, "target_market.competitors", []string{"Pret"}, 0.75, 1)
	res, err := p.Extract(context.Background(), extraction.Request{Def: def, Current: m.Extraction,
		Message: "Pret isn't a competitor, it's Costa.", Focus: "competitors_named", Meta: meta(2)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if res.Extraction.Decode("target_market.competitors", &got); !slices.Equal(got, []string{"Costa"}) {
		t.Errorf("competitors = %q, want [Costa]", got)
	}
}
