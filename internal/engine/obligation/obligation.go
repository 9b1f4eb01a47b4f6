// Package obligation derives each obligation's status and confidence from
// the extraction, and picks the obligation to ask for next.
//
// An obligation lists extraction fields (or names an evaluator). A field is
// met when it is extracted with confidence at or above its threshold (a
// boolean field must also be true: it is a confirmation); a null value
// extracted with enough confidence is met too, because "there is none" is an
// answer. With k = min_fields (default: all listed fields):
//
//   - satisfied: at least k fields are met;
//   - partial: some field is extracted (met or below threshold), fewer than k met;
//   - deferred: not satisfied, the user put it off (extraction.deferred), and
//     no field of it was updated after that turn;
//   - pending: nothing extracted.
//
// Confidence is the mean of the k highest field confidences, a missing field
// counting 0, so a satisfied obligation's confidence is that of the evidence
// it rests on. An evaluator obligation scores s in [0,1]: satisfied at
// s ≥ threshold (default 1.0), partial when s > 0; its confidence is s.
// An obligation may list fields and name an evaluator: either satisfies
// it. The evaluator counts what the fields cannot show, such as an answer
// the session's inbound handoff carried, while the answer to its question
// still goes to its fields; its confidence is the higher of the two.
package obligation

import (
	"math"
	"sort"

	"github.com/praetorhq/praetor/internal/engine"
)

// Evaluate derives the status of every obligation, in definition order, and
// the summary. It keeps the memory's focus and what Ask keeps of it.
func Evaluate(def *engine.Definition, m *engine.WorkingMemory, reg *engine.Registry) engine.ObligationState {
	items := make([]engine.ObligationItem, 0, len(def.Obligations))
	for i := range def.Obligations {
		items = append(items, Item(def, &def.Obligations[i], m, reg))
	}
	return engine.ObligationState{Items: items, Summary: engine.Summarize(items), Focus: m.Obligations.Focus,
		Asked: m.Obligations.Asked, Resting: m.Obligations.Resting}
}

// Item derives one obligation's state.
func Item(def *engine.Definition, o *engine.Obligation, m *engine.WorkingMemory, reg *engine.Registry) engine.ObligationItem {
	it := engine.ObligationItem{
		ID: o.ID, Category: o.Category, Description: o.Description,
		Required: o.Required, Priority: o.Priority, Status: engine.StatusPending,
	}
	ext := m.Extraction
	lastUpdate := 0
	if len(o.Fields) > 0 {
		var confs []float64
		present := false
		for _, path := range o.Fields {
			f, ok := ext.Fields[path]
			if !ok {
				confs = append(confs, 0)
				continue
			}
			present = true
			lastUpdate = max(lastUpdate, f.LastUpdatedAtTurn)
			confs = append(confs, f.Confidence)
			fd, ok := def.Field(path)
			if !ok {
				fd = &engine.FieldDefinition{Path: path}
			}
			if fd.Met(f) {
				it.FieldsMet = append(it.FieldsMet, path)
			}
		}
		k := o.Needed()
		sort.Sort(sort.Reverse(sort.Float64Slice(confs)))
		sum := 0.0
		for i := 0; i < k && i < len(confs); i++ {
			sum += confs[i]
		}
		if k > 0 {
			it.Confidence = round4(sum / float64(k))
		}
		switch {
		case k > 0 && len(it.FieldsMet) >= k:
			it.Status = engine.StatusSatisfied
		case present:
			it.Status = engine.StatusPartial
		}
	}
	if o.Evaluator != "" {
		s := 0.0
		if reg != nil {
			s = reg.Evaluate(o.Evaluator, m)
		}
		th := o.Threshold
		if th == 0 {
			th = 1
		}
		it.Confidence = round4(max(it.Confidence, s))
		switch {
		case s+1e-9 >= th:
			it.Status = engine.StatusSatisfied
		case s > 0 && it.Status == engine.StatusPending:
			it.Status = engine.StatusPartial
		}
	}
	if it.Status != engine.StatusSatisfied {
		if at, ok := ext.Deferred[o.ID]; ok && lastUpdate <= at {
			it.Status = engine.StatusDeferred
		}
	}
	return it
}

// How long the replies keep asking for an obligation the user's answers do
// not move (see Ask).
const (
	// MaxAsks is how many replies in a row may ask for it: the question,
	// then the question again with the offer to skip it.
	MaxAsks = 2
	// RestTurns is how many turns it then rests.
	RestTurns = 3
)

