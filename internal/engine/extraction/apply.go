package extraction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/sensitive"
)

// Meta identifies the turn an extraction belongs to.
type Meta struct {
	SessionID  string `json:"session_id"`
	ProjectID  string `json:"project_id"`
	MessageID  string `json:"message_id"`
	EngineID   string `json:"engine_id"`
	TurnNumber int    `json:"turn_number"`
	// PromptVersion is the prompt version of the session, which says what a
	// list answer is (0: CurrentPromptVersion).
	PromptVersion PromptVersion `json:"prompt_version,omitempty"`
}

// Type is the kind of an extraction log entry.
type Type string

// Log entry kinds.
const (
	TypeNew       Type = "new"
	TypeUpdate    Type = "update"
	TypeSupersede Type = "supersede"
)

// LogEntry is one row of eng_extractions_log.
type LogEntry struct {
	// ID is derived from session, message and field, so re-running a turn
	// yields the same id (and the store can ignore the duplicate).
	ID             string          `json:"id"`
	SessionID      string          `json:"session_id"`
	ProjectID      string          `json:"project_id"`
	MessageID      string          `json:"message_id"`
	EngineID       string          `json:"engine_id"`
	FieldPath      string          `json:"field_path"`
	ExtractedValue json.RawMessage `json:"extracted_value"`
	Confidence     float64         `json:"confidence"`
	ExtractionType Type            `json:"extraction_type"`
	Reasoning      string          `json:"reasoning,omitempty"`
	// SupersededBy is set later, by a SupersededLink, to the message id of
	// the entry that replaced this one.
	SupersededBy string `json:"superseded_by,omitempty"`
	TurnNumber   int    `json:"turn_number"`
}

// SupersededLink marks an earlier log entry as replaced: set its
// superseded_by to SupersededBy (the later entry's message id).
type SupersededLink struct {
	EntryID   string `json:"entry_id"`
	FieldPath string `json:"field_path"`
	// MessageID is the message of the entry being superseded.
	MessageID string `json:"message_id"`
	// SupersededBy is the message id of the later entry.
	SupersededBy string `json:"superseded_by"`
	// SupersededByEntryID is the id of the later entry.
	SupersededByEntryID string `json:"superseded_by_entry_id"`
}

// Supersession describes a field whose value a turn replaced.
type Supersession struct {
	FieldPath string          `json:"field_path"`
	OldValue  json.RawMessage `json:"old_value"`
	NewValue  json.RawMessage `json:"new_value"`
	Reason    string          `json:"reason"`
}

// Rejection is an answered value that was not applied.
type Rejection struct {
	FieldPath  string  `json:"field_path"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason"`
}

// Result is the outcome of one turn's extraction.
type Result struct {
	// Extraction is the whole extraction state after the turn.
	Extraction engine.Extraction `json:"extraction"`
	// FieldsUpdated lists the paths set this turn, in schema order.
	FieldsUpdated []string `json:"fields_updated"`
	// NewConceptCount counts new fields plus the items a list gains, whether
	// it grows or is replaced ("Deadlines can go, we also want
	// notifications" brings notifications): saturation counts the turns
	// that bring nothing new.
	NewConceptCount     int              `json:"new_concept_count"`
	SensitiveInfoShared bool             `json:"sensitive_info_shared"`
	SensitiveKinds      []sensitive.Kind `json:"sensitive_kinds,omitempty"`
	Superseded          []Supersession   `json:"superseded"`
	Rejected            []Rejection      `json:"rejected,omitempty"`
	// Deferred lists the obligations the user put off this turn.
	Deferred []string `json:"deferred,omitempty"`
	// Log holds the eng_extractions_log rows of this turn, and Links the
	// earlier rows they supersede.
	Log   []LogEntry       `json:"log"`
	Links []SupersededLink `json:"links,omitempty"`
	// Degraded is true when the model's answer could not be used: nothing
	// was updated, and the turn is still answered.
	Degraded       bool   `json:"degraded,omitempty"`
	DegradedReason string `json:"degraded_reason,omitempty"`
	// PromptVersion is the prompt version of the session, kept with its
	// state (State).
	PromptVersion PromptVersion `json:"prompt_version"`
}

// correctionMarkers are words with which users correct themselves; a value
// that follows one replaces the old one even when extracted with less
// confidence. Not "rather" alone ("we would rather text than call" states
// a preference) nor "instead of" ("texts instead of calls" compares).
var correctionMarkers = []string{"actually", "instead", "or rather", "correction", "i meant", "i mean",
	"changed my mind", "change of plan", "not anymore", "no longer", "scratch that", "on second thought",
	"let me correct", "to correct", "not quite", "that's not right", "that is not right", "that's incorrect",
	"that is incorrect"}

// notQuiteCorrects are the words after which "not quite" corrects: "not
// quite right", "not quite what I said", "not quite how it works". Anything
// else after it hedges ("not quite sure", "not quite a CRM"), but for
// punctuation or the end, after which it is an answer of its own ("Not
// quite. ...", "Not quite — ...").
var notQuiteCorrects = map[string]bool{"right": true, "correct": true, "accurate": true, "true": true, "what": true,
	"it": true, "how": true}

