package offlineskill_test

import (
	"context"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
)

// replyOf is the offline reply of engineID's session m to msg, its prompt
// built as the runner builds it, in phase with techniques, asking next.
func replyOf(t *testing.T, engineID string, m func(*engine.Definition) *engine.WorkingMemory, phase string, techniques []string,
	next, msg string) string {
	t.Helper()
	def, ok := enginetest.Shipped(t).Get(engineID)
	if !ok {
		t.Fatalf("no shipped engine %s", engineID)
	}
	got, err := offlineskill.Reply(context.Background(), replyPrompt(t, def, phase, techniques, next, m(def), msg))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The summary a user is asked to confirm says a yes or a no in words, and
// a field the user said there is none of as none: it printed "- Selection
// confirmed: true" and "- System integrations: " (null, after "Nothing is
// connected.").
func TestSummarySaysValuesInWords(t *testing.T) {
	got := replyOf(t, "business-profile", func(def *engine.Definition) *engine.WorkingMemory {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		m.Extraction = known(t, def, map[string]any{"financial_model.funding": "Our own savings, no loans",
			"partnerships_and_integrations.system_integrations": nil, "review.profile_confirmed": true,
			"competitive_landscape.competitors": []string{}})
		return m
	}, "PROFILE_REVIEW", []string{"summary_reflection"}, "profile_confirmed", "ok")
	for _, want := range []string{"- Funding: Our own savings, no loans\n", "- System integrations: none\n", "- Profile confirmed: yes\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary\n%s\ndoes not say %q", got, want)
		}
	}
	for _, not := range []string{"true", "false", ": \n"} {
		if strings.Contains(got, not) {
			t.Errorf("summary\n%s\nsays %q", got, not)
		}
	}
}

