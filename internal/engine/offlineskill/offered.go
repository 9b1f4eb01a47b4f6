package offlineskill

import (
	"slices"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// offered is the answer to a message that offers one more of what the
// user's last message offered, whatever was asked: "Another idea:
// woodworking classes in my garage", then "Or custom engraved boards for
// weddings" is one more idea, not a root cause. The message opens with an
// alternative ("or", "or maybe", "what about", "maybe", "perhaps") and
// names a thing: no clause ("Or maybe they're too busy" gives a reason),
// no amount or time ("Maybe weekends only", "Or 200 dollars" answer a
// question of their own) and no cause ("Or because …", "Maybe lack of
// time"). The list it goes on is a list of suggestions, whose cues take
// one ("how about …", "we could …"), that the user's last message added
// to: after a constraint, "Maybe the rent" is none of them, and with no
// such list the message goes to the question asked.
func offered(p extraction.Prompt, msg string) (path string, _ fieldAnswer, ok bool) {
	ss := engine.Sentences(msg)
	if len(ss) != 1 {
		return "", fieldAnswer{}, false
	}
	rest, led := "", false
	s := strings.ReplaceAll(cleanSentence(ss[0]), "’", "'")
	for _, lead := range offerLeads {
		if engine.PhraseIndex(s, lead) == 0 && len(s) > len(lead) {
			rest, led = strings.TrimLeft(s[len(lead):], " ,:"), true
			break
		}
	}
	if !led {
		return "", fieldAnswer{}, false
	}
	// "Or maybe headshots for local realtors, they always need fresh
	// ones": the remark on the thing offered is none.
	items := unreasoned(SplitItems(rest))
	if len(items) == 0 || slices.ContainsFunc(items, func(it string) bool { return !aThing(it) }) {
		return "", fieldAnswer{}, false
	}
	said := contentWords(lastUserMessage(p))
	return growOneList(p, items, "the user offers one more of ", func(f extraction.PromptField, list []string) bool {
		return slices.ContainsFunc(f.Cues.Keywords, suggests) &&
			slices.ContainsFunc(list, func(it string) bool { w := contentWords(it); return len(w) > 0 && all(w, said) })
	})
}

// offerLeads open a message that offers an alternative, the longest
// first.
var offerLeads = []string{"or maybe", "or perhaps", "or even", "or else", "what about", "how about", "or", "maybe",
	"perhaps"}

// aThing reports whether an item names a thing offered: no clause, cause,
// pointer, amount, time or place ("next month", "in the spring"), nor one
// of the things offered before ("the Etsy one").
func aThing(item string) bool {
	words := strings.Fields(strings.ToLower(item))
	return len(words) > 0 && !notOffered[words[0]] && !pointers[words[0]] && !headPrepositions[words[0]] &&
		!times[words[0]] && words[len(words)-1] != "one" && words[len(words)-1] != "ones" &&
		!strings.ContainsAny(item, "0123456789$£€%") && !slices.ContainsFunc(words, func(w string) bool {
		w = strings.Trim(w, ",;:")
		return verbWords[w] || subjectPronouns[w] || measures[w] || calendar[w] || strings.HasSuffix(w, "n't")
	})
}

// suggests reports whether a keyword of a list takes a suggestion ("how
// about", "we could"): the list is one of things offered.
func suggests(keyword string) bool {
	return slices.Contains(suggestionKeywords, strings.ToLower(keyword))
}

var suggestionKeywords = []string{"how about", "what if we", "we could", "maybe we could"}

var (
	// notOffered open what names no thing offered: a cause, a negation, a
	// pointer or a placeholder ("Or not", "Or something like that").
	notOffered = engine.WordSet(`because since as due cause cos lack not no too so both either neither something
		anything whatever else other others`)
	// measures are the time and money an answer to a question of its own
	// gives ("Maybe weekends only", "Or a few hundred pounds").
	measures = engine.WordSet(`hours days weeks weekends evenings mornings nights months years minutes percent
		dollars pounds euros quid bucks grand hundred thousand budget time money hour day week weekend evening
		morning night month year spring summer autumn winter`)
	// times open a time ("next month", "this summer").
	times = engine.WordSet(`next last this every tomorrow today tonight soon later`)
)