// correctsNotQuite reports whether a lowered text says "not quite" as a
// correction.
func correctsNotQuite(lower string) bool {
	for from := 0; ; {
		i := strings.Index(lower[from:], "not quite")
		if i < 0 {
			return false
		}
		i += from
		from = i + len("not quite")
		if before, _ := utf8.DecodeLastRuneInString(lower[:i]); i > 0 && unicode.IsLetter(before) { // "cannot quite"
			continue
		}
		rest := strings.TrimLeftFunc(lower[from:], unicode.IsSpace)
		first, _ := utf8.DecodeRuneInString(rest)
		if rest == "" || !unicode.IsLetter(first) && !strings.ContainsRune("\"'“‘", first) {
			return true
		}
		rest = strings.TrimLeft(rest, "\"'“‘")
		word := rest[:strings.IndexFunc(rest+" ", func(r rune) bool { return !unicode.IsLetter(r) })]
		if notQuiteCorrects[word] {
			return true
		}
	}
}

// CorrectionMarker returns the first correction marker in text, or "".
func CorrectionMarker(text string) string {
	return CorrectionMarkerIn(engine.LowerText(text))
}

// CorrectionMarkerIn is CorrectionMarker of a text prepared for look-ups.
func CorrectionMarkerIn(text engine.Text) string {
	for _, m := range correctionMarkers {
		if !text.Contains(m) {
			continue
		}
		if m == "instead" && !engine.LowerText(strings.ReplaceAll(text.Lowered(), "instead of", "")).Contains(m) {
			continue // only ever "instead of"
		}
		if m == "not quite" && !correctsNotQuite(text.Lowered()) {
			continue // "not quite sure", "not quite ready": no correction
		}
		return m
	}
	return ""
}

// lapseReach is how many words a negation may stand before a lapse it
// negates: "we don't want the client deadlines to slip".
const lapseReach = 5

// conflictMargin is how much more confident an existing value must be to
// resist a different new value that the user did not mark as a correction.
const conflictMargin = 0.15