// Moved reports whether a turn moved the obligation the last reply asked
// for, given its item before the turn: its status or confidence changed,
// or the turn's extraction updated one of its fields (another answer at
// the same confidence is an answer too).
func Moved(def *engine.Definition, m *engine.WorkingMemory, before engine.ObligationItem) bool {
	after, ok := m.Obligation(before.ID)
	o, known := def.Obligation(before.ID)
	if !ok || !known || after.Status != before.Status || after.Confidence != before.Confidence {
		return true
	}
	for _, path := range o.Fields {
		if f, ok := m.Extraction.Fields[path]; ok && f.LastUpdatedAtTurn == m.TurnNumber {
			return true
		}
	}
	return false
}

// Ask picks the obligation the turn's reply asks for (Next) and makes it
// the memory's focus; nil when nothing is left. moved says whether the
// turn moved the obligation the last reply asked for (Moved).
//
// From memory version 2 an obligation that MaxAsks replies in a row asked
// for in vain rests for RestTurns turns: the replies ask for the others
// first, then come back to it. The user may not know yet, or may not want
// to say, and a third time in a row reads as not listening. With nothing
// else left, it is asked again.
func Ask(def *engine.Definition, m *engine.WorkingMemory, moved bool) *engine.Obligation {
	st := &m.Obligations
	if m.SchemaVersion < 2 {
		next := Next(def, m)
		st.Focus = ""
		if next != nil {
			st.Focus = next.ID
		}
		return next
	}
	for id, last := range st.Resting {
		if last < m.TurnNumber {
			delete(st.Resting, id)
		}
	}
	next := Next(def, m)
	again := next != nil && next.ID == st.Focus && !moved
	if again && st.Asked >= MaxAsks {
		if st.Resting == nil {
			st.Resting = map[string]int{}
		}
		st.Resting[next.ID] = m.TurnNumber + RestTurns - 1
		next = Next(def, m)
		again = next != nil && next.ID == st.Focus
	}
	if len(st.Resting) == 0 {
		st.Resting = nil
	}
	switch {
	case next == nil:
		st.Focus, st.Asked = "", 0
	case again:
		st.Asked++
	default:
		st.Focus, st.Asked = next.ID, 1
	}
	return next
}

// Next returns the most important obligation still to ask for. Satisfied and
// deferred obligations are skipped. The order is:
//
//  1. a mandatory checkpoint of a later phase waits for its phase (a final
//     confirmation is not asked early), unless nothing else is left;
//  2. a resting obligation (see Ask) waits until nothing else is left but
//     those of 1;
//  3. the current phase's focus categories before the others;
//  4. required before optional;
//  5. the focus categories in the order they are listed;
//  6. the current phase's mandatory checkpoints first, then priority
//     (critical to low), then partial before pending, then definition order.
//
// Nil when nothing is left.
func Next(def *engine.Definition, m *engine.WorkingMemory) *engine.Obligation {
	phase, _ := def.Phase(m.Phase.Current)
	var focus []string
	checkpoint := map[string]bool{}
	later := map[string]bool{}
	if phase != nil {
		focus = def.PhaseFocus(phase)
		for _, c := range phase.MandatoryCheckpoints {
			checkpoint[c.ObligationID] = true
		}
		for _, p := range def.Phases {
			if p.Order > phase.Order {
				for _, c := range p.MandatoryCheckpoints {
					later[c.ObligationID] = true
				}
			}
		}
	}
	focusIndex := func(cat string) int {
		for i, c := range focus {
			if c == cat {
				return i
			}
		}
		return len(focus)
	}
	type cand struct {
		o   *engine.Obligation
		key [9]int
	}
	var best *cand
	for i := range def.Obligations {
		o := &def.Obligations[i]
		st, ok := m.Obligation(o.ID)
		if !ok || st.Status == engine.StatusSatisfied || st.Status == engine.StatusDeferred {
			continue
		}
		fi := focusIndex(o.Category)
		_, resting := m.Obligations.Resting[o.ID]
		c := &cand{o: o, key: [9]int{
			b2i(later[o.ID] && !checkpoint[o.ID]), b2i(resting), b2i(fi == len(focus)), b2i(!o.Required), fi,
			b2i(!checkpoint[o.ID]), o.Priority.Rank(), b2i(st.Status != engine.StatusPartial), i,
		}}
		if best == nil || less(c.key, best.key) {
			best = c
		}
	}
	if best == nil {
		return nil
	}
	return best.o
}

func less(a, b [9]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
