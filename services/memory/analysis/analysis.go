package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// Mode is a reasoning mode.
type Mode string

// Reasoning modes.
const (
	Sequential Mode = "sequential"
	Debate     Mode = "debate"
	Socratic   Mode = "socratic"
)

// Result is the seed's AnalysisResult.
type Result struct {
	Mode Mode `json:"mode"`
	// Rationale says which keywords chose the mode, or that none did.
	Rationale string `json:"rationale"`
	// SuggestedSteps is how to run an analysis in the mode.
	SuggestedSteps []string `json:"suggested_steps"`
	// Matched are the keywords found, in table order.
	Matched []string `json:"matched,omitempty"`
}

type keyword struct {
	name  string
	forms []string // normalized word sequences, e.g. "trade off"
}

type route struct {
	mode     Mode
	keywords []keyword
	steps    []string
}

// table is the routing table, in tie-break order.
var table = []route{
	{Sequential, []keyword{
		{"strategic", []string{"strategic", "strategically"}},
		{"multi-factor", []string{"multi factor", "multifactor", "multi factorial"}},
		{"planning", []string{"planning", "plan", "plans", "planned"}},
	}, []string{
		"State the goal and the constraints.",
		"List the factors that bear on the decision.",
		"Work through the factors one at a time, recording each conclusion.",
		"Combine the conclusions into a plan with an order of steps.",
		"Name the risks of the plan and how to detect them early.",
	}},
	{Debate, []keyword{
		{"trade-off", []string{"trade off", "trade offs", "tradeoff", "tradeoffs"}},
		{"compare", []string{"compare", "compares", "compared", "comparing", "comparison", "comparisons"}},
		{"debate", []string{"debate", "debates", "debated", "debating"}},
	}, []string{
		"Name the options to weigh.",
		"Argue the strongest case for each option.",
		"Argue the strongest case against each option.",
		"Compare them on explicit criteria and weights.",
		"Decide, and record what would change the decision.",
	}},
	{Socratic, []keyword{
		{"unclear", []string{"unclear"}},
		{"requirements", []string{"requirements", "requirement"}},
		{"discovery", []string{"discovery", "discover", "discovering"}},
	}, []string{
		"Restate what is asked, in your own words.",
		"Ask what problem it solves and for whom.",
		"Ask which assumptions the request rests on, and test each.",
		"Ask what a good outcome looks like and how it will be measured.",
		"Summarize the clarified requirements and the open questions.",
	}},
}

// Route routes a task description to a reasoning mode.
func Route(task string) Result {
	text := " " + strings.Join(graph.Words(task), " ") + " "
	best, bestN := -1, 0
	var matched [][]string
	for i, r := range table {
		var m []string
		for _, k := range r.keywords {
			if slices.ContainsFunc(k.forms, func(f string) bool { return strings.Contains(text, " "+f+" ") }) {
				m = append(m, k.name)
			}
		}
		matched = append(matched, m)
		if len(m) > bestN {
			best, bestN = i, len(m)
		}
	}
	if best < 0 {
		return Result{
			Mode:           Sequential,
			Rationale:      "no routing keyword found; sequential is the safe default",
			SuggestedSteps: slices.Clone(table[0].steps),
		}
	}
	r := table[best]
	res := Result{Mode: r.mode, SuggestedSteps: slices.Clone(r.steps), Matched: matched[best]}
	res.Rationale = fmt.Sprintf("%s mode: the task mentions %s", r.mode, strings.Join(quote(matched[best]), ", "))
	var others []string
	for i, m := range matched {
		if i != best && len(m) > 0 {
			others = append(others, fmt.Sprintf("%s (%s)", table[i].mode, strings.Join(quote(m), ", ")))
		}
	}
	if len(others) > 0 {
		res.Rationale += "; it also mentions keywords of " + strings.Join(others, " and ") + ", which matched fewer keywords or come later in the routing table"
	}
	return res
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return out
}