// Apply merges a model's answer into the current extraction for one turn.
// It is pure and deterministic (fields are processed in schema order):
//
//   - a value below its field's confidence threshold is rejected;
//   - a field seen for the first time is new;
//   - the same value again (compared after trimming, case and final
//     punctuation for strings) is an update: the turn is added to its
//     provenance and the confidence rises to the higher of the two;
//   - for a list, what the answer is depends on the session's prompt
//     version: with PromptV1, the items the message names, appended (an
//     update) unless the user marks a correction, when they replace the
//     list (a supersession); with PromptV2, the whole list, which appends
//     its new items when it holds every stored one, or new items but none
//     of the stored ones while the user marked no correction and named
//     none of them (an update); when the message takes back by name stored
//     items the answer leaves out, or restricts the list to what it names
//     (takenBack), the stored list loses them and gains the answer's
//     items, which suits a model that answers the whole list and one that
//     answers only the new items alike (a supersession); and else (an
//     empty list, null) replaces the list like any different value;
//   - a different value supersedes the old one, which is kept in
//     superseded_previous with the reason; but when the old value is more
//     confident by more than 0.15 and the user did not mark a correction
//     ("actually", "instead", ...) nor, for a PromptV2 list, take back
//     an item the answer leaves out (by name or by a restriction), the
//     old value stays and the new one is rejected as a conflict.
//
// Deferred obligations are recorded with the turn. Sensitive information in
// the message is detected and reported.
func Apply(def *engine.Definition, current engine.Extraction, ans Answer, message string, meta Meta) Result {
	next := current.Clone()
	if next.Fields == nil {
		next.Fields = map[string]engine.ExtractedField{}
	}
	version := meta.PromptVersion.orCurrent()
	res := Result{FieldsUpdated: []string{}, Superseded: []Supersession{}, PromptVersion: version}
	text := engine.LowerText(message)
	marker := CorrectionMarkerIn(text)
	for _, fd := range def.ExtractionSchema.Fields {
		fa, ok := ans.Fields[fd.Path]
		if !ok {
			continue
		}
		if fa.Confidence+1e-9 < fd.Threshold() {
			res.Rejected = append(res.Rejected, Rejection{FieldPath: fd.Path, Confidence: fa.Confidence,
				Reason: fmt.Sprintf("confidence %.2f is below the field's threshold %.2f", fa.Confidence, fd.Threshold())})
			continue
		}
		val, err := Coerce(fd.ValueType, fa.Value)
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{FieldPath: fd.Path, Confidence: fa.Confidence, Reason: err.Error()})
			continue
		}
		prev, had := next.Fields[fd.Path]
		// The stored items of a list the message takes back by name (a
		// version-2 answer, which holds the whole list).
		var taken, left []string
		if had && fd.ValueType == engine.TypeArray && version != PromptV1 {
			if taken = takenBack(text, prev.Value, val); len(taken) == 0 {
				left = leftOut(marker, text, prev.Value, val)
			}
		}
		f := engine.ExtractedField{
			Value: val, Confidence: fa.Confidence, ExtractedFromTurns: []int{meta.TurnNumber},
			LastUpdatedAtTurn: meta.TurnNumber, LastMessageID: meta.MessageID, Reasoning: fa.Reasoning,
		}
		switch {
		case !had:
			res.NewConceptCount++
			if fd.ValueType == engine.TypeArray {
				res.NewConceptCount += max(len(items(val))-1, 0)
			}
		case sameValue(fd.ValueType, prev.Value, val):
			f = reinforce(prev, fa, meta)
		case fd.ValueType == engine.TypeArray && len(taken) == 0 && len(left) == 0 && grows(version, marker, text, prev.Value, val):
			merged, added := union(prev.Value, val)
			f = reinforce(prev, fa, meta)
			f.Value = merged
			res.NewConceptCount += added
		default:
			if prev.Confidence > fa.Confidence+conflictMargin && marker == "" && len(taken) == 0 {
				res.Rejected = append(res.Rejected, Rejection{FieldPath: fd.Path, Confidence: fa.Confidence,
					Reason: fmt.Sprintf("conflicts with the current value, which is more confident (%.2f); no correction was marked", prev.Confidence)})
				continue
			}
			reason := fmt.Sprintf("new value at turn %d with confidence %.2f replaces the value of turn %d", meta.TurnNumber, fa.Confidence, prev.LastUpdatedAtTurn)
			if len(taken) > 0 {
				reason = fmt.Sprintf("user took back %q at turn %d", taken, meta.TurnNumber)
			} else if len(left) > 0 {
				reason = fmt.Sprintf("the answer leaves out %q, which the message at turn %d names", left, meta.TurnNumber)
			}
			if gone := slices.Concat(taken, left); len(gone) > 0 {
				if kept := without(prev.Value, gone); len(items(kept)) > 0 {
					val, _ = union(kept, val)
					f.Value = val
				}
			}
			if fd.ValueType == engine.TypeArray {
				_, added := union(prev.Value, val)
				res.NewConceptCount += added
			}
			if marker != "" {
				reason = fmt.Sprintf("user correction (%q) at turn %d", marker, meta.TurnNumber)
			}
			if fa.Reasoning != "" {
				reason += ": " + fa.Reasoning
			}
			f.ExtractedFromTurns = appendTurn(prev.ExtractedFromTurns, meta.TurnNumber)
			f.SupersededPrevious = &engine.SupersededValue{Value: prev.Value, AtTurn: prev.LastUpdatedAtTurn,
				MessageID: prev.LastMessageID, ReplacedAtTurn: meta.TurnNumber, Reason: reason}
			res.Superseded = append(res.Superseded, Supersession{FieldPath: fd.Path, OldValue: prev.Value, NewValue: val, Reason: reason})
		}
		next.Fields[fd.Path] = f
		res.FieldsUpdated = append(res.FieldsUpdated, fd.Path)
	}
	for _, id := range ans.DeferredObligations {
		if _, ok := def.Obligation(id); !ok || slices.Contains(res.Deferred, id) {
			continue
		}
		if next.Deferred == nil {
			next.Deferred = map[string]int{}
		}
		next.Deferred[id] = meta.TurnNumber
		res.Deferred = append(res.Deferred, id)
	}
	finds := sensitive.Detect(message)
	res.SensitiveInfoShared = len(finds) > 0
	res.SensitiveKinds = sensitive.Kinds(finds)
	res.Extraction = next
	res.Log, res.Links = Diff(current, next, meta)
	return res
}

// grows reports whether a list answer val adds its new items to the stored
// list prev rather than replacing it: with PromptV1 unless the user marked
// a correction; with PromptV2, which asks for the whole list, when it holds
// every stored item, or when it holds new items but none of the stored ones
// and the user marked no correction: that is a model answering only the new
// items, not a user taking every item back, and what the user said before
// is kept; so is it when the message only adds ("we also need …", see
// adds), whatever stored items the answer holds. An empty list or null,
// which names no new item ("we need none of those"), replaces the list.
// Apply does not ask it of an answer that leaves out a stored item the
// message takes back by name (takenBack), whatever else the message adds
// ("Deadlines can go, we also want notifications"), nor of one that leaves
// out the stored items the message names (leftOut): it takes those items
// off and adds the answer's.
func grows(v PromptVersion, marker string, message engine.Text, prev, val json.RawMessage) bool {
	if v == PromptV1 {
		return marker == ""
	}
	have := items(val)
	kept := 0
	stored := items(prev)
	for _, x := range stored {
		if slices.Contains(have, x) {
			kept++
		}
	}
	// A clause that keeps what it names ("We can't lose deadlines") is no
	// negation of the rest, nor does it name an item taken back.
	rest := unkept(message)
	return kept == len(stored) ||
		len(have) > 0 && (adds(rest) || kept == 0 && marker == "")
}

