package offlineskill

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/llm"
)

// Confidences the extraction skill gives, by kind of evidence.
const (
	confPattern    = 0.85 // a cue pattern matched
	confValue      = 0.85 // a cue value's words matched
	confKeyword    = 0.75 // a cue keyword matched in a sentence
	confCorrection = 0.90 // the sentence corrects an earlier answer
	confFocus      = 0.72 // the message answers the question just asked
	confGuess      = 0.70 // it answers with a guess after a doubt ("Not sure, maybe 10k")
)

// Extraction answers an extraction request (purpose "extraction") the way
// the prompt asks a model to, from the prompt alone: for each field, its cue
// patterns, then its cue values, then its cue keywords are looked for in the
// user's message; a field that is already known is only re-extracted when it
// is the field asked about or the user marks a correction, but for a list,
// which grows by the new items a strong cue names (see matchField); a
// message that matches no cue at all answers the question just asked (the
// focus obligation), unless it declines it, which defers the obligation.
func Extraction(_ context.Context, req llm.Request) (string, error) {
	p, err := extraction.ParsePrompt(req)
	if err != nil {
		return "", err
	}
	ans := Extract(p)
	b, err := json.Marshal(ans)
	if err != nil {
		return "", fmt.Errorf("extraction skill: %w", err)
	}
	return string(b), nil
}

type fieldAnswer struct {
	Value      any     `json:"value"`
	Confidence float64 `json:"confidence"`
	Reasoning  string  `json:"reasoning"`
	byPattern  bool    // a cue pattern gave the value
	byValue    bool    // a cue value gave it: the words of an enumeration's value
	keyword    string  // the cue keyword that gave the value, if one did
}

// Answer is the skill's answer.
type Answer struct {
	Fields              map[string]fieldAnswer `json:"fields"`
	DeferredObligations []string               `json:"deferred_obligations,omitempty"`
}

// Extract maps the prompt's user message to fields through their cues,
// each value without the reason said after it.
func Extract(p extraction.Prompt) Answer {
	p.Message = withoutPushback(p.Message)
	ans := cueAnswer(p)
	withoutReasons(p, ans)
	measuresAlone(p, ans)
	choiceCorrected(p, ans, p.Message)
	choiceReasoned(p, ans, p.Message)
	withoutFunctionWordsAlone(ans)
	guessedAfterNamedDoubt(p, ans)
	if len(ans.Fields) == 0 && len(ans.DeferredObligations) == 0 {
		painToDo(p, ans)
	}
	if held, _, names := holdBack(p.Message); held && names {
		// "Not sure what the budget is." names what the user does not
		// know, which is no budget, date, count or name: it is filed only
		// where a field asks what the user is unsure of (the knowledge
		// gaps), and a yes or no read in it stays.
		for path, fa := range ans.Fields {
			if f := promptField(p, path); f != nil && f.ValueType != engine.TypeBoolean && fa.Value != nil && !asksUnknowns(*f) {
				delete(ans.Fields, path)
			}
		}
	}
	return ans
}

// painToDo files, for a message no cue found anything in, what a sentence
// says is a pain to do ("It's a pain to reconcile the payments.": the
// "it" is the infinitive's, no pushback) as a pain point: an item of the
// list of pains, whose cues read a frustration.
func painToDo(p extraction.Prompt, ans Answer) {
	for _, s := range engine.Sentences(p.Message) {
		lower := strings.ToLower(strings.ReplaceAll(cleanSentence(s), "’", "'"))
		var what string
		for _, lead := range painToLeads {
			if i := strings.Index(lower, lead); i >= 0 && (i == 0 || lower[i-1] == ' ' || lower[i-1] == ',') {
				what = cleanSentence(s)[i+len(lead):]
				break
			}
		}
		if what == "" || onlyFunctionWords(what) {
			continue
		}
		for _, f := range p.Fields {
			if f.ValueType == engine.TypeArray && slices.ContainsFunc(f.Cues.Keywords, func(kw string) bool {
				return painWords[strings.ToLower(kw)]
			}) {
				if v, ok := grow(f.Current, []string{what}, false); ok {
					ans.Fields[f.Path] = fieldAnswer{Value: v, Confidence: max(confKeyword, f.ConfidenceThreshold),
						Reasoning: "says what is a pain to do"}
				}
				return
			}
		}
	}
}

// painToLeads open what a sentence says is a pain to do.
var painToLeads = []string{"it's a pain to ", "it is a pain to ", "it's a real pain to ", "it's such a pain to ",
	"it's a huge pain to ", "it's painful to ", "it is painful to "}

// guessedAfterNamedDoubt files, for a text value a cue found in a doubt
// that names what is not known and a guess after it ("Not sure what the
// budget is, maybe 5k."), the guess ("5k") at a guess's confidence, as
// the question asked files "Not sure, maybe 5k.": the sentence was filed
// whole. A field that holds what the user is unsure of keeps the
// sentence, and a guess not of the field's kind files nothing.
func guessedAfterNamedDoubt(p extraction.Prompt, ans Answer) {
	for path, fa := range ans.Fields {
		v, ok := fa.Value.(string)
		f := promptField(p, path)
		if !ok || f == nil || asksUnknowns(*f) {
			continue
		}
		for _, s := range engine.Sentences(p.Message) {
			g := guessAfterDoubt(s)
			if g == "" || !unsure(engine.LowerText(s)) || cleanSentence(s) != cleanSentence(v) {
				continue
			}
			if guess, _, _ := answerPart(g, false); guess != "" && guessFits(*f, guess) {
				ans.Fields[path] = fieldAnswer{Value: cleanSentence(guess), Confidence: max(confGuess, f.ConfidenceThreshold),
					Reasoning: fa.Reasoning}
			} else {
				delete(ans.Fields, path)
			}
			break
		}
	}
}

// withoutFunctionWordsAlone takes off the answer the values, and the items
// of a list, made only of function words ("within", "the", "and also",
// "it"): they name nothing, whatever field a cue found them for. A list
// left with no item is no answer; a list said to be empty (null) stays.
func withoutFunctionWordsAlone(ans Answer) {
	for path, fa := range ans.Fields {
		switch v := fa.Value.(type) {
		case string:
			if onlyFunctionWords(v) {
				delete(ans.Fields, path)
			}
		case []string:
			if kept := slices.DeleteFunc(slices.Clone(v), onlyFunctionWords); len(kept) < len(v) {
				fa.Value = kept
				ans.Fields[path] = fa
				if len(kept) == 0 {
					delete(ans.Fields, path)
				}
			}
		case []any:
			kept := slices.DeleteFunc(slices.Clone(v), func(x any) bool {
				s, ok := x.(string)
				return ok && onlyFunctionWords(s)
			})
			if len(kept) < len(v) {
				fa.Value = kept
				ans.Fields[path] = fa
				if len(kept) == 0 {
					delete(ans.Fields, path)
				}
			}
		}
	}
}

// onlyFunctionWords reports whether s has words and each is a function
// word: an article, a conjunction, a preposition, an auxiliary, a filler
// or a pronoun that points at something said elsewhere. The user ("me",
// "us") is a value, and so is a name spelt like a function word, written
// with its capital ("Will.", "Will does."), and an acronym ("ER", "IT").
func onlyFunctionWords(s string) bool {
	said := false
	for w := range strings.FieldsSeq(strings.ReplaceAll(s, "’", "'")) {
		// A figure or a sign ("£5,000") is a word of its own.
		if w = strings.Trim(w, `.,;:!?"()-`); w == "" {
			continue
		}
		lower := strings.ToLower(w)
		if !stopWords[lower] || len(w) > 1 && w == strings.ToUpper(w) {
			return false
		}
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) && namesToo[lower] {
			return false
		}
		said = true
	}
	return said
}

var stopWords = engine.WordSet(`a an the and or but nor so yet plus also too then just well really very
	within without with in on at of to for from by about into onto over under between among through during before after
	above below around near than as it its it's this that these those there here they them is are was were be been am
	do does did has have had will would can could should might must um umm uh uhm er erm`)

// namesToo are the function words that are also names.
var namesToo = engine.WordSet(`will`)

// withoutPushback is msg without its sentences that push back, when
// another sentence says something: "That's annoying. Subscription." says
// the pricing model, "Double booking. It's so annoying." the pain point.
// A message that pushes back as a whole is read whole (cueAnswer).
func withoutPushback(msg string) string {
	var kept []string
	dropped := false
	var buf [24]string
	for text := msg; text != ""; {
		var s string
		s, text = engine.FirstSentence(text)
		if words := clauseWords(strings.ToLower(s), buf[:0]); len(words) > 0 && (pushingBack(words) ||
			len(kept) > 0 && feelingAbout(words)) {
			dropped = true
			continue
		}
		kept = append(kept, strings.TrimSpace(s))
	}
	if !dropped || len(kept) == 0 {
		return msg
	}
	return strings.Join(kept, " ")
}

// feelingAbout reports whether a clause only says how someone feels about
// what a sentence before said ("I hate it", "We really hate that", "I
// can't stand it"): the pain is the sentence before ("Double booking. I
// hate it.").
func feelingAbout(words []string) bool {
	if len(words) < 3 || !feelers[words[0]] || !feelingObjects[words[len(words)-1]] {
		return false
	}
	mid := words[1 : len(words)-1]
	for len(mid) > 1 && feelingAdverbs[mid[0]] {
		mid = mid[1:]
	}
	return len(mid) == 1 && feelingVerbs[mid[0]] || len(mid) == 2 && (mid[0] == "can't" || mid[0] == "cannot") && mid[1] == "stand"
}

var (
	feelers        = engine.WordSet(`i we they everyone everybody`)
	feelingObjects = engine.WordSet(`it that this them`)
	feelingAdverbs = engine.WordSet(`really absolutely just so honestly all totally genuinely`)
	feelingVerbs   = engine.WordSet(`hate hates loathe loathes dislike dislikes despise despises detest detests`)
)

// asksUnknowns reports whether a field holds what the user is unsure of or
// does not know: its cues read a hedge ("not sure", "unsure", "don't
// know").
func asksUnknowns(f extraction.PromptField) bool {
	return slices.ContainsFunc(f.Cues.Keywords, func(k string) bool {
		return unsure(engine.LowerText(k)) || strings.EqualFold(k, "unsure")
	})
}

// cueAnswer is the answer the cues of the fields find in the prompt's
// user message.
func cueAnswer(p extraction.Prompt) Answer {
	ans := Answer{Fields: map[string]fieldAnswer{}}
	msg := strings.TrimSpace(p.Message)
	if msg == "" {
		return ans
	}
	if closingRemark(msg) && !asksYesOrNo(p) {
		// "I think that covers it" tells no value of any field, whatever
		// was asked, and puts nothing off; a yes-or-no question reads its
		// yes or no ("Sure, that's all.").
		return ans
	}
	if _, pushed, _ := holdBack(msg); pushed {
		// "That's annoying.", "You keep asking me that.", "This is a waste
		// of time.": the message as a whole pushes back on being asked,
		// and is no value of the question asked nor of any other ("waste"
		// is no pain point here); one that puts the question off as well
		// defers it. A hedge that names what the user does not know ("I'm
		// not sure how the fees compare") is read on: it may be the answer.
		if p.Focus != nil && Declines(msg) {
			ans.DeferredObligations = []string{p.Focus.ID}
		}
		return ans
	}
	sentences := prepare(engine.Sentences(msg))
	held := map[string]*heldList{} // the known lists, which a sentence may take an item off
	for _, f := range p.Fields {
		if f.ValueType == engine.TypeArray && len(f.Current) > 0 {
			held[f.Path] = &heldList{current: f.Current}
		}
	}
	for i := range sentences {
		for _, f := range p.Fields {
			if f.ValueType == engine.TypeArray && len(f.Current) > 0 && removed(held[f.Path], &sentences[i]) != nil {
				sentences[i].takesOff = f.Path
			}
		}
	}
	focus := map[string]bool{}
	if p.Focus != nil {
		for _, f := range p.Focus.Fields {
			focus[f] = true
		}
	}
	// What it takes a known list to grow depends on the question just
	// asked: whether there is one, and whether its own cues found its
	// answer; its fields are tried first.
	grows := growOnAny
	if p.Focus != nil {
		grows = growOnOpening
	}
	fields := make([]extraction.PromptField, 0, len(p.Fields))
	for _, f := range p.Fields {
		if focus[f.Path] {
			fields = append(fields, f)
		}
	}
	for _, f := range p.Fields {
		if !focus[f.Path] {
			fields = append(fields, f)
		}
	}
	aboutKnown := false
	for _, f := range fields {
		inFocus := focus[f.Path]
		if f.Cues.FocusOnly && !inFocus {
			continue
		}
		fa, ok, blocked := matchField(f, held[f.Path], sentences, isKnown(f) && !guessed(f), inFocus, grows)
		if ok {
			ans.Fields[f.Path] = fa
			if inFocus && grows == growOnOpening {
				grows = growOnAdding
			}
		}
		aboutKnown = aboutKnown || blocked
	}
	claimed(ans, fields)
	patternsClaim(ans)
	if path, fa, ok := semicolonWhole(p, ans, msg); ok {
		ans.Fields[path] = fa
	}
	aboutKnown = ofOptions(p, ans) || aboutKnown
	if path, fa, ok := optionsFor(p, ans, sentences); ok {
		ans.Fields[path] = fa
	}
	for _, path := range focusFields(p) {
		// "Twelve years, long-standing": the stage a cue finds is not all
		// the question asked; the years are the years trading.
		if f := promptField(p, path); f != nil && f.ValueType == engine.TypeNumber && !isKnown(*f) {
			if _, answered := ans.Fields[path]; !answered {
				// A number counts one thing: "Twelve years" are the years
				// trading, and not the year opened as well.
				if n, ok := unitNumber(*f, sentences); ok && !slices.ContainsFunc(focusFields(p), func(other string) bool {
					fa, answered := ans.Fields[other]
					return answered && fa.Value == n
				}) {
					ans.Fields[path] = fieldAnswer{Value: n, Confidence: max(confFocus, f.ConfidenceThreshold),
						Reasoning: "a number in the unit the question just asked counts (" + p.Focus.ID + ")"}
				}
			}
		}
	}
	for _, path := range focusFields(p) {
		// "Not long at all, we only opened in 2023" to how long the
		// business has traded, "Mostly businesses, bars and hotels" to who
		// pays: the words are not the value's, but say it.
		f := promptField(p, path)
		if _, answered := ans.Fields[path]; answered || f == nil || len(f.Cues.Values) == 0 || isKnown(*f) {
			continue
		}
		if said := plainly(msg, sentences); said != "" {
			if fa, ok := matchValues(*f, prepare([]string{said}), func(sentence) bool { return true },
				func(float64, sentence) float64 { return max(confFocus, f.ConfidenceThreshold) }); ok {
				fa.Reasoning = "the answer to the question just asked says " + said + " (" + p.Focus.ID + ")"
				ans.Fields[path] = fa
			}
		}
	}
	if f := focusList(p); f != nil && len(sentences) == 1 && bareList(msg) {
		// "Support, backups and security reviews." names the products
		// asked for, not how satisfied the customers are: a keyword in
		// an item of a bare list answers no other question.
		for path, fa := range ans.Fields {
			if fa.keyword != "" && path != f.Path {
				delete(ans.Fields, path)
			}
		}
	}
	if takesBackLast(msg) && len(ans.Fields) == 0 && !aboutKnown {
		// "Scratch that.", "Never mind, the kits are a side thing": the
		// user takes back what they said last, which answers no question
		// asked; the question stays open.
		if path, fa, ok := undone(p); ok {
			ans.Fields[path] = fa
		} else if p.Focus != nil && Declines(msg) {
			ans.DeferredObligations = []string{p.Focus.ID}
		}
		return ans
	}
	if p.Focus == nil || len(p.Focus.Fields) == 0 {
		if len(ans.Fields) == 0 && !aboutKnown {
			// "Mainly to spend less time on month-end", to a question that
			// files nothing ("Which tradeoff matters most to you?"), says
			// what the user wants: a goal.
			if path, fa, ok := purpose(p, msg); ok {
				ans.Fields[path] = fa
			}
		}
		return ans
	}
	if f := promptField(p, p.Focus.Fields[0]); len(ans.Fields) == 0 && f != nil && f.ValueType == engine.TypeArray &&
		saysNone(msg, *f) {
		// "None.", "We don't use any", "We have no competitors": there is
		// none, which is an answer, not an item named "None" nor a question
		// left open. To a list known already it says there is no more.
		if !isKnown(*f) {
			ans.Fields[f.Path] = fieldAnswer{Value: nil, Confidence: max(confFocus, f.ConfidenceThreshold),
				Reasoning: "the user says there is none (" + p.Focus.ID + ")"}
		}
		return ans
	}
	if f := focusList(p); f != nil {
		if items := eachNamed(p, *f, msg); items != nil {
			// "Storage needs racks and insurance, about 2,000 pounds;
			// classes need only our time", asked how hard each shortlisted
			// idea would be, says it of each, one sentence each: what a
			// cue of another field finds in them ("needs … insurance") is
			// part of it.
			if v, changed := grow(f.Current, items, false); changed {
				clear(ans.Fields)
				ans.Fields[f.Path] = fieldAnswer{Value: v, Confidence: max(confFocus, f.ConfidenceThreshold),
					Reasoning: "the answer says it of each item, as the question just asked (" + p.Focus.ID + ")"}
				return ans
			}
		}
	}
	if f := focusList(p); f != nil && takesSteps(*f) && actions(msg) {
		// "Test the recipes, buy a freezer and ask two cafes to pilot it",
		// to the next steps asked, is a list of steps: a keyword of
		// another field inside one of them ("pilot") is part of the step,
		// unless it opens a sentence or is its subject.
		for path, fa := range ans.Fields {
			if fa.keyword != "" && !fa.byPattern && path != f.Path && !slices.ContainsFunc(sentences, func(s sentence) bool {
				return leading(s.lower, fa.keyword)
			}) {
				delete(ans.Fields, path)
			}
		}
	}
	// "Square for the till and spreadsheets for orders", to the systems
	// asked: the digital maturity a value cue reads in it ("spreadsheets")
	// is no answer to the question, which the bare list answers as well.
	beside := !aboutKnown && (readBeside(p, ans, msg) || measureBeside(p, ans, msg)) || firmChoice(p, ans, msg)
	if (len(ans.Fields) > 0 || aboutKnown) && !beside {
		// The cues found what the message is about: the question was
		// answered through them, or the user talked about something else —
		// perhaps about what is known already ("We have 40 technicians"
		// when the count is known answers no other question).
		return ans
	}
	if path, fa, ok := offered(p, msg); ok {
		// "Or custom engraved boards for weddings", right after an idea,
		// is one more idea, whatever was asked.
		ans.Fields[path] = fa
		return ans
	}
	if path, fa, ok := askedOption(p, msg); ok {
		// "Would Mindbody work for us? It's what the gym next door uses."
		ans.Fields[path] = fa
		return ans
	}
	if both := bothOf(p.Focus.Question, msg); both != "" {
		// "Both really, …" to "Who pays you — other businesses,
		// consumers, or both?" says "other businesses and consumers",
		// which the field's values read.
		for _, path := range p.Focus.Fields {
			if f := promptField(p, path); f != nil {
				if fa, ok := matchValues(*f, prepare([]string{both}), func(sentence) bool { return true },
					func(c float64, _ sentence) float64 { return max(c, f.ConfidenceThreshold) }); ok {
					ans.Fields[path] = fa
					return ans
				}
			}
		}
	}
	if Declines(msg) {
		ans.DeferredObligations = []string{p.Focus.ID}
		return ans
	}
	answer, hedged, continues := answerPart(msg, engine.LowerText(p.Focus.Question).Contains("feel"))
	answer = unprompted(answer)
	if continues {
		if path, fa, found := aside(p, answer); found {
			// Names said aside ("Oh, and Shopify too", "Don't forget
			// Shopify") go on the list of names they belong with,
			// whatever was asked.
			ans.Fields[path] = fa
			return ans
		}
	}
	// Nothing matched the question's fields: the message is the answer to
	// the first of them that is still open.
	for _, path := range p.Focus.Fields {
		f := promptField(p, path)
		if f == nil || (isKnown(*f) && len(p.Focus.Fields) > 1) {
			continue
		}
		if closed(*f) {
			// "There are six of us: me, my sister, and four bakers" is no
			// stage: an enumeration takes only a value its cues map, which
			// they found above if the message says one; the question's
			// next field may take the message.
			continue
		}
		var v any
		ok := false
		switch {
		case f.Cues.Firm && (hedged || tentative(answer) || thinksOfChoice(msg)):
			// "Maybe the cheaper one" decides nothing, nor do "Whatever
			// I pick, it has to be cheap" and "Glofox, I think".
		case f.ValueType == engine.TypeBoolean:
			// A yes-or-no question is answered by a yes or a no, not by
			// whatever the user says next ("Our team is me and Ana" does
			// not confirm the scope), nor by a question back or a doubt;
			// a yes that says there is nothing more is a yes ("Sure,
			// that's all.").
			v, ok = yesOrNo(strings.Join(statements(msg), " "))
		case continues && f.ValueType != engine.TypeArray:
			// "And maybe the dispatchers want it too" goes on with what
			// the user said before; to a list question ("Also Costa")
			// it adds an item.
		case f.ValueType == engine.TypeArray && doubts(*f) && statesCount(answer):
			// "About 120 members, mostly locals", said late to "What are
			// you unsure about?", is a size, which the user knows.
		case f.ValueType == engine.TypeArray && takesSteps(*f) && engine.PhraseIndex(answer, "and because") >= 0:
			// "They come back for fresh bread and because we know them by
			// name" gives reasons, the first one as much as the one "and
			// because" joins to it: no steps.
		case f.ValueType == engine.TypeArray && lacks(*f, answer):
			// "Not being able to pay online", asked what jobs the users
			// need done, says what they cannot do: a pain, which goes on
			// the list of pains beside the question's field, if there is
			// one, and is no job.
			if g := painsBeside(p, *f); g != nil {
				f, path = g, g.Path
				v, ok = valueFromText(g.ValueType, answer, "")
			}
		case guessesOnly(msg, *f):
			// "Not sure, maybe ask my partner." guesses no budget, nor
			// "maybe next year": a guess counts only of the field's kind.
		case measured(*f) && requires(answer):
			// "It has to work with our Shopify store and take card
			// payments", to how success will be measured, says what the
			// product must do: a constraint, which measures nothing. "It
			// should be live within a month" says when it is needed.
			if g := timelineOf(p, answer); g != nil {
				f, path = g, g.Path
				v, ok = valueFromText(g.ValueType, answer, "")
			}
		case answer != "":
			// A question back ("What do you mean by that?") answers
			// nothing, nor does saying what one does not know, about this
			// or another question, nor "Nothing else".
			said := answer
			if f.Cues.Firm {
				// "Glofox. I think the app is what sold it.": a choice is
				// named in one statement, and what follows says why.
				var chose bool
				if said, chose = choiceSaid(answer); !chose {
					// "Definitely not Glofox" rules Glofox out; "I'll think
					// about it" decides nothing.
					if out, fa, rules := ruledOut(p, ans, answer); rules {
						ans.Fields[out] = fa
					}
					break
				}
			}
			v, ok = valueFromText(f.ValueType, said, "")
			if n, counted := groupsOf(*f, figures(answer)); counted {
				// "Four bakers and two drivers" are a team of 6; "There are
				// 5 of us in the team and about 200 clients", whose groups
				// beside us do not all say a number, 200 users.
				v, ok = n, true
			}
		}
		if g := broader(p, *f); ok && continues && g != nil && !isKnown(*f) {
			// "Oh, and a monthly social would be lovely too", asked for
			// ideas from other perspectives while none is said, adds to
			// the ideas said before.
			f, path = g, g.Path
		}
		if ok && f.ValueType == engine.TypeArray {
			items := v.([]string)
			items[0] = trimLeads(items[0], keepLeads) // "Just Xero." names Xero
			if engine.LowerText(p.Focus.Question).Contains("why") {
				// "Which idea would do most, and why?": "Storage, because it
				// pays upfront" is the answer, reason and all.
				items = withReasons(items)
				v = items
			}
			if !remarks(items[0]) {
				// "The stall, it's cheapest to start." gives why; after a
				// clause ("Nobody knows where the techs are and they call me
				// all day") a clause may be an item of its own.
				v = unreasoned(items)
			}
			v, ok = grow(f.Current, v.([]string), extraction.CorrectionMarker(answer) != "" && !adds(engine.LowerText(answer)))
		}
		if ok {
			conf := confFocus
			if doubtedGuess(msg) {
				conf = confGuess // "Not sure, maybe 10k."
			}
			ans.Fields[path] = fieldAnswer{Value: v, Confidence: max(conf, f.ConfidenceThreshold),
				Reasoning: "answer to the question just asked (" + p.Focus.ID + ")"}
		}
		break
	}
	return ans
}

