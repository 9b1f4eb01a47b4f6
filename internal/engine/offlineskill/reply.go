package offlineskill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/tokenizer"
)

// ReplyPrompt is what the reply skill reads from a response prompt built by
// the runner.
type ReplyPrompt struct {
	Phase, PhaseName string
	// DominantMode is the first mode of the phase's blend.
	DominantMode string
	// Techniques are the ids of the active techniques, in order.
	Techniques []string
	// Next is the obligation to ask for ("" when none is left).
	NextID, NextDescription, NextQuestion string
	// Known lists "Display name: value" for the extracted fields.
	Known []string
	// LastReply is the assistant's previous reply, if the history shows it.
	LastReply string
	// EarlierReplies are the assistant's replies before LastReply, the
	// latest first: with it, the last rememberedReplies the history shows.
	EarlierReplies []string
	// Filed are the fields the user's message filed: those the extraction
	// summary gives a turn later than the history's last.
	Filed []Filed
	// Names are the capitalised words the user wrote inside a sentence in
	// the history ("We take payments with Square"): names, whatever else
	// the word means.
	Names []string
	// Lowercase are the words the user wrote in lowercase in the history
	// ("booking dog walks"): common words, whatever capital a sentence
	// gives them.
	Lowercase []string
	// Message is the user's message.
	Message string
	// Handoff is the inbound handoff the context opens with, if any.
	Handoff *HandoffSummary
}

// Filed is a field the user's message filed, as the extraction summary
// shows it.
type Filed struct {
	// Name is the field's display name ("Project type").
	Name string
	// Value is the field's value: JSON, unless the summary clipped it.
	Value string
}

// HandoffSummary is what the reply skill reads of an inbound handoff's
// executive summary (package handoff's Format).
type HandoffSummary struct {
	Source string
	// Problem is the problem the source session worked on, as the user put
	// it ("" when the handoff does not say which pain point it is).
	Problem                                     string
	Decisions, Constraints, Gaps, Sensitivities []string
	// Open are the required obligations the source left open, by their
	// descriptions ("The next steps are agreed"): what would be done, which
	// the acknowledgement says is not done yet.
	Open []string
	// Shortlist are the ideas the user shortlisted, to explore here.
	Shortlist []string
}

// ErrNotReplyPrompt is returned for a request the runner did not build.
var ErrNotReplyPrompt = errors.New("not a response prompt")