// leftOut returns the stored items of the list prev that the message names
// and a version-2 answer val holding new items but none of the stored ones
// leaves out, when the user marked no correction and the message does not
// only add: "Pret isn't a competitor, it's Costa", answered [Costa], takes
// Pret off. Only those: a model that answers only the new items gives the
// same answer to "Tasks are for managers; we need reminders", and the
// stored items the message does not name stay either way; so do those it
// names as what a new item is for ("We need reminders on the deadlines",
// served).
func leftOut(marker string, message engine.Text, prev, val json.RawMessage) []string {
	have, stored := items(val), items(prev)
	if marker != "" || len(have) == 0 || slices.ContainsFunc(stored, func(x string) bool { return slices.Contains(have, x) }) {
		return nil
	}
	rest := unkept(message)
	if adds(rest) {
		return nil
	}
	purposes := served(message, prev)
	return slices.DeleteFunc(named(rest, prev), func(x string) bool { return slices.Contains(purposes, x) })
}

// unkept is the message without its clauses that keep what they name
// (keeps).
func unkept(message engine.Text) engine.Text {
	cs := clauses(message.Lowered())
	out := slices.DeleteFunc(slices.Clone(cs), func(c string) bool { return keeps(engine.LowerText(c)) })
	if len(out) == len(cs) {
		return message
	}
	return engine.LowerText(strings.Join(out, ", "))
}

// takenBack returns the stored items of the list prev that the message
// takes back by name and the list answer val leaves out: a clause names the
// item, in the singular or the plural (itemForms), or refers back to the
// stored items as a whole ("Forget those", "none of these"), beside a
// negation, a removal or a take-back ("Deadlines can go, we also want
// notifications", "The deadline stuff can go", "We don't need deadlines",
// "no deadlines"). A stored item named in a clause that takes nothing back
// ("Besides tasks, we also need notifications") is no take-back, whatever
// another clause drops, nor is one that says not to take it back ("Don't
// forget those", keeps), nor one whose negation is of something else ("We
// can't let the deadline slip", negates). A clause that restricts the list
// to what it names ("Deadlines can go and we only need notifications",
// restricts) takes back every stored item the message does not name, but
// in a message that approves the stored items as a whole ("The rest looks
// good, we only need notifications", approvesTheRest) or names one as what
// a new item is for ("We just need reminders for the deadlines", served).
func takenBack(message engine.Text, prev, val json.RawMessage) []string {
	var stored []string
	if json.Unmarshal(prev, &stored) != nil {
		return nil // not a list of strings
	}
	itemWords := map[string]bool{}
	for _, x := range stored {
		for _, f := range itemForms(x) {
			for _, w := range words(f) {
				itemWords[w] = true
			}
		}
	}
	have := items(val)
	var answered []string
	_ = json.Unmarshal(val, &answered)
	limits := !approvesTheRest(message) && len(served(message, prev)) == 0
	var taken []string
	for _, c := range clauses(message.Lowered()) {
		clause := engine.LowerText(c)
		if keeps(clause) {
			continue
		}
		negative := clause.Negative()
		drops := slices.ContainsFunc(removals, clause.Contains) || slices.ContainsFunc(takeBacks, clause.Contains)
		replaces := slices.ContainsFunc(replacements, clause.Contains)
		restricted := limits && restricts(clause, slices.Concat(stored, answered))
		if !negative && !drops && !replaces && !restricted {
			continue
		}
		all := slices.ContainsFunc(backReferences, func(r string) bool {
			return clause.Contains(r) && (drops || negative && negates(clause, r, itemWords))
		})
		for _, x := range stored {
			forms := itemForms(x)
			named := slices.ContainsFunc(forms, clause.Contains)
			takes := all || restricted && !slices.ContainsFunc(forms, message.Contains) || named && (drops || replaces ||
				negative && slices.ContainsFunc(forms, func(f string) bool { return negates(clause, f, itemWords) }))
			key, _ := json.Marshal(x)
			if takes && !slices.Contains(have, itemKey(key)) && !slices.Contains(taken, x) {
				taken = append(taken, x)
			}
		}
	}
	return taken
}

// approvesTheRest reports whether a clause of a message approves the
// stored items as a whole ("The rest looks good", "everything else is
// fine", "the others are ok"): a limit beside it ("we only need
// notifications") is of what the user still needs, not of the list, and
// takes nothing back.
func approvesTheRest(message engine.Text) bool {
	return slices.ContainsFunc(clauses(message.Lowered()), func(c string) bool {
		clause := engine.LowerText(c)
		return approves(clause) && slices.ContainsFunc(slices.Concat(backReferences, restReferences), clause.Contains)
	})
}