// purpose is the answer that puts on the goals the purpose a message
// states, an infinitive it opens with past its leads ("Mainly to spend
// less time on month-end for each client"): the list of goals is the one
// list field a keyword of which names goals. Not a place or a person
// after "to" ("To the bank"), nor an idiom ("To be honest, …").
func purpose(p extraction.Prompt, msg string) (path string, _ fieldAnswer, ok bool) {
	answer, _, _ := answerPart(msg, false)
	rest, found := strings.CutPrefix(strings.ToLower(trimLeads(answer, leads)), "to ")
	if !found || slices.ContainsFunc(purposeIdioms, func(i string) bool { return engine.PhraseIndex(rest, i) == 0 }) {
		return "", fieldAnswer{}, false
	}
	verb, _, _ := strings.Cut(rest, " ")
	if verb = strings.Trim(verb, ".,;:!?"); verb == "" || notVerbs[verb] || determiners[verb] || pointers[verb] || isNumber(verb) {
		return "", fieldAnswer{}, false
	}
	if openingVerbs[verb] && strings.Contains(rest, ",") {
		return "", fieldAnswer{}, false // "To start, the price", "To answer your question, …"
	}
	goal := trimLeads(answer, leads)
	goal = goal[len(goal)-len(rest):]
	if r, _ := utf8.DecodeRuneInString(goal); unicode.IsUpper(r) {
		return "", fieldAnswer{}, false // "To Xero"
	}
	for _, f := range p.Fields {
		if f.ValueType != engine.TypeArray || !slices.ContainsFunc(f.Cues.Keywords, func(kw string) bool {
			return contentWords(kw)["goal"] || contentWords(kw)["goals"]
		}) {
			continue
		}
		v, changed := grow(f.Current, unreasoned(SplitItems(goal)), false)
		return f.Path, fieldAnswer{Value: v, Confidence: max(confFocus, f.ConfidenceThreshold),
			Reasoning: "the user says what they want it for"}, changed
	}
	return "", fieldAnswer{}, false
}

// purposeIdioms open with "to" and state no purpose, as do openingVerbs
// when a comma ends their clause ("To start, the price"); notVerbs follow a
// "to" that is a preposition ("To me, …", "To the bank").
var (
	openingVerbs  = engine.WordSet(`start begin answer put summarise summarize recap clarify be`)
	purposeIdioms = []string{"be honest", "be fair", "be clear", "be frank", "be sure", "tell the truth",
		"start with", "begin with", "sum up", "some extent", "a degree"}
	notVerbs = map[string]bool{"me": true, "us": true, "you": true, "him": true, "them": true, "your": true,
		"their": true, "his": true, "her": true, "its": true, "some": true, "all": true, "every": true, "each": true,
		"any": true, "no": true, "most": true, "home": true}
)

// isNumber reports whether a word is a number, in figures ("2", "3pm") or
// in words ("two").
func isNumber(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsDigit(r) || spelledValues[w] > 0
}

// doubts reports whether a list is of what the user does not know: a
// keyword of it says so ("not sure", "don't know").
func doubts(f extraction.PromptField) bool {
	return slices.ContainsFunc(f.Cues.Keywords, func(kw string) bool { return unsure(engine.LowerText(kw)) })
}

// statesCount reports whether an answer states how many of something
// there are, and nothing else: it opens, past its leads and a rough
// "about", with a number and what it counts, and no clause follows ("About
// 120 members, mostly locals"); a count that introduces items ("Two
// things: …") states none.
func statesCount(answer string) bool {
	words := strings.Fields(strings.ToLower(trimLeads(answer, leads)))
	for len(words) > 0 && roughly[words[0]] {
		words = words[1:]
	}
	if len(words) < 2 || strings.Contains(answer, ":") || !isNumber(strings.TrimRight(words[0], ",.")) ||
		!unicode.IsLetter([]rune(words[1])[0]) || functionWords[words[1]] || words[1] == "of" {
		return false
	}
	return !slices.ContainsFunc(words, func(w string) bool { return clauseWord(strings.Trim(w, ".!?")) })
}

// roughly are the words that make a number a rough one ("about 120").
var roughly = map[string]bool{"about": true, "around": true, "roughly": true, "some": true, "over": true,
	"under": true, "nearly": true, "almost": true, "approximately": true, "maybe": true, "probably": true,
	"just": true, "only": true, "like": true, "more": true, "than": true, "less": true, "fewer": true}

// plainly is what a message says in the words value cues use, when it
// says it in others: a short time trading ("Not long at all", "We've only
// been open since March") is "just started"; who pays, named by kind in a
// bare list ("Mostly businesses, bars and hotels"), is "other businesses",
// "direct to consumer" or, of both kinds, "businesses and consumers". ""
// when it says none of them.
func plainly(msg string, sentences []sentence) string {
	// A short time trading is none beside the years said ("Twelve years,
	// though the second shop only opened last spring"), nor "not long
	// after" a time.
	lasted := slices.ContainsFunc(sentences, func(s sentence) bool {
		return slices.ContainsFunc(unitRe.FindAllStringSubmatch(s.figures, -1), func(m []string) bool {
			return durations[strings.ToLower(m[2])]
		})
	})
	for _, s := range sentences {
		if !lasted && !engine.IsQuestion(s.text) && slices.ContainsFunc(recently, func(r string) bool {
			return s.lower.Asks(r) && (r != "not long" || !s.lower.Contains("not long after") && !s.lower.Contains("not long before"))
		}) {
			return "just started"
		}
	}
	if len(sentences) != 1 || !bareList(msg) && len(SplitItems(msg)) != 1 {
		return ""
	}
	trade, people := false, false
	for _, it := range SplitItems(msg) {
		w := strings.Fields(strings.ToLower(it))
		if len(w) > 3 || slices.ContainsFunc(w, clauseWord) {
			return ""
		}
		switch head := w[len(w)-1]; {
		case tradeKinds[head]:
			trade = true
		case peopleKinds[head]:
			people = true
		default:
			return ""
		}
	}
	switch {
	case trade && people:
		return "businesses and consumers"
	case trade:
		return "other businesses"
	case people:
		return "direct to consumer"
	}
	return ""
}

var (
	// durations are the units of a time said trading that is not short
	// ("12 years"): "6 months" may be.
	durations = engine.WordSet(`years decade decades`)
	// recently says the business has not traded long.
	recently = []string{"not long", "only opened", "just opened", "recently opened", "opened recently",
		"only been open", "only been trading", "only been going", "only been running", "only started",
		"started recently", "recently started", "only launched", "launched recently", "recently launched",
		"brand new", "a few months", "less than a year", "under a year"}
	// tradeKinds and peopleKinds are who pays, by kind: businesses or
	// people.
	tradeKinds = engine.WordSet(`businesses companies firms bars pubs hotels restaurants cafes cafés shops retailers
		stores offices caterers supermarkets schools councils wholesalers distributors venues clinics practices
		agencies landlords contractors trade`)
	peopleKinds = engine.WordSet(`locals people public families consumers households individuals shoppers residents
		tourists students parents walk-ins visitors homeowners couples`)
)

// optionsFor is the answer that files what the options a pattern just
// named are for ("We're thinking about Square, Shopify or a custom website
// for online orders at my bakery") as the problem to explore: the string
// field a keyword of which is "options for", when it is open and nothing
// else answered it. The user did not say it is the problem, so it is a
// guess, filed at the least confidence that counts (see guessed); what the
// options are for a person ("a custom app for me") is none.
func optionsFor(p extraction.Prompt, ans Answer, sentences []sentence) (path string, _ fieldAnswer, ok bool) {
	for _, o := range p.Fields {
		// The list of options, in the order of the fields: not another
		// list a pattern found ("I'm leaning towards the back wall for the
		// mats" is a reaction).
		fa, answered := ans.Fields[o.Path]
		items, isList := fa.Value.([]any)
		if !answered || !fa.byPattern || !isList || len(items) == 0 || !contentWords(o.DisplayName)["options"] {
			continue
		}
		last, _ := items[len(items)-1].(string)
		at := engine.PhraseIndex(last, "for")
		if at <= 0 {
			continue
		}
		next, _, _ := strings.Cut(strings.TrimSpace(last[at+len("for"):]), " ")
		if next = strings.ToLower(next); next == "" || person(next) {
			continue
		}
		for _, f := range p.Fields {
			if _, answered := ans.Fields[f.Path]; answered || f.ValueType != engine.TypeString || isKnown(f) ||
				!slices.Contains(f.Cues.Keywords, "options for") {
				continue
			}
			for _, s := range sentences {
				if engine.PhraseIndex(s.text, last) >= 0 {
					return f.Path, fieldAnswer{Value: cleanSentence(s.text), Confidence: f.ConfidenceThreshold,
						Reasoning: "what the options are for is the problem, a guess"}, true
				}
			}
		}
	}
	return "", fieldAnswer{}, false
}

// person reports whether a word is a personal pronoun ("me", "us").
func person(w string) bool {
	_, ok := pronouns[w]
	return ok || objectPronouns[w] || w == "you"
}

// guessed reports whether a known field's value is a guess (optionsFor):
// below the least confidence an answer the user gives has, which a cue
// that names the field replaces as if the field were open.
func guessed(f extraction.PromptField) bool {
	return f.CurrentConfidence < confFocus
}

// closed reports whether f is an enumeration: a text field whose only cues
// map words to its values ("early-stage", "B2B").
func closed(f extraction.PromptField) bool {
	return f.ValueType == engine.TypeString && len(f.Cues.Values) > 0 && len(f.Cues.Patterns) == 0 &&
		len(f.Cues.Keywords) == 0
}

// broader is the known list that the list f is a kind of: its name is
// part of f's ("Ideas" of "Ideas from other perspectives" and of "Bold
// ideas"); nil for none.
func broader(p extraction.Prompt, f extraction.PromptField) *extraction.PromptField {
	if f.ValueType != engine.TypeArray {
		return nil
	}
	for i, g := range p.Fields {
		if g.Path != f.Path && g.ValueType == engine.TypeArray && isKnown(g) &&
			engine.PhraseIndex(f.DisplayName, g.DisplayName) >= 0 {
			return &p.Fields[i]
		}
	}
	return nil
}

// bothOf is what a message that opens with "both" says, when the question
// offers two things and both ("Who pays you — other businesses, consumers,
// or both?"): the two, joined by "and"; else "".
func bothOf(question, msg string) string {
	first, _, _ := strings.Cut(strings.ToLower(trimLeads(strings.TrimSpace(msg), leads)), " ")
	if strings.TrimRight(first, ",.!;:") != "both" {
		return ""
	}
	q := strings.TrimRight(strings.TrimSpace(question), "?")
	if i := strings.LastIndexAny(q, "—:"); i >= 0 {
		_, size := utf8.DecodeRuneInString(q[i:])
		q = q[i+size:]
	}
	var options []string
	for _, o := range strings.Split(strings.ReplaceAll(q, " or ", ","), ",") {
		if o = strings.TrimSpace(o); o != "" && !strings.EqualFold(o, "both") {
			options = append(options, o)
		}
	}
	if len(options) != 2 {
		return ""
	}
	return options[0] + " and " + options[1]
}

// focusFields are the fields of the question just asked.
func focusFields(p extraction.Prompt) []string {
	if p.Focus == nil {
		return nil
	}
	return p.Focus.Fields
}

// unitNumber is a number a sentence gives in a unit the number field f
// names ("Twelve years" for the years trading): the number, in figures,
// and the word after it, one of the words of f's name or description.
func unitNumber(f extraction.PromptField, sentences []sentence) (any, bool) {
	units := contentWords(f.DisplayName + " " + f.Description)
	for _, s := range sentences {
		for _, m := range unitRe.FindAllStringSubmatch(s.figures, -1) {
			w := strings.ToLower(m[2])
			if units[w] || units[w+"s"] || units[strings.TrimSuffix(w, "s")] {
				return ParseNumber(m[1])
			}
		}
	}
	return nil, false
}

// countsBeside reports whether a sentence counts a group beside the user
// ("me and two part-timers", "the two of us and a guide"): a number in it
// counts a part of the group only, and a count field takes the group's
// (groupCount), not the number. A count before a colon is the whole
// group, whose members the colon leads into ("six of us: me, my sister,
// and four bakers").
func countsBeside(lower engine.Text) bool {
	s := lower.Lowered()
	if head, _, ok := strings.Cut(s, ":"); ok && (spelled.MatchString(head) || strings.ContainsAny(head, "0123456789")) {
		s = head
	}
	return besideRe.MatchString(s)
}

// groupCount is how many people a group beside the user makes ("Me and
// two part-timers" 3, "Just the two of us and a part-time tour guide" 3,
// "Me, my wife and 2 staff" 4): the sum of its parts, the user, the people
// "of us" counts, "a" or "my" one person and a number as many. A total
// that "of us" gives beside the user named again ("There are 6 of us, me,
// two bakers and three in the shop"), or beside parts that add up to it
// ("8 of us, 2 partners and 6 employees"), is the count. A part that says no
// number ("some part-timers", "my kids") makes it no count.
func groupCount(s string) (any, bool) {
	text := strings.ToLower(cleanSentence(figures(s)))
	parts := strings.FieldsFunc(groupSeparators.Replace(text), func(r rune) bool { return r == ',' })
	if len(parts) < 2 {
		return nil, false
	}
	sum, total, user := 0, 0, false
	for _, part := range parts {
		w := strings.Fields(trimLeads(strings.TrimSpace(part), groupLeads))
		for len(w) > 0 && (w[0] == "the" || w[0] == "just" || w[0] == "only") {
			w = w[1:]
		}
		if i := slices.IndexFunc(w, func(w string) bool { return groupQualifiers[w] }); i > 1 {
			w = w[:i] // "my mum on Saturdays" is my mum
		}
		n, ok := 0, false
		switch {
		case len(w) == 0:
			continue
		case len(w) == 1 && (w[0] == "me" || w[0] == "myself" || w[0] == "i"):
			n, ok, user = 1, true, true
		case len(w) >= 3 && w[1] == "of" && w[2] == "us" || len(w) == 2 && w[1] == "us" && w[0] == "both":
			if w[0] == "both" {
				w[0] = "2"
			}
			if total > 0 {
				return nil, false
			}
			total, _ = strconv.Atoi(w[0])
			n, ok = total, total > 0
		case isFigure(w[0]):
			n, _ = strconv.Atoi(w[0])
			ok = n > 0
		case len(w) >= 2 && (w[0] == "a" || w[0] == "an" || w[0] == "my" || w[0] == "our" || w[0] == "his" ||
			w[0] == "her" || w[0] == "their") && !uncounted[w[1]] && !isFigure(w[1]) && !plural(w[len(w)-1]):
			n, ok = 1, true
		case len(w) >= 3 && (w[0] == "my" || w[0] == "our") && isFigure(w[1]):
			n, _ = strconv.Atoi(w[1])
			ok = n > 0
		}
		if !ok {
			return nil, false
		}
		sum += n
	}
	if total > 0 && (user || sum == 2*total) {
		// The total, then who it is: "There are 6 of us, me, two bakers
		// and three in the shop", "8 of us, 2 partners and 6 employees".
		return float64(total), true
	}
	return float64(sum), sum > 0
}

var (
	groupSeparators = strings.NewReplacer(" and ", ",", " plus ", ",", " & ", ",", ";", ",")
	groupLeads      = []string{"just", "only", "it's", "it is", "there's", "there is", "there are", "we're", "we are",
		"basically", "currently", "right now", "at the moment", "so", "well", "um"}
	// groupQualifiers say when or where a part of a group works ("my mum
	// on Saturdays"), after it.
	groupQualifiers = map[string]bool{"on": true, "at": true, "in": true, "for": true, "who": true, "from": true,
		"with": true, "during": true}
	// uncounted after "a" or "my" count no one person ("a few", "a couple").
	uncounted = map[string]bool{"few": true, "couple": true, "lot": true, "bunch": true, "handful": true,
		"team": true, "number": true, "family": true, "crew": true, "staff": true}
)

// isFigure reports whether a word is a number in figures ("12").
func isFigure(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsDigit(r)
}

// plural reports whether a noun looks plural ("kids", "part-timers"), not
// one that ends in "ss" ("boss").
func plural(w string) bool {
	return strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "'s")
}

var besideRe = regexp.MustCompile(`\b(?:me|myself|us)\b.*\b(?:and|plus)\b|\b(?:and|plus)\b.*\b(?:me|myself)\b`)