// ParseReplyPrompt reads the parts of the assembled context the reply skill
// needs: section headers and line prefixes are fixed by package contextasm.
func ParseReplyPrompt(req llm.Request) (ReplyPrompt, error) {
	var sys, user string
	for _, m := range req.Messages {
		switch m.Role {
		case llm.System:
			sys = m.Content
		case llm.User:
			user = m.Content
		}
	}
	if !strings.Contains(sys, contextasm.HeaderPhase) || !strings.Contains(sys, contextasm.HeaderObligations) {
		return ReplyPrompt{}, ErrNotReplyPrompt
	}
	var p ReplyPrompt
	p.Message = user
	phase := section(sys, contextasm.HeaderPhase)
	if id, name, ok := phaseLine(phase); ok {
		p.Phase, p.PhaseName = id, name
	}
	if mode, ok := blendLine(phase); ok {
		p.DominantMode = mode
	}
	p.Techniques = techLines(phase)
	hist := section(sys, contextasm.HeaderHistory)
	replies, lastTurn := recentReplies(hist)
	if len(replies) > 0 {
		p.LastReply = replies[0]
	}
	if len(replies) > 1 {
		p.EarlierReplies = replies[1:]
	}
	for _, l := range strings.Split(section(sys, contextasm.HeaderObligations), "\n") {
		rest, ok := strings.CutPrefix(l, contextasm.NextPrefix)
		if !ok || strings.HasPrefix(l, contextasm.NothingNext) {
			continue
		}
		parts := strings.Split(rest, " | ")
		p.NextID = strings.TrimSpace(parts[0])
		if len(parts) > 1 {
			p.NextDescription = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 {
			p.NextQuestion = strings.TrimSpace(strings.TrimPrefix(parts[2], "ask: "))
		}
	}
	for l := range strings.SplitSeq(section(sys, contextasm.HeaderExtraction), "\n") {
		if name, value, turns, ok := knownLine(l); ok {
			p.Known = append(p.Known, name+": "+plainValue(value))
			if turnAfter(turns, lastTurn) {
				p.Filed = append(p.Filed, Filed{Name: name, Value: value})
			}
		}
	}
	for l := range strings.SplitSeq(hist, "\n") {
		if _, text, ok := userLine(l); ok {
			p.Names = append(p.Names, capitalised(text)...)
			p.Lowercase = appendLowercase(p.Lowercase, text)
		}
	}
	p.Handoff = parseHandoff(section(sys, handoff.Title))
	return p, nil
}

// rememberedReplies is how many of the assistant's last replies the reply
// skill reads: an opener or the signpost one of them said is not said
// again.
const rememberedReplies = 3

// recentReplies returns the text of the history's last rememberedReplies
// assistant lines, the latest first, and the turn of its last line (0 for
// none): a field the extraction summary gives a later turn was filed by the
// message being answered, which the history does not show. It reads the
// lines from the end: the history grows with the conversation, and only its
// last replies are wanted.
func recentReplies(hist string) (replies []string, lastTurn int) {
	lastTurn = -1
	for hist != "" && len(replies) < rememberedReplies {
		i := strings.LastIndexByte(hist, '\n')
		turn, text, ok := assistantLine(hist[i+1:])
		if ok {
			replies = append(replies, text)
		} else {
			turn, _, ok = userLine(hist[i+1:])
		}
		if ok && lastTurn < 0 {
			lastTurn, _ = strconv.Atoi(turn)
		}
		hist = hist[:max(i, 0)]
	}
	return replies, max(lastTurn, 0)
}

// turnAfter reports whether a field's turns ("3,5") hold one after turn.
func turnAfter(turns string, turn int) bool {
	for t := range strings.SplitSeq(turns, ",") {
		if n, err := strconv.Atoi(t); err == nil && n > turn {
			return true
		}
	}
	return false
}

var (
	sourceLineRe   = regexp.MustCompile(`^Source: (.+?) → Target: `)
	decisionLineRe = regexp.MustCompile(`^✓ Chose "(.+)" \(confidence`)
	sectionLineRe  = regexp.MustCompile(`^─── (.+) ───$`)
)

// parseHandoff reads the executive summary of an inbound handoff.
func parseHandoff(text string) *HandoffSummary {
	if text == "" {
		return nil
	}
	h := &HandoffSummary{}
	cur := ""
	var questions []string // of each decision, "" when it gives none
	for _, l := range strings.Split(text, "\n") {
		if m := sourceLineRe.FindStringSubmatch(l); m != nil {
			h.Source = m[1]
			continue
		}
		if m := sectionLineRe.FindStringSubmatch(l); m != nil {
			cur = m[1]
			continue
		}
		item, bullet := strings.CutPrefix(l, "• ")
		switch {
		case cur == handoff.SectionDecisions:
			if m := decisionLineRe.FindStringSubmatch(l); m != nil {
				h.Decisions, questions = append(h.Decisions, m[1]), append(questions, "")
			} else if q, ok := strings.CutPrefix(l, handoff.QuestionLine); ok && len(questions) > 0 {
				questions[len(questions)-1] = strings.TrimSpace(q)
			}
		case !bullet:
		case cur == handoff.SectionConstraints:
			c, _, _ := strings.Cut(item, " → ")
			h.Constraints = append(h.Constraints, c)
		case cur == handoff.SectionGaps:
			if idea, ok := strings.CutPrefix(item, handoff.ShortlistPrefix); ok {
				h.Shortlist = append(h.Shortlist, idea)
				continue
			}
			// An open obligation of the source comes as "Still open: …",
			// and the acknowledgement says "Still open:" once.
			if o, ok := strings.CutPrefix(item, handoff.OpenPrefix); ok {
				h.Open = append(h.Open, o)
				continue
			}
			h.Gaps = append(h.Gaps, item)
		case cur == handoff.SectionPainPoints:
			if p, ok := strings.CutPrefix(item, handoff.ProblemPrefix); ok && h.Problem == "" {
				h.Problem = p
			}
		case cur == handoff.SectionSensitive:
			h.Sensitivities = append(h.Sensitivities, item)
		}
	}
	if h.Source == "" {
		return nil
	}
	h.Decisions = telling(h.Decisions, questions)
	return h
}

// telling is decisions, each of a choice made for several questions
// followed by the question it answers ("PostgreSQL (for: Which database
// for the app?)"), so that the acknowledgement does not read as a repeat.
func telling(decisions, questions []string) []string {
	twice := handoff.ChosenTwice(decisions)
	out := make([]string, 0, len(decisions))
	for i, d := range decisions {
		if q := questions[i]; q != "" && twice(d) {
			d += " (for: " + q + ")"
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// acknowledge restates an inbound handoff at the start of the session's
// first reply: where the conversation comes from, the problem taken up,
// what was decided, the ideas shortlisted to explore, the constraints,
// what is still open and what to be careful about. It says them as the
// rest of the replies say the user's words (saidBack), the constraints'
// labels in words (constraintsSaid), what is open as not done yet
// (notDoneYet); known, names and lower are the prompt's (ReplyPrompt.words),
// which tell a name's capital (keepsCapital).
func acknowledge(h *HandoffSummary, known []string, names, lower wordList) string {
	list := func(xs []string) string {
		if len(xs) > 6 {
			xs = append(xs[:6:6], fmt.Sprintf("%d more", len(xs)-6))
		}
		return saidList(xs)
	}
	names[2] = h.names()
	say := func(xs []string) []string {
		out := make([]string, 0, len(xs))
		for _, x := range xs {
			if s := saidBack(x, known, names, lower); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	parts := []string{"Picking up from " + h.Source + "."}
	if p := problemSaid(h.Problem); p != "" {
		if !strings.HasSuffix(p, "…") && !strings.HasSuffix(p, "?") {
			p += "."
		}
		parts = append(parts, "The problem: "+p)
	}
	var ds, acts []string
	for _, d := range h.Decisions {
		switch {
		case decidedAct(d):
			// "Use Glofox": a decision to do something is said with
			// "to" ("You decided to use Glofox"), not "on".
			for _, a := range say([]string{d}) {
				acts = append(acts, "to "+lowerFirst(a))
			}
		case properName(d):
			// "Square": a choice named as a whole keeps the capital it
			// was chosen with, common word or not.
			ds = append(ds, d)
		default:
			ds = append(ds, say([]string{d})...)
		}
	}
	switch {
	case len(ds) > 0 && len(acts) > 0:
		parts = append(parts, "You decided on "+list(ds)+", and "+list(acts)+".")
	case len(ds) > 0:
		parts = append(parts, "You decided on "+list(ds)+".")
	case len(acts) > 0:
		parts = append(parts, "You decided "+list(acts)+".")
	}
	if len(h.Shortlist) > 0 {
		ideas := h.Shortlist
		if len(ideas) > 6 {
			ideas = append(ideas[:6:6], fmt.Sprintf("%d more", len(ideas)-6))
		}
		parts = append(parts, "You shortlisted "+andList(ideas)+" to explore.")
	}
	if cs := constraintsSaid(h.Constraints, known, names, lower); len(cs) > 0 {
		parts = append(parts, "I have noted your constraints: "+list(cs)+".")
	}
	open := say(h.Gaps)
	for _, o := range h.Open {
		if s := notDoneYet(o); s != "" {
			open = append(open, s)
		}
	}
	if len(open) > 0 {
		parts = append(parts, "Still open: "+list(open)+".")
	}
	var cautions []string
	impatient := false
	for _, s := range h.Sensitivities {
		if s == handoff.Impatient {
			impatient = true
			continue
		}
		if d, ok := strings.CutPrefix(s, handoff.NotYetPrefix); ok {
			// "The user preferred not to answer yet: The team and resources
			// available are known" is the assistant's to know, and the
			// user's to hear as what they put off.
			if subject := obligationSubject(d); subject != "" {
				// "later" ends the clause, before what the subject lists
				// in brackets, as "yet" does in notDoneYet.
				listed := ""
				if i := strings.Index(subject, " ("); i > 0 && strings.HasSuffix(subject, ")") {
					subject, listed = subject[:i], subject[i:]
				}
				cautions = append(cautions, "you would rather come back to "+subject+" later"+listed)
			}
			continue
		}
		cautions = append(cautions, say([]string{s})...)
	}
	if len(cautions) > 0 {
		parts = append(parts, "I will keep in mind: "+list(cautions)+".")
	}
	if impatient {
		parts = append(parts, "I will not ask again for what you have already told me.")
	}
	return strings.Join(parts, " ")
}

// decidedVerbs open a decision to do something ("Use Glofox", "Hire a
// second baker"), which the acknowledgement says with "to".
var decidedVerbs = engine.WordSet(`use go hire switch build buy move keep start stop launch try adopt outsource partner
	pilot sell offer add drop raise open close rent lease wait stay focus pay charge migrate implement integrate choose pick
	get make take set test delay postpone expand replace automate run sign join apply`)

// decidedAct reports whether a decision is to do something: it opens with
// a bare verb, alone or before its object ("Use Glofox", "Hire a baker").
// A verb's word that opens a noun phrase ("Use of Glofox for bookings",
// "Open plan office") is no verb: the decision is said with "on".
func decidedAct(d string) bool {
	words := strings.Fields(strings.ToLower(d) + " ")
	if len(words) == 0 || !decidedVerbs[words[0]] {
		return false
	}
	return len(words) == 1 || !nounAfterVerb[words[1]] && !compoundsAfter[words[0]+" "+words[1]]
}

var (
	// nounAfterVerb are the words after which a verb's word is a noun
	// ("use of", "start of").
	nounAfterVerb = engine.WordSet(`of`)
	// compoundsAfter are nouns a verb's word opens as their modifier
	// ("open plan office", "set menu"), where it is no verb.
	compoundsAfter = map[string]bool{"open plan": true, "set menu": true, "pilot scheme": true, "pilot programme": true,
		"pilot program": true, "test kitchen": true, "focus group": true, "focus groups": true, "start date": true,
		"pay rise": true, "rent increase": true, "lease agreement": true, "run rate": true}
)

// names are the words a handoff's items write capitalised inside a
// sentence ("Card payments go through Square"), after the label a mapper
// put before a constraint: names, which keep their capital where an item
// opens with them.
func (h *HandoffSummary) names() []string {
	var out []string
	for _, xs := range [][]string{h.Decisions, h.Constraints, h.Gaps, h.Sensitivities, {h.Problem}} {
		for _, x := range xs {
			_, v := handoff.ConstraintLabel(x)
			out = append(out, capitalised(v)...)
		}
	}
	return out
}

// saidBack is an item of a handoff as a reply says the user's words back:
// turned around ("we keep" is "you keep"), without a final stop, its first
// word lowered unless it is a name (keepsCapital); "" for none.
func saidBack(item string, known []string, names, lower wordList) string {
	words := strings.Fields(strings.TrimRight(item, ".!;: "))
	if len(words) == 0 {
		return ""
	}
	turnAround(words)
	said := strings.Join(words, " ")
	// "Owners' addresses": the possessive's apostrophe is no part of the
	// word keepsCapital reads.
	first := slices.Clone(words)
	first[0] = strings.TrimSuffix(strings.TrimSuffix(strings.ReplaceAll(first[0], "’", "'"), "'s"), "'")
	if first[0] == "" || !keepsCapital(first, known, names, lower) {
		said = lowerFirst(said)
	}
	return said
}

// listedLabels are the labels of constraints that are items of one list,
// said together after the words that say what they are ("integration with
// Stripe and your Google Calendar").
var listedLabels = map[string]string{"Integration": "integration with ", "Regulation": "compliance with "}

// constraintsSaid are a handoff's constraints as the acknowledgement says
// them: each value said back (saidBack), its label in words ("a budget of
// around 15,000 pounds") or left out where the value says it ("by June",
// "an agency will build it and you will run it"), and the items of a list
// said together where the first of them is.
func constraintsSaid(cs, known []string, names, lower wordList) []string {
	var out []string
	at := map[string]int{}
	items := map[string][]string{}
	var nones []string              // the labels of a list said as none, said where none of its items is
	noneMore := map[string]string{} // what a list's none says after it ("for now, maybe Xero later")
	for _, c := range cs {
		label, value := handoff.ConstraintLabel(c)
		// "none yet, maybe 5k later": a value of none or not known
		// followed by more says the none, then the rest.
		head, rest, none, unknown := handoff.NoneOf(value)
		if rest != "" {
			rest = saidBack(rest, known, names, lower)
		}
		if none || unknown != "" {
			// "Budget: none yet" is said as no budget, "Budget: no idea"
			// as a budget not known and "Team: not decided" as a team not
			// decided; every one is said, for the receiver acknowledges
			// each constraint (handoff.Verify).
			noun, ok := noneLabels[label]
			if _, listed := listedLabels[label]; listed && none {
				if !slices.Contains(nones, label) {
					nones = append(nones, label)
					at[label] = len(out)
					out = append(out, "")
				}
				// "None needed for now, maybe Xero later": for how long
				// there is none, and what follows, are said after it.
				if more := noneFor(head); more != "" || rest != "" {
					if rest != "" {
						more += ", " + rest
					}
					noneMore[label] = more
				}
				continue
			}
			var said string
			switch {
			case !ok:
				continue // a constraint of nothing, without a label to say it by
			case none:
				said = "no " + noun + yet(value)
			default:
				verb := " is"
				if strings.HasSuffix(noun, "s") {
					verb = " are"
				}
				said = "the " + noun + verb + " not " + unknown + " yet"
			}
			if rest != "" {
				said += ", " + rest
			}
			out = append(out, said)
			continue
		}
		said := saidBack(value, known, names, lower)
		if said == "" {
			continue
		}
		if _, ok := listedLabels[label]; ok {
			if _, seen := at[label]; !seen {
				at[label] = len(out)
				out = append(out, "")
			}
			if len(items[label]) > 0 && openedOnly(strings.Fields(said), known, names) {
				said = lowerFirst(said) // "food hygiene rules and allergen labels"
			}
			items[label] = append(items[label], said)
			continue
		}
		out = append(out, labelInWords(label, said))
	}
	for label, i := range at {
		if len(items[label]) == 0 {
			// "Integration: none needed", with no integration named: said
			// as none, or the constraint goes unacknowledged.
			out[i] = noneListed[label] + noneMore[label]
			continue
		}
		out[i] = listedLabels[label] + andList(items[label])
	}
	return out
}

// noneListed is how a label of listedLabels is said where its only items
// say there are none.
var noneListed = map[string]string{"Integration": "no integration needed", "Regulation": "no regulation to comply with"}

// noneLabels are the labels of a constraint said as "no" or not known and
// what the label names where its value is none ("no budget yet") or not
// known ("the integrations are not known yet").
var noneLabels = map[string]string{"Budget": "budget", "Timeline": "timeline", "Team": "team", "Funding": "funding",
	"Technical": "technical constraints", "Integration": "integrations", "Regulation": "regulations"}

// noneFor is how long a value of none says there is none, as it says it
// (" for now" of "None needed for now"), "" for a value that does not.
func noneFor(value string) string {
	t := engine.LowerText(value)
	for _, w := range []string{"for now", "at the moment", "so far", "right now", "at present", "at this point", "yet"} {
		if t.Contains(w) {
			return " " + w
		}
	}
	return ""
}

// yet is " yet" for a value of none that says there is none yet ("none
// yet", "None at the moment", "TBD"), "" for another.
func yet(value string) string {
	t := engine.LowerText(value)
	for _, w := range []string{"yet", "tbd", "tbc", "moment", "for now", "so far", "right now", "currently", "at present"} {
		if t.Contains(w) {
			return " yet"
		}
	}
	return ""
}

// labelInWords is a constraint's value said back with its label in words,
// or alone where it says what it is: a clause ("it must run on iPhone"),
// a budget that says so, a deadline after its preposition ("by June").
func labelInWords(label, value string) string {
	words := strings.Fields(value)
	first := strings.ToLower(strings.Trim(words[0], ",;:"))
	if !thingNamed(words) {
		return value
	}
	switch label {
	case "Budget":
		if !strings.Contains(strings.ToLower(value), "budget") {
			return "a budget of " + value
		}
	case "Timeline":
		switch {
		case prepositions[first] || first == "every" || first == "each":
		case recurring(words):
			return "on " + value // "on Monday mornings", not "by Monday mornings"
		case dated(first) || seasons[first] || first == "next" || first == "end" || first == "early" || first == "mid" ||
			first == "late":
			return "by " + value
		default:
			return "a timeline of " + value
		}
	case "Team":
		if _, n := spelledValues[first]; n || strings.IndexFunc(first, unicode.IsDigit) == 0 {
			return "a team of " + value // "two developers"
		}
	case "Funding":
		if !participle(first) && !strings.Contains(strings.ToLower(value), "fund") {
			return "funding from " + value // not "funding from bootstrapped"
		}
	}
	return value
}

// recurring reports whether a timeline's words name a time that comes
// back, not a date: days of which one is in the plural ("Mondays",
// "Mondays and Wednesdays", "Fridays before 9am") or days before a part
// of one in the plural ("Monday mornings", "Tuesday and Thursday
// evenings").
func recurring(words []string) bool {
	plural := false
	for i, w := range words {
		w = strings.ToLower(strings.Trim(w, ",;:."))
		switch day := strings.TrimSuffix(w, "s"); {
		case calendar[w] && isDay(w):
		case calendar[day] && isDay(day):
			plural = true
		case i > 0 && (w == "and" || w == "or" || w == "&"):
		case i > 0:
			return plural || dayParts[w]
		default:
			return false
		}
	}
	return plural
}

// isDay reports whether a word of the calendar is a day of the week.
func isDay(w string) bool { return strings.HasSuffix(w, "day") }

// dayParts are the parts of a day, in the plural, a recurring time names.
var dayParts = engine.WordSet("mornings afternoons evenings nights lunchtimes")

// notDoneYet is an obligation's description, which says what is done when
// it is met ("The next steps are agreed"), said as what is not done yet
// ("the next steps are not agreed yet"); "" for one that speaks of the
// user in the third person ("The user explained the options back") or has
// no "is", "are", "has" or "have" to say it with: the context holds it.
func notDoneYet(description string) string {
	d := strings.TrimRight(strings.TrimSpace(description), ".")
	if ofTheUser(d) {
		return ""
	}
	words := strings.Fields(d)
	verb := -1
	for i, w := range words {
		if i > 0 && (w == "is" || w == "are" || w == "has" || w == "have") {
			verb = i // the last: "How digital the business is (…) is assessed"
		}
	}
	if verb < 0 {
		return ""
	}
	// "yet" ends the clause, before what it lists in brackets.
	end := len(words)
	for i := verb + 1; i < len(words); i++ {
		if strings.HasPrefix(words[i], "(") {
			end = i
			break
		}
	}
	said := slices.Concat(words[:verb+1], []string{"not"}, words[verb+1:end], []string{"yet"}, words[end:])
	return lowerFirst(strings.Join(said, " "))
}

// obligationSubject is what an obligation's description is about: the
// words before its last "is" or "are" ("The team and resources available
// are known": "the team and resources available"; "Whether the business
// is profitable is known": "whether the business is profitable"), "" when
// it says no "is" or "are" or speaks of the user in the third person.
func obligationSubject(description string) string {
	d := strings.TrimRight(strings.TrimSpace(description), ".")
	if ofTheUser(d) {
		return ""
	}
	words := strings.Fields(d)
	for i := len(words) - 1; i > 0; i-- {
		if words[i] != "is" && words[i] != "are" {
			continue
		}
		return lowerFirst(strings.Join(words[:i], " "))
	}
	return ""
}

// ofTheUser reports whether an obligation's description speaks of the
// user or the owner in the third person ("The user explained the options
// back", "The owner's top priorities …"), not of their users ("The
// users' pain points").
func ofTheUser(description string) bool {
	t := engine.LowerText(description)
	return t.Contains("the user") || t.Contains("the owner")
}

// maxProblemWords is the most words of the problem the acknowledgement
// says back: it recalls the problem, which the summary gives in full.
const maxProblemWords = 25

// problemSaid is a handoff's problem as the acknowledgement says it back:
// in the user's words turned around ("I need ideas" is "you need ideas"),
// without a final stop, cut after maxProblemWords (and then, or when the
// summary clipped it, ending with "…"); "" for none.
func problemSaid(problem string) string {
	words := strings.Fields(strings.TrimRight(strings.TrimSuffix(problem, "…"), ".!;: "))
	if len(words) == 0 {
		return ""
	}
	cut := len(words) > maxProblemWords
	if cut {
		words = words[:maxProblemWords]
		for len(words) > 3 && danglers[strings.ToLower(strings.Trim(words[len(words)-1], ","))] {
			words = words[:len(words)-1] // not "… take photos and…"
		}
		words[len(words)-1] = strings.TrimRight(words[len(words)-1], ",;:")
	}
	turnAround(words)
	said := strings.Join(words, " ")
	if !keepsCapital(words, nil, wordList{}, wordList{}) {
		said = lowerFirst(said)
	}
	if cut || strings.HasSuffix(problem, "…") {
		said += "…"
	}
	return said
}

// section returns the text under a header, up to the next blank line.
func section(text, header string) string {
	i := strings.Index(text, header)
	if i < 0 {
		return ""
	}
	rest := text[i+len(header):]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimPrefix(rest, "\n")
}

// Reply answers a response request (purpose "response"): it asks for the
// most important unmet obligation of the phase (the prompt's NEXT
// OBLIGATION) in the manner of the active techniques — a word on what the
// message filed, an opener chosen by the first technique that has one
// (reflecting the user's words, a summary of what is known, a prompt to
// recall the situation, ...) and the obligation's question, rephrased when
// it was just asked and passed over.
func Reply(_ context.Context, req llm.Request) (string, error) {
	p, err := ParseReplyPrompt(req)
	if err != nil {
		return "", err
	}
	return Compose(p), nil
}

// Compose writes the reply for a parsed prompt.
func Compose(p ReplyPrompt) string {
	var parts []string
	names, lower := p.words()
	if p.Handoff != nil && p.LastReply == "" {
		parts = append(parts, acknowledge(p.Handoff, p.Known, names, lower))
	}
	asked := asksUs(p.Message) && p.NextID != ""
	// Whether the message holds back (heldBack) is read once, here, for
	// the echo and the technique that answers a hold-back.
	o, saysBack := opener(p, names, lower, heldBack(p.Message))
	var ack string
	if !saysBack {
		// What the message filed, said briefly: the user's answer is taken,
		// whatever it answered.
		ack = acknowledgement(p, names, lower)
	}
	if p.NextID == "" {
		parts = appendSome(parts, ack, o)
		parts = append(parts, "I think we have covered everything we need. Is there anything you would like to add or change?")
		return joinParts(parts)
	}
	q := p.question()
	if asked {
		// "What would you do next?": the question is taken up, and what
		// comes first is what is asked next; the technique's opener, the
		// signpost and a repeat's excuse would pass over it.
		return joinParts(append(parts, "Good question. First, let's settle this: "+lowerFirst(q)))
	}
	again := p.LastReply != "" && strings.HasSuffix(strings.TrimSpace(p.LastReply), q)
	parts = appendSome(parts, ack, o)
	if o == "" && ack == "" && !again && p.DominantMode == "inform" && !p.saidLately(signpost) {
		// The obligation's description speaks of the user in the third
		// person ("the user explained the options back"): not to them.
		// Alone, and not again soon: after an opener, or at every turn, it
		// reads as a script; before the same question again, it leads
		// nowhere new.
		parts = append(parts, signpost)
	}
	if again && len(p.Filed) == 0 {
		// The same question again, passed over (multiple retrieval
		// attempts): say a rough answer will do, and that it can be put
		// off. Not after a message that filed something, if not this: the
		// user answered.
		q = "Even a rough answer helps, or say if you would rather skip it for now: " + lowerFirst(q)
	}
	return joinParts(append(parts, q))
}

// question is the obligation's question as the reply asks it: in the
// user's own words where the technique wants an open question.
func (p ReplyPrompt) question() string {
	q := p.NextQuestion
	if q == "" {
		q = "Could you tell me about this: " + lowerFirst(strings.TrimSuffix(p.NextDescription, ".")) + "?"
	}
	if has(p.Techniques, "open_ended_questions") && startsClosed(q) {
		q = "In your own words: " + lowerFirst(q)
	}
	return q
}

// holdsBack reports whether the user holds back from the question: the
// message as a whole puts it off, hedges or pushes back on being asked
// (held, heldBack of the message), or passes over the question asked
// again, filing nothing. A yes does not, nor does an answer, whatever it
// answered: a message that filed a value answered something.
func (p ReplyPrompt) holdsBack(held bool) bool {
	if yes, ok := yesOrNo(p.Message); ok && yes == true {
		return false
	}
	if slices.ContainsFunc(p.Filed, func(f Filed) bool { return !none(f.Value) }) {
		return false
	}
	if held {
		return true
	}
	// The question asked again may come after the excuse of one passed
	// over, lowered.
	last := strings.ToLower(strings.TrimSpace(p.LastReply))
	return len(p.Filed) == 0 && p.NextID != "" && last != "" && strings.HasSuffix(last, strings.ToLower(p.question()))
}

// heldBack reports whether a message as a whole holds back: each of its
// clauses puts the question off, hedges or pushes back on being asked
// (holdingBack, pushingBack), or says nothing ("Honestly, I don't know.", "Skip that,
// sorry."). A clause that says anything else is an answer, and the words
// of a hold-back in it are part of it ("fancy marketing talk is a waste of
// time", "we'll open a second shop later"). Every reply reads its message
// so: the sentences are read one at a time and the words of a clause
// gathered on the stack.
func heldBack(msg string) bool {
	held, _, _ := holdBack(msg)
	return held
}

// holdBack reads a message for holding back: held when as a whole it does
// (heldBack); pushed when as a whole it pushes back on being asked: one of
// its clauses does ("That's annoying.", "You keep asking me that.") and
// each other clause puts the question off, pushes back or says nothing.
// A hedge that names what the user does not know ("I'm not sure how the
// fees compare") may be an answer: "Not sure how the fees compare. This is
// a waste of time." holds back, and is no pushback as a whole. names
// reports such a hedge.
func holdBack(msg string) (held, pushed, names bool) {
	var buf [24]string
	for text := msg; text != ""; {
		var s string
		s, text = engine.FirstSentence(text)
		for c := range strings.FieldsFuncSeq(strings.ToLower(s), func(r rune) bool { return r == ',' || r == ';' || r == ':' }) {
			words := clauseWords(c, buf[:0])
			if len(words) == 0 {
				continue
			}
			if pushingBack(words) {
				held, pushed = true, true
				continue
			}
			switch holds, named := holdingBack(words); {
			case holds:
				held = true
				names = names || named
			case !slices.ContainsFunc(words, func(w string) bool { return !holdWords[w] }):
				// "Honestly", "sorry", "well": nothing said.
			default:
				return false, false, false
			}
		}
	}
	return held, pushed && !names, names
}

// clauseWords appends the words of a clause, lowered, to words: letters,
// digits and apostrophes, a curly one made straight.
func clauseWords(clause string, words []string) []string {
	for w := range strings.FieldsFuncSeq(clause, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	}) {
		if strings.ContainsRune(w, '’') {
			w = strings.ReplaceAll(w, "’", "'")
		}
		words = append(words, w)
	}
	return words
}

// holdingBack reports whether the words of a clause, lowered, hold back:
// a decline or a hedge ("I'd rather not say", "not sure yet", "skip that
// one") made of holdWords alone, "rather not" or "prefer not" before a
// verb of saying ("I'd rather not share our numbers"), a "not sure" or
// "don't know" before what is not known ("I'm not sure what the budget
// is"), which names it; pushback is read before it (pushingBack).
func holdingBack(words []string) (held, names bool) {
	for _, phrases := range [][]string{declinePhrases, unsurePhrases, moreDeclines} {
		for _, p := range phrases {
			i := phraseAt(words, p)
			if i < 0 {
				continue
			}
			before, after := words[:i], words[i+strings.Count(p, " ")+1:]
			if slices.ContainsFunc(before, func(w string) bool { return !holdWords[w] }) {
				continue // "We'd rather not borrow", "we'll open a second shop later"
			}
			if !slices.ContainsFunc(after, func(w string) bool { return !holdWords[w] }) {
				return true, false
			}
			next := after[0]
			if next == "to" && len(after) > 1 {
				next = after[1]
			}
			if (p == "rather not" || p == "prefer not") && sayingVerbs[next] {
				return true, false
			}
			if slices.Contains(unsurePhrases, p) && unknownLeads[next] {
				return true, true
			}
		}
	}
	return false, false
}

// pushingBack reports whether the words of a clause, lowered, push back
// on the assistant or its questions ("you keep asking", "this is a waste
// of time", "these questions are annoying"): they hold back as well. "You
// keep asking" is aimed at the user alone: said of anyone else ("You keep
// asking customers to re-enter details") it tells how things are.
func pushingBack(words []string) bool {
	return slices.ContainsFunc(pushback, func(p string) bool {
		i := phraseAt(words, p)
		if i < 0 {
			return false
		}
		if p != "you keep asking" {
			return true
		}
		after := words[i+3:]
		return len(after) == 0 || askedOfUs[after[0]] || len(after) > 1 && after[0] == "the" && after[1] == "same" ||
			len(after) == 1 && (after[0] == "that" || after[0] == "this")
	}) || aimedAdjectives[words[len(words)-1]] && aimedPushbackRe.MatchString(" "+strings.Join(words, " ")+" ")
}

// phraseAt is the index of the first of words where phrase, words
// separated by single spaces, is said; -1 for none.
func phraseAt(words []string, phrase string) int {
	first, rest, _ := strings.Cut(phrase, " ")
	for i, w := range words {
		if w != first {
			continue
		}
		j := i + 1
		for p := range strings.SplitSeq(rest, " ") {
			if p == "" {
				break
			}
			if j >= len(words) || words[j] != p {
				j = -1
				break
			}
			j++
		}
		if j >= 0 {
			return i
		}
	}
	return -1
}

var (
	// pushback are the phrases of a user who objects to being asked,
	// whatever else the clause says.
	pushback = []string{"already told you", "already said", "stop asking", "you keep asking", "why do you keep",
		"asked me that", "asked that already", "same question"}
	// askedOfUs are who "you keep asking" is aimed at when it pushes back.
	askedOfUs = engine.WordSet("me us")
	// aimedPushbackRe finds pushback aimed at the assistant or its
	// questions: "this is a waste of time", "these questions are
	// annoying", "you're not helpful", "honestly it's a pain" (as "it's
	// frustrating": an "it" the clause names nothing else by is the
	// question); not "fancy marketing talk is a waste of time" nor "the
	// stock count is a pain", which say what the user thinks of something
	// else.
	aimedPushbackRe = regexp.MustCompile(`^ (?:[a-z']+ )?` +
		`(?:this|that|it|you|these questions|those questions|the questions|your questions|all this|all these questions|` +
		`this chat|this conversation)` +
		`(?:(?:'s|'re| is| are| was| feels| seems| gets)?` +
		`(?: (?:so|really|very|quite|a bit|kind of|such|just|totally|getting|pretty|becoming))* ` +
		`(?:a |an )?(?:complete |total |real |huge )?` +
		`(?:waste of (?:my |our )?time|pain|annoying|frustrating|not helpful|unhelpful|pointless|tedious|repetitive|useless)` +
		`|(?: isn't| aren't|'s not|'re not| is not| are not)(?: very| really| that)? helpful) $`)
	// aimedAdjectives end a clause aimedPushbackRe may find.
	aimedAdjectives = engine.WordSet("time pain annoying frustrating helpful unhelpful pointless tedious repetitive useless")
	// moreDeclines put the question off beside declinePhrases.
	moreDeclines = []string{"not now", "next time", "another time", "move on", "no comment", "pass"}
	// holdWords are the words a clause that holds back is made of beside
	// its decline or hedge: pronouns, modals, hedges, the question
	// referred to, and time put off.
	holdWords = engine.WordSet(`i i'd i'm i'll i've we we'd we're we'll we've you can could would should will let's let
		us me my rather not prefer to say answer share tell that this it that's it's one ones question questions part
		bit for now right yet just maybe perhaps later come back skip pass on tbd sure really honestly honest be tbh
		don't do does know no idea haven't have has decided decide clue about the moment at still thinking think
		please sorry if mind a am are is quite totally completely entirely okay ok hmm um well so oh ah actually
		too much all off go into get move next time another comment there`)
	// sayingVerbs are what a user would rather not do with an answer.
	sayingVerbs = engine.WordSet("say answer share tell disclose discuss reveal give go get talk comment put")
	// unknownLeads open what a user is not sure of or does not know
	// ("not sure what the budget is"), not a clause they are not sure
	// holds ("not sure we can afford a van").
	unknownLeads = engine.WordSet("what how which who whom whose where when why whether if about of")
)

// appendSome appends the parts that are not empty.
func appendSome(parts []string, more ...string) []string {
	for _, m := range more {
		if m != "" {
			parts = append(parts, m)
		}
	}
	return parts
}

// saidLately reports whether one of the assistant's last replies says s.
func (p ReplyPrompt) saidLately(s string) bool {
	return strings.Contains(p.LastReply, s) || slices.ContainsFunc(p.EarlierReplies, func(r string) bool {
		return strings.Contains(r, s)
	})
}

// acknowledgement says briefly what the user's message filed ("Noted, the
// project type: mobile app.", "Thanks, I've noted the budget and the
// timeline."), "" when it filed nothing. The words vary with what is said
// back, and are not those of the last replies where others are left.
func acknowledgement(p ReplyPrompt, names, lower wordList) string {
	// A yes or a no ("Scope confirmed: true") is a check the conversation
	// passed, which the reply's next question moves on from: not a thing
	// the user told.
	filed := slices.DeleteFunc(slices.Clone(p.Filed), func(f Filed) bool { return f.Value == "true" || f.Value == "false" })
	switch len(filed) {
	case 0:
		return ""
	case 1:
		if none(filed[0].Value) {
			// "We have no competitors": the field is settled, and naming it
			// would read as asking for it again.
			return pick(noneAcks, filed[0].Name, "", p)
		}
		if said, list, ok := sayable(filed[0].Value, p, names, lower); ok {
			name := lowerFirst(filed[0].Name)
			if list {
				return pick(listAcks, name, said, p)
			}
			return pick(valueAcks, name, said, p)
		}
	}
	if len(filed) > maxAckNames {
		return "Thanks, I've noted all of that."
	}
	fields := make([]string, len(filed))
	for i, f := range filed {
		fields[i] = "the " + lowerFirst(f.Name)
	}
	return pick(nameAcks, andList(fields), "", p)
}

// The acknowledgements of what a message filed: of a field's value said
// back, of items of a list said back (each with the field's name, which
// tells what the value is: "Noted, the eliminated options: a custom app."),
// and of the fields named.
var (
	valueAcks = []string{"Noted, the %[1]s: %[2]s.", "Thanks, I have the %[1]s down as %[2]s.", "Good to know, the %[1]s: %[2]s."}
	listAcks  = []string{"Thanks, added to the %[1]s: %[2]s.", "Noted, the %[1]s: %[2]s.", "I've put that with the %[1]s: %[2]s."}
	nameAcks  = []string{"Thanks, I've noted %[1]s.", "Good, that gives me %[1]s."}
	noneAcks  = []string{"Noted: none.", "Understood, none at all."}
)

// none reports whether a filed value says there is none: null, or an
// empty list.
func none(value string) bool {
	v := strings.TrimSpace(value)
	return v == "null" || v == "[]"
}

const (
	// maxAckWords is the most words an acknowledgement says back: past
	// them, it names the field.
	maxAckWords = 10
	// maxAckNames is the most fields an acknowledgement names.
	maxAckNames = 3
)

// pick fills one of templates with name and value, chosen by them, so that
// the same prompt gets the same words: the first from there whose words
// before the name the last replies did not say, or failing that the last
// reply.
func pick(templates []string, name, value string, p ReplyPrompt) string {
	h := fnv.New32a()
	h.Write([]byte(name + ": " + value))
	start := int(h.Sum32() % uint32(len(templates)))
	for _, fresh := range []func(string) bool{
		func(lead string) bool { return !p.saidLately(lead) },
		func(lead string) bool { return !strings.Contains(p.LastReply, lead) },
	} {
		for i := range templates {
			t := templates[(start+i)%len(templates)]
			if lead, _, _ := strings.Cut(t, "%"); fresh(lead) {
				return fill(t, name, value)
			}
		}
	}
	return fill(templates[start], name, value)
}

// fill is a template of pick's filled with name and value: a template of
// the fields named takes no value, and one of none neither.
func fill(template, name, value string) string {
	switch {
	case !strings.Contains(template, "%"):
		return template
	case value == "":
		return fmt.Sprintf(template, name)
	}
	return fmt.Sprintf(template, name, value)
}

// sayable is a filed value as an acknowledgement says it back, in the
// user's words turned around ("my three walkers" is "your three
// walkers"): a string, a number, or the items of a list the message names
// (the last one when it names none, as a list grows at its end); list
// tells the latter. ok is false for any other value, and for one too long
// to say in passing.
func sayable(raw string, p ReplyPrompt, names, lower wordList) (said string, list, ok bool) {
	var v any
	if json.Unmarshal([]byte(raw), &v) != nil {
		return "", false, false // clipped, or no JSON
	}
	var items []string
	switch v := v.(type) {
	case string:
		items = []string{v}
	case float64:
		items = []string{strconv.FormatFloat(v, 'f', -1, 64)}
	case []any:
		list = true
		msg := strings.ToLower(p.Message)
		for i, x := range v {
			s, isString := x.(string)
			if !isString {
				return "", false, false
			}
			if strings.Contains(msg, strings.ToLower(s)) || i == len(v)-1 && len(items) == 0 {
				items = append(items, s)
			}
		}
	}
	n := 0
	for i, it := range items {
		words := strings.Fields(strings.TrimRight(it, ".!,;: "))
		if len(words) == 0 || strings.ContainsRune(it, '?') {
			return "", false, false
		}
		n += len(words)
		turnAround(words)
		items[i] = strings.Join(words, " ")
		if !keepsCapital(words, p.Known, names, lower) || i > 0 && openedOnly(words, p.Known, names) {
			items[i] = lowerFirst(items[i])
		}
	}
	if len(items) == 0 || n > maxAckWords {
		return "", false, false
	}
	return andList(items), list, true
}

// openedOnly reports whether the capital of an item's first word, the
// item said after another of its list ("food hygiene and Allergen
// labels"), is only the capital that opened the user's sentence: the word
// is not written capitalised inside a sentence (names), nor a name of a
// known value, a date or a product, and a word in lowercase follows it
// ("Allergen labels", not "Whole Foods"). Said in the middle of a list it
// reads as a name it is not.
func openedOnly(words, known []string, names wordList) bool {
	if len(words) < 2 || !isLower(words[1]) {
		return false
	}
	first := strings.Trim(words[0], ",:;")
	if first == "" || strings.IndexFunc(first[1:], unicode.IsUpper) >= 0 {
		return false // "GoCardless"
	}
	lower := strings.ToLower(first)
	if names.has(first) || dated(lower) || products[lower] {
		return false
	}
	for _, k := range known {
		if _, value, _ := strings.Cut(k, ": "); knownName(value, first) {
			return false
		}
	}
	return true
}

// andList joins items as a sentence lists them: "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// saidList says items as a list is said: "a, b and c"; or, when an item
// has a comma, a conjunction or an aside of its own, "a; b, c; and d"
// ("a; b" for two), so that the reader sees where each ends.
func saidList(items []string) string {
	if !slices.ContainsFunc(items, listsOwn) {
		return andList(items)
	}
	if len(items) < 3 {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:len(items)-1], "; ") + "; and " + items[len(items)-1]
}

// listsOwn reports whether an item has a comma (but between digits:
// "15,000"), a semicolon, an "and", an "or" or a bracket of its own.
func listsOwn(item string) bool {
	for i := 0; i < len(item); i++ {
		switch item[i] {
		case ';', '(':
			return true
		case ',':
			if i == 0 || i+1 == len(item) || !isDigit(item[i-1]) || !isDigit(item[i+1]) {
				return true
			}
		}
	}
	return strings.Contains(item, " and ") || strings.Contains(item, " or ")
}

// signpost leads to the question in inform mode, where nothing else does.
const signpost = "Next, let's look at this."

// asksUs reports whether a message ends with a question for the assistant
// ("What would you do next?", "Which one would you pick?"), which the
// reply takes up: not an offer put as a question ("What about mugs on
// Etsy?"), which it files, nor a question about what the reply meant
// ("What do you mean by alternatives?"), which asking again answers.
func asksUs(msg string) bool {
	ss := engine.Sentences(msg)
	if len(ss) == 0 || !engine.IsQuestion(ss[len(ss)-1]) {
		return false
	}
	t := engine.LowerText(ss[len(ss)-1])
	for _, p := range notForUs {
		if t.Contains(p) {
			return false
		}
	}
	return true
}

// notForUs are the phrases of a question that offers something, or asks
// what the reply meant.
var notForUs = []string{"what about", "how about", "what if", "mean", "what kind of", "what sort of", "like what",
	"such as what", "what counts as", "what is a", "what's a", "which ones", "explain", "repeat", "rephrase"}

// opener is the technique-driven start of the reply: the first active
// technique's that has one; saysBack reports one that says what the user
// said (their words, or the summary of what is known). An opener one of the
// last replies said gives way to the next technique's, or to none: said at
// every turn, or every other, it reads as a script. held is whether the
// message holds back (heldBack).
func opener(p ReplyPrompt, names, lower wordList, held bool) (o string, saysBack bool) {
	echo, fragment := reflect(p.Message, p.Known, names, lower, held)
	for _, t := range p.Techniques {
		if o := techniqueOpener(t, p, echo, fragment, held); o != "" && !p.saidLately(o) {
			return o, echoing[t] || t == "summary_reflection"
		}
	}
	return "", false
}

// techniqueOpener is technique t's start of the reply ("" for none), echo
// the user's words as the reply may reflect them (a fragment when they make
// no clause), held whether the message holds back (heldBack).
func techniqueOpener(t string, p ReplyPrompt, echo string, fragment, held bool) string {
	if said, ok := labelled(echo); ok && echoing[t] {
		// "So what matters to you is that another idea: woodworking
		// classes in your garage" frames a label as a thought.
		return "So " + said + "."
	}
	switch t {
	case "summary_reflection":
		if len(p.Known) == 0 {
			return ""
		}
		return summary(p.Known)
	case "active_listening":
		// "It sounds like custom engraved boards for weddings" and "What
		// matters to you is that a meal prep service for busy parents"
		// make no sentence of a fragment, nor of a thing named the
		// message filed, which the acknowledgement says back.
		if echo != "" && !fragment && !p.namesWhatItFiled() {
			return "It sounds like " + echo + "."
		}
	case "reflective_listening":
		if echo != "" && !fragment && !p.namesWhatItFiled() {
			return "So what matters to you is that " + echo + "."
		}
	case "mirroring":
		if echo != "" {
			return "Got it: " + echo + "."
		}
	case "context_reinstatement":
		// A statement: the reply asks one question, the obligation's.
		return "Picture the last time this came up: where you were and who was involved."
	case "report_everything":
		return "Any detail helps, even one that seems small."
	case "change_perspective":
		// Only a product is used: a business or a problem to find ideas
		// for has people it affects, whom the question asks about.
		if strings.Contains(strings.ToLower(p.NextQuestion), "use it") {
			return "Picture it from the point of view of the people who will use it every day."
		}
		return "Picture it from the point of view of the people it affects every day."
	case "elicit_change_talk":
		return "Think about what will be different for you once this is solved."
	case "sketch_or_visualize":
		return "Walk me through it step by step, as if drawing the flow."
	case "chunking_with_checkin":
		return "Let's take this one step at a time."
	case "examples_and_analogies":
		// Any engine's, about anything: the skill knows no example that
		// holds for the user's case, so it asks them for one.
		return "An example can help: think of someone who faced something similar, in your field or another, and what they did."
	case "incremental_teach":
		return "Building on what we covered:"
	case "pros_cons_listing":
		return "Let's weigh the pros and cons side by side."
	case "social_proof":
		return "Teams in a similar situation often start small and grow from there."
	case "roll_with_resistance":
		// Said to a yes or an answer, it reads as if the user objected.
		if p.holdsBack(held) {
			return "That's fair, and we can come back to anything later."
		}
	}
	return ""
}

// namesWhatItFiled reports whether the message opens with a value it
// filed that names a thing, before any clause that follows it ("Our own
// savings, no loans.", the funding; "Par-baked bread, because the cafes
// finish it themselves.", the idea with the most impact): the sentence is
// no clause of the user's to reflect, and the acknowledgement says the
// value back as what it is.
func (p ReplyPrompt) namesWhatItFiled() bool {
	ss := engine.Sentences(p.Message)
	if len(ss) == 0 {
		return false
	}
	opens := strings.ToLower(cleanSentence(ss[0]))
	for _, f := range p.Filed {
		var v any
		if json.Unmarshal([]byte(f.Value), &v) != nil {
			continue
		}
		items, _ := v.([]any)
		if s, ok := v.(string); ok {
			items = []any{s}
		}
		for _, x := range items {
			item, ok := x.(string)
			if !ok || item == "" || !strings.HasPrefix(opens, strings.ToLower(strings.TrimRight(item, ".!?;:, "))) {
				continue
			}
			head, _, _ := strings.Cut(item, ",")
			words := strings.Fields(head)
			// "Our own savings" names a thing: the possessive is no
			// subject.
			for len(words) > 1 && (strings.EqualFold(words[0], "our") || strings.EqualFold(words[0], "my")) {
				words = words[1:]
			}
			// "Par-baked bread": a compound is no verb in the past.
			words = slices.DeleteFunc(words, func(w string) bool { return strings.Contains(w, "-") })
			if len(words) > 0 && thingNamed(words) {
				return true
			}
		}
	}
	return false
}

// echoing are the techniques whose opener says the user's words back.
var echoing = map[string]bool{"active_listening": true, "reflective_listening": true, "mirroring": true}

// labelled is an echo that opens with the label the user put before what
// they offer ("another idea: woodworking classes in your garage", "one
// idea is selling boards on Etsy"), said as a clause ("another idea is
// woodworking classes in your garage"); ok is false for any other echo.
func labelled(echo string) (said string, ok bool) {
	m := labelRe.FindStringSubmatch(echo)
	if m == nil {
		return "", false
	}
	return m[1] + " is " + m[2], true
}

var labelRe = regexp.MustCompile(`(?i)^((?:(?:one|another|your|an?|the|first|second|third|last|final|other)\s+){1,2}(?:idea|thought|option|suggestion))(?:\s*:\s*|\s+(?:is|would\s+be)\s+)(\S.*)$`)

// maxSummaryChars bounds the list summary_reflection reads back: the
// runner cuts a reply past 4,000 characters, and the question after the
// list must stay.
const maxSummaryChars = 3000

// summary lists what is known, all of it when it fits (it is what the user
// is asked to confirm), else as much as fits and how many items are left.
func summary(known []string) string {
	var b strings.Builder
	b.WriteString("Here is what I have so far:\n")
	for i, k := range known {
		if strings.HasSuffix(k, ": ") {
			continue // an empty value says nothing to confirm
		}
		line := "- " + k + "\n"
		if b.Len()+len(line) > maxSummaryChars {
			fmt.Fprintf(&b, "- and %d more\n", len(known)-i)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

var danglers = map[string]bool{"and": true, "or": true, "but": true, "so": true, "the": true, "a": true, "an": true,
	"to": true, "of": true, "with": true, "for": true, "in": true, "on": true, "that": true, "because": true, "which": true}

var pronouns = map[string]string{"i": "you", "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll",
	"me": "you", "my": "your", "mine": "yours", "we": "you", "we're": "you're", "we've": "you've", "we'd": "you'd",
	"we'll": "you'll", "us": "you", "our": "your", "ours": "yours", "am": "are", "myself": "yourself", "ourselves": "yourselves"}

// reflexives turn around the pronouns that follow a "you" in an echo.
var reflexives = map[string]string{"me": "yourself", "us": "yourselves"}

// minEchoWords is the fewest words an echo is made of.
const minEchoWords = 3

// reflect turns the first sentence of the user's message around: "We keep
// losing jobs." → "you keep losing jobs"; nothing for a question, a
// decline or a sentence too short to say something. A conjunction it
// opens with goes ("Or a meal prep service …", "Because our biggest
// client …", the answer to why), a remark on what the user said before
// ("As I told you, …"), and a hedge before a
// fragment ("Maybe a weekend stall …"); fragment reports one, a thing
// named without a verb, which "So what matters to you is that" does not
// take. Words no frame takes echo nothing: a sentence without its subject
// ("Lost a big client last month"), a preposition's phrase, an
// instruction, an aside, a take-back. known are the session's facts, names
// the words the user wrote capitalised inside a sentence, in the history
// or the message, whose capital stays, and lower those they wrote in
// lowercase (ReplyPrompt.words, keepsCapital); held is whether msg holds
// back (heldBack), read once by the reply.
func reflect(msg string, known []string, names, lower wordList, held bool) (echo string, fragment bool) {
	ss := engine.Sentences(msg)
	if len(ss) == 0 || engine.IsQuestion(ss[0]) || Declines(msg) || held {
		// "It sounds like what do you mean by that.", "It sounds like
		// you'd rather skip that one." and "It sounds like this is a waste
		// of time." echo nothing the user said about the matter.
		return "", false
	}
	if takesBackLast(msg) {
		return "", false // "It sounds like scratch that."
	}
	if closingRemark(msg) {
		return "", false // "So what matters to you is that you think that covers it."
	}
	words := strings.Fields(cleanSentence(ss[0]))
	for _, filler := range []string{"well", "so", "oh", "actually", "yes", "yeah", "no,", "ok", "okay", "hi", "hello", "and",
		"or", "but", "also", "plus", "because"} {
		if len(words) > 0 && (strings.EqualFold(strings.Trim(words[0], ",!"), filler) || strings.EqualFold(words[0], filler)) &&
			(filler != "because" || len(words) > 1 && !strings.EqualFold(words[1], "of")) {
			// Not the because of "Because of the rain, …", which says
			// why, nor the no of "No problem at all"; the no of "No, we
			// do it by hand" answers the question, which the reply does
			// not repeat.
			words = words[1:]
		}
	}
	for i, w := range words[:max(len(words)-1, 0)] {
		if strings.HasSuffix(w, ",") {
			// "As I told you, …" is the user's, not said back: "As you told
			// you"; "I was late twice, and …" says what happened.
			if lead := strings.ToLower(words[0]); (lead == "as" || lead == "like") &&
				remark(strings.TrimSuffix(strings.Join(words[:i+1], " "), ",")) {
				words = words[i+1:]
			}
			break
		}
	}
	if len(words) > 1 && hedgeWords[strings.ToLower(words[0])] && articles[strings.ToLower(words[1])] {
		words = words[1:]
	}
	if len(words) < minEchoWords {
		return "", false // "So what matters to you is that that's right."
	}
	first := strings.ToLower(strings.Trim(strings.ReplaceAll(words[0], "’", "'"), ",:;"))
	// An instruction ("Drop the indoor studio, …") is no clause of the
	// user's either: "Got it: …" takes it, "It sounds like" does not.
	fragment = thingNamed(words) || instruction(words, names) || lackNamed(words)
	if fragment && (bareVerb(first) || prepositions[first]) || first == "don't" || first == "please" || adding(words) {
		// "Lost a big client last month" leaves out who did it, "On
		// paper, mostly" names no thing, "Don't forget Shopify" tells
		// the assistant what to do, and "Shopify too, …" adds to what was
		// said before: none is what "It sounds like" takes.
		return "", false
	}
	if len(words) > maxEchoWords {
		if words = clauseCut(words); words == nil {
			return "", false // nothing ends where it could be cut
		}
	}
	turnAround(words)
	echo = strings.Join(words, " ")
	if keepsCapital(words, known, names, lower) {
		return echo, fragment
	}
	return lowerFirst(echo), fragment
}

var articles = map[string]bool{"a": true, "an": true}

// instruction reports whether a sentence opens with a verb before its
// object, its subject left out ("Drop the indoor studio, it costs too
// much", "Open a second shop"): what the user would have done, which
// "So what matters to you is that" makes no sentence of. A name before a
// determiner is none ("Greggs the bakery"), nor an adverb ("Yesterday the
// van broke down").
func instruction(words []string, names wordList) bool {
	if len(words) < 2 || strings.TrimRight(words[0], ",:;") != words[0] || names.has(words[0]) {
		return false
	}
	first := strings.ToLower(strings.ReplaceAll(words[0], "’", "'"))
	if _, pronoun := pronouns[first]; pronoun || openers[first] || prepositions[first] || calendar[first] ||
		beforeDeterminers[first] || strings.HasSuffix(first, "ly") {
		return false
	}
	return objectLeads[strings.ToLower(words[1])] && !appositive(words)
}

// beforeDeterminers are words that come before a determiner and are no
// verb: of quantity, of degree and of time.
var beforeDeterminers = engine.WordSet(`half twice once even nearly almost quite such rather exactly especially including
	yesterday tomorrow tonight now later earlier already again still ever never always`)

// maxEchoWords is the most words an echo says back.
const maxEchoWords = 18

// clauseCut is the words of a sentence too long to echo, cut after the
// last clause or item of a list that ends within maxEchoWords: before a
// conjunction that starts one (clauseStart) or after a comma or a
// semicolon ("you bake from 4am, open the shop at 7, deliver to cafes
// twice a week", not "… twice a week and do"), where what is kept is
// complete (completes). It is nil when none ends past minEchoWords: cut
// anywhere else, the echo stops in the middle of a phrase.
func clauseCut(words []string) []string {
	clause := !thingNamed(words)
	for i := maxEchoWords; i > minEchoWords; i-- {
		last := words[i-1]
		if !strings.HasSuffix(last, ",") && !strings.HasSuffix(last, ";") && !clauseStart(words, i) {
			continue
		}
		cut := slices.Clone(words[:i])
		cut[i-1] = strings.TrimRight(last, ",;")
		if completes(cut, clause) {
			return cut
		}
	}
	return nil
}

// clauseStart reports whether words[i] starts a clause or the next item of
// a list: a word of clauseStarts, but "so" before what it intensifies ("so
// many orders", "so busy"), and "and" or "or" between numbers ("two or
// three hundred"), before the "I" or "me" of a pair ("Tom and I started",
// "my wife and me"), or after the "both" or "either" of a pair.
func clauseStart(words []string, i int) bool {
	next := strings.ToLower(words[i])
	if !clauseStarts[next] {
		return false
	}
	after := ""
	if i+1 < len(words) {
		after = strings.ToLower(strings.Trim(strings.ReplaceAll(words[i+1], "’", "'"), ",;:."))
	}
	before := strings.ToLower(strings.Trim(words[i-1], ",;:"))
	switch next {
	case "so":
		_, pronoun := pronouns[after]
		return pronoun || soClauseLeads[after]
	case "and", "or":
		if number(before) && number(after) || after == "me" || after == "myself" {
			return false
		}
		if after == "i" && (!slices.ContainsFunc(words[:i], verbShown) || i+2 >= len(words) || words[i+1] != strings.TrimRight(words[i+1], ",;:.")) {
			// "My business partner Tom and I started" is the subject of
			// both; after a clause, "and I still have to pay" is one.
			return false
		}
		for _, w := range words[max(i-4, 0):i] {
			if w := strings.ToLower(w); w == "both" || w == "either" {
				return false
			}
		}
	}
	return true
}

// verbShown reports whether a word shows a clause's verb (clauseWord), as
// a possessive does not ("My business partner Tom and I").
func verbShown(w string) bool {
	return clauseWord(w) && !possessives[strings.ToLower(strings.Trim(w, ",;:"))]
}

// soClauseLeads open the clause a "so" starts beside a pronoun ("so the
// cafes wait", "so that", "so now"): a "so" before anything else may
// intensify it.
var soClauseLeads = engine.WordSet(`they he she it there that the a an this these those some most people customers now then
	if when`)

// number reports whether a lowered word is a number, in figures or in
// words ("2", "two", "hundred").
func number(w string) bool {
	return isNumber(w) || w == "hundred" || w == "thousand" || w == "million" || w == "dozen" || w == "few" || w == "couple"
}

// completes reports whether the words kept of a sentence cut short make a
// complete clause or phrase: they end on no conjunction, preposition,
// determiner or intensifier, no auxiliary or verb that wants its object
// ("you get", "you sell", "is"), and no "between" without its "and"; and
// the words of a clause keep a verb ("your business partner Tom" is the
// subject of "…and I started the bakery").
func completes(cut []string, clause bool) bool {
	last := strings.ToLower(strings.Trim(strings.ReplaceAll(cut[len(cut)-1], "’", "'"), ",;:"))
	if danglers[last] || prepositions[last] || objectLeads[last] || cutIntensifiers[last] || auxiliaries[last] ||
		objectVerbs[last] {
		return false
	}
	if len(cut) > 1 {
		// "every weekend we do": a verb right after its subject wants its
		// object, but one that takes none ("before they come").
		if before := strings.ToLower(strings.ReplaceAll(cut[len(cut)-2], "’", "'")); subjects[before] && !intransitives[last] {
			return false
		}
	}
	if i := slices.IndexFunc(cut, func(w string) bool { return strings.EqualFold(w, "between") }); i >= 0 &&
		!slices.ContainsFunc(cut[i:], func(w string) bool { return strings.EqualFold(w, "and") }) {
		return false
	}
	return !clause || !thingNamed(cut)
}

var (
	// cutIntensifiers come before what they intensify.
	cutIntensifiers = engine.WordSet("very really so such quite too more most less least")
	// auxiliaries come before a verb or a complement.
	auxiliaries = engine.WordSet(`is are was were be been being am has have had do does did can could will would should
		must may might shall i'm we're they're it's that's there's we've i've they've we'd i'd we'll i'll`)
	// objectVerbs want an object after them.
	objectVerbs = engine.WordSet(`get got make made sell sold take took need needs want wants use uses buy bought give gave
		keep kept send sent bring brought put find found hire hired pay paid offer serve serves`)
	// intransitives are verbs that take no object, which a clause may end
	// on after its subject ("before they come", "when we open").
	intransitives = engine.WordSet(`come comes came go goes went arrive arrives arrived leave leaves left open opens opened
		close closes closed start starts started finish finishes finished cancel cancels cancelled canceled work works
		worked wait waits waited stay stays stayed happen happens happened travel travels travelled traveled return
		returns returned retire retires retired sleep sleeps slept live lives lived die dies died complain complains
		complained agree agrees agreed disagree disagrees disagreed succeed succeeds succeeded fail fails failed`)
	// subjects are the pronouns a verb follows as its subject.
	subjects = engine.WordSet("i we you they he she it who that which")
)

// clauseStarts are the words a clause or the next item of a list starts
// with, before which an echo may stop (clauseStart).
var clauseStarts = engine.WordSet("and or but so because while whereas although though then which who where when")

// turnAround puts the user's words as the reply says them back: "we" is
// "you", "my" is "your", and a "me" after a "you" is "yourself".
func turnAround(words []string) {
	for i, w := range words {
		core := strings.Trim(w, ",:;")
		lower := strings.ToLower(strings.ReplaceAll(core, "’", "'"))
		r, ok := pronouns[lower]
		if !ok {
			continue
		}
		if self, ok := reflexives[lower]; ok && i > 0 && strings.EqualFold(strings.Trim(words[i-1], ",:;"), "you") {
			r = self // "6 of us, me, two bakers": "6 of you, yourself, …", not "you, you"
		}
		words[i] = strings.Replace(w, core, r, 1)
	}
}

// thingNamed reports whether the words of an echo name a thing, without a
// verb ("custom engraved boards for weddings", "fewer missed jobs"), not a
// clause: a word of clauseWord's, but a past participle inside a name
// ("engraved", before a word of the name), and a verb in the present after
// its subject ("QuickBooks takes an hour", "The van breaks down").
func thingNamed(words []string) bool {
	for i, w := range words {
		lower := strings.ToLower(strings.Trim(strings.ReplaceAll(w, "’", "'"), ",:;"))
		next := ""
		if i+1 < len(words) && !strings.HasSuffix(w, ",") {
			next = strings.ToLower(strings.Trim(words[i+1], ",:;"))
		}
		switch {
		case i > 0 && next != "" && !verbFollowers[next] && !danglers[next] && participle(lower):
			// "custom engraved boards", not "revenue dropped last year"
		case clauseWord(w):
			return false
		case i > 0 && next != "" && presentVerb(lower) && (verbFollowers[next] || strings.HasSuffix(next, "ing")):
			return false
		}
	}
	return true
}

// lackNamed reports whether a sentence opens with a "not" or a "never"
// and a gerund ("Not being able to pay online", "Never knowing who
// cancelled"): it names a lack, a thing, and makes no clause.
func lackNamed(words []string) bool {
	if len(words) < 2 {
		return false
	}
	first, second := strings.ToLower(words[0]), strings.ToLower(strings.Trim(words[1], ",:;"))
	return (first == "not" || first == "never") && len(second) > 4 && strings.HasSuffix(second, "ing")
}

// participle reports whether a word is a regular past ("dropped",
// "engraved"), a verb or a participle.
func participle(w string) bool {
	return len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed")
}

// presentVerb reports whether a word may be a verb in the third person
// ("takes", "keeps"), as a plural noun may be ("boards"): what follows it
// tells them apart.
func presentVerb(w string) bool {
	return len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") &&
		!strings.HasSuffix(w, "is") && !strings.HasSuffix(w, "'s")
}

// verbFollowers follow a verb, not a noun of a name: a determiner, a
// particle, a pronoun or an adverb ("takes an hour", "breaks down",
// "costs us", "dropped last year").
var verbFollowers = engine.WordSet(`a an the my our your their his her its this that these those up down out off
	away back over every all some any it me us them him her too so very more less much last again when while
	because since until after before once`)

// adding reports whether the first clause of an echo is a thing named
// and said to add to others ("Shopify too, we sell kits online").
func adding(words []string) bool {
	for i, w := range words {
		if !strings.HasSuffix(w, ",") && i < len(words)-1 {
			continue
		}
		clause := words[:i+1]
		last := strings.ToLower(strings.TrimRight(w, ",;:"))
		return !slices.ContainsFunc(clause, clauseWord) && (last == "too" || last == "also" ||
			last == "well" && i > 0 && strings.EqualFold(clause[i-1], "as"))
	}
	return false
}

// bareVerb reports whether a sentence's first word is a verb in the past,
// its subject left out ("Lost a big client last month", "Hired two
// techs").
func bareVerb(w string) bool {
	return pastVerbs[w] || len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed")
}

var (
	pastVerbs = engine.WordSet(`lost had got went left took made sent kept bought sold ran came gave told said found
		broke paid spent built began fell grew hit`)
	prepositions = engine.WordSet(`on in at by within with without from for about under over before after around
		through into during until via`)
)

// clauseWord reports whether a word shows a clause, not a thing named: a
// pronoun, a form of be, have or do, a modal, a negation or a past
// ("A big client left us", "A friend said it's worth it").
func clauseWord(w string) bool {
	w = strings.ToLower(strings.Trim(strings.ReplaceAll(w, "’", "'"), ",:;"))
	_, pronoun := pronouns[w]
	return pronoun || verbWords[w] || strings.HasSuffix(w, "n't") ||
		(len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"))
}

var verbWords = engine.WordSet(`is are was were be been being am has have had do does did can could will would
		should must may might shall you they he she it them him her said told made went came got took gave left
		sent kept thought bought sold ran`)

// keepsCapital reports whether an echo's first word keeps its capital in
// the middle of a reply: a name, as far as it shows one. A word with a
// capital inside (QuickBooks, ACME), a day or a month, one listed with a
// capitalised word ("Greggs and Pret", "Greggs, Pret and Costa"), one the
// session's known facts hold capitalised or the user wrote capitalised
// inside a sentence (names), a product's name (Excel), and a word that is
// no common one (Tradify); a common word is lowered ("Customers keep
// calling" → "customers keep calling", "Rent went up", "Invoicing takes").
// A word that only opens sentences ("The", "Honestly, Excel …"), a
// preposition, a verb before its object ("Drop the …") and a word the user
// wrote in lowercase (lowered: "booking dog walks", then "Dog owners …")
// are lowered whatever follows them or a known fact opens with.
func keepsCapital(words, known []string, names, lowered wordList) bool {
	first := strings.Trim(words[0], ",:;")
	if strings.IndexFunc(first[min(1, len(first)):], unicode.IsUpper) >= 0 {
		return true
	}
	lower := strings.ToLower(strings.ReplaceAll(first, "’", "'"))
	if openers[lower] || prepositions[lower] || lower == "per" {
		return false
	}
	if dated(lower) {
		return true // "Christmas", "Mondays"
	}
	next := ""
	if len(words) > 1 && strings.TrimRight(words[0], ",:;") == words[0] {
		next = strings.ToLower(words[1])
	}
	if names.has(first) || introduced(words) {
		return true
	}
	if next != "" && nameGoesOn(words) {
		return true // "Whole Foods", "Open Table"
	}
	if objectLeads[next] && !appositive(words) {
		// "Drop the indoor studio", "Open a second shop": a verb before
		// its object, which a name is not; "Dave our manager does the
		// rota" names who does it.
		return false
	}
	if len(words) > 2 && (strings.HasSuffix(words[0], ",") || words[1] == "and" || words[1] == "or") {
		next, after := words[1], words[2]
		if !strings.HasSuffix(words[0], ",") {
			next, after = words[2], ""
		}
		// "Greggs, Pret and Costa" lists names; "Honestly, Excel is" does not.
		listed := after == "" || strings.HasSuffix(next, ",") || after == "and" || after == "or"
		if r, _ := utf8.DecodeRuneInString(next); unicode.IsUpper(r) && listed {
			return true
		}
	}
	for _, k := range known {
		// A known value holds the word as a name where a name is there
		// (knownName); one only starting with it, or an item of it,
		// capitalises it as its first word (this very message, filed as it
		// was said), which says nothing.
		_, value, _ := strings.Cut(k, ": ")
		if knownName(value, first) {
			return true
		}
	}
	if lowered.has(lower) {
		return false // "booking dog walks", then "Dog owners …"
	}
	// "Word of mouth" is no product's name.
	return products[lower] && next != "of" || !common(lower)
}

// introduced reports whether a sentence opens with a name said to be
// someone's or something's role ("Bill is our accountant", "Square is
// our card reader"): "is" or "was", a possessive, and a role within two
// words of it, which "Time is our biggest problem" has none of.
func introduced(words []string) bool {
	if len(words) < 4 || (words[1] != "is" && words[1] != "was") || !possessives[strings.ToLower(words[2])] {
		return false
	}
	for _, w := range words[3:min(len(words), 5)] {
		if roles[strings.ToLower(strings.Trim(w, ",;:."))] {
			return true
		}
	}
	return false
}

// roles are the people and tools a name is introduced as.
var roles = engine.WordSet(`accountant bookkeeper manager partner owner landlord supplier baker chef cook driver assistant
	apprentice designer developer trainer cleaner wife husband son daughter brother sister mum dad mother father friend
	boss lawyer solicitor agent rep supervisor neighbour neighbor investor mentor coach vet bank till reader provider
	processor app platform software system tool`)

// nameGoesOn reports whether the capitalised word that opens a sentence
// goes on in a capitalised word, as a name of two words does ("Whole
// Foods stocks our bread", "Open Table takes the bookings"): not a
// product's or a day's name after a word that leads to it ("Drop
// Shopify", "Last Christmas", "Like Greggs, we …", "Ask Dave").
func nameGoesOn(words []string) bool {
	second := strings.TrimFunc(strings.ReplaceAll(words[1], "’", "'"), wordPunct)
	r, _ := utf8.DecodeRuneInString(second)
	if !unicode.IsUpper(r) || second == "I" || strings.HasPrefix(second, "I'") {
		return false
	}
	first, next := strings.ToLower(words[0]), strings.ToLower(second)
	return !products[next] && !dated(next) && !beforeNames[first] &&
		!beforeDeterminers[first] && !bareVerb(first) && !strings.HasSuffix(first, "ing") && !strings.HasSuffix(first, "ly")
}

// beforeNames are words that open a sentence before a name without being
// part of it: a preposition, a greeting or thanks, a verb of dealing with
// someone or something.
var beforeNames = engine.WordSet(`like unlike except plus including thanks thank hi hey hello dear cheers sorry ask call
	tell email text message phone pay hire meet see visit try use drop add ditch replace switch keep get lose last next`)

// appositive reports whether a sentence opens with a name and who it is
// ("Dave our manager does the rota", "Sarah my partner runs the books"):
// a word that is no common one before a possessive, then a verb after the
// noun it is, which "Ask our manager to …" has none of.
func appositive(words []string) bool {
	if len(words) < 4 || !possessives[strings.ToLower(words[1])] {
		return false
	}
	first := strings.ToLower(strings.ReplaceAll(words[0], "’", "'"))
	if common(first) || products[first] {
		return false
	}
	for i := 2; i < min(len(words), 5); i++ {
		w := strings.ToLower(strings.Trim(strings.ReplaceAll(words[i], "’", "'"), ",:;"))
		// The noun may be a plural ("Jo our owners' rep"): a present verb
		// comes after it.
		if auxiliaries[w] || pastVerbs[w] || participle(w) || i > 2 && presentVerb(w) {
			return true
		}
	}
	return false
}

// objectLeads come before a noun: after a word that opens a sentence, they
// show it a verb ("Drop the …", "Open a …", "Test the …").
var objectLeads = engine.WordSet("a an the my our your their his its this these those some every each")

// knownName reports whether a known value holds word as a name: inside an
// item of its list, opening a later item that is a name as a whole ("Xero
// and Google Calendar"), or opening a value of a few words that is one
// ("Xero"). An item of other words that opens with it ("…, Storage needs
// racks", "Right now we use paper") says nothing: the user opened a
// sentence with it.
func knownName(value, word string) bool {
	letters := func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
	tokens := strings.Fields(value)
	itemStart := true
	for i, tok := range tokens {
		starts := itemStart
		itemStart = strings.HasSuffix(tok, ",") || strings.HasSuffix(tok, ";")
		if tok == "and" || tok == "or" {
			itemStart = true
			continue
		}
		if strings.TrimFunc(tok, letters) != word {
			continue
		}
		if !starts {
			return true
		}
		if i == 0 {
			// The value's first word is a name only in a value of a few
			// words that is one: a longer one may be this very message,
			// filed as it was said ("Bread, pastries and custom cakes").
			ws := strings.FieldsFunc(value, letters)
			if len(ws) <= 3 && properName(value) {
				return true
			}
			continue
		}
		var item []string
		for _, t := range tokens[i:] {
			if t == "and" || t == "or" {
				break
			}
			item = append(item, strings.TrimRight(t, ",;"))
			if strings.HasSuffix(t, ",") || strings.HasSuffix(t, ";") {
				break
			}
		}
		if properName(strings.Join(item, " ")) {
			return true
		}
	}
	return false
}

// lowercase are the words of a text written in lowercase, as keepsCapital
// compares them.
func lowercase(text string) []string { return appendLowercase(nil, text) }

// wordList is lists of words read as one, without copying them into one:
// the words of the whole history, those of the message, which a reply
// reads several times, and those of a handoff. An array, it is passed
// without being allocated.
type wordList [3][]string

// has reports whether one of the lists holds w.
func (l *wordList) has(w string) bool {
	return slices.ContainsFunc(l[:], func(ws []string) bool { return slices.Contains(ws, w) })
}

// words are the words of the user that tell a name's capital
// (keepsCapital): those the history and the message write capitalised
// inside a sentence, and those they write in lowercase. A reply gathers
// the message's once.
func (p ReplyPrompt) words() (names, lower wordList) {
	return wordList{p.Names, capitalised(p.Message)}, wordList{p.Lowercase, lowercase(p.Message)}
}

// appendLowercase appends the words of text written in lowercase to dst
// (lowercase): a reply's prompt reads them from every message of the
// history, into one slice.
func appendLowercase(dst []string, text string) []string {
	for w := range strings.FieldsSeq(text) {
		w = strings.TrimFunc(strings.ReplaceAll(w, "’", "'"), wordPunct)
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsLower(r) && isLower(w) {
			dst = append(dst, w)
		}
	}
	return dst
}

// isLower reports whether strings.ToLower(w) == w, without lowering it.
func isLower(w string) bool {
	return utf8.ValidString(w) && !strings.ContainsFunc(w, func(r rune) bool { return unicode.ToLower(r) != r })
}

// capitalised are the capitalised words of a text that stand inside a
// sentence ("We moved to Square last year" has Square), but "I" and its
// contractions.
func capitalised(text string) []string {
	var out []string
	for text != "" {
		// The sentences of engine.Sentences, read one at a time.
		var s string
		s, text = engine.FirstSentence(text)
		first := true
		for w := range strings.FieldsSeq(s) {
			if first {
				first = false
				continue
			}
			w = strings.TrimFunc(w, func(r rune) bool { return r == '’' || wordPunct(r) })
			if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) && !strings.HasPrefix(w, "I'") && !strings.HasPrefix(w, "I’") && w != "I" {
				out = append(out, w)
			}
		}
	}
	return out
}

// wordPunct reports whether r is punctuation the reply's readers trim off
// a word: ,:;.!?"'().
func wordPunct(r rune) bool {
	switch r {
	case ',', ':', ';', '.', '!', '?', '"', '\'', '(', ')':
		return true
	}
	return false
}

// common reports whether a lowered word is a common English word, not a
// name: one of commonWords, one with an ending common words have
// ("deadlines", "invoicing", "paperwork", "delivery"), or a long one that
// is a single token of the tokenizer's vocabulary, space first
// ("revenue", "website"), unless people write it capitalised far more
// often (vocabName: "london", "christmas", "michael"). A short token may
// be a piece of anything, and names are among them ("bob", "pret",
// "costa", "hull"); words of vocabLetters letters or more that are tokens
// are nearly all words (of 156 nouns of small business and 111 names of
// places, people and shops, the vocabulary alone lowered 8 more nouns and
// 3 more names than the rest, and Microsoft and Spotify are products; the
// ranks then tell London, Christmas, Michael, French and Canada from
// "system", "street" and "council", though not Berlin or Madrid).
func common(w string) bool {
	if commonWords[w] {
		return true
	}
	for _, end := range commonEndings {
		if strings.HasSuffix(w, end) && len(w) > len(end)+1 {
			return true
		}
	}
	tok := vocabulary()
	if tok == nil || utf8.RuneCountInString(w) < vocabLetters {
		return false
	}
	rank, ok := tok.Rank(" " + w)
	if !ok {
		return false
	}
	r, n := utf8.DecodeRuneInString(w)
	capital, ok := tok.Rank(" " + string(unicode.ToUpper(r)) + w[n:])
	return !ok || capital*vocabName > rank
}

// vocabName is how many times lower the rank of a word's capitalised token
// is than its lowercase one's where common takes it for a name: " London"
// is 7295 and " london" 63146, " Christmas" 10280 and " christmas"
// 54302; but " System" is 744 and " system" 1887, " Street" 6825 and
// " street" 8761: words that open sentences and titles.
const vocabName = 3

// vocabLetters is the fewest letters of a word that common finds in the
// tokenizer's vocabulary.
const vocabLetters = 6

// vocabulary is the tokenizer common reads, nil if it cannot be loaded.
var vocabulary = sync.OnceValue(func() *tokenizer.Tokenizer {
	tok, err := tokenizer.New(tokenizer.Default)
	if err != nil {
		return nil
	}
	return tok
})

var commonEndings = []string{"s", "ing", "ed", "er", "ly", "tion", "sion", "ment", "ness", "ity", "ance", "ence", "ship",
	"work", "ware", "al", "ure", "age", "ful", "less", "ous", "ive", "ry", "ty", "cy", "ey", "th"}

// commonWords are common words that open the sentences of users talking
// about their work and have no common ending: pronouns, verbs, nouns and
// adjectives.
var commonWords = engine.WordSet(`i i'm i've i'd i'll me us them one two three four five six seven eight nine ten
		half none any other another same such each most many much more less few everyone everybody everything
		nobody nothing anything something someone somebody anyone money cash time rent staff stock food bread cake
		coffee tea price cost tax pay job team boss client growth profit margin budget deadline plan idea app phone
		email web site paper book list van car bus truck shop store office home stuff lunch dinner breakfast rain
		snow weather traffic fuel square word sheet note form chat call text post card box bill fee loan debt
		risk need want have get got make made use do did keep go went come came take took try think know see
		look find feel give say said tell check send buy sell run start stop help lose lost miss wait hope love
		hate like prefer mean guess suppose reckon agree can could will would should must may might shall don't
		doesn't didn't can't won't isn't aren't wasn't never always nearly almost quite very too even again once
		twice first second last next finally overall anyway instead otherwise though although however meanwhile
		yesterday tomorrow tonight now soon later week month year day night morning evening weekend spring autumn
		good bad great big small new old hard easy fast slow late early cheap busy quiet simple tough right wrong
		fine sure true yes no ok okay please thanks thank sorry hi hello hey well yeah nope yep oh ah hmm um uh
		let let's sometimes people payroll admin footfall cashflow wifi signal waste demand space size scale speed
		trust brand design content product service support access feedback labour labor overhead kit gear till
		oven kitchen menu order patient student parent child kid pet health safe fire hygiene law
		fresh open drop buy add hire test ask fix cut grow move bake build clean quick extra full whole`)

// products are names of software and services users name, which are also
// common words or look like them (Excel, Word, Jobber).
var products = engine.WordSet(`excel word outlook teams sheets docs drive gmail google slack trello jira asana
		notion xero sage shopify stripe paypal zoom salesforce dropbox airtable zapier wordpress squarespace wix
		woocommerce mailchimp canva instagram facebook tiktok linkedin whatsapp twitter youtube amazon ebay etsy
		deliveroo uber jobber tradify calendly hubspot zendesk freshdesk clickup basecamp smartsheet docusign
		netsuite sap oracle windows android iphone ipad mac linux aws azure greggs microsoft spotify`)

// openers are words that take a capital only because they open a sentence:
// articles, determiners and the adverbs and conjunctions users start with.
var openers = engine.WordSet(`the a an this that these those there there's here it it's its they they're
		their he she his her my your you you're we some all both each every no not maybe perhaps probably just
		only mostly mainly really honestly basically actually also still usually often sometimes currently then
		today lately recently when if because since so but and or for in on at to of with from by about after
		before what which who how why where`)

// calendar are the days and months, names English always writes capitalised.
var calendar = engine.WordSet(`monday tuesday wednesday thursday friday saturday sunday january february
		march april may june july august september october november december`)

// holidays are the holidays English always writes capitalised, as it does
// calendar's days and months (the extraction's readers of a time take
// calendar alone).
var holidays = engine.WordSet("christmas easter halloween thanksgiving diwali hanukkah ramadan eid")

// dated reports whether a lowered word is a day, a month or a holiday
// ("Mondays", "Christmas").
func dated(w string) bool {
	return calendar[w] || holidays[w] || calendar[strings.TrimSuffix(w, "s")]
}

// joinParts joins reply parts with spaces, or a new line after a list.
func joinParts(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 && !strings.HasSuffix(parts[i-1], "\n") {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// plainValue renders an extracted JSON value for people: strings without
// quotes, lists as "a, b and c", a yes or a no in words, and null, which
// the extraction files for a field the user said there is none of
// ("Nothing is connected."), as none.
func plainValue(raw string) string {
	if s, ok := plainString(raw); ok {
		return s
	}
	if items, ok := plainStrings(raw); ok {
		if len(items) == 0 {
			return "none"
		}
		return andList(items)
	}
	if raw == "" || !strings.ContainsRune("\"[ntf \t\r\n", rune(raw[0])) {
		// Neither a string nor an array nor null nor a boolean: shown as
		// it is.
		return raw
	}
	return decodedValue(raw)
}

// decodedValue is plainValue without its shortcuts: the JSON decoded.
func decodedValue(raw string) string {
	switch strings.TrimSpace(raw) {
	case "null":
		return "none"
	case "true":
		return "yes"
	case "false":
		return "no"
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) == nil {
		return s
	}
	var xs []any
	if json.Unmarshal([]byte(raw), &xs) == nil {
		items := make([]string, len(xs))
		for i, x := range xs {
			items[i] = fmt.Sprint(x)
		}
		if len(items) == 0 {
			return "none"
		}
		return andList(items)
	}
	if said, ok := clipped(raw); ok {
		return said
	}
	return raw
}

// clipped is a JSON string, or a list of strings, that the context cut
// short (contextasm clips a value past 400 characters, and adds "…"), said
// as decodedValue says a whole one: without its quotes and escapes, the
// items joined with commas, ending with "…"; ok is false for any other
// text.
func clipped(raw string) (said string, ok bool) {
	body, cut := strings.CutSuffix(raw, "…")
	if !cut || body == "" {
		return "", false
	}
	if body[0] == '"' {
		s, ok := clippedString(body)
		return s + "…", ok
	}
	if body[0] != '[' {
		return "", false
	}
	d := json.NewDecoder(strings.NewReader(body))
	if _, err := d.Token(); err != nil {
		return "", false
	}
	var items []string
	for {
		at := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			// The item the clip cut, if it is a string.
			rest := strings.TrimLeft(body[at:], " \t\r\n,")
			if rest != "" {
				s, ok := clippedString(rest)
				if !ok {
					return "", false
				}
				items = append(items, s)
			}
			break
		}
		s, isString := tok.(string)
		if !isString {
			return "", false
		}
		items = append(items, s)
	}
	return strings.Join(items, ", ") + "…", true
}

// clippedString decodes a JSON string cut short (`"Right now clients
// text me \"when`), without an escape the cut left unfinished; ok is
// false for text that is none.
func clippedString(body string) (string, bool) {
	// A cut escape is at most `\uXXX`: dropping up to that many bytes
	// finds the end of the last whole character.
	for range len(`\uXXX`) + 1 {
		var s string
		if json.Unmarshal([]byte(body+`"`), &s) == nil {
			return s, true
		}
		if len(body) < 2 {
			break
		}
		body = body[:len(body)-1]
	}
	return "", false
}

// plainStrings is what json.Unmarshal reads of a compact JSON array of
// strings without escapes, ok false for anything else: a list the
// extraction filed, read without decoding it.
func plainStrings(raw string) ([]string, bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	var items []string
	for in != "" {
		end := strings.IndexByte(in[min(1, len(in)):], '"') + 2
		if end < 2 {
			return nil, false
		}
		item, ok := plainString(in[:end])
		if !ok {
			return nil, false
		}
		items = append(items, item)
		if in = in[end:]; in != "" {
			var comma bool
			if in, comma = strings.CutPrefix(in, ","); !comma || in == "" {
				return nil, false
			}
		}
	}
	return items, true
}

// plainString is what json.Unmarshal reads of a JSON string without
// escapes, ok false for anything else.
func plainString(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for i := 0; i < len(in); i++ {
		if c := in[i]; c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	return in, utf8.ValidString(in)
}

func startsClosed(q string) bool {
	for _, w := range []string{"Is ", "Are ", "Do ", "Does ", "Can ", "Will ", "Should ", "Did ", "Has ", "Have "} {
		if strings.HasPrefix(q, w) {
			return true
		}
	}
	return false
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	if len(r) > 1 && r[1] >= 'A' && r[1] <= 'Z' {
		return s // an acronym
	}
	return strings.ToLower(string(r[0])) + string(r[1:])
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Summarize answers a summarization request (purpose "summarize", as
// contextasm.LLMSummarizer sends): the first sentence of each user message.
func Summarize(_ context.Context, req llm.Request) (string, error) {
	var user string
	for _, m := range req.Messages {
		if m.Role == llm.User {
			user = m.Content
		}
	}
	var parts []string
	for _, l := range strings.Split(user, "\n") {
		var turn int
		var rest string
		if n, _ := fmt.Sscanf(l, "[turn %d] user:", &turn); n == 1 {
			_, rest, _ = strings.Cut(l, "user: ")
			if ss := engine.Sentences(rest); len(ss) > 0 {
				parts = append(parts, fmt.Sprintf("turn %d: %s", turn, cleanSentence(ss[0])))
			}
		}
	}
	if len(parts) == 0 {
		return "Nothing to summarize.", nil
	}
	return "Earlier the user said: " + strings.Join(parts, "; ") + ".", nil
}