// served returns the string items of the list prev that a message names as
// what another item is for: after a purpose word (purposeLeads) with
// nothing between but determiners (purposeSkips): "reminders for the
// deadlines", "a calendar to track tasks", "notes on the tasks". Such an
// item is no item the message takes back or leaves out, nor one that a
// limit beside it keeps while it takes the others back: "We just need
// reminders for the deadlines" says what the user still needs, not what
// alone should remain. A reader who took "just" as a restriction would
// drop tasks, which the user did not mention, and keep deadlines only
// because reminders hang on them; but a user who builds a new item on a
// stored one is adding to the list, and what the user said before goes only
// when the user clearly takes it back.
func served(message engine.Text, prev json.RawMessage) []string {
	var stored []string
	if json.Unmarshal(prev, &stored) != nil {
		return nil // not a list of strings
	}
	var out []string
	for _, c := range clauses(message.Lowered()) {
		clause := engine.LowerText(c)
		for _, x := range stored {
			if !slices.Contains(out, x) && slices.ContainsFunc(itemForms(x), func(f string) bool { return purpose(clause, f) }) {
				out = append(out, x)
			}
		}
	}
	return out
}

// purpose reports whether a lowered clause names a phrase after a purpose
// word, with nothing between but determiners.
func purpose(clause engine.Text, phrase string) bool {
	i := clause.Index(phrase)
	if i < 0 {
		return false
	}
	before := words(clause.Lowered()[:i])
	for len(before) > 0 && purposeSkips[before[len(before)-1]] {
		before = before[:len(before)-1]
	}
	return slices.ContainsFunc(purposeLeads, func(lead string) bool {
		lw := words(lead)
		return len(before) >= len(lw) && slices.Equal(before[len(before)-len(lw):], lw)
	})
}

// purposeLeads say that what follows them is what another item is for
// (served); purposeSkips may stand between one and the item.
var (
	purposeLeads = []string{"for", "on", "to track", "to keep track of", "to manage"}
	purposeSkips = engine.WordSet("the a an our my your their its all any each every those these")
)

// negates reports whether a negation in a lowered clause bears on a phrase
// in it: it stands before the phrase or after it with nothing between but
// words that lead to what is negated (leadWords) or name stored items
// (itemWords): "We don't need the deadlines", "no deadlines", "Pret isn't
// a competitor", "tasks or deadlines aren't needed". A negation of another
// verb says nothing of the phrase: "We can't let the deadline slip", "we
// don't want to miss a deadline".
func negates(clause engine.Text, phrase string, itemWords map[string]bool) bool {
	i := clause.Index(phrase)
	if i < 0 {
		return false
	}
	leads := func(w string) bool { return leadWords[w] || itemWords[w] }
	before := words(clause.Lowered()[:i])
	k := len(before)
	for k > 0 && leads(before[k-1]) {
		k--
	}
	if k > 0 && engine.LowerText(strings.Join(slices.Concat(before[k-1:], []string{phrase}), " ")).Negative() {
		return true
	}
	after := words(clause.Lowered()[i+len(phrase):])
	k = 0
	for k < len(after) && leads(after[k]) {
		k++
	}
	return k < len(after) && engine.LowerText(phrase+" "+strings.Join(after[:k+1], " ")).Negative()
}

// restricts reports whether a lowered clause limits a list to the items,
// stored or answered, it names: "we only need notifications", "just tasks
// and notifications", "nothing but notifications", "only the deadlines
// matter"; a restriction stands before an item with nothing between but
// words that lead to it (restrictLeads) or name items. A restriction of
// something else ("we only need it to sync with Xero"), one negated ("not
// only notifications"), one that adds ("only notifications as well") and one
// of what is missing ("only reminders are missing") limit no list.
func restricts(clause engine.Text, items []string) bool {
	if slices.ContainsFunc(slices.Concat(notOnly, additions, missing), clause.Contains) || addsToo(clause.Lowered()) {
		return false
	}
	leads := maps.Clone(restrictLeads)
	var forms []string
	for _, x := range items {
		for _, f := range itemForms(x) {
			forms = append(forms, f)
			for _, w := range words(f) {
				leads[w] = true
			}
		}
	}
	lower := clause.Lowered()
	for _, f := range forms {
		i := clause.Index(f)
		if i < 0 {
			continue
		}
		for _, r := range restrictions {
			j := engine.LowerText(lower[:i]).Index(r)
			if j >= 0 && !slices.ContainsFunc(words(lower[j+len(r):i]), func(w string) bool { return !leads[w] }) {
				return true
			}
		}
	}
	return false
}

// restrictLeads may stand between a limit and what it limits the list to.
var restrictLeads = engine.WordSet("need needs want wants use really actually care about is are 's the a an our " +
	"and or")

// leadWords may stand between a negation and what it negates: verbs of
// needing and having, auxiliaries, articles, pronouns, conjunctions.
var leadWords = engine.WordSet("need needs needed needing want wants wanted use uses used using have has had " +
	"require requires required care about bother bothering track tracking support supporting build building " +
	"include including add adding do does did be being is are was were 's really actually even any more much " +
	"at all the a an our my your their this that these those them it its we i you they and or nor either " +
	"neither of to for with stuff")

// words splits a lowered text into its words, apostrophes and hyphens kept
// ("don't", "no-code").
func words(s string) []string {
	return strings.FieldsFunc(strings.ReplaceAll(s, "’", "'"), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-'
	})
}