var unitRe = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?)\s+([A-Za-z]+)`)

// focusList is the list the question just asked is for, if its first
// field is one.
func focusList(p extraction.Prompt) *extraction.PromptField {
	if p.Focus == nil || len(p.Focus.Fields) == 0 {
		return nil
	}
	if f := promptField(p, p.Focus.Fields[0]); f != nil && f.ValueType == engine.TypeArray {
		return f
	}
	return nil
}

// bareList reports whether a message is a list of two or more things
// named, and no clause ("Support, backups and security reviews."); a
// possessive that opens an item is part of the thing it names ("Our flour
// mill, the packaging supplier and Deliveroo."), unless it opens what is
// said of a thing ("Our biggest problem, honestly.", "My biggest
// headache, the VAT return.") or a thing named by what it is, a comma
// apart ("Our main supplier, Shipton Mill.": one item, an appositive).
func bareList(msg string) bool {
	items := SplitItems(msg)
	if len(items) == 2 && possessive(items[0]) && !joined(msg) {
		return false
	}
	return len(items) > 1 && !slices.ContainsFunc(items, func(it string) bool {
		w := strings.Fields(it)
		if len(w) > 1 && possessives[strings.ToLower(w[0])] {
			if slices.ContainsFunc(w[1:], func(x string) bool { return judged[strings.ToLower(strings.Trim(x, ".,;:!?"))] }) {
				return true // "Our biggest problem"
			}
			w = w[1:]
		}
		return slices.ContainsFunc(w, clauseWord)
	})
}

// possessive reports whether an item opens with a possessive ("Our main
// supplier").
func possessive(item string) bool {
	w, _, ok := strings.Cut(item, " ")
	return ok && possessives[strings.ToLower(w)]
}

// joined reports whether a message joins items with a conjunction ("…
// and Deliveroo"), as a list does and an appositive does not.
func joined(msg string) bool {
	return engine.PhraseIndex(msg, "and") >= 0 || engine.PhraseIndex(msg, "or") >= 0 || strings.Contains(msg, "&")
}

// judged are the words of what is said of a thing, not of a thing named:
// what troubles the user ("biggest problem", "worst headache"); a
// superlative alone names a thing ("our biggest supplier").
var judged = engine.WordSet(`problem problems issue issues headache headaches worry worries struggle struggles concern
	concerns challenge challenges nightmare frustration bottleneck`)

// claimed leaves a value that the patterns of two fields find to the
// first of them in fields, the fields asked about first: the question just
// asked claims it, and with none asked the one the schema puts first.
// "Dispatchers." answers "Who will use it most?", not who else uses it,
// whose cues take a bare role as well, and the other way round; said
// unasked, a role is not both. So too the words a keyword of two fields
// finds, as their text: "The reason is the new Greggs across the road" is
// the root cause asked for, not why an idea was chosen; a yes or a no
// read from them ("In my own words, …" passes the teach-back it gives)
// is no such value.
func claimed(ans Answer, fields []extraction.PromptField) {
	taken := map[string]bool{} // the values, lowered, a pattern gave a field before
	said := map[string]bool{}  // the keywords that gave a field its text before
	for _, f := range fields {
		fa, ok := ans.Fields[f.Path]
		if !ok {
			continue
		}
		if _, isBool := fa.Value.(bool); fa.keyword != "" && !isBool {
			if said[fa.keyword] {
				delete(ans.Fields, f.Path)
			}
			said[fa.keyword] = true
		}
		v, isString := fa.Value.(string)
		if !fa.byPattern || !isString {
			continue
		}
		if v = strings.ToLower(v); taken[v] {
			delete(ans.Fields, f.Path)
		}
		taken[v] = true
	}
}

// patternsClaim leaves to a field a pattern answered the keyword said
// only within the value the pattern found: "I'd like to decide by
// January" is a date the decision is due by, whose pattern takes "decide
// by January", and not the problem to explore, though "decide" is a
// keyword of it. A keyword said outside it ("I need to decide which
// booking tool to use, and decide by January") still gives its field the
// sentence.
func patternsClaim(ans Answer) {
	for path, fa := range ans.Fields {
		v, isString := fa.Value.(string)
		if fa.keyword == "" || !isString {
			continue
		}
		for other, oa := range ans.Fields {
			if other != path && oa.byPattern && slices.ContainsFunc(texts(oa.Value), func(found string) bool {
				return onlyWithin(v, found, fa.keyword)
			}) {
				delete(ans.Fields, path)
				break
			}
		}
	}
}

// texts are the strings a value holds: itself, or its items.
func texts(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, it := range v {
			if s, ok := it.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// onlyWithin reports whether keyword is said in text only within found,
// a part of it.
func onlyWithin(text, found, keyword string) bool {
	i := engine.PhraseIndex(text, found)
	if i < 0 || engine.PhraseIndex(found, keyword) < 0 {
		return false
	}
	return engine.PhraseIndex(text[:i]+" "+text[i+len(found):], keyword) < 0
}

// saysNone reports whether a message says the list f asks for has no
// item: every statement in it is a negation made of noneWords and the
// words that name the list, or any fear for a list of fears ("None.", "Not
// really, no.", "We don't use any", "We have no competitors", "No worries
// there"). A negation that says more names an item ("No way to see the
// jobs" is a pain point, "Not Xero" a take-back), as does one made of the
// words of a keyword that is a negation itself ("Nothing is connected"
// beside "not connected"), but not a reason after it ("None, it's
// standalone"); one the user is unsure of ("I don't know any") or asks
// says nothing.
func saysNone(msg string, f extraction.PromptField) bool {
	nouns, fears := map[string]bool{}, false
	for _, phrase := range append(slices.Clone(f.Cues.Keywords), f.DisplayName) {
		words := strings.Fields(strings.ToLower(phrase))
		if slices.ContainsFunc(words, func(w string) bool { return nothingWords[w] || strings.HasSuffix(w, "n't") }) {
			continue
		}
		for _, w := range words {
			nouns[w], nouns[strings.TrimSuffix(w, "s")] = true, true
			fears = fears || fear(w)
		}
	}
	ss := statements(msg)
	for _, s := range ss {
		if items := SplitItems(s); len(items) > 1 {
			s = strings.Join(unreasoned(items), ", ") // "Nothing, it's all fine."
		}
		negated := false
		for _, w := range strings.FieldsFunc(strings.ReplaceAll(strings.ToLower(s), "’", "'"), func(r rune) bool {
			return !unicode.IsLetter(r) && r != '\''
		}) {
			switch {
			case nothingWords[w] || strings.HasSuffix(w, "n't"):
				negated = true
			case !noneWords[w] && !nouns[w] && !nouns[strings.TrimSuffix(w, "s")] && !(fears && fear(w)):
				return false
			}
		}
		if !negated {
			return false
		}
	}
	return len(ss) > 0
}

// nothingWords say there is none; noneWords are the others a sentence that
// says so is made of.
var (
	nothingWords = map[string]bool{"no": true, "none": true, "nope": true, "nothing": true, "not": true, "zero": true,
		"never": true, "nobody": true, "cannot": true}
	noneWords = map[string]bool{"we": true, "i": true, "there": true, "it": true, "they": true, "do": true, "does": true,
		"have": true, "has": true, "got": true, "use": true, "using": true, "need": true, "needed": true, "needs": true,
		"required": true, "are": true, "is": true, "any": true, "anything": true, "anyone": true, "real": true,
		"really": true, "yet": true, "at": true, "all": true, "currently": true, "right": true, "now": true, "so": true,
		"far": true, "for": true, "the": true, "moment": true, "think": true, "that": true, "know": true, "of": true,
		"actually": true, "honestly": true, "well": true, "um": true, "just": true, "one": true, "ones": true,
		"direct": true, "other": true, "others": true, "to": true, "with": true, "can": true, "as": true, "such": true,
		"thing": true, "things": true, "comes": true, "mind": true, "our": true, "my": true, "else": true}
)

// isKnown reports whether a field holds a value confident enough to count.
func isKnown(f extraction.PromptField) bool {
	return len(f.Current) > 0 && string(f.Current) != "null" && f.CurrentConfidence >= f.ConfidenceThreshold
}

func promptField(p extraction.Prompt, path string) *extraction.PromptField {
	for i := range p.Fields {
		if p.Fields[i].Path == path {
			return &p.Fields[i]
		}
	}
	return nil
}

// answerPart is what of a message can answer the question just asked:
// its sentences that neither ask ("What do you mean?"), nor say what the
// user does not know ("Not sure really."), nor that there is nothing more
// ("Nothing else.", and the "nothing else" of "Xero, nothing else."), nor anything but hedges and interjections ("Hmm.",
// "I guess so.", "Probably not."), the first of them without its hedge
// ("Probably Greggs" gives "Greggs"); hedged says whether one was taken
// off or stood in the message ("Maybe. The cheaper one."). continues says
// the message goes on with what the user said before ("And maybe it goes
// down in busy weeks.", "Also Costa."): the answer is without its "and"
// or "also", and only a list question takes it. An appraisal ("Good.")
// answers only a question asking how the user feels (feelings).
func answerPart(msg string, feelings bool) (answer string, hedged, continues bool) {
	var kept []string
	for _, s := range statements(msg) {
		t := engine.LowerText(s)
		if nothingMore(t) {
			// "Xero, nothing else." answers Xero.
			var said []string
			for _, part := range strings.Split(s, ",") {
				if part = strings.TrimSpace(part); part != "" && !nothingMore(engine.LowerText(part)) {
					said = append(said, part)
				}
			}
			if s = strings.Join(said, ", "); s == "" {
				continue
			}
			t = engine.LowerText(s)
		}
		for _, w := range strings.Fields(t.Lowered()) {
			hedged = hedged || hedgeWords[strings.Trim(w, ".,;:!?")]
		}
		if !saysNothing(t, feelings) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return "", false, false
	}
	lower := strings.ToLower(kept[0])
	for _, c := range continuations {
		if rest, ok := strings.CutPrefix(lower, c); ok {
			kept[0] = strings.TrimLeft(kept[0][len(kept[0])-len(rest):], " ,:")
			lower, continues = strings.ToLower(kept[0]), true
			break
		}
	}
	if continues && saysNothing(engine.LowerText(kept[0]), feelings) {
		return "", false, false // "And yes, that's right."
	}
	for _, h := range hedges {
		if rest, ok := strings.CutPrefix(lower, h); ok {
			kept[0] = strings.TrimLeft(kept[0][len(kept[0])-len(rest):], " ,")
			hedged = true
			break
		}
	}
	return strings.Join(kept, " "), hedged, continues
}

// unprompted is an answer without the yes or no it opens with before a
// comma ("No, we do all of it by hand" says how, "Yes, mostly the
// dispatchers" who): a yes-or-no question reads the message itself.
func unprompted(answer string) string {
	first, rest, ok := strings.Cut(answer, ",")
	if rest = strings.TrimSpace(rest); !ok || rest == "" || !yesNoWords[strings.ToLower(strings.TrimSpace(first))] {
		return answer
	}
	return rest
}

var yesNoWords = map[string]bool{"no": true, "nope": true, "nah": true, "yes": true, "yeah": true, "yep": true}

// statements are the sentences of a message but its questions and doubts.
func statements(msg string) []string {
	var kept []string
	for _, s := range engine.Sentences(msg) {
		if engine.IsQuestion(s) {
			continue
		}
		if !unsure(engine.LowerText(s)) {
			kept = append(kept, s)
		} else if g := guessAfterDoubt(s); g != "" {
			kept = append(kept, g) // "Not sure, maybe 10k." guesses 10k
		}
	}
	return kept
}

// guessAfterDoubt is the guess a sentence makes after a doubt alone
// ("Not sure, maybe 10k" guesses "maybe 10k"): the clause after the
// doubt's comma, when a hedge opens it and it doubts nothing itself; else
// "".
func guessAfterDoubt(s string) string {
	doubt, guess, ok := strings.Cut(s, ",")
	guess = strings.TrimSpace(guess)
	if !ok || unsure(engine.LowerText(guess)) || !slices.ContainsFunc(hedges, func(h string) bool {
		return strings.HasPrefix(strings.ToLower(guess), h)
	}) {
		return ""
	}
	for _, w := range strings.Fields(strings.ToLower(strings.ReplaceAll(doubt, "’", "'"))) {
		if doubtAsks[w] {
			break // "Not sure what the budget is, maybe 5k": the guess answers what is doubted
		}
		if !doubtWords[w] {
			return "" // "I'm not sure about the app, maybe …" doubts a thing of its own
		}
	}
	return guess
}

// doubtAsks open what a doubt says is not known ("not sure what the
// budget is", "no idea how many"), which a guess after it answers.
var doubtAsks = engine.WordSet(`what how when whether which where who`)

// doubtWords are the words a doubt alone is made of ("Not sure", "I
// honestly don't know", "No idea really").
var doubtWords = engine.WordSet(`i i'm im am not sure really honestly don't do know no idea clue totally entirely
	quite well hmm um`)

// doubtedGuess reports whether a message answers with a guess after a
// doubt ("Not sure, maybe 10k."), which it holds with less confidence.
func doubtedGuess(msg string) bool {
	return slices.ContainsFunc(engine.Sentences(msg), func(s string) bool {
		return unsure(engine.LowerText(s)) && guessAfterDoubt(s) != ""
	})
}

// guessesOnly reports whether a message says nothing but guesses after a
// doubt, none of them of the kind the field holds ("Not sure, maybe ask
// my partner.", "Not sure, maybe next year." to the budget): it answers
// nothing, as the doubt alone would.
func guessesOnly(msg string, f extraction.PromptField) bool {
	guessed := false
	for _, s := range engine.Sentences(msg) {
		if engine.IsQuestion(s) {
			continue
		}
		if !unsure(engine.LowerText(s)) {
			return false
		}
		if g := guessAfterDoubt(s); g != "" {
			if guessFits(f, g) {
				return false
			}
			guessed = true
		}
	}
	return guessed
}

// guessFits reports whether a guess is of the kind a field holds: a
// number for a count ("maybe 50"), an amount for a budget or a cost
// ("maybe 10k", "a few grand"), a time for a deadline ("maybe next
// year"). A field of no such kind takes any guess.
func guessFits(f extraction.PromptField, guess string) bool {
	guess = strings.ToLower(figures(guess))
	words := strings.FieldsFunc(guess, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	numbered := strings.ContainsAny(guess, "0123456789")
	switch {
	case f.ValueType == engine.TypeNumber:
		return numbered
	case timeline(f):
		// "maybe when the lease is up", "once we have the money": a time
		// said by what will happen then, after the hedge. "When" alone, or
		// about knowing, telling or being ready ("when I know more", "when
		// it's ready"), or "when pigs fly", puts the answer off.
		for i, w := range words {
			if w == "when" || w == "once" {
				return eventAfter(words[i+1:])
			}
			if !hedgeWords[w] && w != "i" && w != "think" && w != "suppose" {
				break
			}
		}
		return slices.ContainsFunc(words, func(w string) bool {
			return timeUnits[w] || calendar[w] || seasons[w] || holidays[w] || whenWords[w] || year(w)
		})
	case priced(f):
		return numbered || strings.ContainsAny(guess, "$£€") || slices.ContainsFunc(words, func(w string) bool { return moneyWords[w] })
	}
	return true
}

// eventAfter reports whether the words after a "when" say an event in the
// world ("the lease is up", "the grant comes through"): some are said, and
// none of them is of knowing, telling or being ready, nor of never.
func eventAfter(words []string) bool {
	return len(words) > 0 && !slices.ContainsFunc(words, func(w string) bool { return deferralWords[w] }) &&
		!slices.Equal(words, []string{"pigs", "fly"}) && !slices.Equal(words, []string{"hell", "freezes", "over"})
}

// deferralWords, after a "when", put an answer off until the user knows,
// is told or is ready ("when I know more", "when you tell me", "when it's
// ready").
var deferralWords = engine.WordSet(`know knows knew known tell tells told hear hears heard decide decides decided
	sure ready figure figured see sees clearer clear`)

// priced reports whether a field holds an amount of money ("The budget
// range"): its name or description says so.
func priced(f extraction.PromptField) bool {
	w := contentWords(f.DisplayName + " " + f.Description)
	return w["budget"] || w["cost"] || w["costs"] || w["price"] || w["pricing"] || w["spend"]
}

// year reports whether a lowered word is a year a plan can be for ("2027",
// of "mid-2027" too) or a quarter or half of one ("Q3", "H2"). The prompt
// has no clock, and a reading of the time would break replays: a year is
// one of this century (a year before this one, said as a guess of when,
// is taken at the user's word; a bound of the skill's own year would
// turn every year after a decade into no year).
func year(w string) bool {
	if len(w) == 2 && (w[0] == 'q' && w[1] >= '1' && w[1] <= '4' || w[0] == 'h' && (w[1] == '1' || w[1] == '2')) {
		return true
	}
	n, err := strconv.Atoi(w)
	return err == nil && len(w) == 4 && n >= 2000 && n <= 2099
}

var (
	// whenWords say a time without a unit ("maybe soon", "ASAP",
	// "in a fortnight").
	whenWords = engine.WordSet(`asap soon tomorrow today tonight weekend weekends fortnight fortnights`)
	// moneyWords say an amount without a figure ("a few grand").
	moneyWords = engine.WordSet(`k grand hundred hundreds thousand thousands million dollars pounds euros quid bucks`)
)

// saysNothing reports whether a sentence is made of hedges, interjections,
// greetings, acknowledgements and bare yes-or-no words alone ("Hmm.", "I
// guess so.", "Probably not.", "Yes, that's right.", "Sounds good.", "Hi!"):
// it answers no question that asks for a value.
// An appraisal ("Good.", "Fine, I guess.") answers a question asking how
// the user feels (feelings); beside an acknowledgement, or to any other
// question ("Great!" after a greeting, "Perfect. Our crews …"), it says
// nothing.
func saysNothing(t engine.Text, feelings bool) bool {
	acknowledged, appraised, greeted := false, false, false
	for _, w := range strings.FieldsFunc(t.Lowered(), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	}) {
		switch {
		case acknowledgements[w]:
			acknowledged = true
		case greetings[w]:
			acknowledged, greeted = true, true
		case w == "there" && greeted:
			// "Hello there" greets whoever is there.
		case appraisals[w]:
			appraised = true
		case !noContent[w]:
			return false
		}
	}
	return acknowledged || !appraised || !feelings
}

// acknowledgedFirst reports whether a keyword is said only in the
// acknowledgement a sentence opens with ("Sounds good to me, let's go with
// Glofox"): the clause says nothing, and what the sentence says is after
// it.
func acknowledgedFirst(t engine.Text, keyword string) bool {
	lower := t.Lowered()
	i := strings.IndexAny(lower, ",;")
	if i < 0 || engine.PhraseIndex(lower[:i], keyword) < 0 || engine.PhraseIndex(lower[i:], keyword) >= 0 {
		return false
	}
	return saysNothing(engine.LowerText(toWhom.Replace(lower[:i])), false)
}

// toWhom are the words that say to whom an acknowledgement is said ("Sounds
// good to me"), which say nothing either.
var toWhom = strings.NewReplacer(" to me", "", " to us", "", " for me", "", " for us", "")

// noContent are the words a sentence that says nothing is made of.
var noContent = map[string]bool{"hmm": true, "hm": true, "hmmm": true, "um": true, "umm": true, "uh": true, "er": true,
	"erm": true, "well": true, "so": true, "oh": true, "ah": true, "i": true, "think": true, "guess": true, "suppose": true,
	"maybe": true, "perhaps": true, "probably": true, "possibly": true, "yes": true, "yeah": true, "yep": true, "no": true,
	"nope": true, "not": true, "ok": true, "okay": true, "sure": true, "that's": true, "that": true, "is": true, "right": true,
	"correct": true, "exactly": true, "absolutely": true, "definitely": true, "alright": true, "it": true, "you": true,
	"sense": true}

// greetings are the words that make a sentence a greeting ("Hi!", "Hello
// there", "Hey"), which answers no question either.
var greetings = map[string]bool{"hi": true, "hello": true, "hey": true, "hiya": true, "howdy": true, "greetings": true}

// acknowledgements are the words that make a sentence an acknowledgement
// ("Sounds good.", "Great, thanks!", "Got it, makes sense."), and
// appraisals those that, beside one, say nothing either.
var (
	acknowledgements = map[string]bool{"sounds": true, "thanks": true, "thank": true, "cheers": true, "got": true,
		"makes": true, "agreed": true, "noted": true, "understood": true}
	appraisals = map[string]bool{"good": true, "great": true, "fine": true, "perfect": true, "cool": true, "nice": true}
)

// asksBack reports whether a sentence asks the assistant what it meant
// ("What kind of constraints do you mean?", "Like what?"), which answers
// nothing; "What if a technician has no connection?" raises a case.
func asksBack(s sentence) bool {
	if !engine.IsQuestion(s.text) {
		return false
	}
	for _, p := range askBackPhrases {
		if s.lower.Contains(p) {
			return true
		}
	}
	return false
}

var askBackPhrases = []string{"you mean", "what kind of", "what sort of", "like what", "such as what", "what do you",
	"can you", "could you", "would you", "what counts as", "what is a", "what's a", "which ones"}

// continuations start a message that goes on with what the user was
// saying before the question.
var continuations = []string{"and ", "also ", "plus ", "oh and ", "oh, and ", "another thing", "don't forget about ",
	"don't forget ", "don’t forget ", "do not forget "}

// takeBackPhrases open a message that takes back what the user said last.
var takeBackPhrases = []string{"scratch that", "never mind", "nevermind", "forget that", "forget it", "ignore that",
	"strike that", "disregard that", "cancel that", "forget what i said", "ignore what i said"}

// takesBackLast reports whether a message opens, past its leads ("Sorry,
// …"), with a phrase that takes back what the user said last: not "Never
// mind the cost, we need it by October", which sets a topic aside and goes
// on to answer.
func takesBackLast(msg string) bool {
	s := strings.ReplaceAll(trimLeads(strings.TrimSpace(msg), leads), "’", "'")
	t := engine.LowerText(s) // once for all the phrases, as PhraseIndex would for each
	return slices.ContainsFunc(takeBackPhrases, func(p string) bool {
		if t.Index(p) != 0 {
			return false
		}
		if p != "never mind" && p != "nevermind" {
			return true
		}
		next, _, _ := strings.Cut(strings.TrimSpace(s[len(p):]), " ")
		return !strings.HasPrefix(s[len(p):], " ") || mindPointers[strings.ToLower(strings.TrimRight(next, ",.!;:"))]
	})
}

// lastUserMessage is the message the user sent before the prompt's, ""
// for none.
func lastUserMessage(p extraction.Prompt) string {
	for _, m := range slices.Backward(p.Conversation) {
		if m.Role == engine.RoleUser && m.Content != p.Message {
			return m.Content
		}
	}
	return ""
}

// mindPointers after "never mind" point back at what the user said ("Never
// mind that"), not at a topic set aside.
var mindPointers = map[string]bool{"that": true, "this": true, "it": true, "what": true, "me": true, "then": true}

// undone is the answer that takes off a known list the items the user's
// last message named ("Oh, and Mailchimp." then "Scratch that."), when
// items are left: a take-back that would empty a list says nothing of it.
func undone(p extraction.Prompt) (path string, _ fieldAnswer, ok bool) {
	said := contentWords(lastUserMessage(p))
	for _, f := range p.Fields {
		var list []string
		if f.ValueType != engine.TypeArray || !isKnown(f) || json.Unmarshal(f.Current, &list) != nil {
			continue
		}
		var gone []string
		for _, item := range list {
			if w := contentWords(item); len(w) > 0 && all(w, said) {
				gone = append(gone, "not "+item)
			}
		}
		if len(gone) == 0 || len(gone) == len(list) {
			continue
		}
		v, _ := grow(f.Current, gone, true)
		return f.Path, fieldAnswer{Value: v, Confidence: max(confCorrection, f.ConfidenceThreshold),
			Reasoning: "the user takes back what they added to " + f.DisplayName}, true
	}
	return "", fieldAnswer{}, false
}

// properName reports whether an item is a proper name: a few words, each
// capitalised or a figure ("Xero", "Google Calendar", "B&Q"), not a phrase
// that opens a sentence ("Typing everything twice").
func properName(it string) bool {
	words := strings.Fields(it)
	return len(words) > 0 && len(words) <= 4 && !slices.ContainsFunc(words, func(w string) bool {
		r, _ := utf8.DecodeRuneInString(w)
		return !unicode.IsUpper(r) && !unicode.IsDigit(r)
	}) && aName(it)
}

// aside is the answer to the names a message said aside opens with ("Oh,
// and Shopify too", "Don't forget Shopify"): they go on the one known list
// made of names, which they belong with; with none, or two, they answer
// nothing.
func aside(p extraction.Prompt, said string) (path string, _ fieldAnswer, ok bool) {
	var names []string
	for _, it := range SplitItems(said) {
		if !properName(it) {
			break
		}
		names = append(names, it)
	}
	if len(names) == 0 {
		return "", fieldAnswer{}, false
	}
	return growOneList(p, names, "the user adds to ", func(_ extraction.PromptField, list []string) bool {
		return len(list) > 0 && !slices.ContainsFunc(list, func(it string) bool { return !properName(it) })
	})
}

// growOneList is the answer that puts items on the one known list of p
// that fits them (fits reports it of a list field and its items), with a
// reasoning that opens with why; none that fits, or two, answer nothing.
func growOneList(p extraction.Prompt, items []string, why string,
	fits func(f extraction.PromptField, list []string) bool) (path string, _ fieldAnswer, ok bool) {
	var into *extraction.PromptField
	for i, f := range p.Fields {
		var list []string
		if f.ValueType != engine.TypeArray || !isKnown(f) || json.Unmarshal(f.Current, &list) != nil || !fits(f, list) {
			continue
		}
		if into != nil {
			return "", fieldAnswer{}, false
		}
		into = &p.Fields[i]
	}
	if into == nil {
		return "", fieldAnswer{}, false
	}
	v, changed := grow(into.Current, items, false)
	return into.Path, fieldAnswer{Value: v, Confidence: max(confFocus, into.ConfidenceThreshold),
		Reasoning: why + into.DisplayName}, changed
}

// hedges start an answer the user is not sure of; hedgeWords are the same
// anywhere in it.
var (
	hedges     = []string{"probably ", "maybe ", "perhaps ", "i think ", "i guess ", "i suppose ", "possibly "}
	hedgeWords = map[string]bool{"maybe": true, "perhaps": true, "probably": true, "possibly": true, "might": true, "guess": true}
)

// nothingMorePhrases say there is nothing more to tell; endPhrases do
// when nothing but fillers follow them ("I think we're done", not "We're
// done with paper").
var (
	nothingMorePhrases = []string{"nothing else", "nothing more", "nothing to add", "that's all", "that is all",
		"that's everything", "that's it", "that is it", "that's about it", "that is about it", "no others",
		"no other ones"}
	endPhrases = []string{"that covers it", "that covers everything", "that should cover it", "we're done",
		"we are done", "i'm done", "i am done"}
)

// nothingMoreAt is where a phrase in the lowered text says there is
// nothing more to tell, and its length; -1 for none.
func nothingMoreAt(lower string) (at, n int) {
	t := engine.LowerText(lower) // once for all the phrases, as PhraseIndex would for each
	for _, p := range nothingMorePhrases {
		if i := t.Index(p); i >= 0 {
			return i, len(p)
		}
	}
	for _, p := range endPhrases {
		if i := t.Index(p); i >= 0 && !slices.ContainsFunc(strings.FieldsFunc(lower[i+len(p):],
			func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }), func(w string) bool {
			return !noContent[w] && !acknowledgements[w] && !closingFillers[w]
		}) {
			return i, len(p)
		}
	}
	return -1, 0
}

// closingRemark reports whether a message only says that the user has
// nothing more to tell ("I think that covers it.", "That's everything for
// now.", "Nothing else."): each of its sentences says so, and its other
// words are fillers, thanks or a bare yes or no. It answers no question
// that asks for a value, and is nothing to reflect back.
func closingRemark(msg string) bool {
	ss := engine.Sentences(msg)
	for _, s := range ss {
		if engine.IsQuestion(s) {
			return false
		}
		rest := strings.ReplaceAll(strings.ToLower(s), "’", "'")
		i, n := nothingMoreAt(rest)
		if i < 0 {
			return false
		}
		rest = rest[:i] + " " + rest[i+n:]
		for _, w := range strings.FieldsFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
			if !noContent[w] && !acknowledgements[w] && !closingFillers[w] {
				return false
			}
		}
	}
	return len(ss) > 0
}

// closingFillers are the words a closing remark says beside its phrase
// ("That's everything for now", "I think that's pretty much it").
var closingFillers = engine.WordSet(`for now really pretty much all then just everything guys`)

// asksYesOrNo reports whether the question just asked wants a yes or a no.
func asksYesOrNo(p extraction.Prompt) bool {
	fields := focusFields(p)
	if len(fields) == 0 {
		return false
	}
	f := promptField(p, fields[0])
	return f != nil && f.ValueType == engine.TypeBoolean
}

// nothingMore reports whether a short sentence says there is nothing more.
func nothingMore(t engine.Text) bool {
	if len(strings.Fields(t.Lowered())) > 6 {
		return false
	}
	at, _ := nothingMoreAt(t.Lowered())
	return at >= 0
}

// sentence is a sentence of the message, prepared once for the cues of
// every field.
type sentence struct {
	text       string
	lower      engine.Text
	correction bool // it holds a correction marker
	ascii      bool // text is all ASCII: lower is what prefilters read
	// figures is text with the numbers it spells out in figures ("about
	// 40 technicians"): what the patterns of a number field read.
	figures string
	// takesOff is the path of a known list the sentence takes an item off
	// ("Double entry is no longer a problem actually, we fixed that last
	// week"): it is about that list, and the keywords of no other field
	// read it.
	takesOff string
	// items are SplitItems(text), split on the first call of itemsOf: what
	// every known list reads of the sentence for a take-back.
	items []string
	split bool
	// gone is what the sentence says is gone, read on the first call of
	// removed (goneRead): every known list reads it.
	gone     *goneSaid
	goneRead bool
	// asks and empty are asksBack and saysNothing(lower, false), read on
	// the first call of askedOrEmpty (askedRead) for the keywords of every
	// field.
	asks, empty, askedRead bool
}

// askedOrEmpty reports whether the sentence asks back what the assistant
// meant (asksBack) and whether it says nothing (saysNothing, feelings
// aside), read once for every field.
func (s *sentence) askedOrEmpty() (asks, empty bool) {
	if !s.askedRead {
		s.asks, s.empty, s.askedRead = asksBack(*s), saysNothing(s.lower, false), true
	}
	return s.asks, s.empty
}

// itemsOf is SplitItems(s.text), split once however many known lists read
// it. The slice is shared: read it, never write it.
func (s *sentence) itemsOf() []string {
	if !s.split {
		s.items, s.split = SplitItems(s.text), true
	}
	return s.items
}

func prepare(ss []string) []sentence {
	out := make([]sentence, len(ss))
	for i, s := range ss {
		out[i] = sentence{text: s, lower: engine.LowerText(s)}
		out[i].correction = extraction.CorrectionMarkerIn(out[i].lower) != ""
		out[i].ascii = isASCII(s)
		out[i].figures = figures(s)
	}
	return out
}

// growth is what it takes a keyword of a known list, in a sentence that
// neither asks about nor corrects it, to add to it.
type growth int

const (
	// growOnAny: no question was asked, any keyword will do.
	growOnAny growth = iota
	// growOnOpening: the cues of the question asked found nothing: a
	// sentence that opens with the keyword ("We could run a buddy system")
	// or says it adds ("we also have a deadline").
	growOnOpening
	// growOnAdding: the question's cues answered it: a sentence that says
	// it adds.
	growOnAdding
)

// matchField tries a field's cues: patterns, then values, then keywords.
// blocked reports a pattern that matched a sentence about the field while
// the field is known and the sentence neither asked about nor corrected it,
// or a sentence that says the quality a list's keyword names is not there.
//
// A known list is not left alone: a sentence that names items it lacks
// grows it, through a pattern, or a keyword as grows allows. Its answer is
// the whole list, the old items and the new, or, for a correction, the
// list with the item corrected. A sentence whose items are all on the list
// restates it, and answers nothing else; one that takes an item back ("Not
// Xero, it's QuickBooks") corrects it, keyword or not.
func matchField(f extraction.PromptField, held *heldList, sentences []sentence, known, inFocus bool, grows growth) (fa fieldAnswer, ok, blocked bool) {
	conf := func(base float64, s sentence) float64 {
		c := base
		if f.Cues.Confidence > 0 {
			c = f.Cues.Confidence
		}
		if s.correction {
			c = max(c, confCorrection)
		}
		return max(c, f.ConfidenceThreshold)
	}
	// A known field is left alone unless asked about or corrected.
	allowed := func(s sentence) bool {
		return !known || inFocus || s.correction
	}
	list := f.ValueType == engine.TypeArray
	// whole makes a list's items the whole list, corrected by them when
	// correct; changed is false when that is the list already (none, when
	// there was none).
	whole := func(v any, s sentence, correct bool) (any, bool) {
		if !list {
			return v, true
		}
		return grow(f.Current, v.([]string), correct && !adds(s.lower))
	}
	// strong reports whether a keyword lets a sentence grow a known list:
	// the keyword as the sentence's subject ("The biggest bottleneck is
	// …") does, whatever was asked.
	strong := func(s sentence, kw string) bool {
		switch {
		case !list:
			return false
		case grows == growOnAny || adds(s.lower) || keywordSubject(s.lower, kw):
			return true
		}
		return grows == growOnOpening && opensWith(s.lower, kw)
	}
	// none holds the sentences a pattern matched without its group
	// "value": what it matched is not the value, and the field's values and
	// keywords take nothing from them ("The secondary users are our field
	// technicians" names no primary user).
	var none map[int]bool
	for _, pat := range f.Cues.Patterns {
		c, err := compile(pat)
		if err != nil {
			continue
		}
		re := c.re
		for i, s := range sentences {
			// The number field asked about reads a number written in
			// words as the one in figures ("About forty technicians");
			// ("Two people in Lisbon will do it" answers who builds it,
			// not how many use it). Any other field reads it as a number
			// all the same: a pattern that needs it to be a word ("About
			// forty technicians" as a role) does not match.
			text := s.text
			if f.ValueType == engine.TypeNumber && inFocus {
				if countsBeside(s.lower) {
					// "Me and two part-timers": the word counts a part.
					continue
				}
				text = s.figures
			}
			if c.pf != nil && s.ascii && text == s.text && !c.pf.mayMatch(s.lower.Lowered()) {
				continue
			}
			loc := re.FindStringSubmatchIndex(text)
			if loc == nil || text != s.figures && re.FindStringIndex(s.figures) == nil {
				continue
			}
			if before := text[:loc[0]]; f.Cues.Firm && (engine.IsQuestion(s.text) ||
				tentative(before[strings.LastIndexAny(before, ",;:")+1:]) || hedgedChoice(text, loc)) {
				// "Should we go with the hosted one?", "If we go with the
				// hosted one, …" and "We'll go with Glofox, probably"
				// choose nothing.
				continue
			}
			m, start := submatches(text, loc), -1
			if g := re.SubexpIndex("value"); g > 0 && loc[2*g] >= 0 {
				// "Convenience for parents versus the fees": a value cut
				// at its preposition takes its head back.
				start = headed(text, loc[2*g])
				m[g] = text[start:loc[2*g+1]]
				if list {
					m[g] = beforeContrast(re, m[g]) // "Recharge, but I have never built software myself"
				}
			}
			free := allowed(s)
			if !free && !list {
				blocked = true
				continue
			}
			v, ok := patternValue(f.ValueType, re, m)
			if n, counted := groupsOf(f, s.figures); ok && counted {
				v = n // "About 900 subscribers and two staff" are 902 users
			}
			if !ok {
				if g := re.SubexpIndex("value"); g > 0 && loc[2*g] < 0 {
					if none == nil {
						none = map[int]bool{}
					}
					none[i] = true
				}
				continue
			}
			if start > 0 {
				v = subjectNamed(v, text[:start]) // "Mindbody looks powerful but it's too expensive"
			}
			if list {
				v = reopened(re, v.([]string)) // "I'm not sure how …, and I don't understand what …"
			}
			if g := re.SubexpIndex("value"); list && g > 0 && objectsAfter(text[:loc[2*g]]) {
				v = objects(v.([]string)) // "We sell to local cafes and deliver every morning"
			} else if list && g > 0 && usedBefore(text[:loc[2*g]]) {
				v = tools(v.([]string)) // "We use Square for the till and spreadsheets for orders"
			}
			if list && inFocus {
				if items := namedItems(text); len(items) > 1 && within(v.([]string), items) {
					// "Just me and my husband, and a tiny budget": the list
					// asked for is the things named, the budget with its
					// words.
					v = unreasoned(items)
				}
			}
			if list {
				// reopened took the remarks off ("I have 3 hours a week and
				// it's costing me sleep"), each run of items apart.
				v = append(keywordItems(f, text[:loc[0]]), v.([]string)...)
			}
			if v, ok = whole(v, s, s.correction); !ok {
				blocked = blocked || known
				continue
			}
			return fieldAnswer{Value: v, Confidence: conf(confPattern, s),
				Reasoning: fmt.Sprintf("matched the pattern of %s", f.DisplayName), byPattern: true}, true, false
		}
	}
	if len(none) > 0 {
		rest := make([]sentence, 0, len(sentences)-len(none))
		for i, s := range sentences {
			if !none[i] {
				rest = append(rest, s)
			}
		}
		sentences = rest
	}
	if fa, ok := matchValues(f, sentences, allowed, conf); ok {
		return fa, true, false
	}
	// fears says the field's keywords name fears: a sentence that says
	// there is none names none of its items. It is read (fearsRead) once
	// a keyword is found, which most fields' are not; the field's values,
	// which a sentence restates, once one is found where it may not say
	// them.
	fears, fearsRead := false, false
	var values []string
	valuesRead := false
	for i, s := range sentences {
		if asks, empty := sentences[i].askedOrEmpty(); asks || s.takesOff != "" || list && empty {
			// "What kind of constraints do you mean?" names none, nor does
			// an acknowledgement ("Sounds good.") a reaction; "Double
			// entry is no longer a problem" takes an item off (see below),
			// and names no other field's.
			continue
		}
		for _, kw := range f.Cues.Keywords {
			if !s.lower.Contains(kw) || list && (asksWhich(s, kw) || othersDrop(s.lower, kw) || lacking(s.lower, kw) ||
				acknowledgedFirst(s.lower, kw)) {
				// "Which options are there for …?" asks for the items, and
				// names none; "Customers drop the bike in November" drops
				// no idea.
				continue
			}
			if !fearsRead {
				fears, fearsRead = slices.ContainsFunc(f.Cues.Keywords, func(kw string) bool {
					for w := range strings.FieldsSeq(kw) {
						if fear(w) {
							return true
						}
					}
					return false
				}), true
			}
			if fears && unafraid(s.lower) {
				// "I'm not worried about rent" names no risk, nor "We're
				// not afraid of lock-in" a con, and is about them: it
				// answers no other question.
				blocked = true
				continue
			}
			from := kw
			if fears {
				// "I am afraid of lock-in": the fear, not the con it names,
				// introduces the item.
				from = fearBefore(s.lower, kw)
			}
			v, ok := valueFromText(f.ValueType, s.text, from)
			if n, counted := groupsOf(f, s.figures); ok && counted {
				v = n // "We're a team of 40 technicians and 5 office staff"
			}
			if text, isText := v.(string); ok && isText {
				v = ideasWanted(text) // "Let's find ideas to grow wholesale orders"
			}
			correct, said, denied := s.correction, false, false
			if ok && list {
				// "Pret isn't a competitor, it's Costa" corrects the
				// competitors, as "actually" would; "Pret and Costa are
				// our competitors" names them, whatever was asked.
				// Unless classed dropped the item it denies ("The app isn't
				// slow, but it crashes a lot"), a keyword a negation stands
				// before names no item.
				n := len(v.([]string))
				v, correct, said = classed(v.([]string), kw, correct)
				denied = asserted(s.lower, kw) < 0 && len(v.([]string)) == n
				if denied {
					// "It doesn't sync with Xero any more" takes Xero off
					// the list, and adds nothing but what the user keeps
					// instead ("…, just Shopify").
					v, correct = deny(v.([]string)), true
				}
				if len(v.([]string)) == 0 || denied && !known {
					// "The app isn't slow" names no pain point, nor "It
					// does not sync with Xero" an integration, and is
					// about them: it answers no other question.
					blocked = true
					continue
				}
			}
			if !allowed(s) && !correct && !said && !strong(s, kw) {
				// A keyword alone ("technicians") is too weak a sign that the
				// message is about the known field to keep it from
				// answering the question asked; with the field's value
				// ("it's for our field technicians", when that is known)
				// it is a restatement. A keyword that opens the sentence or is
				// its subject ("Per unit mostly, …" when the pricing is known)
				// says the sentence is about the field, and answers no other.
				if !blocked && !valuesRead {
					values, valuesRead = currentValues(f.Current), true
				}
				blocked = blocked || restates(s, values) || leading(s.lower, kw)
				continue
			}
			if ok {
				if v, ok = whole(v, s, correct); !ok {
					blocked = blocked || known
					continue
				}
				c := conf(confKeyword, s)
				if denied {
					c = max(c, confCorrection)
				}
				return fieldAnswer{Value: v, Confidence: c,
					Reasoning: fmt.Sprintf("the sentence mentions %q", kw), keyword: kw}, true, false
			}
		}
	}
	for i, s := range sentences {
		if !list || len(f.Current) == 0 {
			break
		}
		// "Actually not Xero, it's QuickBooks" names no keyword, but an
		// item of the list, which it corrects. Only an item that says "not"
		// takes one back: a sentence without the word is not split.
		var items []string
		took := false
		if strings.Contains(s.lower.Lowered(), "not") {
			items = denials(held, sentences[i].itemsOf())
			took = takesBack(held, items)
		}
		if took {
			items = corrections(items)
			if i+1 < len(sentences) {
				items = append(items, meant(sentences[i+1])...) // "No, not Shopify. Square."
			}
		} else {
			items = removed(held, &sentences[i]) // "Forget Shopify.", "Shopify is no longer needed."
		}
		if len(items) == 0 {
			continue // nothing taken back: the list as it is (grow would decode it to say so)
		}
		if v, ok := grow(f.Current, items, true); ok {
			return fieldAnswer{Value: v, Confidence: max(conf(confCorrection, s), confCorrection),
				Reasoning: "the sentence takes back an item of " + f.DisplayName}, true, false
		}
	}
	return fieldAnswer{}, false, blocked
}

// beforeContrast is a list's value up to a "but" that opens a clause of
// the user's ("I've heard of Recharge, but I have never built software
// myself"): what the user says of themselves after it is no item. A
// clause after it that the list's pattern reads again ("We're looking at
// Mindbody but I've heard of Glofox too") names more items: the value
// goes on with them.
func beforeContrast(re *regexp.Regexp, v string) string {
	loc := userContrast.FindStringIndex(v)
	if loc == nil || loc[0] == 0 {
		return v
	}
	rest := v[loc[0]:]
	if g := re.SubexpIndex("value"); g > 0 {
		if m := re.FindStringSubmatchIndex(rest); m != nil && m[2*g] > 0 && strings.Trim(rest[:m[0]], " ,") == "" {
			return v[:loc[0]] + ", " + beforeContrast(re, rest[m[2*g]:m[2*g+1]])
		}
	}
	return v[:loc[0]]
}

var userContrast = regexp.MustCompile(`(?i)(?:,\s*|\s+)but\s+(?:i|we)(?:['’](?:ve|m|re|d|ll))?\b`)

// reopened are a pattern's items, each past the words of the pattern that
// open it again after the user: "I'm not sure how the apps plug into our
// Shopify store and I don't understand what a custom build would cost" is
// unsure of how the apps plug in and of what a custom build would cost,
// not of "I don't understand what …". The first item is the pattern's
// value already. An item opened again starts the items anew: the remarks
// on those before it ("it's all new to me") end there, and its own words
// ("which is cheapest", "who handles the support") are no remark, which
// unreasoned, run on the items from each such one on, would take them
// for.
func reopened(re *regexp.Regexp, items []string) []string {
	g := re.SubexpIndex("value")
	if g <= 0 {
		return unreasoned(items)
	}
	var out []string
	from := 0
	for i := 1; i < len(items); i++ {
		loc := re.FindStringSubmatchIndex(items[i])
		if loc == nil || loc[2*g] < 0 || loc[2*g] == 0 || !userOnly(items[i][:loc[0]]) {
			continue
		}
		if v := cleanSentence(items[i][loc[2*g]:loc[2*g+1]]); v != "" {
			out = append(out, unreasoned(items[from:i])...)
			items[i], from = v, i
		}
	}
	return append(out, unreasoned(items[from:])...)
}

// userOnly reports whether the words before a cue's match say only who
// speaks ("I", "we", "I'm", "we've really"): nothing of their own.
func userOnly(before string) bool {
	for _, w := range strings.Fields(strings.ToLower(strings.ReplaceAll(before, "’", "'"))) {
		if w != "i" && w != "we" && !userSubjects[w] && !negationFillers[w] && !copulas[w] {
			return false
		}
	}
	return true
}

// headed is where a pattern's value that opens at start in text begins,
// when it opens with a preposition, and no amount follows it ("in 3
// years"): at the head the preposition qualifies,
// the word before it in its clause ("Convenience for parents versus the
// fees"), or past the preposition when that word is none ("It comes down
// to price versus control", "It's about price versus control").
func headed(text string, start int) int {
	first, rest, _ := strings.Cut(text[start:], " ")
	if !headPrepositions[strings.ToLower(first)] || amount(rest) {
		return start // "about 5000 pounds", "in 3 years": a sum, a time
	}
	before := strings.TrimRight(text[:start], " ")
	i := strings.LastIndexAny(before, " ,;:()") + 1
	if w := strings.ToLower(strings.ReplaceAll(before[i:], "’", "'")); w != "" && unicode.IsLetter([]rune(w)[0]) &&
		!clauseWord(w) && !predicateWords[w] && !verbsBefore[w] && !functionWords[w] && !particles[w] &&
		!determiners[w] && !headPrepositions[w] && !isLead(w) && !roughly[w] {
		return i
	}
	return start + len(first) + len(text[start+len(first):]) - len(strings.TrimLeft(text[start+len(first):], " "))
}

var (
	// headPrepositions open a phrase that qualifies the word before it.
	headPrepositions = engine.WordSet(`for of to with about from in on at into over against`)
	// particles end a phrasal verb before a preposition ("comes down to").
	particles = engine.WordSet(`down up out off back comes come boils boil matters matter depends depend`)
)

// namedItems are the items of a sentence that names things and says
// nothing of them ("Just me and my husband, and a tiny budget"), without
// the "just" that keeps them to those; nil for a sentence with a verb or a
// negation in it.
func namedItems(text string) []string {
	items := SplitItems(text)
	for i, it := range items {
		for _, w := range strings.Fields(strings.ToLower(strings.ReplaceAll(it, "’", "'"))) {
			if verbWords[w] || predicateWords[w] || strings.HasSuffix(w, "n't") || nothingWords[w] {
				return nil
			}
		}
		items[i] = trimLeads(it, keepLeads)
	}
	return items
}

// within reports whether each of values is part of one of items.
func within(values, items []string) bool {
	return !slices.ContainsFunc(values, func(v string) bool {
		return !slices.ContainsFunc(items, func(it string) bool { return engine.PhraseIndex(it, v) >= 0 })
	})
}

// usedBefore reports whether the items after text are what the user uses:
// it ends with "use".
func usedBefore(text string) bool {
	words := strings.Fields(strings.ToLower(text))
	return len(words) > 0 && (words[len(words)-1] == "use" || words[len(words)-1] == "uses")
}

// tools are the things items say are used for something, without what
// for ("Square for the till" is Square).
func tools(items []string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if thing, _, ok := strings.Cut(it, " for "); ok && strings.TrimSpace(thing) != "" {
			it = strings.TrimSpace(thing)
		}
		out = append(out, it)
	}
	return out
}

// keywordItems are the items a keyword of the list f introduces in the
// clauses before a pattern's match ("Success would be no more missed
// cleans, and I want to cut …"): the pattern's item is not the only one.
func keywordItems(f extraction.PromptField, before string) []string {
	i := strings.LastIndexAny(before, ",;")
	if i < 0 {
		return nil
	}
	before = before[:i]
	t := engine.LowerText(before)
	for _, kw := range f.Cues.Keywords {
		if asserted(t, kw) < 0 {
			continue
		}
		if v, ok := valueFromText(engine.TypeArray, before, kw); ok {
			return unreasoned(v.([]string))
		}
		return nil
	}
	return nil
}

// fear reports whether a word names a fear ("worried", "concerns",
// "afraid").
func fear(w string) bool {
	w = strings.ToLower(w)
	return strings.HasPrefix(w, "worr") || strings.HasPrefix(w, "concern") || fearWords[w]
}

var fearWords = map[string]bool{"afraid": true, "scared": true, "fear": true, "fears": true, "nervous": true}

// fearBefore is the first word of t that names a fear, said and not
// taken back, if it stands before keyword; else keyword.
func fearBefore(t engine.Text, keyword string) string {
	at := t.Index(keyword)
	for _, w := range strings.FieldsFunc(t.Lowered(), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		if !fear(w) {
			continue
		}
		if i := asserted(t, w); i >= 0 && i < at {
			return w
		}
	}
	return keyword
}

// unafraid reports whether a sentence says a fear of it is not there ("I'm
// not worried about rent", "No concerns about pricing"), and names none
// that is.
func unafraid(t engine.Text) bool {
	denied := false
	for _, w := range strings.FieldsFunc(t.Lowered(), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		if !fear(w) {
			continue
		}
		if t.Asks(w) {
			return false
		}
		denied = true
	}
	return denied
}

// asserted is the offset of the first occurrence of keyword in t that no
// negation right before it takes back ("does not sync with", "don't need
// to integrate with", "no competitors", "not really considering"), or -1.
// A negation further back is part of what the sentence says
// ("Technicians can't see their jobs and it's frustrating"); "why not"
// and "not only" ask and add, and a negation under an "if" sets a
// condition the user holds to ("if it doesn't sync with Xero, we won't buy
// it"), unless the sentence accepts it ("It's fine if it doesn't
// integrate with Shopify"). A copula's negation before a determiner
// ("Pret isn't a competitor") says what an item is not: classed reads it.
func asserted(t engine.Text, keyword string) int {
	lower, n := t.Lowered(), len(strings.ToLower(strings.TrimSpace(keyword)))
	accepts := slices.ContainsFunc(acceptances, func(p string) bool {
		return strings.Contains(strings.ReplaceAll(lower, "’", "'"), p)
	})
	for from := 0; from < len(lower); {
		// Past an occurrence, at the word boundary it ends on.
		i := engine.LowerText(lower[from:]).Index(keyword)
		if i < 0 {
			return -1
		}
		i += from
		if !negatedBefore(lower[:i], accepts) {
			return i
		}
		from = i + n
	}
	return -1
}

// acceptances say the user accepts what a condition brings ("It's fine
// if …", "…, that's ok").
var acceptances = []string{"that's fine", "it's fine", "is fine", "be fine", "that's ok", "it's ok", "be ok",
	"that's okay", "it's okay", "happy if", "happy for", "no problem", "not a problem", "doesn't matter",
	"don't mind", "no big deal", "not a big deal", "can live with"}

// negatedBefore reports whether before, the text up to a keyword, ends
// with a negation and fillers ("does not", "don't need to", "no"); one
// under an "if" does not, unless the sentence accepts what it brings.
func negatedBefore(before string, accepts bool) bool {
	if i := strings.LastIndexAny(before, ".!?;:,"); i >= 0 {
		before = before[i+1:]
	}
	words := strings.FieldsFunc(strings.ReplaceAll(before, "’", "'"), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	determined := false // a determiner stands between
	for k := len(words) - 1; k >= 0; k-- {
		w := words[k]
		if negationFillers[w] || determiners[w] || classFiller[w] {
			determined = determined || determiners[w]
			continue
		}
		prev, next := "", ""
		if k > 0 {
			prev = words[k-1]
		}
		if k+1 < len(words) {
			next = words[k+1]
		}
		switch {
		case w == "not" && (prev == "why" || next == "only" || next == "just"):
			return false
		case w == "not" && determined && (copulas[prev] || strings.HasSuffix(prev, "'s") || strings.HasSuffix(prev, "'re")):
			return false // "Pret is not one of our competitors"
		case !accepts && slices.Contains(words[:k], "if"):
			return false // "It's useless if it can't sync with Xero" wants Xero
		case denyingVerbs[w]:
			return !determined // "Pret isn't a competitor"
		}
		return w == "not" || w == "no" || w == "never" || w == "nor" || w == "cannot" || strings.HasSuffix(w, "n't")
	}
	return false
}

// negationFillers stand between a negation and what it takes back ("don't
// really need to sync with", "not too worried", "don't need it to
// integrate with").
var negationFillers = map[string]bool{"really": true, "even": true, "ever": true, "currently": true, "yet": true,
	"necessarily": true, "too": true, "so": true, "very": true, "at": true, "all": true, "need": true, "needs": true,
	"to": true, "have": true, "has": true, "be": true, "been": true, "any": true, "want": true, "going": true,
	"able": true, "plan": true, "planning": true, "it": true}

// grow is the list current (JSON, nil for none) becomes with items. An
// item whose words an item of the list holds already is on it ("budget"
// in "budget of 5000 dollars"); the others are added or, when correct,
// each replaces the item it shares the most words with ("budget is 8000
// dollars" the "budget of 5000 dollars"), if any. An item that says "not
// X" names no item: when correct, it takes off the list an item that holds
// X's words ("Actually not Xero, it's QuickBooks"); "not X but Y" names Y;
// but "not enough X" is an item, a lack.
// changed reports whether the list is not what it was.
func grow(current json.RawMessage, items []string, correct bool) (list []any, changed bool) {
	_ = json.Unmarshal(current, &list) // none, unless a list
	replaced := map[string]bool{}      // the items put in for others
	for _, item := range items {
		if correct {
			item = trimLeads(item, correctionLeads)
		}
		item = trimLeads(item, []string{"but"}) // "not Xero, but QuickBooks"
		if x, instead, ok := notItem(item); ok {
			// Only an item that holds X, and that this correction did not
			// just put in ("I meant Outlook calendar, not Google Calendar").
			if i, holds := closest(list, x, replaced); correct && holds {
				list, changed = slices.Delete(list, i, i+1), true
				if _, on := closest(list, instead, nil); instead != "" && !on {
					list, replaced[instead] = slices.Insert(list, i, any(instead)), true
				}
				continue
			}
			if item = instead; item == "" {
				continue
			}
		}
		if _, on := closest(list, item, nil); on {
			continue
		}
		changed = true
		if i, _ := closest(list, item, replaced); correct && i >= 0 {
			list[i], replaced[item] = item, true
			continue
		}
		list = append(list, item)
	}
	return list, changed
}

// notItem reads an item that says "not X": X, and the item it names
// instead ("not X but Y" names Y, "not only Xero but also QuickBooks"
// QuickBooks); ok is false for any other item, and for a lack ("not
// enough demand"), which is an item.
func notItem(item string) (x, instead string, ok bool) {
	w, rest, _ := strings.Cut(item, " ")
	if !strings.EqualFold(w, "not") || lack(rest) {
		return "", "", false
	}
	x, instead, _ = strings.Cut(rest, " but ")
	return x, trimLeads(strings.TrimSpace(instead), leads), true
}

// heldList is the list a known list field holds (current), with the words
// of each item: what the take-backs of every sentence compare. It is
// decoded once a call, by the first sentence that may take an item back
// (holds): most take none, and leave it undecoded.
type heldList struct {
	current    json.RawMessage
	read, list bool // read: decoded; list: current holds a list of strings
	items      []string
	words      []map[string]bool // contentWords of each item
}

// holds decodes the list on its first call, and reports whether current
// holds a list of strings: none (nor a nil heldList) has an item to take
// off.
func (h *heldList) holds() bool {
	if h == nil {
		return false
	}
	if !h.read {
		h.read = true
		if h.list = json.Unmarshal(h.current, &h.items) == nil; h.list {
			h.words = make([]map[string]bool, len(h.items))
			for i, it := range h.items {
				h.words[i] = contentWords(it)
			}
		}
	}
	return h.list
}

// takesBack reports whether one of a sentence's items says "not X" of an
// item of the list held, X naming the whole item ("Actually not
// Xero, it's QuickBooks", "It's not Xero"): the sentence corrects that
// list, whatever was asked. "Not now" names no item that holds "now"; a
// sentence that names another item of the list chooses between them
// ("Jobber, not a custom build", "Just the job list, not offline mode"),
// and takes nothing back, unless it says something of it after the
// take-back ("Not Xero, and Shopify is optional").
func takesBack(held *heldList, items []string) bool {
	if !slices.ContainsFunc(items, saysNot) || !held.holds() {
		return false // no "not X", which only can take an item back: most sentences
	}
	took, keeping := false, false // keeping: an item after the take-back says what the user keeps ("just Xero")
	for _, it := range items {
		keeping = keeping || took && trimLeads(it, keepLeads) != it
		x, _, ok := notItem(trimLeads(trimLeads(it, correctionLeads), []string{"but"}))
		named := contentWords(x)
		if !ok {
			named = contentWords(it)
		}
		for _, words := range held.words {
			switch {
			case len(words) == 0 || !all(words, named):
			case !ok && took && (remarks(it) || keeping):
				// "Not Xero, and Shopify is optional" says something of
				// Shopify after the take-back, and keeps it, as "Not
				// Shopify, just Xero and Square" keeps Xero and Square;
				// "The job list is enough, not offline mode" chooses.
			case !ok:
				return false // the sentence names the item: a choice
			case all(named, words):
				took = true
			}
		}
	}
	return took
}

// saysNot reports whether an item says "not X" (notItem) past the lead of
// a correction or a "but" ("Actually not Xero", "but not Shopify").
func saysNot(item string) bool {
	_, _, ok := notItem(trimLeads(trimLeads(item, correctionLeads), []string{"but"}))
	return ok
}

// remarks reports whether an item is a clause, a predicate after its
// subject ("Shopify is optional", "the job list can wait"), not a name.
func remarks(item string) bool {
	words := strings.Fields(strings.ToLower(item))
	return len(words) > 1 && slices.ContainsFunc(words[1:], func(w string) bool { return predicateWords[w] || copulas[w] })
}

// denials spreads the "not" of an item that takes one back over the
// items after it that name items of the list held, and over the
// items of the list it joins with "or" ("Actually not Xero and Shopify",
// "Not Xero or Shopify"): each is taken back. An item that says more than
// an item of the list ("…, and Shopify is optional") or that a correction
// leads into ("…, it's QuickBooks") is none of them.
func denials(held *heldList, items []string) []string {
	if !held.holds() {
		return items
	}
	// listed are the items of the list s names, one or more joined by "or".
	listed := func(s string) []string {
		parts := strings.Split(s, " or ")
		for _, p := range parts {
			w := contentWords(p)
			if len(w) == 0 || !slices.ContainsFunc(held.words, func(l map[string]bool) bool { return maps.Equal(l, w) }) {
				return nil
			}
		}
		return parts
	}
	out := make([]string, 0, len(items))
	denying := false // the items before took items of the list back
	for _, it := range items {
		var named []string
		but := ""
		if x, instead, not := notItem(trimLeads(it, correctionLeads)); not {
			named = listed(x)
			if instead != "" {
				but = " but " + instead
			}
		} else if denying && trimLeads(it, correctionLeads) == it && trimLeads(it, keepLeads) == it {
			named = listed(it) // "Not Xero, Shopify": not "Not Shopify, just Xero"
		}
		if denying = named != nil && but == ""; named == nil {
			out = append(out, it)
		}
		for i, n := range named {
			if i == len(named)-1 {
				n += but // "not Xero or Shopify but QuickBooks" puts QuickBooks in
			}
			out = append(out, "not "+n)
		}
	}
	return out
}

// keepLeads lead into what the user keeps after a take-back ("Not Shopify,
// just Xero").
var keepLeads = []string{"just", "only"}

// deny makes "not" items of the items a negated keyword introduces, up to
// the first one a keepLead opens ("doesn't need to sync with Shopify, just
// Xero"): that one, without its lead, and those after it are what the
// user keeps. Only a known list takes them: "We don't need to sync with
// Shopify, just Xero" names no job of the users.
func deny(items []string) []string {
	out := make([]string, 0, len(items))
	for i, it := range items {
		if rest := trimLeads(it, keepLeads); i > 0 && rest != it {
			return append(append(out, rest), items[i+1:]...)
		}
		out = append(out, "not "+it)
	}
	return out
}

// corrections are the items of a sentence that takes an item back which
// correct the list: the "not X" (with its "but Y"), those a correction or
// a "but" leads into ("it's QuickBooks", "not Xero, but QuickBooks"), and
// the names after those or after the "not X" ("it is QuickBooks and
// Shopify", "Not Pret, sorry, Costa", "Not Shopify, just Xero and
// Square"); a remark beside
// them ("Not double entry, we fixed that") is no item.
func corrections(items []string) []string {
	var out []string
	meaning, taken := false, false // the item before gave what the user meant, or took one back
	for _, it := range items {
		if kept := trimLeads(it, keepLeads); taken && kept != it {
			it = kept // "Not Shopify, just Xero and Square"
		}
		_, _, not := notItem(trimLeads(trimLeads(it, correctionLeads), []string{"but"}))
		led := trimLeads(it, correctionLeads) != it || trimLeads(it, []string{"but"}) != it
		first, _, _ := strings.Cut(strings.ToLower(it), " ")
		name := !not && (meaning && !predicateWords[first] && !remarks(it) || taken && aName(it))
		if not || led || name {
			out = append(out, it)
		}
		meaning, taken = led || name, not || taken && name
	}
	return out
}

// aName reports whether an item with no lead into it is a name the user
// means after a take-back ("Costa", "Caffe Nero"), not a clause, an
// apology ("my bad", "sorry about that") or a pointer ("the other one").
func aName(it string) bool {
	r, _ := utf8.DecodeRuneInString(it)
	first, _, _ := strings.Cut(strings.ToLower(it), " ")
	return unicode.IsUpper(r) && !predicateWords[first] && !determiners[first] && !pointers[first] && !remarks(it)
}

// removed are "not X" for each item of the list held that a
// sentence says is gone, without saying "not X" of it ("Forget Shopify",
// "Shopify is no longer needed", "We don't need Shopify after all", "We
// don't use Shopify any more"): the sentence takes it off its list. What
// the user keeps after it ("…, just Xero") is not gone, nor is what they
// ask about, say not to forget or that someone forgets, or wish gone ("We
// want it so that double entry is no longer a thing" names a pain point
// still there).
func removed(held *heldList, s *sentence) []string {
	if held == nil {
		return nil
	}
	if !s.goneRead {
		s.gone, s.goneRead = goneIn(*s), true
	}
	g := s.gone
	if g == nil || !held.holds() {
		return nil
	}
	said := g.said
	if g.pointed {
		said = contentWords(pointedAt(g.before, held))
	}
	var out []string
	for i, item := range held.items {
		// What the sentence says is gone, when it names it ("Paper flyers
		// are no longer worth it, we put everything on Instagram"), is the
		// only item that goes.
		w := held.words[i]
		if len(w) > 0 && all(w, said) && (g.gone && (len(g.subject) == 0 || all(w, g.subject)) || g.pointed || all(w, g.dropped)) ||
			g.gone && len(g.subject) > 0 && all(g.subject, w) {
			out = append(out, "not "+item)
		}
	}
	return out
}

// goneSaid is what a sentence says is gone, whatever list holds it: read
// once a call (goneIn), for every known list.
type goneSaid struct {
	// gone: the sentence says something is no longer there, or forgets
	// it; subject holds the words of what a copula or a verb before the
	// negation says is gone.
	gone    bool
	subject map[string]bool
	// dropped holds the words after a verb that drops what follows it.
	dropped map[string]bool
	// said holds the words of the sentence, up to what the user keeps; an
	// item that goes holds them all. Where pointed, "it" after the drop
	// verb points back at an item the clause before names: the words are
	// those of the clause of before that names an item of the list.
	said    map[string]bool
	pointed bool
	before  string
}

// goneIn reads what a sentence says is gone (see removed); nil for
// nothing, and for a question.
func goneIn(s sentence) *goneSaid {
	if engine.IsQuestion(s.text) {
		return nil
	}
	part := strings.ReplaceAll(s.lower.Lowered(), "’", "'")
	for _, keep := range []string{", just ", ", only ", " but "} {
		part, _, _ = strings.Cut(part, keep)
	}
	words := strings.FieldsFunc(part, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	gone, negated, wished, pointed := false, false, false, false
	before := ""
	var dropped map[string]bool // the words after a verb that drops what follows it
	// subject holds the words of what a copula before the negation says is
	// gone ("Double entry is no longer a problem", "Double entry isn't an
	// issue any more"): an item that holds them is gone.
	var subject map[string]bool
	subjectBefore := func(at int) {
		switch {
		case subject != nil:
		case at > 0 && copulas[words[at-1]]:
			subject = contentWords(trimLeads(strings.Join(words[:at-1], " "), leads))
		case at < len(words) && denyingVerbs[words[at]]:
			subject = contentWords(trimLeads(strings.Join(words[:at], " "), leads))
		}
	}
	for i, w := range words {
		switch {
		case wishes[w] && (w != "so" || i+1 < len(words) && words[i+1] == "that"):
			// "so that …" wishes; "…, so we're shutting it down" goes on.
			wished = true // "We want double entry to be a thing of the past, no longer …"
		case dropVerbs[w]:
			// "We stopped the landscaping jobs", "We're dropping Shopify",
			// "Let's drop Shopify": not "We didn't drop Shopify", nor what
			// the user wants to stop, nor "dropped calls", an item named by
			// the verb, nor what dropped of itself ("Our revenue dropped
			// when BrightView opened").
			if !wished && dropped == nil && userDrops(words[:i]) {
				// What is dropped ends where a clause of why or when
				// begins ("… because Glofox is cheaper" keeps Glofox).
				obj := words[i+1:]
				if j := slices.IndexFunc(obj, func(w string) bool { return clauseOpeners[w] }); j >= 0 {
					obj = obj[:j]
				}
				if closeVerbs[w] {
					if obj = closedObject(obj); obj == nil {
						continue
					}
				}
				obj = slices.DeleteFunc(obj, func(w string) bool { return dropParticles[w] })
				dropped = contentWords(strings.Join(obj, " "))
				// "…, so we're closing it": what "it" points back at, an
				// item the clause before names, goes.
				if len(dropped) == 0 && slices.ContainsFunc(obj, func(w string) bool { return pointers[w] || w == "them" }) {
					pointed, before = true, part[:max(engine.PhraseIndex(part, w), 0)]
				}
			}
		case i > 0 && words[i-1] == "no" && w == "longer":
			if !wished && dropping(words[i+1:]) {
				gone = true
				subjectBefore(i - 1)
			}
		case w == "forget":
			// "Forget Shopify", "We can forget Shopify": not "The techs
			// forget to log their jobs", nor "Don't forget Shopify".
			gone = gone || !slices.ContainsFunc(words[:i], func(w string) bool { return !forgetLeads[w] }) ||
				words[i-1] == "can"
		case negation(w):
			if dropping(words[i+1:]) {
				negated = true
				subjectBefore(i)
			}
		}
	}
	padded := " " + strings.Join(words, " ") + " "
	for _, p := range []string{" after all ", " any more ", " anymore ", " any longer "} {
		gone = gone || negated && strings.Contains(padded, p)
	}
	if !gone && dropped == nil {
		return nil
	}
	g := &goneSaid{gone: gone, subject: subject, dropped: dropped, pointed: pointed, before: before}
	if !pointed {
		g.said = contentWords(part)
	}
	return g
}

// closedObject is what a close verb closes, of the words after it: the
// thing it names, up to an "and" or a preposition ("Shut the door and the
// bread stays warm" shuts the door); nil for a close that drops nothing: a
// pause ("We close the tours on Mondays"), a time ("Closing time, the bread
// is half price") or a deal made ("We just closed a deal to sell our
// bread").
func closedObject(obj []string) []string {
	if slices.ContainsFunc(obj, func(w string) bool { return closedFor[w] }) {
		return nil
	}
	if j := slices.IndexFunc(obj, func(w string) bool { return w == "and" || headPrepositions[w] }); j >= 0 {
		obj = obj[:j]
	}
	if i := slices.IndexFunc(obj, func(w string) bool { return !determiners[w] && !quantities[w] }); i >= 0 && notClosed[obj[i]] {
		return nil
	}
	return obj
}

// pointedAt is the clause of before, the words up to a drop verb, that
// names an item of held, the nearest to the verb: what an "it" after the
// verb points back at ("The bread sells well, the coffee never paid, so
// we're closing it" closes the coffee).
func pointedAt(before string, held *heldList) string {
	for before != "" {
		at, next := -1, 0
		for _, br := range clauseBreaks {
			if i := strings.LastIndex(before, br); i > at {
				at, next = i, i+len(br)
			}
		}
		clause := contentWords(before[next:])
		if slices.ContainsFunc(held.words, func(w map[string]bool) bool { return len(w) > 0 && all(w, clause) }) {
			return before[next:]
		}
		if at < 0 {
			break
		}
		before = before[:at]
	}
	return ""
}

// dropping reports whether the words after a negation deny that the user
// has, needs or uses something ("… no longer needed", "don't use …",
// "isn't a problem", "no longer compete with …"), not a quality of it
// ("Xero is no longer optional"), what they can bear ("I can't take the
// double entry any more") or do without.
func dropping(after []string) bool {
	for _, w := range after {
		if !dropFillers[w] {
			return droppingWords[w]
		}
	}
	return false
}

var (
	dropFillers = map[string]bool{"really": true, "even": true, "ever": true, "currently": true, "actually": true,
		"be": true, "been": true, "being": true, "to": true, "at": true, "all": true, "going": true}
	droppingWords = map[string]bool{"need": true, "needs": true, "needed": true, "use": true, "uses": true, "used": true,
		"using": true, "have": true, "has": true, "had": true, "require": true, "requires": true, "required": true,
		"necessary": true, "sell": true, "selling": true, "sold": true, "work": true, "working": true, "compete": true,
		"competing": true, "sync": true, "syncing": true, "integrate": true, "integrating": true, "connect": true,
		"connecting": true, "a": true, "an": true, "relevant": true, "problem": true, "issue": true, "matter": true,
		"matters": true, "apply": true, "applies": true, "there": true, "happen": true, "happening": true, "around": true,
		"worth": true}
)

// dropVerbs say the user drops what follows them; closeVerbs are those
// that close it, which a time they close it for or on makes a pause
// (closedFor: "We close the tours on Mondays"). dropParticles end a
// phrasal drop verb ("shutting it down").
var (
	dropVerbs = map[string]bool{"stopped": true, "stopping": true, "dropped": true, "dropping": true, "drop": true,
		"ditched": true, "ditching": true, "ditch": true, "scrapped": true, "scrapping": true, "scrap": true,
		"cancelled": true, "canceled": true, "cancelling": true, "canceling": true, "closing": true, "close": true,
		"closed": true, "shutting": true, "shut": true}
	closeVerbs = map[string]bool{"closing": true, "close": true, "closed": true, "shutting": true, "shut": true}
	closedFor  = map[string]bool{"on": true, "at": true, "for": true, "early": true, "every": true, "over": true,
		"during": true, "until": true, "till": true, "temporarily": true, "briefly": true, "weekends": true}
	dropParticles = map[string]bool{"down": true, "off": true}
	// notClosed are what a close verb closes that is no drop: a deal made,
	// a time ("closing time").
	notClosed = engine.WordSet(`deal deals sale sales order orders contract contracts gap loop round time times hours
		day`)
)

// userDrops reports whether the words before a drop verb make the user
// its subject: a pronoun of theirs shortly before it, unnegated ("we
// stopped", "we've finally scrapped"), or none but leads ("Actually, let's
// drop …", "Drop Shopify").
func userDrops(before []string) bool {
	near := before[max(len(before)-3, 0):]
	if slices.ContainsFunc(near, negation) {
		return false
	}
	return slices.ContainsFunc(near, func(w string) bool { return dropSubjects[w] }) ||
		!slices.ContainsFunc(before, func(w string) bool { return !forgetLeads[w] })
}

// clauseOpeners open a clause that says why, when or how far, after what
// a drop verb drops.
var clauseOpeners = map[string]bool{"because": true, "since": true, "as": true, "so": true, "but": true, "when": true,
	"while": true, "after": true, "once": true, "until": true, "though": true, "although": true, "cause": true,
	"cos": true, "which": true}

// dropSubjects are the user as the subject of a drop verb.
var dropSubjects = map[string]bool{"i": true, "we": true, "i've": true, "we've": true, "i'm": true, "we're": true,
	"i'll": true, "we'll": true, "i'd": true, "we'd": true, "let's": true}

// negation reports whether a word negates what follows it.
func negation(w string) bool {
	return w == "not" || w == "never" || w == "cannot" || strings.HasSuffix(w, "n't")
}

// forgetLeads may stand before a "forget" that tells to drop an item.
var forgetLeads = map[string]bool{"actually": true, "oh": true, "ok": true, "okay": true, "so": true, "and": true,
	"just": true, "please": true, "yeah": true, "yes": true, "no": true, "well": true, "then": true, "let's": true,
	"sorry": true}

// wishes say the user wants what follows ("so" only in "so that"): what
// they wish gone is there.
var wishes = map[string]bool{"want": true, "wants": true, "wish": true, "hope": true, "ideally": true, "so": true,
	"goal": true, "would": true, "love": true}

// meant are the items of the sentence right after a take-back when it
// names only what the user meant instead ("No, not Shopify. Square."):
// names, none of them a clause, nor opening with a pointer or a
// determiner ("My mistake"); a sentence that asks, says nothing
// ("Thanks.") or thanks or praises ("Thanks for asking.", "Great
// question."), names none.
func meant(s sentence) []string {
	if engine.IsQuestion(s.text) || saysNothing(s.lower, false) || nothingMore(s.lower) ||
		slices.ContainsFunc(strings.Fields(s.lower.Lowered()), func(w string) bool {
			w = strings.Trim(w, ".,!;:")
			return acknowledgements[w] || appraisals[w]
		}) {
		return nil
	}
	items := SplitItems(s.text)
	if !slices.ContainsFunc(items, func(it string) bool { return !aName(it) }) {
		return items
	}
	return nil
}

// all reports whether every word of a is one of b.
func all(a, b map[string]bool) bool {
	for w := range a {
		if !b[w] {
			return false
		}
	}
	return true
}

// classed reads the items that say what they name is, or is not, what the
// keyword names. One that says it is ("Pret is our main competitor",
// "Invoicing is our biggest bottleneck") is that name, and said is true.
// One that says it is not ("Pret isn't a competitor", "Pret is not really
// one of our competitors") is "not" and that name, which takes it off the
// list; correct is then true, and the items after it correct the list
// ("…, it's Costa" gives Costa). One that says something is not the
// quality the keyword names ("The app isn't slow"), or not the main one
// ("Pret isn't our main competitor"), names nothing, and goes.
func classed(items []string, keyword string, correct bool) (kept []string, _, said bool) {
	kept = items[:0]
	for _, it := range items {
		at := engine.PhraseIndex(it, keyword)
		if at <= 0 || len(it) != len(strings.ToLower(it)) || at+len(keyword) != len(it) {
			kept = append(kept, it) // the keyword does not end the item
			continue
		}
		// The keyword names a kind ("a competitor", "one of our
		// competitors"), or a quality ("The app isn't slow").
		first, _, _ := strings.Cut(keyword, " ")
		words, kind, ranked := strings.Fields(it[:at]), determiners[first], false // "is my worry"
		for len(words) > 0 && (determiners[strings.ToLower(words[len(words)-1])] || classFiller[strings.ToLower(words[len(words)-1])]) {
			w := strings.ToLower(words[len(words)-1])
			kind, ranked = kind || determiners[w], ranked || ranks[w]
			words = words[:len(words)-1]
		}
		n := len(words)
		if n < 2 {
			kept = append(kept, it)
			continue
		}
		last := strings.ToLower(words[n-1])
		switch {
		case copulas[last] && kind && (n > 2 || !pointers[strings.ToLower(words[0])]): // "Pret is", not "They are"
			kept, said = append(kept, trimLeads(strings.Join(words[:n-1], " "), leads)), true
			continue
		case denyingVerbs[last]: // "Pret isn't"
			words = words[:n-1]
		case last == "not" && copulas[strings.ToLower(words[n-2])] && n > 2: // "Pret is not"
			words = words[:n-2]
		default: // "Pret's not"
			subject := strings.TrimSuffix(strings.TrimSuffix(words[n-2], "'s"), "’s")
			if last != "not" || subject == words[n-2] {
				kept = append(kept, it)
				continue
			}
			words[n-2], words = subject, words[:n-1]
		}
		if kind && !ranked { // "Pret isn't our main competitor" is one still
			kept, correct = append(kept, "not "+trimLeads(strings.Join(words, " "), leads)), true
		}
	}
	return kept, correct, said
}

// denyingVerbs and copulas with "not" deny; determiners, and classFiller
// with them, stand between them and the keyword ("isn't really one of our
// competitors", "is our biggest bottleneck").
var (
	denyingVerbs = map[string]bool{"isn't": true, "isn’t": true, "aren't": true, "aren’t": true, "wasn't": true, "wasn’t": true,
		"weren't": true, "weren’t": true}
	copulas     = map[string]bool{"is": true, "are": true, "was": true, "were": true}
	determiners = map[string]bool{"a": true, "an": true, "the": true, "our": true, "my": true, "one": true}
	classFiller = map[string]bool{"of": true, "really": true, "actually": true, "real": true, "main": true, "biggest": true,
		"only": true}
	// ranks rank an item among the others: what is not the main one is one.
	ranks = map[string]bool{"main": true, "biggest": true, "only": true}
	// pointers point back at what was said ("They are our main
	// competitors"): they name nothing.
	pointers = map[string]bool{"it": true, "this": true, "that": true, "these": true, "those": true, "they": true,
		"he": true, "she": true, "which": true, "what": true, "who": true}
)

// lack reports whether what follows a "not" is an amount ("enough demand",
// "many people would pay"), a gerund with what it does ("knowing if the
// walk happened") or a gerund of what befalls the user, with anything
// after it ("getting paid on time", "being able to pay online"): "not"
// then names a lack, an item, and takes none off. A gerund alone ("Not
// invoicing, it's quoting") may be an item taken back, and a figure of
// speech ("being funny", "getting me wrong") names no lack.
func lack(s string) bool {
	s = strings.ToLower(s)
	w, rest, _ := strings.Cut(s, " ")
	next, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	if figureOfSpeech(w, rest) {
		return false
	}
	return w == "enough" || w == "many" || w == "much" || strings.HasPrefix(s, "a lot") ||
		len(w) > 4 && strings.HasSuffix(w, "ing") && (gerundObjects[next] || befalls[w] && next != "")
}

// figureOfSpeech reports whether a gerund after a "not" and what follows
// it (lowered) are a figure of speech that opens what the user goes on to
// say ("Not being funny, but …", "Not being rude", "Not getting me
// wrong, …"): it says nothing of the user's lot.
func figureOfSpeech(gerund, rest string) bool {
	words := strings.FieldsFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && r != '’' })
	switch {
	case len(words) == 0:
		return false
	case gerund == "being":
		return asides[words[0]] && (len(words) == 1 || asideEnds[words[1]])
	case gerund == "getting" && len(words) >= 2:
		return (words[0] == "me" || words[0] == "you") && words[1] == "wrong" && (len(words) == 2 || asideEnds[words[2]])
	}
	return false
}

var (
	// befalls are the gerunds of what befalls someone ("getting paid",
	// "being able to"), which no item is named by.
	befalls = engine.WordSet(`getting being`)
	// asides are what a speaker is not being while saying something blunt
	// ("Not being funny, but …").
	asides = engine.WordSet(`funny rude mean nasty horrible awkward picky cheeky harsh negative dramatic`)
	// asideEnds go on past a figure of speech to what it opens ("Not being
	// funny but the price is high").
	asideEnds = engine.WordSet(`but though or and`)
)

// lacking reports whether a keyword is said after a "not" and a gerund of
// what befalls the user ("Not being able to pay online"): the sentence
// names a lack, a pain point, not what the keyword names.
func lacking(t engine.Text, keyword string) bool {
	i := t.Index(keyword)
	if i < 0 {
		return false
	}
	words := strings.Fields(t.Lowered()[:i])
	n := len(words)
	return n >= 2 && befalls[words[n-1]] && (words[n-2] == "not" || words[n-2] == "never")
}

// lacks reports whether an answer says a keyword of f after a "not" and
// a gerund of what befalls the user ("Not being able to pay online"): it
// names a lack, not what f lists.
func lacks(f extraction.PromptField, answer string) bool {
	t := engine.LowerText(answer)
	return slices.ContainsFunc(f.Cues.Keywords, func(kw string) bool { return t.Contains(kw) && lacking(t, kw) })
}

// painsBeside is the list of pains in f's category, whose cues read a
// frustration (nil for none): where a lack said to f goes.
func painsBeside(p extraction.Prompt, f extraction.PromptField) *extraction.PromptField {
	category, _, _ := strings.Cut(f.Path, ".")
	for i, g := range p.Fields {
		if g.Path == f.Path || g.ValueType != engine.TypeArray || !strings.HasPrefix(g.Path, category+".") {
			continue
		}
		if slices.ContainsFunc(g.Cues.Keywords, func(kw string) bool { return painWords[strings.ToLower(kw)] }) {
			return &p.Fields[i]
		}
	}
	return nil
}

var painWords = engine.WordSet(`frustrating frustrated annoying painful`)

// gerundObjects open what a gerund does, its object or clause ("knowing
// if", "having a driver"), which a noun an "-ing" word qualifies
// ("landscaping jobs") is not.
var gerundObjects = engine.WordSet(`if whether what when where who how that the a an our their my your to about for
	enough any it them us anything`)

// closest is the index of the item of list, but those skipped, that
// shares the most words with item (-1 for none); holds says whether it
// holds them all.
func closest(list []any, item string, skip map[string]bool) (best int, holds bool) {
	want := contentWords(item)
	best, most := -1, 0
	for i, x := range list {
		s, ok := x.(string)
		if !ok || skip[s] {
			continue
		}
		if strings.EqualFold(cleanSentence(s), cleanSentence(item)) {
			return i, true
		}
		have, n := contentWords(s), 0
		for w := range want {
			if have[w] {
				n++
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	return best, best >= 0 && most == len(want)
}

// contentWords are the words of an item that tell it from others.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		if !restateFiller[w] && !smallWords[w] {
			out[w] = true
		}
	}
	return out
}

// smallWords, with restateFiller, are the words that do not tell two items
// apart.
var smallWords = map[string]bool{"more": true, "in": true, "on": true, "at": true, "with": true, "about": true, "than": true,
	"before": true, "after": true, "have": true, "has": true, "be": true, "was": true, "by": true, "from": true, "or": true,
	"around": true, "roughly": true, "some": true, "not": true, "their": true, "your": true, "his": true, "her": true}

// adds reports whether a sentence says it adds to what was said ("we also
// have a deadline", "Shopify too").
func adds(t engine.Text) bool {
	for _, p := range []string{"also", "another", "as well", "one more", "in addition", "additionally", "besides"} {
		if t.Contains(p) {
			return true
		}
	}
	return strings.HasSuffix(strings.TrimRight(t.Lowered(), ".!?;:, "), " too")
}

// opensWith reports whether a sentence opens with the phrase, past its
// leads ("Maybe we could …").
func opensWith(t engine.Text, phrase string) bool {
	return engine.PhraseIndex(trimLeads(t.Lowered(), leads), phrase) == 0
}

// trimLeads cuts the leads off the start of s, any case, as long as
// something is left.
func trimLeads(s string, leads []string) string {
	for cut := true; cut; {
		cut = false
		for _, l := range leads {
			if len(s) > len(l) && strings.EqualFold(s[:len(l)], l) && engine.PhraseIndex(s[:len(l)+1], l) == 0 {
				rest := strings.TrimLeft(s[len(l):], " ,;:-")
				if rest != "" {
					s, cut = rest, true
				}
			}
		}
	}
	return s
}

// leads lead into what the user says, and qualify it, without being part
// of it: "Maybe we could …", "Mostly word of mouth", "Sorry, I meant …".
var leads = []string{"and", "or", "so", "well", "oh", "also", "plus", "then", "yes", "yeah", "ok", "okay", "mostly",
	"mainly", "largely", "maybe", "perhaps", "probably", "possibly", "i think", "i guess", "i suppose", "actually",
	"sorry", "of course", "obviously"}

// isLead reports whether an item is a lead alone ("Yes, Xero and Shopify"):
// no item.
func isLead(item string) bool {
	return slices.ContainsFunc(leads, func(l string) bool { return strings.EqualFold(l, item) })
}

// currentValues are the strings a field's current value holds, for
// restates: the string, or the strings of a list; none for any other value.
func currentValues(current json.RawMessage) []string {
	var one string
	if json.Unmarshal(current, &one) == nil {
		return []string{one}
	}
	var values []string
	if json.Unmarshal(current, &values) != nil {
		return nil
	}
	return values
}

// correctionLeads lead into the item a correction gives ("Actually not
// Xero, it's QuickBooks").
var correctionLeads = []string{"actually", "it's", "it is", "i meant", "i mean"}

// restates reports whether the sentence only restates the current value of
// a field (a string, or a string of a list, as currentValues reads it): it
// holds it, as whole words, and little else ("Like I told you, it's for our
// field technicians"). A sentence that says more with it ("Our field
// technicians kept showing up at the wrong address") is about something
// else.
func restates(s sentence, values []string) bool {
	for _, v := range values {
		if len(v) < 3 || !s.lower.Contains(v) {
			continue
		}
		known := map[string]bool{}
		for _, w := range strings.Fields(strings.ToLower(v)) {
			known[w] = true
		}
		rest := 0
		for _, w := range strings.FieldsFunc(s.lower.Lowered(), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
			if !known[w] && !restateFiller[w] {
				rest++
			}
		}
		if rest <= 2 {
			return true
		}
	}
	return false
}

// restateFiller are the words a restatement is made of besides the value.
var restateFiller = map[string]bool{"a": true, "an": true, "the": true, "our": true, "my": true, "it": true, "it's": true,
	"its": true, "is": true, "are": true, "for": true, "to": true, "of": true, "and": true, "like": true, "i": true,
	"told": true, "you": true, "said": true, "as": true, "we": true, "they": true, "them": true, "that": true,
	"this": true, "again": true, "already": true, "just": true, "yes": true, "so": true, "well": true, "all": true,
	"mentioned": true, "before": true}

// matchValues tries a field's value cues: the first value one of whose
// words a sentence holds. For a yes-or-no field, a message that holds words
// of both ("Mostly correct, but the geography is wrong") or negates its yes
// ("that's not correct") is a no: a qualified yes confirms nothing.
func matchValues(f extraction.PromptField, sentences []sentence, allowed func(sentence) bool,
	conf func(float64, sentence) float64) (fieldAnswer, bool) {
	var found *fieldAnswer
	no := false
	for _, cv := range f.Cues.Values {
		for _, s := range sentences {
			if !allowed(s) {
				continue
			}
			for _, w := range cv.When {
				if !s.lower.Contains(w) {
					continue
				}
				if f.ValueType != engine.TypeBoolean && !s.lower.Asks(w) {
					continue // "It's not a mobile app" names no mobile app
				}
				// A bare "no" does not take back a yes ("Yes, no changes
				// needed"), nor a negated no-word ("nothing wrong", "I
				// can't wait"); "wrong", "not quite" and a negated yes do.
				if f.ValueType == engine.TypeBoolean && ((cv.Value == false && w != "no" && s.lower.Asks(w)) ||
					(cv.Value != false && !s.lower.Asks(w))) {
					no = true
				}
				if found == nil {
					found = &fieldAnswer{Value: cv.Value, Confidence: conf(confValue, s), Reasoning: fmt.Sprintf("%q means %v", w, cv.Value),
						byValue: true}
				}
			}
		}
	}
	if found == nil {
		return fieldAnswer{}, false
	}
	if no && found.Value != false {
		found.Value, found.Reasoning = false, "a yes with a no or a negation in it: "+found.Reasoning+", qualified"
	}
	return *found, true
}

// submatches are the texts of a match's groups, as FindStringSubmatch
// gives them, from the match's indexes.
func submatches(s string, loc []int) []string {
	m := make([]string, len(loc)/2)
	for i := range m {
		if loc[2*i] >= 0 {
			m[i] = s[loc[2*i]:loc[2*i+1]]
		}
	}
	return m
}

// hedgedChoice reports whether what a pattern found at loc in text is
// said with a hedge: in its clause before it ("I guess we'll go with
// Glofox", "I think I'll pick Mindbody"), or after it with nothing else
// ("We'll go with Glofox, probably.", "…, I think."). A choice is a
// leaning then, not the decision; a hedge in a reason after it ("…
// because it's probably cheaper") hedges the reason.
func hedgedChoice(text string, loc []int) bool {
	before := strings.ToLower(text[:loc[0]])
	before = before[strings.LastIndexAny(before, ",;:")+1:]
	if engine.PhraseIndex(before, "i think") >= 0 || slices.ContainsFunc(strings.Fields(before), func(w string) bool {
		return hedgeWords[w]
	}) {
		return true
	}
	hedged := false
	for _, w := range strings.FieldsFunc(strings.ToLower(text[loc[1]:]), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	}) {
		if !noContent[w] {
			return false
		}
		hedged = hedged || hedgeWords[w] || w == "think"
	}
	return hedged
}

