package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Render writes the context as one markdown document: what a command agent
// reads on stdin and an llm agent receives as its prompt. It depends only on
// the task's id, agent, kind and outputs and on the context, never on the
// run, dispatch id or attempt, so the same task in any run renders the same
// text (and a recorded LLM call can be found again by its request hash).
func Render(t Task, c Context) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Task %s\n\nAgent: %s\nKind: %s\n", t.TaskID, t.Agent, cmpOr(t.Kind, KindWork))

	b.WriteString("\n## Instructions\n\n")
	b.WriteString(cmpOr(strings.TrimSpace(c.Instructions), "Carry out the task defined below."))
	b.WriteString("\n")

	if t.Kind == KindApproval {
		b.WriteString("\n## Decision\n\nThis is an approval task: review the inputs and the upstream handover, then approve or refuse, giving your reason.\n")
	}
	if len(t.Outputs) > 0 {
		b.WriteString("\n## Outputs\n\nProduce each of these files, named exactly so:\n\n")
		for _, o := range t.Outputs {
			fmt.Fprintf(&b, "- %s\n", o)
		}
	}
	if c.Constitution != "" {
		b.WriteString("\n## Constitution\n\n")
		b.WriteString(strings.TrimSpace(c.Constitution))
		b.WriteString("\n")
	}
	if len(c.Handover) > 0 {
		b.WriteString("\n## Handover from upstream tasks\n")
		for _, h := range c.Handover {
			fmt.Fprintf(&b, "\n### %s\n\n", h.TaskID)
			writeBlock(&b, "json", indentJSON(h.State))
		}
	}
	if len(c.Inputs) > 0 {
		b.WriteString("\n## Inputs\n")
		for _, in := range c.Inputs {
			fmt.Fprintf(&b, "\n### %s (%s)\n\n", in.Name, in.Source)
			writeBlock(&b, "", in.Content)
		}
	}
	b.WriteString("\n## Task definition\n\n")
	writeBlock(&b, "yaml", c.Definition)
	return b.String()
}

// writeBlock fences content with more backticks than it contains in a row,
// so no content can close the fence early.
func writeBlock(b *strings.Builder, lang, content string) {
	run, longest := 0, 0
	for _, r := range content {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	b.WriteString(fence + lang + "\n")
	b.WriteString(content)
	if !strings.HasSuffix(content, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(fence + "\n")
}

func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}
