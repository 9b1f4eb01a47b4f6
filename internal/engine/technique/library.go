package technique

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/praetorhq/praetor/internal/engine"
)

// Category groups techniques by the discipline they come from.
type Category string

// Technique categories.
const (
	CognitiveInterview       Category = "cognitive-interview"
	MotivationalInterviewing Category = "motivational-interviewing"
	HUMINTRapport            Category = "humint-rapport"
	InformDelivery           Category = "inform-delivery"
	DeliberationSupport      Category = "deliberation-support"
	Persuasion               Category = "persuasion"
	Validation               Category = "validation"
)

// Signal is how a technique's effect is observed on the user's next turn.
type Signal string

// Effectiveness signals.
const (
	// SignalRicherDetail: the next user message is longer than the last.
	SignalRicherDetail Signal = "richer_detail"
	// SignalNewConcepts: the next user message brings new extracted concepts.
	SignalNewConcepts Signal = "new_concepts"
	// SignalLowerFriction: friction goes down.
	SignalLowerFriction Signal = "lower_friction"
	// SignalConfirmation: the user confirms or corrects what was reflected.
	SignalConfirmation Signal = "confirmation"
)

// Technique is one conversation technique.
type Technique struct {
	ID          string
	Name        string
	Description string
	Category    Category
	// ApplicableModes are the modes the technique serves.
	ApplicableModes []engine.Mode
	// AgentInstruction is added to the response prompt when active.
	AgentInstruction string
	// EffectivenessSignal says, in words, how success shows.
	EffectivenessSignal string
	// Signal is the measurable form of EffectivenessSignal.
	Signal Signal
	// CooldownTurns is how many turns after its use the technique rests.
	CooldownTurns int
	// Extension is true for techniques beyond the seed's 16, which the
	// seed's own phase examples use (summary_reflection, teach_back ...).
	Extension bool
}

// Library returns every technique: the seed's 16 in its order, then the
// extensions. The slice is a copy; do not modify the ApplicableModes of its
// entries, which are shared.
func Library() []Technique {
	return slices.Clone(catalog().list)
}

type catalogData struct {
	list []Technique
	byID map[string]Technique
}

// catalog is built once: the library is constant data, looked up every turn.
var catalog = sync.OnceValue(func() catalogData {
	list := build()
	c := catalogData{list: list, byID: make(map[string]Technique, len(list))}
	for _, t := range list {
		c.byID[t.ID] = t
	}
	return c
})