// thinksOfChoice reports whether an "I think" hedges the choice a message
// gives: said in the statement that gives it, or before it ("Glofox, I
// think.", "I think Glofox."), or alone after it ("Glofox. I think so.").
// An "I think" that opens a statement of its own after the choice
// ("Glofox. I think the app is what sold it.") says why, and hedges none.
func thinksOfChoice(msg string) bool {
	chosen := false
	for _, s := range statements(msg) {
		thinks := engine.PhraseIndex(s, "i think") >= 0
		if !chosen {
			if thinks {
				return true
			}
			chosen = !saysNothing(engine.LowerText(s), false)
			continue
		}
		if thinks && !slices.ContainsFunc(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && r != '\''
		}), func(w string) bool { return !noContent[w] }) {
			return true
		}
	}
	return false
}

// tentative reports whether a clause opens with a condition ("If we go
// with …", "Unless …") or with any choice at all ("Whatever I pick",
// "Whichever one we choose"): what it says is chosen is not.
func tentative(clause string) bool {
	first, _, _ := strings.Cut(trimLeads(strings.TrimSpace(clause), leads), " ")
	return tentativeOpeners[strings.ToLower(first)]
}

var tentativeOpeners = map[string]bool{"if": true, "unless": true, "whatever": true, "whichever": true}