// limited reports whether a text holds one of the limits, but "just" in a
// comparison ("Just like tasks, we need notifications"), which adds.
func limited(t engine.Text) bool {
	for _, w := range limits {
		if t.Contains(w) && (w != "just" || !slices.ContainsFunc(comparisons, t.Contains)) {
			return true
		}
	}
	return false
}

// keeps reports whether a clause says not to take something back ("Don't
// forget those", "we can't lose deadlines", "never drop them"): its
// negation and its removal cancel out, and what it names stays; so does
// what it puts off ("The deadlines can wait", "they aren't urgent",
// defers), what it approves ("Tasks work great", approves), and what it
// says must not lapse ("We can't let the deadlines slip", "we don't want
// to miss a deadline"): a negation a few words before a lapse.
func keeps(clause engine.Text) bool {
	c := engine.LowerText(strings.ReplaceAll(clause.Lowered(), "’", "'"))
	if slices.ContainsFunc(defers, c.Contains) || approves(c) {
		return true
	}
	for _, n := range keepNegations {
		for _, v := range keepVerbs {
			if c.Contains(n+" "+v) || c.Contains(n+" want to "+v) {
				return true
			}
		}
	}
	ws := words(c.Lowered())
	for i, w := range ws {
		if lapses[w] && slices.ContainsFunc(ws[max(i-lapseReach, 0):i], func(n string) bool {
			return slices.Contains(keepNegations, n)
		}) {
			return true
		}
	}
	return false
}

// approves reports whether a clause says that what it names works for the
// user ("Tasks work great", "the deadlines are fine", "we love the tasks",
// "happy with deadlines"): named to be praised, an item is named to be
// kept, and a model answering only the new items leaves it out because it
// is not new. A clause with a negation ("Tasks don't work well", "not happy
// with deadlines"), a removal or take-back ("tasks are fine to drop") or a
// limit ("only tasks are good") approves nothing: what it says of the item
// is left to the other rules.
func approves(clause engine.Text) bool {
	if !slices.ContainsFunc(approvals, clause.Contains) || clause.Negative() || limited(clause) {
		return false
	}
	return !slices.ContainsFunc(removals, clause.Contains) && !slices.ContainsFunc(takeBacks, clause.Contains)
}

// itemForms returns a lowered item with its plural, and its singular when
// it ends like a plural: a trailing s not after s, u or i (so "status",
// "analysis" and "access" are no plurals), es after s, x, z, ch or sh, or
// ies, whose singular ends in y ("deliveries", "delivery"). A singular of
// fewer than three letters is no form ("ads", "ios"). A message names an
// item when it holds one of its forms as whole words: "the deadline stuff"
// names "deadlines", "inboxes" names "inbox", "push notification" names
// "push notifications", "the category" names "categories"; "ai" is not in
// "email", "ads" is not "ad", "notes" is not "not".
func itemForms(item string) []string {
	x := strings.ToLower(strings.TrimSpace(item))
	forms := []string{x, x + "s"}
	if endsIn(x, sibilants...) {
		forms = append(forms, x+"es")
	}
	if s, ok := strings.CutSuffix(x, "y"); ok {
		forms = append(forms, s+"ies")
	}
	var singulars []string
	if s, ok := strings.CutSuffix(x, "es"); ok && endsIn(s, sibilants...) {
		singulars = append(singulars, s)
	}
	if s, ok := strings.CutSuffix(x, "ies"); ok {
		singulars = append(singulars, s+"y")
	}
	if s, ok := strings.CutSuffix(x, "s"); ok && !endsIn(s, "s", "u", "i") {
		singulars = append(singulars, s)
	}
	for _, s := range singulars {
		if word := s[strings.LastIndex(s, " ")+1:]; utf8.RuneCountInString(word) >= 3 {
			forms = append(forms, s)
		}
	}
	return forms
}

// sibilants are the endings whose plural takes es.
var sibilants = []string{"s", "x", "z", "ch", "sh"}

func endsIn(s string, ends ...string) bool {
	return slices.ContainsFunc(ends, func(end string) bool { return strings.HasSuffix(s, end) })
}

// without returns the list of strings prev without the items drop.
func without(prev json.RawMessage, drop []string) json.RawMessage {
	var xs []string
	_ = json.Unmarshal(prev, &xs)
	out, _ := json.Marshal(slices.DeleteFunc(xs, func(x string) bool { return slices.Contains(drop, x) }))
	return out
}

// clauses splits a lowered message at punctuation, dashes and "but", but
// the "but" of "nothing but", a limit.
func clauses(lower string) []string {
	var out []string
	for _, c := range strings.FieldsFunc(lower, func(r rune) bool { return strings.ContainsRune(".,;:!?—–()", r) }) {
		parts := strings.Split(c, " but ")
		for i := 0; i < len(parts); i++ {
			p := parts[i]
			for ; i+1 < len(parts) && strings.HasSuffix(p, "nothing"); i++ {
				p += " but " + parts[i+1]
			}
			out = append(out, p)
		}
	}
	return out
}

