package offline

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/praetorhq/praetor/internal/llm"
)

// The pieces of a generic reply: an acknowledgement, then a question about
// what the user said. Plain, short, and obviously generic: what a careful
// assistant says when it knows nothing about the domain.
var (
	openers = []string{
		"Thanks for sharing that.",
		"Understood.",
		"Got it.",
		"That helps.",
		"Thank you, that is useful.",
		"Noted.",
	}
	questions = []string{
		"Could you tell me a bit more about %s?",
		"What matters most to you about %s?",
		"What would a good outcome look like for %s?",
		"Is there anything else I should know about %s?",
		"Could you give me an example related to %s?",
		"What is the most pressing part of %s for you?",
	}
	greetings = []string{
		"Hello! How can I help you today?",
		"Hi there. What would you like to work on?",
		"Welcome. Where would you like to start?",
	}
)

// topicWords bounds how much of the user's message a reply repeats.
const topicWords = 8

// reply writes a short deterministic answer to the last user message.
func reply(req llm.Request, s *stream) string {
	last := ""
	for _, m := range req.Messages {
		if m.Role == llm.User && strings.TrimSpace(m.Content) != "" {
			last = m.Content
		}
	}
	topic := topicOf(last)
	if topic == "" {
		return greetings[s.pick(len(greetings))]
	}
	return openers[s.pick(len(openers))] + " " + fmt.Sprintf(questions[s.pick(len(questions))], "“"+topic+"”")
}

// topicOf is the first clause of a message, at most topicWords words, without
// trailing punctuation: "I need to plan a trip to Rome, cheaply." gives
// "I need to plan a trip to Rome".
func topicOf(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.IndexAny(msg, ".!?;\n"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.IndexByte(msg, ','); i >= 0 {
		msg = msg[:i]
	}
	words := strings.Fields(msg)
	if len(words) > topicWords {
		words = words[:topicWords]
	}
	return strings.TrimRightFunc(strings.Join(words, " "), func(r rune) bool {
		return unicode.IsPunct(r) || unicode.IsSpace(r)
	})
}