// compiledCue is a cue pattern, compiled, with its prefilter (nil when it
// has none).
type compiledCue struct {
	re *regexp.Regexp
	pf *prefilter
}

var patterns sync.Map // pattern -> compiledCue, or error

func compile(p string) (compiledCue, error) {
	if v, ok := patterns.Load(p); ok {
		if c, ok := v.(compiledCue); ok {
			return c, nil
		}
		return compiledCue{}, v.(error)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		patterns.Store(p, err)
		return compiledCue{}, err
	}
	c := compiledCue{re: re, pf: newPrefilter(p)}
	patterns.Store(p, c)
	return c, nil
}

// patternValue turns a match into a value: the group "value", else group 1,
// else the whole match; for an object, every named group. A match in which
// the group "value" took no part names nothing: the pattern matched what
// is not the value ("We sell up to 300 loaves").
func patternValue(t engine.ValueType, re *regexp.Regexp, m []string) (any, bool) {
	names := re.SubexpNames()
	if t == engine.TypeObject {
		obj := map[string]any{}
		for i, n := range names {
			if n != "" && i < len(m) && strings.TrimSpace(m[i]) != "" {
				obj[n] = strings.TrimSpace(m[i])
			}
		}
		return obj, len(obj) > 0
	}
	text := m[0]
	if i := re.SubexpIndex("value"); i > 0 {
		text = m[i]
	} else if len(m) > 1 && m[1] != "" {
		text = m[1]
	}
	text = cleanSentence(text)
	if text == "" {
		return nil, false
	}
	switch t {
	case engine.TypeNumber:
		return ParseNumber(text)
	case engine.TypeBoolean:
		return true, true
	case engine.TypeArray:
		return SplitItems(text), true
	}
	return text, true
}

