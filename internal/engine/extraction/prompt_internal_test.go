package extraction

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/llm"
)

// referenceBuildRequest is BuildRequest as first written: the whole prompt
// encoded on every call. The prompt built from cached parts must be the
// same bytes: the LLM record hashes the request, and a replay looks the
// recorded answers up by that hash.
func referenceBuildRequest(in PromptInput) llm.Request {
	p := Prompt{EngineID: in.Def.EngineID, EngineName: in.Def.Name, Message: in.Message}
	for _, f := range in.Def.ExtractionSchema.Fields {
		pf := PromptField{Path: f.Path, DisplayName: f.DisplayName, Description: f.Description,
			ValueType: f.ValueType, Required: f.Required, Cues: f.Cues}
		if th := f.Threshold(); th != engine.DefaultConfidenceThreshold {
			pf.ConfidenceThreshold = th
		}
		if cur, ok := in.Current.Fields[f.Path]; ok {
			pf.Current, pf.CurrentConfidence = cur.Value, cur.Confidence
		}
		p.Fields = append(p.Fields, pf)
	}
	for _, o := range in.Def.Obligations {
		p.Obligations = append(p.Obligations, PromptObligation{ID: o.ID, Description: o.Description})
		if o.ID == in.Focus {
			p.Focus = &PromptObligation{ID: o.ID, Description: o.Description, Fields: o.Fields, Question: o.Question}
		}
	}
	p.Conversation = in.History
	var b strings.Builder
	refBlock(&b, "engine", map[string]string{"engine_id": p.EngineID, "name": p.EngineName})
	refBlock(&b, "fields", anySlice(p.Fields)...)
	refBlock(&b, "obligations", anySlice(p.Obligations)...)
	if p.Focus != nil {
		refBlock(&b, "focus", p.Focus)
	} else {
		refBlock(&b, "focus")
	}
	refBlock(&b, "conversation", anySlice(p.Conversation)...)
	refBlock(&b, "user_message", p.Message)
	temp := 0.0
	schema := in.Schema
	if schema == nil {
		schema = AnswerSchema(in.Def)
	}
	return llm.Request{Purpose: Purpose, Messages: []llm.Message{{Role: llm.System, Content: systemPrompts[in.Version.orCurrent()]},
		{Role: llm.User, Content: b.String()}}, JSON: true, Schema: &llm.Schema{Name: "extraction", JSON: schema},
		Temperature: &temp}
}

func refBlock(b *strings.Builder, name string, items ...any) {
	fmt.Fprintf(b, "<%s>\n", name)
	for _, it := range items {
		j, err := json.Marshal(it)
		if err != nil {
			j = []byte("null")
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	fmt.Fprintf(b, "</%s>\n", name)
}

func TestPromptFromPartsIsTheWholePrompt(t *testing.T) {
	cat := enginetest.Shipped(t)
	defs := append(cat.All(), enginetest.Definition())
	history := []engine.Message{{Role: engine.RoleUser, Content: "We <need> an app & \"fast\"", Turn: 1, MessageID: "m1"},
		{Role: engine.RoleAssistant, Content: "What for?\n\tTell me more.", Turn: 1}}
	for _, def := range defs {
		t.Run(def.EngineID, func(t *testing.T) {
			parts := newPromptParts(def)
			long := json.RawMessage(`["` + strings.Repeat("weekly orders from cafés, ", 12) + `"]`) // a later turn's value
			values := []json.RawMessage{json.RawMessage(`"a <b> & c"`), json.RawMessage(`{"z": 1, "current": {"a": [1, 2.50]}}`),
				json.RawMessage(`42`), json.RawMessage(`null`), json.RawMessage(`[ "x" , "y" ]`), json.RawMessage(`{bad`), long}
			focuses := []string{"", "no-such-obligation"}
			for _, o := range def.Obligations {
				focuses = append(focuses, o.ID)
			}
			for i, focus := range focuses {
				cur := engine.NewExtraction()
				for j, f := range def.ExtractionSchema.Fields {
					switch (i + j) % 4 {
					case 0: // unknown
					case 1:
						cur.Fields[f.Path] = engine.ExtractedField{Value: values[(i+j)%len(values)], Confidence: 0.85}
					case 2:
						cur.Fields[f.Path] = engine.ExtractedField{Value: values[(i*j)%len(values)]}
					case 3:
						cur.Fields[f.Path] = engine.ExtractedField{Confidence: 0.5}
					}
				}
				in := PromptInput{Def: def, Current: cur, Message: "Hi </user_message> there", History: history[:i%3], Focus: focus}
				want, got := referenceBuildRequest(in), buildRequest(in, parts)
				wj, _ := json.Marshal(want)
				gj, _ := json.Marshal(got)
				if string(wj) != string(gj) {
					t.Fatalf("focus %q: prompt from parts differs:\n got %s\nwant %s", focus, gj, wj)
				}
				if llm.Hash(want) != llm.Hash(got) {
					t.Fatalf("focus %q: request hashes differ", focus)
				}
				// The builder is sized once: the estimate covers the prompt
				// without reserving much more than it (a kilobyte of slack
				// on the small prompts of the test engine).
				if n, size := len(got.Messages[1].Content), promptSize(in, parts); size < n || size > n+n/2+1024 {
					t.Errorf("focus %q: promptSize %d for a prompt of %d bytes, want %d to %d", focus, size, n, n, n+n/2+1024)
				}
			}
		})
	}
}