// adds reports whether a message adds to what it is about and takes
// nothing back ("Besides tasks, we also need notifications", "Like tasks,
// notifications matter too", "not only tasks but notifications"; not "we
// also switched from deadlines to notifications"): a list answer to it
// that leaves stored items out is a model answering what the message
// names, not the whole list.
func adds(message engine.Text) bool {
	// "Not only" adds, and says no to nothing.
	lower := message.Lowered()
	for _, n := range notOnly {
		lower = strings.ReplaceAll(lower, n, "also")
	}
	message = engine.LowerText(lower)
	if message.Negative() {
		return false
	}
	if slices.ContainsFunc(removals, message.Contains) || limited(message) {
		return false
	}
	for _, w := range additions {
		if message.Contains(w) {
			return true
		}
	}
	return addsToo(message.Lowered())
}

// addsToo reports whether a lowered message says "too" at the end of a
// clause ("notifications matter too."), where it adds; before a word it
// says too much ("deadlines are too fiddly").
func addsToo(lower string) bool {
	fields := strings.Fields(lower)
	for i, f := range fields {
		w := strings.TrimRightFunc(f, unicode.IsPunct)
		if w == "too" && (w != f || i == len(fields)-1) {
			return true
		}
	}
	return false
}

var (
	additions = []string{"also", "as well", "besides", "in addition", "plus", "another", "just like", "just as"}
	// missing says what the list lacks: "only reminders are missing" adds
	// them, no limit.
	missing = []string{"missing", "lacking", "we lack"}
	// notOnly adds what follows to what it names: no limit, no negation.
	notOnly = []string{"not only", "not just"}
	// comparisons liken what they name to another item: no limit.
	comparisons = []string{"just like", "just as"}
	removals    = []string{"drop", "dropped", "dropping", "remove", "removed", "removing", "no longer", "forget",
		"scrap", "scrapped", "replace", "replaced", "replacing", "switch", "switched", "switching", "swap", "swapped",
		"stop", "stopped", "ditch", "ditched", "rid of", "anymore", "any more", "cancel", "cancelled", "canceled"}
	// replacements take back a stored item named beside them
	// ("notifications instead of deadlines"), restrictions every stored
	// item the message does not name ("we only need tasks and
	// notifications", restricts); neither refers back to an item ("only
	// these two: …" adds). Both are limits: a message with one does not
	// only add.
	replacements = []string{"instead", "without", "rather than"}
	restrictions = []string{"only", "just", "nothing but"}
	limits       = slices.Concat(replacements, restrictions)
	// takeBacks say of an item named beside them that it goes, in words
	// that need the item to take anything back ("deadlines can go").
	takeBacks = []string{"can go", "could go", "should go", "must go", "has to go", "have to go", "is out",
		"are out", "is gone", "are gone", "unnecessary", "skip", "lose", "delete", "leave out", "none of"}
	// keepNegations and keepVerbs say, one before the other, not to take
	// something back (keeps).
	keepNegations = []string{"don't", "dont", "do not", "never", "can't", "cannot", "can not", "won't", "will not",
		"shouldn't", "should not", "mustn't", "must not", "not"}
	keepVerbs = []string{"forget", "drop", "remove", "lose", "skip", "delete", "scrap", "ditch", "cancel",
		"leave out", "get rid of", "change", "touch", "go"}
	// lapses, after a negation at most lapseReach words before, say what
	// the user must keep ("don't want the deadlines to slip", keeps).
	lapses = engine.WordSet("slip slips slipping miss missing")
	// defers put off what they name, which is no take-back (keeps).
	defers = []string{"can wait", "could wait", "can come later", "for later", "until later", "not yet", "not urgent",
		"isn't urgent", "aren't urgent", "not a priority", "isn't a priority", "aren't a priority"}
	// approvals say that what a clause names works for the user (approves).
	approvals = []string{"work great", "works great", "worked great", "working great", "work well", "works well",
		"worked well", "working well", "work fine", "works fine", "is fine", "are fine", "is good", "are good",
		"is great", "are great", "is ok", "are ok", "is okay", "are okay", "is perfect", "are perfect", "look good",
		"looks good", "look great", "looks great", "look fine", "looks fine", "love", "loves", "happy with",
		"pleased with", "can stay", "should stay"}
	// backReferences name the stored items of a list as a whole.
	backReferences = []string{"those", "these", "both", "all of them", "all that", "all of that", "everything",
		"the lot", "the rest", "them all"}
	// restReferences name the stored items beside another one, which a
	// clause may approve ("the others are ok", approvesTheRest) but which
	// are no take-back of every item ("forget the others" is not
	// "forget those").
	restReferences = []string{"the others", "the other ones", "all else", "everything else"}
)

// named returns the string items of the list prev that the message names,
// as whole words.
func named(message engine.Text, prev json.RawMessage) []string {
	var xs []string
	if json.Unmarshal(prev, &xs) != nil {
		return nil // not a list of strings
	}
	return slices.DeleteFunc(xs, func(x string) bool { return !message.Contains(x) })
}