// valueFromText derives a value of type t from a sentence in which keyword
// ("" for none) was found.
func valueFromText(t engine.ValueType, s, keyword string) (any, bool) {
	switch t {
	case engine.TypeString:
		v := cleanSentence(firstSentences(s, 2))
		return v, v != ""
	case engine.TypeNumber:
		if countsBeside(engine.LowerText(s)) {
			// "Me and two part-timers": the number counts a part of the
			// group; the group is the sum of its parts, when each says how
			// many.
			return groupCount(s)
		}
		return ParseNumber(s)
	case engine.TypeBoolean:
		return !Negated(s), true
	case engine.TypeArray:
		part, introduced, clauses := s, false, false
		if i := strings.Index(s, ":"); i >= 0 && i < len(s)-1 {
			part = s[i+1:]
		} else if keyword != "" {
			text := engine.LowerText(s)
			i := asserted(text, keyword) // "not worried about rent, but worried about footfall"
			if i < 0 {
				i = text.Index(keyword)
			}
			if i >= 0 {
				lower := text.Lowered()
				after := strings.TrimSpace(lower[i+len(strings.ToLower(keyword)):])
				if endsItem(after) && unsure(engine.LowerText(keyword)) {
					return nil, false // "Not sure, maybe …" names nothing one is unsure of
				}
				if rest, ok := wasteOf(keyword, lower[i+len(strings.ToLower(keyword)):]); ok {
					// "The paperwork is a waste of time": the words after the
					// keyword complete it, and the sentence says what wastes
					// the time, which is one thing ("of time and money").
					wasted := strings.TrimSpace(after[:len(after)-len(rest)])
					if j := i + strings.Index(lower[i:], wasted); len(lower) == len(s) && j >= i {
						part = s[:j] + oneThing.Replace(s[j:j+len(wasted)]) + s[j+len(wasted):]
					}
					after = rest
				}
				if strings.HasPrefix(after, ",") && opensWith(text, keyword) {
					after = strings.TrimSpace(after[1:]) // "If money were no object, we could …"
				} else if framing(lower[:i]) {
					// "From a subscriber's point of view, they would want
					// …", "From the point of view of a parent, …": the
					// phrase the keyword is part of frames the items after
					// it.
					if j := strings.IndexByte(after, ','); j >= 0 && (j == 0 || strings.HasPrefix(after, "of ")) &&
						!strings.ContainsAny(after[:j], ";:") {
						after = strings.TrimSpace(after[j+1:])
					}
				}
				switch {
				case endsItem(after):
					// The keyword is part of an item ("word of mouth and
					// Instagram"), or of a clause ("the delivery run takes
					// too long, and …"): the items are the sentence's.
					clauses = strings.HasPrefix(after, ",") || strings.HasPrefix(after, ";")
				case len(lower) == len(s) && (len(strings.Fields(after)) >= 2 || named(s[len(s)-len(after):])):
					// Items, or one name ("syncs with Xero"), not a word
					// that ends the sentence ("so slow now").
					part, introduced = s[len(s)-len(after):], true
				}
			}
		}
		part = strings.TrimSpace(part)
		for _, lead := range []string{"are ", "is ", "include ", "includes ", "including ", "would be ", "be ", "to "} {
			if strings.HasPrefix(strings.ToLower(part), lead) {
				part = part[len(lead):]
				break
			}
		}
		items, said := splitItems(part, clauses), false
		if introduced {
			if that := thatClauses(part, keyword); that != nil {
				// "I like that a subscription app is cheap and quick to
				// start": what the user likes is the clause, one item.
				items, said = that, true
			}
		}
		if len(items) > 1 {
			// "Pret does a coffee subscription, we could copy that": the
			// remark on the item is none.
			items = slices.DeleteFunc(items, pointsBack)
		}
		if introduced {
			// The keyword again introduces the next item ("we could run a
			// buddy system, maybe we could do a series"), or a preposition
			// does ("worried about pricing and about lock-in", "My concern
			// is with the dispatchers"): the item is what follows.
			prepositions := objectsAfter(keyword)
			if len(items) > 0 {
				items[0] = subjectOf(items[0]) // "What worries me is the monthly fee"
			}
			for i, it := range items {
				if engine.PhraseIndex(it, keyword) == 0 && len(it) > len(keyword) {
					it = strings.TrimSpace(it[len(keyword):])
				}
				items[i] = unprepose(it)
				prepositions = prepositions || (i == 0 && items[i] != it)
			}
			if prepositions {
				items = objects(items)
			}
			if !said {
				// A clause the user likes "that" it holds is no remark on
				// the one before ("… and that it takes payments").
				items = unreasoned(items)
			}
		}
		return items, len(items) > 0
	}
	return nil, false
}

