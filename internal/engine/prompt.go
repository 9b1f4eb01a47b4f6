package engine

import (
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// PromptData is what the system prompt template is rendered with. The
// template is Go text/template: {{.EngineName}}, {{.PhaseName}},
// {{if .Gaps}}...{{end}}, {{join .Gaps ", "}}. Unknown fields are an error at
// load time.
type PromptData struct {
	EngineID          string
	EngineName        string
	EngineDescription string
	EngineType        string
	// Phase is the current phase id; PhaseName its display name.
	Phase             string
	PhaseName         string
	PhaseInstructions string
	// ModeBlend renders as "extract 70%, validate 20%, explore 10%".
	ModeBlend    string
	DominantMode string
	// Techniques are the names of the techniques chosen for this turn.
	Techniques []string
	TurnNumber int
	// Completeness is the overall completeness in percent.
	Completeness int
	// UserShare and SystemShare are the information ratio.
	UserShare   int
	SystemShare int
	// Gaps are the completeness gaps.
	Gaps []string
	// NextObligation is the description of the obligation to ask for next.
	NextObligation string
}

func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"join":  strings.Join,
		"upper": strings.ToUpper,
		"lower": strings.ToLower,
	}
}

// maxPromptBytes bounds a rendered system prompt.
const maxPromptBytes = 256 << 10

func compileTemplate(name, src string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs()).Parse(src)
	if err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkRanges(tt.Tree.Root); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// checkRanges refuses {{range}} over anything but data ({{range .Gaps}}):
// Go templates can range over an integer literal, and {{range 100000000000}}
// would make rendering loop for minutes.
func checkRanges(n parse.Node) error {
	switch x := n.(type) {
	case *parse.ListNode:
		if x == nil {
			return nil
		}
		for _, c := range x.Nodes {
			if err := checkRanges(c); err != nil {
				return err
			}
		}
	case *parse.RangeNode:
		cmds := x.Pipe.Cmds
		if len(cmds) != 1 || len(cmds[0].Args) != 1 {
			return fmt.Errorf("line %d: range must iterate over a field such as .Gaps", x.Line)
		}
		switch cmds[0].Args[0].(type) {
		case *parse.FieldNode, *parse.VariableNode, *parse.DotNode, *parse.ChainNode:
		default:
			return fmt.Errorf("line %d: range must iterate over a field such as .Gaps, not %s", x.Line, cmds[0].Args[0])
		}
		return checkBranch(&x.BranchNode)
	case *parse.IfNode:
		return checkBranch(&x.BranchNode)
	case *parse.WithNode:
		return checkBranch(&x.BranchNode)
	}
	return nil
}

func checkBranch(b *parse.BranchNode) error {
	if err := checkRanges(b.List); err != nil {
		return err
	}
	if b.ElseList != nil {
		return checkRanges(b.ElseList)
	}
	return nil
}

// cappedWriter fails once more than its limit is written, which stops
// template execution.
type cappedWriter struct {
	b     strings.Builder
	limit int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.limit {
		return 0, fmt.Errorf("rendered prompt exceeds %d bytes", w.limit)
	}
	return w.b.Write(p)
}

// RenderSystemPrompt renders the engine's system prompt template.
func (d *Definition) RenderSystemPrompt(data PromptData) (string, error) {
	t := d.tmpl
	if t == nil {
		var err error
		if t, err = compileTemplate(d.EngineID, d.SystemPromptTemplate); err != nil {
			return "", fmt.Errorf("system prompt template: %w", err)
		}
	}
	w := &cappedWriter{limit: maxPromptBytes}
	if err := t.Execute(w, data); err != nil {
		return "", fmt.Errorf("system prompt template: %w", err)
	}
	return w.b.String(), nil
}

// samplePromptData fills every field, so validation executes every branch a
// real turn could reach.
func samplePromptData(d *Definition) PromptData {
	return PromptData{
		EngineID: d.EngineID, EngineName: d.Name, EngineDescription: d.Description,
		EngineType: string(d.EngineType), Phase: d.InitialPhase, PhaseName: d.InitialPhase,
		PhaseInstructions: "instructions", ModeBlend: "extract 100%", DominantMode: "extract",
		Techniques: []string{"Open-Ended Questions"}, TurnNumber: 1, Completeness: 50,
		UserShare: d.InformationRatio.User, SystemShare: d.InformationRatio.System,
		Gaps: []string{"gap"}, NextObligation: "next",
	}
}
