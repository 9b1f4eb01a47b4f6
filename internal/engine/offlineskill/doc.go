// Package offlineskill holds the skills the offline LLM provider uses to
// drive the conversational engines without a model. Each skill reads the
// same prompt a model gets and answers in the format the model would:
//
//   - Extraction (purpose "extraction") parses the extraction prompt of
//     package extraction and maps the user's words to fields through the
//     per-field cues of the engine YAML (patterns, literal values,
//     keywords), giving the question just asked the answer when nothing else
//     matches and deferring it when the user declines;
//   - Reply (purpose "response") parses the context assembled by the runner
//     and asks for the most important unmet obligation of the phase, in the
//     manner of the active techniques;
//   - Summarize (purpose "summarize") condenses history for summarize_old;
//   - Research (purpose "research") answers the background research
//     handlers with findings derived from the task and the session's facts.
//
// The reply skill also acknowledges an inbound handoff in the session's
// first reply, restating its decisions, constraints, gaps and
// sensitivities, as the I-PASS check expects of a model.
//
// All are deterministic and safe for concurrent use. Register them with
// Skills: for purpose, skill := range offlineskill.Skills() { o.Handle(purpose, skill) }.
package offlineskill

import (
	"context"

	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm"
)

// PurposeResponse is the purpose of the runner's response requests.
const PurposeResponse = "response"

// Skills returns the skills by request purpose.
func Skills() map[string]func(context.Context, llm.Request) (string, error) {
	return map[string]func(context.Context, llm.Request) (string, error){
		extraction.Purpose:          Extraction,
		PurposeResponse:             Reply,
		contextasm.PurposeSummarize: Summarize,
		tasks.PurposeResearch:       Research,
	}
}