// thatClauses are the clauses "that" opens after a keyword ("I like that
// a subscription app is cheap and quick to start", "… that it's cheap and
// that Glofox has an app"), each without its "that": what they say is
// one item each, whatever "and" joins within them. A clause ends where
// the keyword is said again ("… that it's cheap and I like the reviews")
// or a thing alone follows it ("… that the app is simple, and the
// price"): that is an item of its own. nil when part opens with no such
// clause ("that app", "that one").
func thatClauses(part, keyword string) []string {
	if len(part) < 5 || !strings.EqualFold(part[:5], "that ") {
		return nil
	}
	w := strings.Fields(strings.ReplaceAll(part, "’", "'"))
	if len(w) < 3 || !strings.EqualFold(w[0], "that") {
		return nil
	}
	if next := strings.ToLower(w[1]); !determiners[next] && !subjectPronouns[next] && !thatSubjects[next] && !upper(w[1]) {
		return nil
	}
	var out []string
	add := func(c string) {
		if c = cleanSentence(c); c != "" {
			out = append(out, c)
		}
	}
	for _, c := range thatAnd.Split(strings.TrimSpace(part[len(w[0]):]), -1) {
		start, next := 0, thatNext.FindAllStringIndex(c, -1)
		for i, loc := range next {
			end := len(c)
			if i+1 < len(next) {
				end = next[i+1][0]
			}
			if after := c[loc[1]:end]; engine.PhraseIndex(after, keyword) == 0 || thingAlone(after) {
				add(c[start:loc[0]])
				start = loc[1]
			}
		}
		add(c[start:])
	}
	return out
}

// thingAlone reports whether words name a thing and say nothing of it:
// they open with a determiner or a possessive, and no word of them makes
// a clause ("the price", not "the price is low").
func thingAlone(words string) bool {
	w := strings.Fields(strings.ToLower(strings.ReplaceAll(strings.Trim(words, " .!?"), "’", "'")))
	return len(w) > 1 && (determiners[w[0]] || thatSubjects[w[0]]) &&
		!slices.ContainsFunc(w, func(w string) bool { return predicateWords[w] || clauseWord(w) })
}

var (
	// thatSubjects open the subject of a clause after "that", besides the
	// determiners and subject pronouns.
	thatSubjects = engine.WordSet(`its their his her this these those you're`)
	thatAnd      = regexp.MustCompile(`(?i)(?:,\s*|\s+)(?:and|but|plus)\s+that\s+`)
	// thatNext may end a "that" clause: a comma, an "and" or a "plus".
	thatNext = regexp.MustCompile(`(?i),\s*(?:(?:and|plus)\s+)?|\s+(?:and|plus)\s+`)
)

// framing reports whether the words before a keyword open a phrase that
// says from where what follows is seen ("From a subscriber's", "In the
// customer's"): a preposition, and no break of clause.
func framing(before string) bool {
	first, _, _ := strings.Cut(trimLeads(strings.TrimSpace(before), leads), " ")
	return framingPrepositions[first] && !strings.ContainsAny(before, ",;:")
}

var framingPrepositions = engine.WordSet(`from in through`)

// subjectOf is what follows a keyword that is the verb of a clause about
// the user ("What worries me is the monthly fee", "What concerns us most
// is lock-in"): what the clause is, past the user and its copula.
func subjectOf(item string) string {
	w := strings.Fields(item)
	if len(w) < 3 || !userObjects[strings.ToLower(w[0])] {
		return item
	}
	for i := 1; i < len(w)-1 && i <= 2; i++ {
		if copulas[strings.ToLower(w[i])] {
			return strings.Join(w[i+1:], " ")
		}
	}
	return item
}

var userObjects = map[string]bool{"me": true, "us": true}

// objectsAfter reports whether the items after text are the objects of
// the preposition it ends with ("sync with", "sell bread to", "worried
// about"), not the verbs of an infinitive ("need to").
func objectsAfter(text string) bool {
	words := strings.Fields(strings.ToLower(text))
	if len(words) == 0 || !objectPrepositions[words[len(words)-1]] {
		return false
	}
	return words[len(words)-1] != "to" || len(words) < 2 || !infinitiveLeads[words[len(words)-2]]
}

var (
	objectPrepositions = map[string]bool{"with": true, "to": true, "about": true, "from": true, "for": true, "of": true,
		"into": true}
	infinitiveLeads = map[string]bool{"need": true, "needs": true, "have": true, "has": true, "had": true, "able": true,
		"want": true, "wants": true, "going": true, "got": true, "ought": true, "used": true, "like": true, "try": true}
)

// objects are the items of a preposition's objects ("sync with Xero and
// Shopify") up to the first that opens a predicate of its own, which the
// subject of the sentence goes on with ("… and work offline", "… and runs
// on Android", "… and it must be cheap"): that and the items after it are
// no objects.
func objects(items []string) []string {
	for i := 1; i < len(items); i++ {
		w := strings.Fields(strings.ToLower(items[i]))
		if predicateWords[w[0]] || (len(w) > 1 && verbsBefore[w[0]] && functionWords[w[1]]) {
			return items[:i]
		}
	}
	return items
}

// unreasoned are the items a keyword or a pattern gives, or the answer to
// a list question, but the clauses that a word pointing back at them opens
// ("a custom build, it is too expensive", "the rent, which could double",
// "…, that would cost too much", "3 hours a week and it's costing me
// sleep"): one gives a reason, or a remark, and is no item, nor is what
// follows it up to the next item a name or a determiner opens and no verb
// makes a clause ("Greggs, they're everywhere, and Pret"). A demonstrative
// before a noun ("and that buddy system idea") opens an item, and a clause
// that names something ("No, it's Xero") is one.
func unreasoned(items []string) []string {
	var out []string
	reason := false // the items since the last one kept give a reason
	for i, it := range items {
		w := strings.Fields(strings.ReplaceAll(strings.ToLower(it), "’", "'"))
		switch {
		case i > 0 && (reasonOpeners[w[0]] || (demonstratives[w[0]] && len(w) > 1 && predicateWords[w[1]])) &&
			!namesOne(it):
			reason = true
			continue
		case reason && (!aName(it) && !determiners[w[0]] || slices.ContainsFunc(w, func(w string) bool { return predicateWords[w] })):
			continue
		}
		reason = false
		out = append(out, it)
	}
	return out
}

// pointsBack reports whether an item is the user's remark on what they
// just named, a clause of theirs that ends pointing back at it ("we could
// copy that", "I like it").
func pointsBack(item string) bool {
	w := strings.Fields(strings.ToLower(strings.ReplaceAll(item, "’", "'")))
	return len(w) > 1 && userSubjects[w[0]] && endPointers[w[len(w)-1]]
}

var (
	userSubjects = map[string]bool{"i": true, "we": true, "i'd": true, "we'd": true, "i'll": true, "we'll": true,
		"i'm": true, "we're": true}
	endPointers = map[string]bool{"that": true, "it": true, "this": true, "them": true, "those": true}
)

// namesOne reports whether a clause names something: a word in it past
// the first is capitalised ("it's Xero", "it's Greggs if anyone"), other
// than the user ("it's what I can afford"), or it singles a thing out
// ("it's the weather that worries me").
func namesOne(clause string) bool {
	words := strings.Fields(strings.ReplaceAll(clause, "’", "'"))
	if lower := strings.ToLower(clause); (strings.HasPrefix(lower, "it's ") || strings.HasPrefix(lower, "it is ")) &&
		slices.ContainsFunc(words, func(w string) bool { return determiners[strings.ToLower(w)] }) &&
		slices.ContainsFunc(words, func(w string) bool { return w == "that" || w == "who" }) {
		return true
	}
	return slices.ContainsFunc(words[1:], func(w string) bool {
		r, _ := utf8.DecodeRuneInString(w)
		return unicode.IsUpper(r) && w != "I" && !strings.HasPrefix(w, "I'")
	})
}

var (
	reasonOpeners = map[string]bool{"it": true, "it's": true, "they": true, "they're": true, "which": true, "who": true,
		"he": true, "she": true, "because": true, "since": true, "that's": true}
	demonstratives = map[string]bool{"this": true, "that": true, "these": true, "those": true}
)

// predicateWords open a predicate, or a clause, wherever they stand;
// verbsBefore only before one of the functionWords ("work offline", "run
// on iPads", not "work orders", "support tickets").
var (
	predicateWords = map[string]bool{"it": true, "we": true, "they": true, "i": true, "he": true, "she": true,
		"there": true, "it's": true, "we're": true, "they're": true, "is": true, "are": true, "be": true, "has": true,
		"have": true, "must": true, "should": true, "can": true, "could": true, "will": true, "would": true,
		"needs": true, "send": true, "sends": true, "let": true, "lets": true, "allow": true, "allows": true,
		"handle": true, "handles": true, "keep": true, "keeps": true, "generate": true, "generates": true,
		"works": true, "runs": true, "deliver": true, "delivers": true, "want": true, "wants": true, "hate": true,
		"hates": true, "make": true, "makes": true, "give": true, "gives": true, "get": true, "gets": true,
		"take": true, "takes": true, "stay": true, "stays": true, "sync": true, "syncs": true, "connect": true,
		"connects": true, "integrate": true, "integrates": true, "shows": true, "costs": true, "pays": true, "uses": true, "looks": true, "feels": true, "sell": true,
		"sells": true, "supports": true}
	verbsBefore = map[string]bool{"work": true, "run": true, "support": true, "track": true,
		"print": true, "store": true, "export": true, "import": true, "load": true, "show": true, "cost": true,
		"need": true, "look": true, "feel": true, "do": true, "use": true, "pay": true}
	functionWords = map[string]bool{"offline": true, "online": true, "on": true, "in": true, "with": true,
		"without": true, "from": true, "for": true, "at": true, "to": true, "the": true, "a": true, "an": true,
		"our": true, "my": true, "their": true, "your": true, "it": true, "them": true, "us": true, "everything": true,
		"all": true, "well": true, "fast": true, "quickly": true, "anywhere": true, "everywhere": true}
)

// unprepose cuts the "about", "with" or "of" that leads into an item
// ("worried about pricing", "My concern is with the dispatchers", "afraid
// of lock-in"), but not an "about" that says an amount is rough ("We only
// have about 300 dollars a month").
func unprepose(item string) string {
	rest := trimLeads(item, []string{"about", "with", "of"})
	if engine.PhraseIndex(item, "about") == 0 && amount(rest) {
		return item
	}
	return rest
}

// amount reports whether s opens with an amount: a figure, a currency sign
// or a number word ("a month", "two weeks", "half the budget").
func amount(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	w, _, _ := strings.Cut(strings.ToLower(s), " ")
	return unicode.IsDigit(r) || unicode.Is(unicode.Sc, r) || numberWords[w]
}

var numberWords = map[string]bool{"a": true, "an": true, "one": true, "two": true, "three": true, "four": true, "five": true,
	"six": true, "seven": true, "eight": true, "nine": true, "ten": true, "twelve": true, "twenty": true, "fifty": true,
	"hundred": true, "half": true}

// named reports whether s is one word that is a name: capitalised.
func named(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return len(strings.Fields(s)) == 1 && unicode.IsUpper(r)
}

// ideasWanted is what a sentence that only asks for ideas wants them for:
// "Let's find ideas to grow wholesale orders" and "We want ideas to fill
// the quiet weekday mornings" frame the problem, which is what follows.
// A sentence whose words before "ideas" say more than the asking ("Side
// business ideas for my pottery") or do not ask ("Good ideas for the menu
// keep coming from staff") is the value whole, and so is one in which
// what follows is the subject of a verb ("Some ideas for the menu are in
// my notebook").
func ideasWanted(text string) string {
	loc := ideasFor.FindStringIndex(text)
	if loc == nil {
		return text
	}
	asked := false
	for w := range strings.FieldsSeq(strings.ToLower(strings.ReplaceAll(text[:loc[0]], "’", "'"))) {
		w = strings.Trim(w, ",")
		if !askingWords[w] {
			return text
		}
		asked = asked || askingVerbs[w]
	}
	if !asked || verbAfter(text[loc[1]:]) {
		return text
	}
	return cmp.Or(cleanSentence(text[loc[1]:]), text)
}

// verbAfter reports whether the clause that opens what ideas are wanted
// for has a verb it is the subject of: "the menu are in my notebook". A
// verb after a subject of its own ("the menu we can sell") or a relative
// word ("the menu that is cheap") is the phrase's.
func verbAfter(s string) bool {
	if i := strings.IndexAny(s, ",;:.!?"); i >= 0 {
		s = s[:i]
	}
	prev := ""
	for i, w := range strings.Fields(strings.ToLower(strings.ReplaceAll(s, "’", "'"))) {
		if ownSubject[w] {
			return false
		}
		if i > 0 && prev != "to" && finiteVerbs[w] {
			return true
		}
		prev = w
	}
	return false
}

var (
	ideasFor = regexp.MustCompile(`(?i)\bideas\s+(?:to|for|on|about)\s+`)
	// askingWords may ask for ideas before the word: who asks, how, and
	// what ideas ("some new ideas").
	askingWords = engine.WordSet(`let's lets let us we i i'd we'd i'm we're you to want wants need needs would like love ` +
		`find get come up with some new fresh more few a any good generate brainstorm think of looking for trying try help me ` +
		`please can could give are am so well ok okay hi hello`)
	// askingVerbs are the askingWords that ask for ideas: without one,
	// "good ideas" or "some ideas" are talked about, not wanted.
	askingVerbs = engine.WordSet(`let's lets let want wants need needs find looking brainstorm generate come`)
	// finiteVerbs say something of what comes before them.
	finiteVerbs = engine.WordSet(`is are was were isn't aren't wasn't weren't keep keeps kept come comes came ` +
		`has have had do does did don't doesn't didn't will would can could should might must seem seems`)
	// ownSubject are the words after which a verb has its own subject.
	ownSubject = engine.WordSet(`that which who whom whose what where when how why we i you they he she it`)
)

// wasteOf reports whether after, what follows a keyword that says a
// waste, is only what is wasted ("of time", "of our money", "of time and
// money") before the item ends, or what the verb wastes ("We waste a lot
// of flour"), and returns what follows that: the clause the keyword is in
// is the item.
func wasteOf(keyword, after string) (rest string, ok bool) {
	if !strings.HasPrefix(strings.ToLower(keyword), "wast") {
		return "", false
	}
	word := after == "" || after[0] == ' '
	after = strings.TrimSpace(after)
	if loc := wastedOn.FindStringIndex(after); loc != nil {
		// "Wasting time on double entry": the clause says what wastes
		// the time, up to where it ends.
		return clauseRest(after[loc[1]:]), true
	}
	if loc := wasted.FindStringIndex(after); loc != nil {
		rest = strings.TrimSpace(after[loc[1]:])
		return rest, endsItem(rest)
	}
	if word && after != "" && !endsItem(after) && !strings.HasPrefix(after, "of ") {
		// "We waste a lot of flour": what is wasted is no pain alone.
		return clauseRest(after), true
	}
	return "", false
}

// oneThing keeps the words that name one thing from parting it into items
// (splitItems' itemMarks put them back).
var oneThing = strings.NewReplacer(", and ", "\x00\x01", " and ", "\x01", ",", "\x00")

// clauseRest is what follows the clause s opens: from its first separator
// of clauses on, or nothing.
func clauseRest(s string) string {
	if i := strings.IndexAny(s, ",;"); i >= 0 {
		return s[i:]
	}
	return ""
}

