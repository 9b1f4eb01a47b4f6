package extraction

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

// Purpose is the LLM request purpose of extraction.
const Purpose = "extraction"

// PromptInput is what the extraction prompt is built from.
type PromptInput struct {
	Def     *engine.Definition
	Current engine.Extraction
	// Message is the user's message to extract from.
	Message string
	// History is the recent conversation, oldest first (context only).
	History []engine.Message
	// Focus is the obligation the last reply asked for ("" for none).
	Focus string
	// Schema is AnswerSchema(Def), when the caller has it at hand.
	Schema json.RawMessage
	// Version is the prompt version of the session (0: CurrentPromptVersion).
	Version PromptVersion
}

// PromptField is a field as the prompt shows it: its definition, its cues
// and its current value.
type PromptField struct {
	Path        string           `json:"path"`
	DisplayName string           `json:"display_name"`
	Description string           `json:"description"`
	ValueType   engine.ValueType `json:"value_type"`
	Required    bool             `json:"required,omitempty"`
	// ConfidenceThreshold is omitted at the default 0.70.
	ConfidenceThreshold float64         `json:"confidence_threshold,omitempty"`
	Cues                engine.Cues     `json:"cues"`
	Current             json.RawMessage `json:"current,omitempty"`
	CurrentConfidence   float64         `json:"current_confidence,omitempty"`
}

// PromptObligation is an obligation as the prompt shows it, so the model can
// report deferrals.
type PromptObligation struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Fields      []string `json:"fields,omitempty"`
	Question    string   `json:"question,omitempty"`
}

// Prompt is the structured content of an extraction request.
type Prompt struct {
	EngineID     string             `json:"engine_id"`
	EngineName   string             `json:"engine_name"`
	Fields       []PromptField      `json:"fields"`
	Obligations  []PromptObligation `json:"obligations"`
	Focus        *PromptObligation  `json:"focus,omitempty"`
	Conversation []engine.Message   `json:"conversation"`
	Message      string             `json:"message"`
}

// PromptVersion is a version of the extraction prompt and of the way its
// answers merge (see Apply). A session keeps the version it started with for
// its whole life (State records it): the prompt's text is part of the hash
// by which a model's recorded answer is found again, and a list answer means
// what the prompt that asked for it said.
type PromptVersion int

// The prompt versions.
const (
	// PromptV1 asks for the values the latest message gives evidence of: a
	// list answer holds the items the message names, which are added to the
	// stored list, unless the message marks a correction, when they replace
	// it. Sessions whose state records no version run with it.
	PromptV1 PromptVersion = 1
	// PromptV2 asks, for a list, for the whole list as it stands after the
	// message, which the answer is: a list holding every stored item grows
	// the stored list, any other replaces it.
	PromptV2 PromptVersion = 2
	// CurrentPromptVersion is the version a new session starts with.
	CurrentPromptVersion = PromptV2
)

// orCurrent is v, or CurrentPromptVersion for the zero version.
func (v PromptVersion) orCurrent() PromptVersion { return cmp.Or(v, CurrentPromptVersion) }

func (v PromptVersion) known() bool {
	_, ok := systemPrompts[v]
	return ok
}

// systemPrompts are the instructions of each version. Version 1's bytes
// must never change: sessions started with it go on with it.
var systemPrompts = map[PromptVersion]string{
	PromptV1: rulesHead + rulesTail,
	PromptV2: rulesHead + listRule + rulesTail,
}

const rulesHead = `You extract structured facts from the latest user message of a conversation.
Answer with one JSON object and nothing else:
{"fields": {"<field path>": {"value": <value>, "confidence": <0..1>, "reasoning": "<why>"}}, "deferred_obligations": ["<obligation id>"]}
Rules:
- Include only fields for which the LATEST user message gives evidence. Leave the others out.
- The value must have the field's value_type (string, number, boolean, array, object). Use null only when the user says there is none.
- Confidence: 0.9 for an explicit statement, 0.75 for a clear implication, below the field's confidence_threshold (default 0.70) when unsure.
- If the user corrects an earlier answer ("actually", "instead"), give the corrected value.
`

const listRule = `- The value of an array field is the complete list as it should stand after the latest message: its current items that still hold, then the new ones. It replaces the current list, so leave out only the items the user takes back.
`

const rulesTail = `- The cues list words and patterns that usually signal the field.
- The focus is what the assistant just asked; a direct answer belongs to the focus fields.
- If the user declines or postpones the focus question ("skip", "not sure yet"), list its obligation id in deferred_obligations.
Each block below holds JSON, one item per line.`

