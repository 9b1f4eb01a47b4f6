package offlineskill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm"
)

// ErrNotResearchPrompt is returned for a request a research handler did not build.
var ErrNotResearchPrompt = errors.New("not a research prompt")

// Research answers a research request (purpose "research") with findings
// derived from the task and the facts the session gathered, never from the
// world: the offline provider searches nothing. They are deterministic, say
// that they are offline, and are shaped like a model's answer
// (tasks.Findings), so the background service, the context and the page
// work end to end without a model.
func Research(_ context.Context, req llm.Request) (string, error) {
	var rr tasks.ResearchRequest
	for _, m := range req.Messages {
		if m.Role == llm.User && json.Unmarshal([]byte(m.Content), &rr) == nil && rr.Task.TaskID != "" {
			break
		}
	}
	if rr.Task.TaskID == "" {
		return "", ErrNotResearchPrompt
	}
	topic := subject(rr.Task)
	var f tasks.Findings
	switch rr.Handler {
	case "research.competitors":
		f = tasks.Findings{Summary: fmt.Sprintf("Existing products already address %s; compare them before building.", topic),
			Findings: []tasks.Finding{
				{Title: "Off-the-shelf tools", Detail: "Established subscription products cover the common needs; shortlist two or three and try them."},
				{Title: "Pricing and lock-in", Detail: "Most charge per user per month; check data export before committing."},
				{Title: "Where a custom build pays off", Detail: "Only where the needs differ from the common case: " + detail(rr.Task) + "."},
			}}
	case "research.solution_landscape":
		f = tasks.Findings{Summary: fmt.Sprintf("Three kinds of solution fit %s: off-the-shelf, no-code and custom.", topic),
			Findings: []tasks.Finding{
				{Title: "Off-the-shelf", Detail: "Fastest to start and cheapest at first; least control, monthly fees."},
				{Title: "No-code platform", Detail: "Flexible for simple workflows; limits show as needs grow."},
				{Title: "Custom build", Detail: "Full control and fit; the highest cost and time to launch."},
			}}
	default:
		f = tasks.Findings{Summary: fmt.Sprintf("Notes on %s from what the user said.", topic),
			Findings: []tasks.Finding{{Title: rr.Task.DisplayName, Detail: detail(rr.Task)}}}
	}
	f.Source = "offline"
	b, err := json.Marshal(f)
	return string(b), err
}

// subject is what the research is about: the first fact the session has
// (its core problem, in every shipped engine, or the problem its inbound
// handoff carried, without the handoff's mark), else the task's name.
func subject(in tasks.Input) string {
	if len(in.Facts) > 0 {
		if _, v, ok := strings.Cut(in.Facts[0], ": "); ok && v != "" {
			return "\"" + strings.TrimSuffix(strings.TrimPrefix(v, handoff.ProblemPrefix), ".") + "\""
		}
	}
	return strings.ToLower(in.DisplayName)
}

func detail(in tasks.Input) string {
	if len(in.Facts) > 1 {
		return strings.TrimSuffix(in.Facts[1], ".")
	}
	if in.Description != "" {
		return strings.TrimSuffix(in.Description, ".")
	}
	return "no detail gathered yet"
}