var wastedOn = regexp.MustCompile(`^(?:(?:so\s+much|a\s+lot\s+of|hours\s+of|our|my|their)\s+)?(?:time|money|hours)\s+(?:on|with|doing|chasing|re-?entering|fixing)\s`)

// wasted is what is wasted, one thing however many words name it: "of
// time and money", "of our time, money and effort".
var wasted = regexp.MustCompile(`^of\s+` + wastedThing + `(?:(?:,\s*and\s+|,\s*|\s+(?:and|&)\s+)` + wastedThing + `)*\b`)

const wastedThing = `(?:(?:my|our|their|your|everyone's|everyone’s|the\s+staff's|the\s+staff’s)\s+)?(?:time|money|effort|energy)`

// endsItem reports whether what follows a keyword shows it ends an item:
// nothing, or a separator of items.
func endsItem(after string) bool {
	if after == "" || strings.IndexAny(after[:1], ",;.!?&") == 0 {
		return true
	}
	for _, sep := range []string{"and ", "or ", "plus ", "as well as "} {
		if strings.HasPrefix(after, sep) {
			return true
		}
	}
	return false
}

func firstSentences(s string, n int) string {
	ss := engine.Sentences(s)
	if len(ss) > n {
		ss = ss[:n]
	}
	return strings.Join(ss, " ")
}

// cleanSentence trims spaces and final punctuation.
func cleanSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimRight(s, ".!?;:, ")
}

// SplitItems splits "a, b and c" into [a b c]. Words that qualify an item
// rather than name it go ("mostly word of mouth", "Shopify too", "Xero any
// more"), and so
// does a remark after the first item ("…, I checked with my partner").
func SplitItems(s string) []string { return splitItems(s, false) }

// thousands finds the commas inside numbers ("$5,000"), which part no
// items.
var thousands = regexp.MustCompile(`(\d),(\d)`)

// splitItems is SplitItems, or, with clauses, splits clauses only ("X and
// Y don't talk to each other, so …" at the comma, not at the "and").
func splitItems(s string, clauses bool) []string {
	s = joinNames(thousands.ReplaceAllString(cleanSentence(s), "$1\x00$2"))
	if !clauses {
		s = partOr(s)
	}
	repl := itemBreaks
	if clauses {
		repl = clauseItemBreaks
	}
	var out []string
	for _, it := range strings.Split(repl.Replace(s), ",") {
		if len(out) > 0 && orHedge(strings.TrimSpace(it)) {
			continue
		}
		it = trimLeads(itemMarks.Replace(strings.TrimSpace(it)), leads)
		for _, suffix := range []string{" etc", " too", " as well", " mostly", " mainly", " any more", " anymore", " any longer"} {
			it = strings.TrimSuffix(it, suffix)
		}
		if len(out) > 0 && remark(it) {
			continue
		}
		if len(out) > 0 && besides[strings.ToLower(it)] {
			continue // "Our landlord, honestly."
		}
		if it = cleanSentence(it); it != "" && !isLead(it) {
			out = append(out, it)
		}
	}
	if len(out) > 1 && ranked(s) {
		out = out[1:] // "Our biggest customer, Whole Foods": Whole Foods
		// "…, which is the council": the thing ranked is the council.
		for _, lead := range namingLeads {
			if len(out[0]) > len(lead) && strings.EqualFold(out[0][:len(lead)], lead) {
				out[0] = out[0][len(lead):]
				break
			}
		}
		// "…, the council, pays late": a clause about the thing ranked.
		if len(out) == 2 && predicate(out[1]) {
			out = out[:1]
		}
	}
	return withinClause(out)
}

// namingLeads open what says the thing a possessive ranked first is
// ("Our biggest customer, which is the council").
var namingLeads = []string{"which is ", "which are ", "who is ", "who are ", "that is ", "that's ", "namely ", "i.e. "}

// predicate reports whether a list item is a clause without its subject
// ("pays late", "always pays late", "is slow"): it opens, past a word of
// how often, with a verb in the present or the past.
func predicate(item string) bool {
	w := strings.Fields(item)
	for len(w) > 1 && oftenWords[w[0]] {
		w = w[1:]
	}
	if len(w) == 0 || strings.ToLower(w[0]) != w[0] || strings.Contains(item, " and ") || strings.Contains(item, " or ") {
		return false
	}
	_, pronoun := pronouns[w[0]]
	return verbWords[w[0]] && !pronoun || presentVerb(w[0]) || bareVerb(w[0])
}

// oftenWords say how often, before a verb ("always pays late").
var oftenWords = engine.WordSet(`always never often usually sometimes rarely seldom still also just barely hardly`)

// besides are the words said beside an answer, which name no item of it
// ("Our landlord, honestly.").
var besides = engine.WordSet(`honestly really frankly obviously basically seriously literally tbh probably mostly
	anyway though`)

// ranked reports whether a message opens with what its user ranks first
// of a kind, a comma before what it is ("Our biggest customer, Whole
// Foods", "My biggest headache, the VAT return", "Our main problem, the
// bank and Stripe"): the words before the comma say what the item after
// it is to the user, and are no item of their own.
func ranked(msg string) bool {
	head, _, ok := strings.Cut(msg, ",")
	w := strings.Fields(strings.ToLower(head))
	return ok && len(w) >= 3 && len(w) <= 4 && possessives[w[0]] && rankWords[w[1]] &&
		!slices.ContainsFunc(w[2:], func(x string) bool { return x == "and" || x == "or" || clauseWord(x) })
}

// rankWords rank a thing first of its kind ("our biggest customer").
var rankWords = engine.WordSet(`main biggest largest best worst top key primary only greatest single`)

// withinClause joins to a clause item the single words after it that go
// on with its last word: participles after a participle ("A commuter
// would want their bike picked up, serviced and returned") and adjectives
// after a copula's ("People stop cycling when it is cold and dark"). The
// clause is one item; a noun, a name or a clause after it is another.
func withinClause(items []string) []string {
	for i := 0; i < len(items)-1; i++ {
		kind := complement(items[i])
		if kind == noComplement {
			continue
		}
		j := i + 1
		for j < len(items) && goesOn(items[j], kind) {
			j++
		}
		if j == i+1 {
			continue
		}
		joined := items[i]
		for k := i + 1; k < j; k++ {
			sep := ", "
			if k == j-1 {
				sep = " and "
			}
			joined += sep + items[k]
		}
		items = slices.Replace(items, i, j, joined)
	}
	return items
}

// complementKind is what a clause ends with that more of its kind may
// follow in a list.
type complementKind int

const (
	noComplement   complementKind = iota
	pastComplement                // "picked up"
	adjComplement                 // "is cold"
)

// complement is what a clause item ends with: a participle, past its
// particle, in a clause with a verb ("would want their bike picked up"),
// or an adjective after a copula ("it is cold"); else noComplement.
func complement(item string) complementKind {
	w := strings.Fields(strings.ToLower(strings.ReplaceAll(item, "’", "'")))
	if len(w) < 3 {
		return noComplement
	}
	last := w[len(w)-1]
	if len(w) > 3 && dropParticles[last] || last == "up" || last == "out" || last == "back" {
		w, last = w[:len(w)-1], w[len(w)-2]
	}
	switch {
	case linking[w[len(w)-2]] && !plural(last) && !functionWords[last] && !determiners[last]:
		return adjComplement
	case participle(last) && slices.ContainsFunc(w[:len(w)-1], clauseWord):
		return pastComplement
	}
	return noComplement
}

// goesOn reports whether an item is one lower-case word of the kind a
// clause ended with.
func goesOn(item string, kind complementKind) bool {
	if strings.ContainsAny(item, " ,;:") || !unicode.IsLower([]rune(item)[0]) {
		return false
	}
	switch kind {
	case pastComplement:
		return participle(item)
	case adjComplement:
		return !plural(item) && !strings.HasSuffix(item, "ing") && !functionWords[item] && !clauseWord(item)
	}
	return false
}

// linking are the verbs whose complement an adjective is ("is cold", "gets
// busy").
var linking = engine.WordSet(`is are was were be been get gets got feel feels felt seem seems seemed look looks
	stay stays it's they're that's`)

var (
	// itemBreaks part items at the words that join them, clauseItemBreaks
	// at a semicolon alone; itemMarks put back the commas and the "and"s
	// marked as no break.
	itemBreaks = strings.NewReplacer(" and also ", ",", ", and ", ",", " and ", ",", " as well as ", ",", " plus ", ",",
		"; ", ",")
	clauseItemBreaks = strings.NewReplacer("; ", ",")
	itemMarks        = strings.NewReplacer("\x00", ",", "\x01", " and ")
)

// partOr puts a comma before each "or" that parts items as "and" does
// ("Xero or QuickBooks", "Square, Shopify or a custom website"): not one
// that rounds a number ("a day or two", "twelve or so", "give or take"),
// nor "more or less", "whether or not", nor one in a clause that a
// negation, an "if" or a "whether" opens ("not Xero or Shopify" takes both
// back, "whether parents would pay online or by phone" is one doubt), nor
// one after an "either" within a clause ("we'd either hire someone or do it
// ourselves"). An "either" that opens a list goes ("Either Xero or
// QuickBooks").
func partOr(s string) string {
	var b strings.Builder
	clause := 0 // where the clause the next "or" stands in starts
	for {
		i := engine.PhraseIndex(s[clause:], "or")
		if i < 0 {
			break
		}
		i += clause
		if j := strings.LastIndexAny(s[:i], ",;"); j >= clause {
			b.WriteString(s[clause : j+1])
			clause = j + 1
		}
		before := strings.Fields(strings.ToLower(s[clause:i]))
		after := strings.Fields(strings.ToLower(s[i+len("or"):]))
		next := ""
		if len(after) > 0 {
			next = strings.Trim(after[0], ".,;:!?")
		}
		prev := ""
		if len(before) > 0 {
			prev = before[len(before)-1]
		}
		opener := slices.IndexFunc(before, func(w string) bool { return w == "either" })
		items := len(before) > 0 && !orKeepers[prev] && !orRounds[next] && !isNumber(next) &&
			!slices.ContainsFunc(before, func(w string) bool {
				return negation(w) || w == "no" || w == "if" || w == "whether"
			}) && (opener < 0 || !slices.ContainsFunc(before[:opener], func(w string) bool { return !isLead(w) })) &&
			!orIdiom(s, i) && !orSubject(before, after)
		if !items {
			b.WriteString(s[clause : i+len("or")])
			clause = i + len("or")
			continue
		}
		first := s[clause:i]
		if opener >= 0 {
			// "Either Xero or QuickBooks": the "either" is no part of Xero.
			at := engine.PhraseIndex(first, "either")
			first = first[:at] + strings.TrimLeft(first[at+len("either"):], " ")
		}
		b.WriteString(strings.TrimRight(first, " ") + ", or")
		clause = i + len("or")
	}
	b.WriteString(s[clause:])
	return b.String()
}

// orKeepers before an "or", and orRounds after it, make a phrase of it
// ("more or less", "give or take", "whether or not", "twelve or so"), as
// do the idioms orIdioms ("rain or shine").
var (
	orKeepers = map[string]bool{"more": true, "give": true, "whether": true, "either": true}
	orRounds  = map[string]bool{"so": true, "not": true, "less": true, "more": true, "fewer": true, "take": true,
		"other": true, "else": true, "rather": true}
	orIdioms = []string{"rain or shine", "one way or another", "one way or the other", "all or nothing",
		"sooner or later", "now or never", "hit or miss", "make or break", "sink or swim", "win or lose",
		"like it or not", "do or die", "right or wrong", "day or night", "night or day", "black or white",
		"dead or alive", "take it or leave it", "trick or treat"}
)

// orIdiom reports whether the "or" at i of s stands in an idiom that
// names one thing ("rain or shine alerts", "one way or another").
func orIdiom(s string, i int) bool {
	return slices.ContainsFunc(orIdioms, func(idiom string) bool {
		at := i - strings.Index(idiom, " or ") - 1
		return at >= 0 && engine.PhraseIndex(s[at:], idiom) == 0
	})
}

// orSubject reports whether an "or" joins the subject of a verb that
// follows the second noun ("Tea or coffee is fine", "Mindbody or Glofox
// would both work"): the words before it in its clause make no clause, and
// the first word after it that makes one is a verb, before any pronoun or
// any word that opens a clause of its own ("Xero or QuickBooks if it's
// cheaper" parts them). after runs to the end of the text.
func orSubject(before, after []string) bool {
	if slices.ContainsFunc(before, clauseWord) {
		return false
	}
	for i, w := range after {
		w = strings.Trim(w, ".!?")
		if strings.HasSuffix(w, ",") || strings.HasSuffix(w, ";") || clauseOpeners[w] || w == "if" {
			return false
		}
		if clauseWord(w) {
			_, pronoun := pronouns[w]
			return i > 0 && !pronoun
		}
	}
	return false
}

// orHedge reports whether an item that an "or" leads into says the user
// would take anything like the items before it ("or whatever texting
// service is cheapest", "or something like that"): it names no item.
func orHedge(item string) bool {
	w := strings.Fields(strings.ToLower(item))
	return len(w) > 1 && w[0] == "or" && orHedges[w[1]]
}

var orHedges = map[string]bool{"whatever": true, "whichever": true, "something": true, "anything": true,
	"similar": true, "whoever": true}

// pluralAnd finds an "and" after an article and one word, before two more.
var pluralAnd = regexp.MustCompile(`(?i)\b(?:a|an)\s+([a-z'’-]+)\s+and\s+([a-z'’-]+)\s+[a-z]`)

// joinNames marks with \x01 the "and"s that join words of one name, not
// items, and the "and" of a group the user is part of (userAnd). Those of
// a name stand after an article and a plural ("a parents and toddlers session",
// "a mums and babies class"), which name nothing alone, before words that
// go on to the name's head. Before an article or a pronoun ("a bus and a
// minibus", "a sessions and we could …") the "and" parts items.
func joinNames(s string) string {
	locs := pluralAnd.FindAllStringSubmatchIndex(s, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		loc := locs[i]
		plural, next := strings.ToLower(s[loc[2]:loc[3]]), strings.ToLower(s[loc[4]:loc[5]])
		if !strings.HasSuffix(plural, "s") || strings.HasSuffix(plural, "ss") || strings.HasSuffix(plural, "us") ||
			strings.HasSuffix(plural, "is") || determiners[next] || pointers[next] || predicateWords[next] {
			continue
		}
		and := loc[3] + strings.Index(s[loc[3]:loc[4]], "and")
		s = strings.TrimRight(s[:and], " ") + "\x01" + strings.TrimLeft(s[and+len("and"):], " ")
	}
	locs = userAnd.FindAllStringSubmatchIndex(s, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		if next := strings.ToLower(s[locs[i][4]:locs[i][5]]); !predicateWords[next] && !pointers[next] {
			s = s[:locs[i][2]] + "\x01" + s[locs[i][3]:] // not "… to me and I chase them"
		}
	}
	return joinWithin(s)
}

// joinWithin marks with \x01 the "and"s inside one item ("a lot of guys
// with a truck and a mower", "registration and payments together",
// "somewhere to sit and charge their phone"): one that joins the objects of
// a "with" in a phrase a determiner opens, for a head they share; every
// "and" of a clause that ends with "together" or opens with "both", which
// says the things are one; and one that joins two verbs of an infinitive
// after a place or a thing ("a place to sit and charge"). Not one a clause
// of its own follows ("a van with a ladder and we drive it").
func joinWithin(s string) string {
	var b strings.Builder
	for clause := range strings.SplitAfterSeq(s, ",") {
		if !strings.Contains(clause, "and") && !strings.Contains(clause, "And") && !strings.Contains(clause, "AND") {
			b.WriteString(clause) // no "and" to keep
			continue
		}
		words := strings.Fields(strings.ToLower(trimLeads(strings.TrimSpace(strings.TrimRight(clause, ",")), leads)))
		if len(words) > 2 && (strings.Trim(words[len(words)-1], ".!?;:") == "together" || words[0] == "both") {
			clause = andWord.ReplaceAllString(clause, "\x01")
		}
		for _, re := range []*regexp.Regexp{withAnd, toAnd} {
			locs := re.FindAllStringSubmatchIndex(clause, -1)
			for i := len(locs) - 1; i >= 0; i-- {
				loc := locs[i]
				next := strings.ToLower(clause[loc[4]:loc[5]])
				if re == withAnd && !determiners[strings.ToLower(words[0])] && !quantities[strings.ToLower(words[0])] ||
					predicateWords[next] || pointers[next] || userSubjects[next] {
					continue
				}
				clause = clause[:loc[2]] + "\x01" + clause[loc[3]:]
			}
		}
		b.WriteString(clause)
	}
	return b.String()
}

var (
	andWord = regexp.MustCompile(`(?i)\s+and\s+`)
	// withAnd finds the "and" between two objects of a "with" that a
	// determiner opens each ("with a truck and a mower"), and the word
	// after it.
	withAnd = regexp.MustCompile(`(?i)\bwith(?:out)?\s+(?:an?|the|some|their|our|his|her|its|my)\s+[a-z'’-]+(\s+and\s+)` +
		`(?:an?|the|some|their|our|his|her|its|my)\s+([a-z'’-]+)`)
	// toAnd finds the "and" between two verbs of an infinitive after a
	// place or a thing ("somewhere to sit and charge their phone"), and the
	// word after it.
	toAnd = regexp.MustCompile(`(?i)\b(?:somewhere|anywhere|something|place|space|room|spot)\s+to\s+[a-z'’-]+(?:\s+(?:down|up|in|out))?` +
		`(\s+and\s+)([a-z'’-]+)`)
	// quantities open a noun phrase as a determiner does ("lots of vans").
	quantities = map[string]bool{"some": true, "lots": true, "loads": true, "plenty": true, "any": true, "all": true,
		"most": true, "many": true, "few": true}
)

// userAnd finds the "and" after the user in a group they are part of
// ("just me and one assistant"), and the word after it.
var userAnd = regexp.MustCompile(`(?i)(?:\bme|\bmyself)(\s+and\s+)([a-z'’]+)`)

// remark reports whether an item is the user saying how they know
// ("I checked with my partner", "I think", "as I mentioned").
func remark(item string) bool {
	w := strings.Fields(strings.ToLower(item))
	if len(w) > 2 && (w[0] == "as" || w[0] == "like") {
		w = w[1:]
	}
	return len(w) > 1 && (w[0] == "i" || w[0] == "i've") && remarkVerbs[w[1]]
}

var remarkVerbs = map[string]bool{"checked": true, "asked": true, "think": true, "guess": true, "believe": true, "suppose": true,
	"reckon": true, "heard": true, "said": true, "hope": true, "was": true, "talked": true, "spoke": true,
	"confirmed": true, "looked": true, "double-checked": true, "mentioned": true, "told": true}

var numberRe = regexp.MustCompile(`(?i)(\d[\d,]*(?:\.\d+)?)\s*(k|m|thousand|million)?\b`)

// ParseNumber finds the first number in text, in figures or in words:
// "about 25 people" → 25, "$50k" → 50000, "1,200" → 1200, "about forty
// technicians" → 40.
func ParseNumber(text string) (any, bool) {
	m := numberRe.FindStringSubmatch(figures(text))
	if m == nil {
		return nil, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		return nil, false
	}
	switch strings.ToLower(m[2]) {
	case "k", "thousand":
		f *= 1e3
	case "m", "million":
		f *= 1e6
	}
	return f, true
}

// declinePhrases put a question off whatever else the message says;
// unsurePhrases only in a short message with no figure in it: "We have no
// idea how big the market is, maybe 20,000 households" answers something,
// and declines nothing that was asked.
var (
	declinePhrases = []string{"skip", "later", "come back to", "pass on", "tbd", "rather not", "prefer not"}
	unsurePhrases  = []string{"not sure", "don't know", "do not know", "no idea", "haven't decided", "have not decided",
		"not decided", "no clue"}
)

// maxUnsureWords bounds the message whose unsure phrase declines the
// question.
const maxUnsureWords = 15

// Declines reports whether the user puts the question off.
func Declines(text string) bool {
	t := engine.LowerText(text)
	for _, p := range declinePhrases {
		if t.Contains(p) {
			return true
		}
	}
	if len(strings.Fields(text)) > maxUnsureWords || strings.ContainsAny(text, "0123456789") || !unsure(t) ||
		engine.IsQuestion(text) {
		// Not knowing, then asking what was meant, wants the question
		// explained, not skipped.
		return false
	}
	// "Not sure really. Probably Greggs and the supermarket bakeries."
	// answers all the same.
	answer, _, continues := answerPart(text, false)
	return answer == "" || continues
}

// unsure reports whether t says the user does not know something.
func unsure(t engine.Text) bool {
	for _, p := range unsurePhrases {
		if t.Contains(p) {
			return true
		}
	}
	return false
}

// Negated reports whether a sentence declines or says no (engine's
// Text.Negative: "Yes, no problem" does not).
func Negated(s string) bool {
	return Declines(s) || engine.LowerText(s).Negative()
}

// affirmations are the words that answer a yes-or-no question with yes.
var affirmations = map[string]bool{"yes": true, "yeah": true, "yep": true, "yup": true, "correct": true, "right": true,
	"confirm": true, "confirmed": true, "confirms": true, "agreed": true, "agree": true, "sure": true, "exactly": true,
	"absolutely": true, "definitely": true, "ok": true, "okay": true, "true": true, "accurate": true,
	"good": true, "great": true, "fine": true, "perfect": true, "alright": true}

// yesOrNo reads a yes-or-no answer: false when it is negative, true when
// it affirms, nothing when it is neither.
func yesOrNo(s string) (any, bool) {
	if Negated(s) {
		return false, true
	}
	words := strings.Fields(strings.ToLower(s))
	word := func(i int) string { return strings.Trim(words[i], ".,;:!?\"()") }
	for i := range words {
		w := word(i)
		if !affirmations[w] {
			continue
		}
		if appraisals[w] && i+1 < len(words) && (word(i+1) == "question" || word(i+1) == "point") {
			continue // "Good question, let me check." says nothing yet
		}
		return true, true
	}
	return nil, false
}
