// Package projectdiscovery holds the custom evaluators of the
// project-discovery engine (engines/project-discovery.yaml), registered by
// name; each returns a score in [0,1].
//
// A session started by a handoff must not ask the user again for what the
// handoff carried: these evaluators read the session's inbound handoff, and
// satisfy the obligations beside whose fields the engine names them.
package projectdiscovery

import (
	"slices"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Evaluators returns the evaluators by name.
func Evaluators() map[string]engine.Evaluator {
	return map[string]engine.Evaluator{
		"coreProblemCarried":     CoreProblemCarried,
		"budgetCarried":          constraintCarried("Budget"),
		"timelineCarried":        constraintCarried("Timeline"),
		"techConstraintsCarried": constraintCarried("Technical"),
		"integrationsCarried":    constraintCarried("Integration"),
		"teamCarried":            constraintCarried("Team"),
	}
}

// CoreProblemCarried is 1.0 when the inbound handoff carries a decision
// reached and the pain points behind it: the engine that handed off settled
// what to build and why (the option chosen in exploration, the idea
// selected in ideation, the problem a first discovery session captured), so
// the problem is known and the handoff at the top of the context gives it.
// Pain points alone, as a business profile hands off, are the business's,
// not yet a project's: 0. A session of memory version 1 counts nothing
// carried (0), as the builds it started on did: their engine named no
// evaluator here, and its replay must ask what they asked.
func CoreProblemCarried(m *engine.WorkingMemory) float64 {
	if m.SchemaVersion < 2 {
		return 0
	}
	h, ok := contracts.DecodeHandoff(m.InboundHandoff)
	if !ok {
		return 0
	}
	if len(h.ActionList.DecisionsReached) > 0 && slices.ContainsFunc(h.SituationAwareness.KeyPainPoints, nonBlank) {
		return 1
	}
	return 0
}

func nonBlank(s string) bool { return strings.TrimSpace(s) != "" }

// constraintCarried is the evaluator of the constraint obligation whose
// field a mapper labels label ("Budget" for constraints.budget): 1.0 when
// the inbound handoff carries a constraint of that label that tells it
// (handoff.ConstraintTold: a budget's amount, a timeline's date or span,
// not "not sure yet"), 0 otherwise. The reading is the one the offline
// provider's first reply says the constraints with ("I have noted your
// constraints: a budget of $50k; within three months"), so a session that
// says it noted them does not ask for them again; a model reads the
// handoff at the top of its context. A project-discovery → exploration →
// project-discovery chain carries the first session's labelled constraints
// on to the second (handoff.CarryForward); free text (exploration's
// "$300 a month", ideation's constraints) tells no obligation.
//
// Only engine versions from 1.2.0 name these evaluators; a session
// recorded on 1.1.0 replays on that definition, which asks for them.
func constraintCarried(label string) engine.Evaluator {
	return func(m *engine.WorkingMemory) float64 {
		h, ok := contracts.DecodeHandoff(m.InboundHandoff)
		if !ok {
			return 0
		}
		for _, c := range h.ActionList.ConstraintsIdentified {
			if handoff.ConstraintTold(c.Constraint) == label {
				return 1
			}
		}
		return 0
	}
}