func build() []Technique {
	m := func(ms ...engine.Mode) []engine.Mode { return ms }
	const (
		ex = engine.ModeExtract
		xp = engine.ModeExplore
		in = engine.ModeInform
		va = engine.ModeValidate
		re = engine.ModeRefine
		pe = engine.ModePersuade
		de = engine.ModeDeliberate
	)
	return []Technique{
		// Cognitive Interview (8).
		{ID: "context_reinstatement", Name: "Context Reinstatement", Category: CognitiveInterview,
			Description:         "Ask the user to recall the environment, emotions, and thoughts surrounding the event",
			ApplicableModes:     m(ex, xp),
			AgentInstruction:    "Help the user mentally return to the situation by asking about the setting, who was present, what they were feeling, and what led up to the moment.",
			EffectivenessSignal: "User provides richer, more detailed responses", Signal: SignalRicherDetail, CooldownTurns: 5},
		{ID: "reverse_order_recall", Name: "Reverse Order Recall", Category: CognitiveInterview,
			Description:         "Have the user recount events backward from the outcome",
			ApplicableModes:     m(ex),
			AgentInstruction:    "Ask the user to walk backward from the most recent outcome to how it started, one step at a time.",
			EffectivenessSignal: "User recalls steps or details not mentioned before", Signal: SignalNewConcepts, CooldownTurns: 6},
		{ID: "change_perspective", Name: "Change Perspective", Category: CognitiveInterview,
			Description:         "View the situation from another stakeholder's angle",
			ApplicableModes:     m(ex, xp, de),
			AgentInstruction:    "Ask how someone else involved (a user, a manager, a customer) would describe the same situation.",
			EffectivenessSignal: "User names new stakeholders, needs or concerns", Signal: SignalNewConcepts, CooldownTurns: 4},
		{ID: "report_everything", Name: "Report Everything", Category: CognitiveInterview,
			Description:         "Encourage the user to share every detail, however small",
			ApplicableModes:     m(ex),
			AgentInstruction:    "Tell the user no detail is too small and invite them to mention anything that comes to mind, even if it seems unimportant.",
			EffectivenessSignal: "User volunteers details beyond the question", Signal: SignalRicherDetail, CooldownTurns: 4},
		{ID: "open_ended_questions", Name: "Open-Ended Questions", Category: CognitiveInterview,
			Description:         "Avoid yes/no questions",
			ApplicableModes:     m(ex, xp),
			AgentInstruction:    "Ask questions that encourage detailed responses: how, what, tell me about. Avoid questions answerable with yes or no.",
			EffectivenessSignal: "User answers in full sentences with detail", Signal: SignalRicherDetail, CooldownTurns: 1},
		{ID: "avoid_interruptions", Name: "Avoid Interruptions", Category: CognitiveInterview,
			Description:         "Let the user finish their thoughts",
			ApplicableModes:     m(ex, xp),
			AgentInstruction:    "Keep your reply short and ask a single question so the user can keep their train of thought.",
			EffectivenessSignal: "User continues their line of thought", Signal: SignalRicherDetail, CooldownTurns: 2},
		{ID: "sketch_or_visualize", Name: "Sketch or Visualize", Category: CognitiveInterview,
			Description:         "Draw diagrams or flows",
			ApplicableModes:     m(ex, xp, in),
			AgentInstruction:    "Invite the user to describe the flow step by step as if drawing it: what happens first, next, and last.",
			EffectivenessSignal: "User describes a sequence or structure", Signal: SignalNewConcepts, CooldownTurns: 6},
		{ID: "multiple_retrieval_attempts", Name: "Multiple Retrieval Attempts", Category: CognitiveInterview,
			Description:         "Re-ask in different ways",
			ApplicableModes:     m(ex, re),
			AgentInstruction:    "If an answer is still missing or vague, ask for it again from a different angle rather than repeating the question.",
			EffectivenessSignal: "A previously missing answer is given", Signal: SignalNewConcepts, CooldownTurns: 3},
		// Motivational Interviewing (3).
		{ID: "reflective_listening", Name: "Reflective Listening", Category: MotivationalInterviewing,
			Description:         "Mirror the user's concerns",
			ApplicableModes:     m(va, ex, re),
			AgentInstruction:    "Reflect back the user's concern in your own words before asking your next question.",
			EffectivenessSignal: "User confirms or corrects the reflection", Signal: SignalConfirmation, CooldownTurns: 2},
		{ID: "elicit_change_talk", Name: "Elicit Change Talk", Category: MotivationalInterviewing,
			Description:         "Surface the user's own motivations",
			ApplicableModes:     m(xp, pe),
			AgentInstruction:    "Ask what would be different if the problem were solved and why that matters to them.",
			EffectivenessSignal: "User states goals or reasons in their own words", Signal: SignalNewConcepts, CooldownTurns: 4},
		{ID: "roll_with_resistance", Name: "Roll with Resistance", Category: MotivationalInterviewing,
			Description:         "Accept pushback gracefully",
			ApplicableModes:     m(pe, de, va),
			AgentInstruction:    "If the user pushes back, acknowledge their view without arguing and offer to move on or come back later.",
			EffectivenessSignal: "Friction decreases", Signal: SignalLowerFriction, CooldownTurns: 3},
		// HUMINT / rapport (2).
		{ID: "active_listening", Name: "Active Listening", Category: HUMINTRapport,
			Description:         "Demonstrate understanding",
			ApplicableModes:     m(ex, xp, va),
			AgentInstruction:    "Demonstrate that you understand the user's perspective by briefly restating what they said before moving on.",
			EffectivenessSignal: "User keeps elaborating", Signal: SignalRicherDetail, CooldownTurns: 1},
		{ID: "mirroring", Name: "Mirroring", Category: HUMINTRapport,
			Description:         "Match the user's language and tone",
			ApplicableModes:     m(ex, xp, in, va),
			AgentInstruction:    "Use the user's own words and match their level of formality.",
			EffectivenessSignal: "Rapport rises and friction falls", Signal: SignalLowerFriction, CooldownTurns: 2},
		// Inform delivery (1).
		{ID: "chunking_with_checkin", Name: "Chunking with Check-ins", Category: InformDelivery,
			Description:         "Break information into digestible chunks",
			ApplicableModes:     m(in),
			AgentInstruction:    "Explain one idea at a time in a few sentences, then check whether it makes sense before continuing.",
			EffectivenessSignal: "User confirms understanding or asks a focused question", Signal: SignalConfirmation, CooldownTurns: 1},
		// Deliberation support (1).
		{ID: "pros_cons_listing", Name: "Pros/Cons Listing", Category: DeliberationSupport,
			Description:         "Structured tradeoff analysis",
			ApplicableModes:     m(de, xp),
			AgentInstruction:    "Lay out the main pros and cons of the options side by side and ask which tradeoffs matter most to the user.",
			EffectivenessSignal: "User weighs a tradeoff or states a preference", Signal: SignalNewConcepts, CooldownTurns: 3},
		// Persuasion (1).
		{ID: "social_proof", Name: "Social Proof", Category: Persuasion,
			Description:         "Reference common patterns",
			ApplicableModes:     m(pe, in),
			AgentInstruction:    "Mention what teams in a similar situation commonly do, without pressuring the user.",
			EffectivenessSignal: "User moves toward a decision", Signal: SignalConfirmation, CooldownTurns: 5},
		// Extensions used by the seed's phase examples.
		{ID: "summary_reflection", Name: "Summary Reflection", Category: Validation, Extension: true,
			Description:         "Summarize what was captured and ask for confirmation",
			ApplicableModes:     m(va, re),
			AgentInstruction:    "Summarize the key points captured so far in a short list and ask the user to confirm or correct them.",
			EffectivenessSignal: "User confirms or corrects the summary", Signal: SignalConfirmation, CooldownTurns: 3},
		{ID: "confidence_scaling", Name: "Confidence Scaling", Category: Validation, Extension: true,
			Description:         "Ask how sure the user is, on a scale",
			ApplicableModes:     m(va, re, de),
			AgentInstruction:    "Ask the user how confident they are in an answer on a scale of 1 to 10, and what would raise it.",
			EffectivenessSignal: "User states a confidence level or a doubt", Signal: SignalConfirmation, CooldownTurns: 3},
		{ID: "teach_back", Name: "Teach Back", Category: Validation, Extension: true,
			Description:         "Have the user explain a concept back",
			ApplicableModes:     m(va, in),
			AgentInstruction:    "Ask the user to explain the idea back in their own words, to check understanding.",
			EffectivenessSignal: "User restates the concept correctly", Signal: SignalConfirmation, CooldownTurns: 4},
		{ID: "examples_and_analogies", Name: "Examples and Analogies", Category: InformDelivery, Extension: true,
			Description:         "Explain with concrete examples and analogies",
			ApplicableModes:     m(in, xp),
			AgentInstruction:    "Illustrate each idea with a concrete example or an everyday analogy.",
			EffectivenessSignal: "User relates the example to their situation", Signal: SignalRicherDetail, CooldownTurns: 2},
		{ID: "incremental_teach", Name: "Incremental Teaching", Category: InformDelivery, Extension: true,
			Description:         "Build understanding step by step",
			ApplicableModes:     m(in),
			AgentInstruction:    "Start from what the user already knows and add one new concept per reply.",
			EffectivenessSignal: "User asks about the next step", Signal: SignalConfirmation, CooldownTurns: 1},
	}
}

