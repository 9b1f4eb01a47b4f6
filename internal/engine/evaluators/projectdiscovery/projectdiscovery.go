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
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Evaluators returns the evaluators by name.
func Evaluators() map[string]engine.Evaluator {
	return map[string]engine.Evaluator{"coreProblemCarried": CoreProblemCarried}
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