// A value longer than the context shows is clipped there, and is no JSON
// any more: the summary to confirm showed it with its opening quote and
// its escapes ("- Current solution: \"Right now clients text me …").
func TestSummarySaysAClippedValueInWords(t *testing.T) {
	long := `Right now clients text me "when they can", and I write it all in a paper diary, which takes me ` +
		strings.Repeat("an hour every evening after the last walk, ", 12)
	got := replyOf(t, "project-discovery", func(def *engine.Definition) *engine.WorkingMemory {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		m.Extraction = known(t, def, map[string]any{"purpose_and_problem.current_solution": long})
		return m
	}, "CORE_CAPTURE", []string{"summary_reflection"}, "trigger_event_identified", "ok")
	want := `- Current solution: Right now clients text me "when they can", and I write it all in a paper diary, which takes me an hour`
	if !strings.Contains(got, want) {
		t.Fatalf("summary\n%s\ndoes not say\n%s", got, want)
	}
	line := got[strings.Index(got, want):]
	line = line[:strings.IndexByte(line, '\n')]
	if !strings.HasSuffix(line, "…") || strings.Contains(line, `\`) {
		t.Errorf("the clipped value's line %q does not end with … or shows an escape", line)
	}
}

// An echo says the user's words back inside a sentence of the reply: a
// capital that only opened their sentence is lowered (a verb before its
// object, "Drop the …", "Open a …"; a common adjective, "Fresh bread …";
// a preposition, "Per unit …"; a product's name that is no name before
// "of", "Word of mouth"), and a long sentence is cut where a clause or an
// item of a list ends, not in the middle of one ("… twice a week and do.").
// And pushback ("This is a waste of time.") is not said back as a thought.
func TestEchoesReadInsideTheReply(t *testing.T) {
	fresh := func(def *engine.Definition) *engine.WorkingMemory {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		return m
	}
	filed := func(fields map[string]any) func(*engine.Definition) *engine.WorkingMemory {
		return func(def *engine.Definition) *engine.WorkingMemory {
			m := fresh(def)
			m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We run a bakery."},
				{Role: engine.RoleAssistant, Turn: 1, Content: "Where do you want the business to be?"}}
			m.Extraction = filedAt(t, def, m.Extraction, 2, fields)
			return m
		}
	}
	tests := []struct {
		name, engine, phase, next, msg string
		techniques                     []string
		memory                         func(*engine.Definition) *engine.WorkingMemory
		want                           string
	}{
		{name: "a verb before its object", engine: "ideation", phase: "EVALUATE", next: "weak_ideas_eliminated",
			techniques: []string{"mirroring"}, memory: fresh, msg: "Drop the indoor studio, it costs too much.",
			want: "Got it: drop the indoor studio, it costs too much."},
		{name: "a common adjective", engine: "business-profile", phase: "FOUNDATIONS", next: "customer_segments_identified",
			techniques: []string{"active_listening"}, memory: fresh,
			msg:  "Fresh bread every morning and friendly staff who know them by name.",
			want: "It sounds like fresh bread every morning and friendly staff who know them by name."},
		{name: "a preposition", engine: "business-profile", phase: "FOUNDATIONS", next: "customer_segments_identified",
			techniques: []string{"mirroring"}, memory: fresh, msg: "Per unit mostly, cakes are priced per order.",
			want: "Got it: per unit mostly, cakes are priced per order."},
		{name: "a verb said back as an item", engine: "business-profile", phase: "RISK_AND_GROWTH", next: "growth_timeline_known",
			memory: filed(map[string]any{"growth_and_scaling.growth_goals": []string{"Open a second shop and grow wholesale to more cafes"}}),
			msg:    "Open a second shop and grow wholesale to more cafes.",
			want:   ": open a second shop and grow wholesale to more cafes."},
		{name: "word of mouth", engine: "business-profile", phase: "COMMERCIALS", next: "brand_positioning_defined",
			memory: filed(map[string]any{"brand_and_marketing.acquisition_channels": []string{"Word of mouth", "Instagram"}}),
			msg:    "Word of mouth and Instagram.",
			want:   ": word of mouth and Instagram."},
		{name: "a long sentence cut after an item of its list", engine: "business-profile", phase: "OPERATIONS",
			next: "bottlenecks_identified", techniques: []string{"active_listening"}, memory: fresh,
			msg:  "We bake from 4am, open the shop at 7, deliver to cafes twice a week and do the books on Sundays.",
			want: "It sounds like you bake from 4am, open the shop at 7, deliver to cafes twice a week."},
		{name: "a name before who it is", engine: "business-profile", phase: "OPERATIONS", next: "bottlenecks_identified",
			techniques: []string{"active_listening"}, memory: fresh,
			msg:  "Dave our manager does the rota every week and keeps the shop running when I am away at the farmers market.",
			want: "It sounds like Dave your manager does the rota every week and keeps the shop running."},
		{name: "a name of two words", engine: "business-profile", phase: "FOUNDATIONS", next: "customer_segments_identified",
			techniques: []string{"mirroring"}, memory: fresh, msg: "Whole Foods stocks our bread in three stores.",
			want: "Got it: Whole Foods stocks your bread in three stores."},
		{name: "pushback is no thought of the user's", engine: "project-discovery", phase: "CORE_CAPTURE",
			next: "trigger_event_identified", techniques: []string{"active_listening"}, memory: fresh,
			msg: "This is a waste of time.", want: "What made this a priority now?"},
		{name: "a place", engine: "business-profile", phase: "FOUNDATIONS", next: "customer_segments_identified",
			techniques: []string{"mirroring"}, memory: fresh, msg: "London is where most of our customers live.",
			want: "Got it: London is where most of your customers live."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replyOf(t, tt.engine, tt.memory, tt.phase, tt.techniques, tt.next, tt.msg)
			if !strings.Contains(got, tt.want) {
				t.Errorf("reply\n%q\ndoes not say\n%q", got, tt.want)
			}
			if strings.Contains(got, "waste of time") {
				t.Errorf("reply %q says the user's pushback back", got)
			}
		})
	}
}

// "That's fair, and we can come back to anything later." rolls with a user
// who holds back: one who puts the question off or is unsure, or passes
// over the question asked again. Said to "Yes, let's take it forward." or
// after an answer, it reads as if the user had objected.
func TestReassuranceIsForAUserWhoHoldsBack(t *testing.T) {
	const (
		reassurance = "That's fair, and we can come back to anything later."
		which       = "Which idea do you want to take forward?"
		shall       = "Shall we take this idea forward as your choice, with those next steps?"
	)
	session := func(asked string, fields map[string]any) func(*engine.Definition) *engine.WorkingMemory {
		return func(def *engine.Definition) *engine.WorkingMemory {
			m := engine.NewWorkingMemory(def, "s", "p")
			m.TurnNumber = 2
			m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "Cafes over-bake it."},
				{Role: engine.RoleAssistant, Turn: 1, Content: "Noted, the risks: cafes over-bake it. " + asked}}
			if fields != nil {
				m.Extraction = filedAt(t, def, m.Extraction, 2, fields)
			}
			return m
		}
	}
	tests := []struct {
		name, msg, next string
		memory          func(*engine.Definition) *engine.WorkingMemory
		want            bool
	}{
		{name: "a yes", msg: "Yes, let's take it forward.", next: "confidence_assessed",
			memory: session(shall, map[string]any{"selection.selection_confirmed": true})},
		{name: "a yes the extraction did not file", msg: "Yes, let's take it forward.", next: "selection_confirmed",
			memory: session(shall, nil)},
		{name: "an answer filed", msg: "The par-baked bread for cafes.", next: "rationale_captured",
			memory: session(which, map[string]any{"selection.selected_idea": "The par-baked bread for cafes"})},
		{name: "an answer filed to the question asked again", msg: "Test the recipes and buy a freezer.", next: "selection_confirmed",
			memory: session(shall, map[string]any{"selection.next_steps": []string{"Test the recipes", "buy a freezer"}})},
		{name: "a question put off", msg: "I'd rather skip that for now.", next: "idea_selected", memory: session(which, nil), want: true},
		{name: "an unsure answer", msg: "Not sure yet.", next: "idea_selected", memory: session(which, nil), want: true},
		{name: "the question passed over", msg: "Hmm.", next: "idea_selected", memory: session(which, nil), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replyOf(t, "ideation", tt.memory, "SELECT", []string{"roll_with_resistance"}, tt.next, tt.msg)
			if said := strings.Contains(got, reassurance); said != tt.want {
				t.Errorf("reply %q says %q: %t, want %t", got, reassurance, said, tt.want)
			}
		})
	}
}

// Words of a hold-back said as part of an answer are the answer: business
// profile's commercials phase, whose first technique that has an opener
// rolls with resistance, answered "Honest bread, made slowly; fancy
// marketing talk is a waste of time." with "Thanks, I've noted the brand
// positioning. That's fair, and we can come back to anything later."
func TestAnAnswerIsNoHoldingBack(t *testing.T) {
	const reassurance = "That's fair, and we can come back to anything later."
	for _, tt := range []struct {
		msg    string
		fields map[string]any
	}{
		{msg: "Honest bread, made slowly; fancy marketing talk is a waste of time.",
			fields: map[string]any{"brand_and_marketing.brand_positioning": "Honest bread, made slowly"}},
		// Nothing filed: the words alone tell an answer.
		{msg: "Paper rotas are frustrating and not helpful for the staff."},
	} {
		t.Run(tt.msg, func(t *testing.T) {
			got := replyOf(t, "business-profile", func(def *engine.Definition) *engine.WorkingMemory {
				m := engine.NewWorkingMemory(def, "s", "p")
				m.TurnNumber = 2
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We sell through the shop."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "Noted, the sales channels: the shop. How do new customers find you?"}}
				if tt.fields != nil {
					m.Extraction = filedAt(t, def, m.Extraction, 2, tt.fields)
				}
				return m
			}, "COMMERCIALS", []string{"open_ended_questions", "roll_with_resistance", "reflective_listening"},
				"marketing_budget_known", tt.msg)
			if strings.Contains(got, reassurance) {
				t.Errorf("reply %q answers an answer with %q", got, reassurance)
			}
		})
	}
}

// A message that names a thing and is filed as the value asked for is
// acknowledged as that value, not reflected as if it were a thought: "Our
// own savings, no loans." was answered "So what matters to you is that
// your own savings, no loans.", and "Par-baked bread, because the cafes
// finish it themselves." "So what matters to you is that par-baked
// bread, because …".
func TestAThingNamedAndFiledIsAcknowledged(t *testing.T) {
	tests := []struct {
		name, engine, phase, next, msg string
		fields                         map[string]any
		want                           string
	}{
		{name: "the funding", engine: "business-profile", phase: "COMMERCIALS", next: "acquisition_channels_known",
			msg: "Our own savings, no loans.", fields: map[string]any{"financial_model.funding": "Our own savings, no loans"},
			want: "the funding"},
		{name: "the idea with the most impact, and why", engine: "ideation", phase: "EVALUATE", next: "weak_ideas_eliminated",
			msg:    "Par-baked bread, because the cafes finish it themselves.",
			fields: map[string]any{"evaluation.impact_notes": "Par-baked bread"},
			want:   "par-baked bread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replyOf(t, tt.engine, func(def *engine.Definition) *engine.WorkingMemory {
				m := engine.NewWorkingMemory(def, "s", "p")
				m.TurnNumber = 2
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "Hello."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "Tell me more."}}
				m.Extraction = filedAt(t, def, m.Extraction, 2, tt.fields)
				return m
			}, tt.phase, []string{"reflective_listening"}, tt.next, tt.msg)
			if strings.Contains(got, "what matters to you") || !strings.Contains(got, tt.want) {
				t.Errorf("reply %q; want it to acknowledge %q, not reflect it", got, tt.want)
			}
		})
	}
}

// A capital that only opened the user's sentence is lowered where the
// conversation shows the word is no name: the user wrote it in lowercase
// before ("booking dog walks", then "Dog owners who book walks."), or a
// known list holds it only as the first word of an item ("…, Storage
// needs racks"). And an instruction ("Drop the indoor studio, …") is no
// clause for "So what matters to you is that" to take.
func TestNoNameKeepsItsCapital(t *testing.T) {
	tests := []struct {
		name, engine, phase, next, msg string
		history                        string
		known, fields                  map[string]any
		techniques                     []string
		want, not                      string
	}{
		{name: "a word the user wrote in lowercase", engine: "project-discovery", phase: "USERS_AND_GOALS",
			next: "user_count_estimated", history: "We need an app for booking dog walks.", msg: "Dog owners who book walks.",
			fields: map[string]any{"users_and_personas.primary_user": "Dog owners who book walks"},
			want:   " dog owners who book walks."},
		{name: "a word that opens an item of a known list", engine: "ideation", phase: "EVALUATE",
			next: "weak_ideas_eliminated", history: "Hello.", msg: "Storage with a spring service.",
			known:  map[string]any{"problem_space.constraints": []string{"about 3,000 pounds to spend", "Storage needs racks"}},
			fields: map[string]any{"evaluation.impact_notes": "Storage with a spring service"},
			want:   ": storage with a spring service."},
		{name: "an instruction", engine: "ideation", phase: "EVALUATE", next: "weak_ideas_eliminated", history: "Hello.",
			techniques: []string{"reflective_listening"}, msg: "Drop the indoor studio, it costs too much.",
			not: "what matters to you"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replyOf(t, tt.engine, func(def *engine.Definition) *engine.WorkingMemory {
				m := engine.NewWorkingMemory(def, "s", "p")
				m.TurnNumber = 2
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: tt.history},
					{Role: engine.RoleAssistant, Turn: 1, Content: "Tell me more."}}
				if tt.known != nil {
					m.Extraction = known(t, def, tt.known)
				}
				if tt.fields != nil {
					m.Extraction = filedAt(t, def, m.Extraction, 2, tt.fields)
				}
				return m
			}, tt.phase, tt.techniques, tt.next, tt.msg)
			if !strings.Contains(got, tt.want) {
				t.Errorf("reply\n%q\ndoes not say\n%q", got, tt.want)
			}
			if tt.not != "" && strings.Contains(got, tt.not) {
				t.Errorf("reply %q says %q", got, tt.not)
			}
		})
	}
}

// The value a message filed, known already when the reply is written,
// makes no name of the word that opens it: "Local, within a couple of
// miles." and "Bread, pastries and custom cakes." are said back lowered.
func TestTheValueFiledMakesNoName(t *testing.T) {
	for _, tt := range []struct {
		msg, path string
		value     any
		want      string
	}{
		{msg: "Local, within a couple of miles.", path: "target_market.geography",
			value: "Local, within a couple of miles", want: "Got it: local, within a couple of miles."},
		{msg: "Bread, pastries and custom cakes.", path: "product_offering.core_products",
			value: []string{"Bread", "pastries", "custom cakes"}, want: "Got it: bread, pastries and custom cakes."},
	} {
		t.Run(tt.msg, func(t *testing.T) {
			got := replyOf(t, "business-profile", func(def *engine.Definition) *engine.WorkingMemory {
				m := engine.NewWorkingMemory(def, "s", "p")
				m.TurnNumber = 2
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{tt.path: tt.value})
				return m
			}, "FOUNDATIONS", []string{"mirroring"}, "competitors_named", tt.msg)
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("reply %q, want it to open with %q", got, tt.want)
			}
		})
	}
}

// An item said after another of its list keeps no capital that only
// opened the user's sentence: "Food hygiene. Allergen labels." was
// acknowledged "food hygiene and Allergen labels".
func TestReplyListItemLosesTheCapitalOfItsSentence(t *testing.T) {
	t.Parallel()
	const msg = "Food hygiene. Allergen labels."
	_, focus := asking(t, "business-profile", "regulatory_and_compliance.regulations")
	got := replyOf(t, "business-profile", func(def *engine.Definition) *engine.WorkingMemory {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		m.Extraction = filedAt(t, def, m.Extraction, 2,
			map[string]any{"regulatory_and_compliance.regulations": []any{"Food hygiene", "Allergen labels"}})
		return m
	}, "FOUNDATIONS", nil, focus, msg)
	if want := "food hygiene and allergen labels"; !strings.Contains(got, want) {
		t.Errorf("the reply to %q is %q, want it to say %q", msg, got, want)
	}
}