// Lookup returns a technique by id.
func Lookup(id string) (Technique, bool) {
	t, ok := catalog().byID[id]
	return t, ok
}

// IDs returns the ids of the library, in library order.
func IDs() []string {
	lib := catalog().list
	out := make([]string, len(lib))
	for i, t := range lib {
		out[i] = t.ID
	}
	return out
}

// Register declares every library technique in a registry.
func Register(reg *engine.Registry) {
	reg.RegisterTechniques(IDs()...)
}

// Applies reports whether the technique serves a mode.
func (t Technique) Applies(m engine.Mode) bool {
	for _, x := range t.ApplicableModes {
		if x == m {
			return true
		}
	}
	return false
}

// PromptBlock renders the techniques for the response prompt, in the seed's
// form:
//
//	Active Techniques (use these in your response):
//	- Context Reinstatement: Help the user mentally return to ...
//
// Unknown ids are skipped; no techniques give "".
func PromptBlock(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		t, ok := Lookup(id)
		if !ok {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("Active Techniques (use these in your response):\n")
		}
		fmt.Fprintf(&b, "- %s [%s]: %s\n", t.Name, t.ID, t.AgentInstruction)
	}
	return b.String()
}

// Names returns the display names of known ids.
func Names(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if t, ok := Lookup(id); ok {
			out = append(out, t.Name)
		}
	}
	return out
}