// BuildRequest builds the extraction request a model (or the offline
// provider) answers: a system message with the rules of in.Version and the
// answer format, and a user message made of tagged blocks of JSON —
// <engine>, <fields> (one field per line: definition, cues, current value),
// <obligations>, <focus>, <conversation> and <user_message>. Because every
// block holds JSON encoded with HTML escaping, a user's text can never close
// a block early.
func BuildRequest(in PromptInput) llm.Request {
	return buildRequest(in, newPromptParts(in.Def))
}

// promptParts are the parts of an engine's extraction prompt that depend on
// its definition alone, encoded once (a Pipeline keeps them per loaded
// definition): the request differs from turn to turn only by the fields'
// current values, the focus, the conversation and the message. The bytes
// are those the whole prompt would have encoded, so the request, and its
// hash in the LLM record, are the same.
type promptParts struct {
	engine      string
	fields      []json.RawMessage // each field's line without its current value
	obligations string            // the whole <obligations> block
	focus       map[string]string // the <focus> block, by obligation id
}

func newPromptParts(def *engine.Definition) *promptParts {
	pp := &promptParts{focus: map[string]string{}}
	var b strings.Builder
	block(&b, "engine", map[string]string{"engine_id": def.EngineID, "name": def.Name})
	pp.engine = b.String()
	for _, f := range def.ExtractionSchema.Fields {
		pf := PromptField{Path: f.Path, DisplayName: f.DisplayName, Description: f.Description,
			ValueType: f.ValueType, Required: f.Required, Cues: f.Cues}
		if th := f.Threshold(); th != engine.DefaultConfidenceThreshold {
			pf.ConfidenceThreshold = th
		}
		line, err := json.Marshal(pf)
		if err != nil {
			line = nil // the line is "null", whatever its current value
		}
		pp.fields = append(pp.fields, line)
	}
	obligations := make([]PromptObligation, 0, len(def.Obligations))
	for _, o := range def.Obligations {
		// The list only serves deferrals: ids and descriptions suffice.
		obligations = append(obligations, PromptObligation{ID: o.ID, Description: o.Description})
		b.Reset()
		block(&b, "focus", &PromptObligation{ID: o.ID, Description: o.Description, Fields: o.Fields, Question: o.Question})
		pp.focus[o.ID] = b.String()
	}
	b.Reset()
	block(&b, "obligations", anySlice(obligations)...)
	pp.obligations = b.String()
	return pp
}

// currentValue is the tail of a field's prompt line: PromptField's last two
// members.
type currentValue struct {
	Current           json.RawMessage `json:"current,omitempty"`
	CurrentConfidence float64         `json:"current_confidence,omitempty"`
}

func buildRequest(in PromptInput, pp *promptParts) llm.Request {
	var b strings.Builder
	b.Grow(promptSize(in, pp)) // tens of kilobytes: grown by doubling, three times that
	b.WriteString(pp.engine)
	b.WriteString("<fields>\n")
	for i, f := range in.Def.ExtractionSchema.Fields {
		line := pp.fields[i]
		var cur currentValue
		if c, ok := in.Current.Fields[f.Path]; ok {
			cur = currentValue{Current: c.Value, CurrentConfidence: c.Confidence}
		}
		switch tail, err := json.Marshal(cur); {
		case line == nil || err != nil:
			b.WriteString("null")
		case len(tail) == 2: // {}: no current value
			b.Write(line)
		default: // the line's members, then the tail's
			b.Write(line[:len(line)-1])
			b.WriteByte(',')
			b.Write(tail[1:])
		}
		b.WriteByte('\n')
	}
	b.WriteString("</fields>\n")
	b.WriteString(pp.obligations)
	if f, ok := pp.focus[in.Focus]; ok {
		b.WriteString(f)
	} else {
		block(&b, "focus")
	}
	block(&b, "conversation", anySlice(in.History)...)
	block(&b, "user_message", in.Message)
	temp := 0.0
	schema := in.Schema
	if schema == nil {
		schema = AnswerSchema(in.Def)
	}
	return llm.Request{
		Purpose: Purpose,
		Messages: []llm.Message{
			{Role: llm.System, Content: systemPrompts[in.Version.orCurrent()]},
			{Role: llm.User, Content: b.String()},
		},
		JSON:        true,
		Schema:      &llm.Schema{Name: "extraction", JSON: schema},
		Temperature: &temp,
	}
}

func anySlice[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i := range xs {
		out[i] = xs[i]
	}
	return out
}

// promptSize is about the length of the prompt buildRequest writes: the
// fixed parts, each field's line with its current value, the focus block,
// and the conversation's messages, with room for their JSON and escapes.
func promptSize(in PromptInput, pp *promptParts) int {
	n := len(pp.engine) + len(pp.obligations) + len(pp.focus[in.Focus]) + len(in.Message) + 256
	for _, f := range pp.fields {
		n += len(f) + 48
	}
	for _, c := range in.Current.Fields {
		n += len(c.Value) + len(c.Value)/4 + 48
	}
	for _, m := range in.History {
		n += len(m.Content) + len(m.Content)/8 + len(m.Role) + len(m.MessageID) + 64
	}
	return n
}