// reinforce keeps a value that was extracted again: its provenance gains the
// turn and its confidence rises to the higher of the two. Its superseded
// previous value, if any, is kept.
func reinforce(prev engine.ExtractedField, fa FieldAnswer, meta Meta) engine.ExtractedField {
	f := prev.Clone()
	f.Confidence = max(prev.Confidence, fa.Confidence)
	f.ExtractedFromTurns = appendTurn(prev.ExtractedFromTurns, meta.TurnNumber)
	f.LastUpdatedAtTurn = meta.TurnNumber
	f.LastMessageID = meta.MessageID
	if fa.Reasoning != "" {
		f.Reasoning = fa.Reasoning
	}
	return f
}

func appendTurn(turns []int, t int) []int {
	out := slices.Clone(turns)
	if !slices.Contains(out, t) {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Diff derives the log rows of a turn from the extraction before and after
// it: every field last updated by this turn's message is an entry (new when
// it was absent before, supersede when this turn replaced its value, update
// otherwise), and every supersession links the earlier entry. Because it
// needs only the two states, the runner can rebuild the rows from a
// turn.extracted event.
func Diff(prev, next engine.Extraction, meta Meta) ([]LogEntry, []SupersededLink) {
	entries := []LogEntry{}
	var links []SupersededLink
	for _, path := range next.Paths() {
		f := next.Fields[path]
		if f.LastUpdatedAtTurn != meta.TurnNumber || f.LastMessageID != meta.MessageID {
			continue
		}
		typ := TypeUpdate
		_, had := prev.Fields[path]
		switch {
		case !had:
			typ = TypeNew
		case f.SupersededPrevious != nil && f.SupersededPrevious.ReplacedAtTurn == meta.TurnNumber:
			typ = TypeSupersede
		}
		e := LogEntry{
			ID: LogEntryID(meta.SessionID, meta.MessageID, path), SessionID: meta.SessionID, ProjectID: meta.ProjectID,
			MessageID: meta.MessageID, EngineID: meta.EngineID, FieldPath: path, ExtractedValue: f.Value,
			Confidence: f.Confidence, ExtractionType: typ, Reasoning: f.Reasoning, TurnNumber: meta.TurnNumber,
		}
		entries = append(entries, e)
		if typ == TypeSupersede && f.SupersededPrevious.MessageID != "" {
			links = append(links, SupersededLink{
				EntryID:   LogEntryID(meta.SessionID, f.SupersededPrevious.MessageID, path),
				FieldPath: path, MessageID: f.SupersededPrevious.MessageID,
				SupersededBy: meta.MessageID, SupersededByEntryID: e.ID,
			})
		}
	}
	return entries, links
}

var logNamespace = uuid.MustParse("6f1c3e8a-4a55-5b7e-9d62-0c1f7a2b9e10")

// LogEntryID is the id of the log entry of a field extracted from a message.
func LogEntryID(sessionID, messageID, fieldPath string) string {
	return uuid.NewSHA1(logNamespace, []byte(sessionID+"\x00"+messageID+"\x00"+fieldPath)).String()
}

// sameValue compares two values of a type; strings ignore case, spacing and
// final punctuation, lists ignore order.
func sameValue(t engine.ValueType, a, b json.RawMessage) bool {
	switch t {
	case engine.TypeString:
		var x, y string
		if json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil {
			return normText(x) == normText(y)
		}
	case engine.TypeArray:
		ai, bi := items(a), items(b)
		if len(ai) != len(bi) {
			return false
		}
		for _, x := range bi {
			if !slices.Contains(ai, x) {
				return false
			}
		}
		return true
	}
	ca, err1 := engine.Canonicalize(a)
	cb, err2 := engine.Canonicalize(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// items returns a list's items as normalized keys for comparison.
func items(v json.RawMessage) []string {
	var xs []json.RawMessage
	if json.Unmarshal(v, &xs) != nil {
		return nil
	}
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, itemKey(x))
	}
	return out
}

func itemKey(x json.RawMessage) string {
	var s string
	if json.Unmarshal(x, &s) == nil {
		return "s:" + normText(s)
	}
	c, err := engine.Canonicalize(x)
	if err != nil {
		return string(x)
	}
	return "j:" + string(c)
}

// union appends b's items that a lacks, keeping a's order.
func union(a, b json.RawMessage) (json.RawMessage, int) {
	var xs, ys []json.RawMessage
	_ = json.Unmarshal(a, &xs)
	_ = json.Unmarshal(b, &ys)
	seen := map[string]bool{}
	for _, x := range xs {
		seen[itemKey(x)] = true
	}
	added := 0
	for _, y := range ys {
		if k := itemKey(y); !seen[k] {
			seen[k] = true
			xs = append(xs, y)
			added++
		}
	}
	out, _ := json.Marshal(xs)
	return out, added
}

func normText(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) })
}
