package runner_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// Three chats held with the offline provider (praetor chat), which read as
// a script: a reply that asked two questions ("Think back to the last time
// this came up: where were you, and who was involved? What made this a
// priority now?"), "Even a rough answer helps, or say if you would rather
// skip it for now:" after an answer filed to another field, and "An example
// can help: …" or "Next, let's look at this." in reply after reply.
var scriptedChats = []struct {
	engine string
	turns  []string
}{
	{"project-discovery", []string{
		"We need an app for our dog walking business so clients can book walks online.",
		"Right now bookings come by text message and I lose track of them.",
		"The main users are dog owners, and my three walkers who need to see their schedule.",
		"Success would be no missed walks and clients booking without texting me.",
		"Budget is around 8000 dollars and I'd like it before spring.",
		"It has to work on phones, most clients are on iPhone.",
		"Payments would be nice but not required at first.",
		"We also want reminders the evening before a walk.",
		"Actually the budget is 10000, my partner agreed.",
		"I think that covers it.",
	}},
	{"exploration", []string{
		"I need to figure out how to handle bookings for my yoga studio.",
		"About 120 members, mostly locals.",
		"I've heard of Mindbody and Glofox, maybe a custom app.",
		"I don't really know how these tools handle payments.",
		"Budget is maybe 50 pounds a month.",
		"Mindbody looks powerful but it's too expensive for us.",
		"Glofox has a nice app for members.",
		"A custom app is out, no time for that.",
		"I'd like to decide by January.",
		"I think Glofox is the front runner.",
	}},
	{"business-profile", []string{
		"We run a small bakery in Leeds, open since 2019.",
		"We sell bread, pastries and custom cakes, mostly to locals and a couple of cafes.",
		"There are six of us: me, my sister, and four bakers.",
		"Revenue is about 300k a year, roughly 60 percent from the shop.",
		"Our main competitor is Greggs, and a new artisan place opened nearby.",
		"We want to grow the wholesale side to more cafes.",
		"Our biggest problem is staff leaving after a few months.",
		"We use Square for the till and spreadsheets for orders.",
		"That's about it really.",
	}},
}

// openerGap is how many replies before it a reply's opener is not said in.
const openerGap = 3

// passedOver is the excuse of a question asked again that the user passed
// over.
const passedOver = "Even a rough answer helps"

// Each reply asks one question, takes an answer filed to any field without
// the excuse of a question passed over, and says nothing before its
// question that one of the three replies before it said.
func TestOfflineRepliesReadAsAConversation(t *testing.T) {
	for _, chat := range scriptedChats {
		t.Run(chat.engine, func(t *testing.T) {
			s := newSession(t, chat.engine)
			var before [][]string // what each reply said before its question
			for i, msg := range chat.turns {
				res := s.say(msg)
				reply := res.Reply
				var questions []string
				for _, sn := range engine.Sentences(reply) {
					if engine.IsQuestion(sn) {
						questions = append(questions, sn)
					}
				}
				if len(questions) > 1 {
					t.Errorf("reply %d asks %d questions: %q", i+1, len(questions), reply)
				}
				if filed(res.Effects.ExtractionLog) && strings.Contains(reply, passedOver) {
					t.Errorf("reply %d to %q, which filed %s, says %q: %q", i+1, msg, res.Effects.ExtractionLog[0].FieldPath,
						passedOver, reply)
				}
				leads := leadsOf(reply)
				for back, earlier := range slices.Backward(before[max(len(before)-openerGap, 0):]) {
					for _, l := range leads {
						if slices.Contains(earlier, l) {
							t.Errorf("reply %d says %q again, as reply %d did: %q", i+1, l, back+max(len(before)-openerGap, 0)+1, reply)
						}
					}
				}
				before = append(before, leads)
			}
		})
	}
}

// filed reports whether a turn's extraction log sets a value, not a null
// that clears one.
func filed(log []extraction.LogEntry) bool {
	return slices.ContainsFunc(log, func(e extraction.LogEntry) bool { return string(e.ExtractedValue) != "null" })
}

// leadsOf is what a reply says before its question: its sentences but the
// last, and what the last says before a colon ("Building on what we
// covered: What do you hope to achieve with it?").
func leadsOf(reply string) []string {
	ss := engine.Sentences(reply)
	if len(ss) == 0 {
		return nil
	}
	leads := slices.Clip(ss[:len(ss)-1])
	if lead, _, ok := strings.Cut(ss[len(ss)-1], ": "); ok {
		leads = append(leads, lead)
	}
	return leads
}