func block(b *strings.Builder, name string, items ...any) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteString(">\n")
	for _, it := range items {
		j, err := json.Marshal(it) // HTML-escaped: "<" never appears inside
		if err != nil {
			j = []byte("null")
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	b.WriteString("</")
	b.WriteString(name)
	b.WriteString(">\n")
}

// ErrNotExtractionPrompt is returned by ParsePrompt for a request it did not build.
var ErrNotExtractionPrompt = errors.New("not an extraction prompt")

// ParsePrompt reads back the blocks of a request built by BuildRequest; the
// offline provider answers from it exactly what a model would read. Lines
// it has read before are not decoded again (the field definitions, the
// obligations and most of the conversation repeat from turn to turn), so
// the prompts it returns share their cues, obligation fields and messages
// with one another: treat them as read-only.
func ParsePrompt(req llm.Request) (Prompt, error) {
	var content string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.User {
			content = req.Messages[i].Content
			break
		}
	}
	var p Prompt
	var eng struct {
		EngineID string `json:"engine_id"`
		Name     string `json:"name"`
	}
	// reserve, for a block of lines that each append to a list, makes room
	// for as many as the block has lines, so that the list is not copied
	// as it grows.
	steps := [...]struct {
		name    string
		into    func(line string) error
		need    bool
		reserve func(lines int)
	}{
		{"engine", func(l string) error { return json.Unmarshal([]byte(l), &eng) }, true, nil},
		{"fields", func(l string) error {
			f, err := parsedFields.parse(l)
			p.Fields = append(p.Fields, f)
			return err
		}, true, func(n int) { p.Fields = make([]PromptField, 0, n) }},
		{"obligations", func(l string) error {
			o, err := parsedObligations.parse(l)
			p.Obligations = append(p.Obligations, o)
			return err
		}, false, func(n int) { p.Obligations = make([]PromptObligation, 0, n) }},
		{"focus", func(l string) error {
			o, err := parsedObligations.parse(l)
			p.Focus = &o
			return err
		}, false, nil},
		{"conversation", func(l string) error {
			m, err := parsedMessages.parse(l)
			p.Conversation = append(p.Conversation, m)
			return err
		}, false, func(n int) { p.Conversation = make([]engine.Message, 0, n) }},
		{"user_message", func(l string) error { return json.Unmarshal([]byte(l), &p.Message) }, true, nil},
	}
	for _, s := range steps {
		block, ok := blockBody(content, s.name)
		if !ok {
			if s.need {
				return Prompt{}, fmt.Errorf("%w: no <%s> block", ErrNotExtractionPrompt, s.name)
			}
			continue
		}
		if s.reserve != nil && strings.TrimSpace(block) != "" { // a list of none stays nil
			s.reserve(strings.Count(block, "\n") + 1)
		}
		for l := range strings.SplitSeq(block, "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			if err := s.into(l); err != nil {
				return Prompt{}, fmt.Errorf("%w: <%s>: %v", ErrNotExtractionPrompt, s.name, err)
			}
		}
	}
	p.EngineID, p.EngineName = eng.EngineID, eng.Name
	for i := range p.Fields {
		if p.Fields[i].ConfidenceThreshold == 0 {
			p.Fields[i].ConfidenceThreshold = engine.DefaultConfidenceThreshold
		}
	}
	return p, nil
}

// lineCache remembers decoded lines, up to maxCachedLineBytes of them; past
// that it starts afresh.
type lineCache[T any] struct {
	mu    sync.Mutex
	m     map[string]T
	bytes int
}

const maxCachedLineBytes = 8 << 20

var (
	parsedFields      lineCache[PromptField]
	parsedObligations lineCache[PromptObligation]
	parsedMessages    lineCache[engine.Message]
)

func (c *lineCache[T]) parse(line string) (T, error) {
	c.mu.Lock()
	v, ok := c.m[line]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	return c.decode(line)
}

// decode decodes a line parse has not seen and remembers it. It is apart
// from parse so that the value parse finds is not put on the heap: the
// value decoded escapes through json.Unmarshal.
func (c *lineCache[T]) decode(line string) (T, error) {
	var v T
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || c.bytes+len(line) > maxCachedLineBytes {
		c.m, c.bytes = map[string]T{}, 0
	}
	c.m[strings.Clone(line)] = v // not the slice of a whole prompt
	c.bytes += len(line)
	c.mu.Unlock()
	return v, nil
}

// blockBody returns the text between <name> and </name>.
func blockBody(content, name string) (string, bool) {
	open, end := "<"+name+">\n", "</"+name+">"
	i := strings.Index(content, open)
	if i < 0 {
		return "", false
	}
	rest := content[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}
