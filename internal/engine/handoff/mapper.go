package handoff

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Input is what a context mapper reads: the source session at the turn its
// exit transition fired.
type Input struct {
	// Source is the engine handing off; Memory its session's working memory.
	Source *engine.Definition
	Memory *engine.WorkingMemory
	// TargetEngineID and Reason are the exit transition's.
	TargetEngineID string
	Reason         string
	// Now is the handoff's date (the turn's time, for replay).
	Now time.Time
}

// Mapper is a context mapper: it turns a session's working memory into the
// handoff for one exit transition. It must be pure (a function of its input)
// so a replay maps the same handoff.
type Mapper func(Input) contracts.EngineHandoff

// Name is the name a mapper is registered under: "source->target".
func Name(source, target string) string { return source + "->" + target }

// ErrDuplicate is returned when a mapper name is registered twice.
var ErrDuplicate = errors.New("already registered")

// ErrNoMapper is returned by Map for a transition without a mapper.
var ErrNoMapper = errors.New("no context mapper")

// Mappers holds the context mappers by name, and the fallback used for a
// transition that has none. Register everything before use; reads are safe
// from any goroutine.
type Mappers struct {
	mu       sync.RWMutex
	byName   map[string]Mapper
	fallback Mapper
}

// NewMappers returns an empty registry without a fallback.
func NewMappers() *Mappers { return &Mappers{byName: map[string]Mapper{}} }

// Register adds the mapper of the transition from source to target.
func (r *Mappers) Register(source, target string, fn Mapper) error {
	if source == "" || target == "" || fn == nil {
		return errors.New("register context mapper: source, target and mapper are required")
	}
	name := Name(source, target)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; ok {
		return fmt.Errorf("register context mapper %s: %w", name, ErrDuplicate)
	}
	r.byName[name] = fn
	return nil
}

// SetFallback sets the mapper of transitions that have none (nil: none).
func (r *Mappers) SetFallback(fn Mapper) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = fn
}

// Lookup returns the mapper of a transition: its own, or the fallback
// (specific is then false).
func (r *Mappers) Lookup(source, target string) (fn Mapper, specific bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if fn, ok := r.byName[Name(source, target)]; ok {
		return fn, true
	}
	return r.fallback, false
}

// Names returns the registered names, sorted.
func (r *Mappers) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Map builds the handoff of in's transition with its mapper, and carries
// forward what the session's own inbound handoff brought (CarryForward),
// but for the questions put off there that the session has since answered.
func (r *Mappers) Map(in Input) (contracts.EngineHandoff, error) {
	fn, _ := r.Lookup(in.Source.EngineID, in.TargetEngineID)
	if fn == nil {
		return contracts.EngineHandoff{}, fmt.Errorf("%w for %s", ErrNoMapper, Name(in.Source.EngineID, in.TargetEngineID))
	}
	h := fn(in)
	if inbound, ok := contracts.DecodeHandoff(in.Memory.InboundHandoff); ok {
		rs := &inbound.RelationalState
		rs.OpenQuestions = slices.DeleteFunc(slices.Clone(rs.OpenQuestions), answered(in.Memory, PutOffPrefix))
		rs.Sensitivities = slices.DeleteFunc(slices.Clone(rs.Sensitivities), answered(in.Memory, NotYetPrefix))
		CarryForward(&h, inbound)
	}
	return h, nil
}

// answered returns whether an item of an inbound handoff, prefix and an
// obligation's description, names an obligation the session has since
// satisfied: a question the user put off in an earlier engine and answered
// here is no longer put off.
func answered(m *engine.WorkingMemory, prefix string) func(string) bool {
	return func(item string) bool {
		d, ok := strings.CutPrefix(item, prefix)
		if !ok {
			return false
		}
		for _, o := range m.Obligations.Items {
			if o.Status == engine.StatusSatisfied && strings.TrimSuffix(o.Description, ".") == d {
				return true
			}
		}
		return false
	}
}

// CarryForward adds to h what the source session learnt from its own
// inbound handoff, so nothing the user settled is dropped along a chain of
// engines (I-PASS Safety): project-discovery → exploration →
// project-discovery gives the second discovery session the requirements the
// first captured, not only exploration's decision. Decisions, eliminated
// options, constraints, assumptions, goals, pain points, concepts taught,
// prior experience, open questions and sensitivities are carried, after
// h's own and without repeats (an option ruled out twice is listed once,
// case and articles aside; one chosen or ruled out for two questions,
// twice). What the source session settled again replaces
// what was carried: a decision on the question one of h's own
// answers (a later exploration session's choice of QuickBooks replaces an
// earlier one's of Xero for invoicing; its choice of Stripe, to take
// payments, is carried beside it: Decision.Question), an option eliminated
// earlier that one of h's decisions chose for the same question (case and
// articles aside: "a custom build" ruled out, "custom build" chosen), and
// a constraint whose topic one of h's own has
// ("Budget: $90k" beside "Budget: $120k", "about 300 dollars a month"
// beside "about 500 dollars a month"); an item of a list field is carried
// beside h's ("Integration: QuickBooks" beside "Integration: Xero"). A
// carried constraint loses its implication, written for the engine the
// inbound handoff went to, which h does not go to (a handoff goes to
// another engine than its source's: "Only options within it are worth
// exploring" means nothing to project discovery).
// Knowledge gaps are not carried: they are what the source session was
// there to close, and it reports its own. Nor are the phase results, the
// metadata and the source's view of the user (levels, trust, rapport),
// which are the source session's.
func CarryForward(h *contracts.EngineHandoff, inbound contracts.EngineHandoff) {
	al, in := &h.ActionList, inbound.ActionList
	eliminated := slices.DeleteFunc(slices.Clone(in.OptionsEliminated), func(o contracts.EliminatedOption) bool {
		return slices.ContainsFunc(al.DecisionsReached, func(d contracts.Decision) bool {
			return sameOption(d.Decision, d.Question, o.Option, o.Question)
		})
	})
	decisions := slices.DeleteFunc(slices.Clone(in.DecisionsReached), func(c contracts.Decision) bool {
		return slices.ContainsFunc(al.DecisionsReached, func(d contracts.Decision) bool { return sameQuestion(d, c) })
	})
	al.DecisionsReached = carry(al.DecisionsReached, decisions, func(a, b contracts.Decision) bool {
		return sameOption(a.Decision, a.Question, b.Decision, b.Question)
	})
	al.OptionsEliminated = carry(al.OptionsEliminated, eliminated, func(a, b contracts.EliminatedOption) bool {
		return sameOption(a.Option, a.Question, b.Option, b.Question)
	})
	constraintTopic := func(c contracts.IdentifiedConstraint) string { return topic(c.Constraint) }
	constraints := replaced(in.ConstraintsIdentified, al.ConstraintsIdentified, constraintTopic)
	for i := range constraints {
		constraints[i].Implication = "" // written for the engine the inbound handoff went to
	}
	al.ConstraintsIdentified = union(al.ConstraintsIdentified, constraints,
		func(c contracts.IdentifiedConstraint) string { return c.Constraint })
	al.AssumptionsCarriedForward = union(al.AssumptionsCarriedForward, in.AssumptionsCarriedForward,
		func(a contracts.CarriedAssumption) string { return a.Assumption })
	text := func(s string) string { return s }
	sa, ac, rs := &h.SituationAwareness, &h.AccumulatedContext, &h.RelationalState
	sa.UserGoals = union(sa.UserGoals, inbound.SituationAwareness.UserGoals, text)
	sa.KeyPainPoints = union(sa.KeyPainPoints, carriedPains(sa.KeyPainPoints, inbound.SituationAwareness.KeyPainPoints), text)
	ac.ConceptsTaught = union(ac.ConceptsTaught, inbound.AccumulatedContext.ConceptsTaught,
		func(c contracts.TaughtConcept) string { return c.Concept })
	ac.PriorExperience = union(ac.PriorExperience, inbound.AccumulatedContext.PriorExperience, text)
	rs.OpenQuestions = union(rs.OpenQuestions, inbound.RelationalState.OpenQuestions, text)
	rs.Sensitivities = union(rs.Sensitivities, inbound.RelationalState.Sensitivities, text)
}

// carriedPains are the inbound pain points to carry beside own: a problem
// the inbound handoff marked (ProblemPrefix) is carried as a pain point
// like the others when the source session marks its own, so that a
// handoff names one problem, the newest: project discovery's core problem,
// not the one ideation framed before it.
func carriedPains(own, inbound []string) []string {
	if !slices.ContainsFunc(own, func(p string) bool { return strings.HasPrefix(p, ProblemPrefix) }) {
		return inbound
	}
	out := make([]string, len(inbound))
	for i, p := range inbound {
		out[i] = strings.TrimPrefix(p, ProblemPrefix)
	}
	return out
}

// sameQuestion reports whether d, a decision of the source session,
// answers the question the carried decision c answered, and so replaces
// it (Decision.Question): they have the same key, and their questions ask
// about the same thing and share most of their words (asked). When either
// has no question to tell, one's choice is among the other's options
// (QuickBooks, after a choice of Xero among Xero and QuickBooks), or c has
// no options to tell.
func sameQuestion(d, c contracts.Decision) bool {
	if d.Key == "" || d.Key != c.Key {
		return false
	}
	if dq, cq := askedIn(d.Question), askedIn(c.Question); len(dq.words) > 0 && len(cq.words) > 0 {
		return asked(dq, cq)
	}
	return len(c.Options) == 0 || among(d.Decision, c) || among(c.Decision, d)
}

// sameOption reports whether options a and b, of questions aq and bq, are
// one option for one question: the same name (case and articles aside),
// and the same question or one whose question is not told. PostgreSQL
// chosen for the app and for analytics is two decisions; a custom build
// ruled out for the booking system and to take payments, two options
// eliminated.
func sameOption(a, aq, b, bq string) bool { return option(a) == option(b) && !otherQuestion(aq, bq) }

// otherQuestion reports whether questions a and b both say what was asked
// and are not the same question.
func otherQuestion(a, b string) bool {
	aq, bq := askedIn(a), askedIn(b)
	return len(aq.words) > 0 && len(bq.words) > 0 && !asked(aq, bq)
}

// question is what a question asks: its words but for function words and
// those of any exploration ("figure out the best way"), and its subject,
// the first of them after "which" or "what" ("For the mobile app, which
// database should we use?": database), or after "for" when that is a
// kind of thing any project uses ("Which tool should the studio use for
// bookings?": booking), else after "need" or "want" ("My
// mobile app needs a database"), else its first ("Our accounting tool
// again: payroll matters now": accounting).
type question struct {
	words   map[string]bool
	subject string
}

// asked reports whether questions a and b are the same question: each
// asks about a thing the other names (the project's words, "the mobile
// app", are in all its questions: a database and hosting for it are two
// questions), and more than half of the shorter's words are the other's
// (a database for the app and one for analytics are two questions).
func asked(a, b question) bool {
	if !a.names(b.subject) || !b.names(a.subject) {
		return false
	}
	if len(a.words) > len(b.words) {
		a, b = b, a
	}
	shared := 0
	for w := range a.words {
		if b.words[w] {
			shared++
		}
	}
	return 2*shared > len(a.words)
}

// names reports whether q has word w, or another form of it, one being
// the other and an ending ("host", "hosting").
func (q question) names(w string) bool {
	if q.words[w] {
		return true
	}
	for x := range q.words {
		short, long := x, w
		if len(short) > len(long) {
			short, long = long, short
		}
		if len(short) >= 4 && strings.HasPrefix(long, short) {
			return true
		}
	}
	return false
}

// askedIn reads what question q asks, without the plural's s ("classes",
// "class").
func askedIn(q string) question {
	out := question{words: map[string]bool{}}
	var first, afterWh, afterNeed, afterFor string
	wh, need, purpose := false, false, false
	for _, w := range words(q) {
		wh = wh || w == "which" || w == "what"
		need = need || needWords[w]
		purpose = purpose || w == "for"
		if len(w) < 3 || stopwords[w] {
			continue
		}
		if w = singular(w); shortWords[w] || askingWords[w] {
			continue
		}
		out.words[w] = true
		first = cmp.Or(first, w)
		if wh {
			afterWh = cmp.Or(afterWh, w)
		}
		if need {
			afterNeed = cmp.Or(afterNeed, w)
		}
		if purpose {
			afterFor = cmp.Or(afterFor, w)
		}
	}
	if kindWords[afterWh] && afterFor != "" {
		afterWh = afterFor // "Which tool should the studio use for bookings?"
	}
	out.subject = cmp.Or(afterWh, afterNeed, first)
	return out
}

var (
	// shortWords are the function words of three letters, which stopwords
	// leaves out.
	shortWords = engine.WordSet("and any are but can did for get got had has her him his how its let may not now " +
		"off one our out own per she the too two use via was who why yet you")
	// askingWords are the words of any exploration, whatever it is about:
	// "figure out the best way to build", "help us choose an option",
	// "what's the right database".
	askingWords = engine.WordSet("approach best better build choice choose decide explore figure find good help ideal " +
		"idea option pick problem right select solution suitable sure take way")
	// kindWords name a kind of thing any project may use, for one purpose
	// or another: they say not what a question asks about.
	kindWords = engine.WordSet("tool platform software service system product app application provider vendor")
	// needWords come before what a statement of a problem asks about: "we
	// need an accounting tool".
	needWords = engine.WordSet("need needs want wants")
)

// singular is w without a plural's ending: "classes" is "class",
// "companies" "company", "payments" "payment"; "business" is itself.
func singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return strings.TrimSuffix(w, "ies") + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") ||
		strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return strings.TrimSuffix(w, "es")
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return strings.TrimSuffix(w, "s")
	}
	return w
}

// among reports whether choice is d's choice or one of its options, or
// names one or is named in one, articles aside: "off-the-shelf tool" is
// among "an off-the-shelf tool like Mindbody" and "a custom build".
func among(choice string, d contracts.Decision) bool {
	w := words(choice)
	return len(w) > 0 && slices.ContainsFunc(append([]string{d.Decision}, d.Options...), func(o string) bool {
		ow := words(o)
		return len(ow) > 0 && (contains(ow, w) || contains(w, ow))
	})
}

// option is the name of an option as CarryForward compares it: its words
// (case and articles aside), "custom build" for "A custom build".
func option(s string) string { return strings.Join(words(s), " ") }

// words are the words of s, lower-cased, without articles. A + or # is
// part of a word: it names another option ("C++", "C#", not "C").
func words(s string) []string {
	return slices.DeleteFunc(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '+' && r != '#'
	}), func(w string) bool { return w == "a" || w == "an" || w == "the" })
}

// contains reports whether run is a run of consecutive words of ws.
func contains(ws, run []string) bool {
	for i := 0; i+len(run) <= len(ws); i++ {
		if slices.Equal(ws[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// replaced is carried without the items whose key (the topic of a
// constraint; "" for none) one of own's has: the source session's value
// replaces the one an earlier session captured.
func replaced[T any](carried, own []T, key func(T) string) []T {
	keys := map[string]bool{}
	for _, x := range own {
		if k := key(x); k != "" {
			keys[k] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(carried), func(x T) bool { return keys[key(x)] })
}

// topic is what a constraint is about: the label a mapper put before its
// value, or, for free text (exploration's constraints), Budget when it
// names an amount of money ("about 300 dollars a month", "$5,000") and
// Timeline when it counts a span of time ("live within two months"), the
// labels project discovery gives its budget and timeline; "" for anything
// else, which is carried by its text, as is an item of a list field
// ("Integration: QuickBooks"). Text that mentions money or time without an
// amount ("avoid monthly fees", "offline for days") is neither, nor is the
// price of one item ("each tablet under $300", "$40 per device") or a span
// that says how long something lasts or how much it holds ("offline for
// two weeks", "3 years of job history"): none of them must replace, and so
// drop, the budget or timeline carried.
func topic(c string) string {
	if l := label(c); l != "" {
		if listLabels[l] {
			return ""
		}
		return l
	}
	words := strings.FieldsFunc(strings.ToLower(c), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	money := strings.ContainsAny(c, "$€£") ||
		slices.ContainsFunc(words, func(w string) bool { return moneyWords[w] }) && strings.ContainsFunc(c, unicode.IsDigit)
	switch {
	case money && !perItem(words):
		return "Budget"
	case !money && counted(words):
		return "Timeline"
	}
	return ""
}

// perItem returns whether words price one item: "per" or "each" before
// anything but a unit of time ("per device", "each tablet", "$300 each";
// not "per month", "each quarter").
func perItem(words []string) bool {
	for i, w := range words {
		if w == "per" || w == "each" {
			if i == len(words)-1 || !timeWords[words[i+1]] {
				return true
			}
		}
	}
	return false
}

// counted returns whether words have a unit of time right after a number
// ("6 months", "two weeks") that is a deadline, not how long something
// lasts ("for two weeks") or how much it holds ("12 months of data"; but
// "within 3 months of signing" is one).
func counted(words []string) bool {
	for i := 1; i < len(words); i++ {
		n := words[i-1]
		if !timeWords[words[i]] || !numberWords[n] && strings.IndexFunc(n, unicode.IsDigit) != 0 {
			continue
		}
		before := ""
		if i >= 2 {
			before = words[i-2]
		}
		if before == "for" || i+1 < len(words) && words[i+1] == "of" && !deadlineWords[before] {
			continue
		}
		return true
	}
	return false
}

var (
	moneyWords  = engine.WordSet("budget dollar dollars euro euros usd eur cost costs spend spending afford price fee fees")
	timeWords   = engine.WordSet("day days week weeks month months year years quarter quarters")
	numberWords = engine.WordSet("one two three four five six seven eight nine ten eleven twelve eighteen")
	// deadlineWords lead a span of time that ends by a date.
	deadlineWords = engine.WordSet("within in by before")
)

// label is the label a mapper put before a constraint's value (Constraint
// of Fields): one capitalised word and a colon, "" for none.
func label(c string) string {
	l, _, ok := strings.Cut(c, ": ")
	if r, _ := utf8.DecodeRuneInString(l); !ok || !unicode.IsUpper(r) || strings.ContainsFunc(l, unicode.IsSpace) {
		return ""
	}
	return l
}

// carry is own followed by the items of more that are not the same as one
// already there.
func carry[T any](own, more []T, same func(a, b T) bool) []T {
	for _, x := range more {
		if !slices.ContainsFunc(own, func(y T) bool { return same(y, x) }) {
			own = append(own, x)
		}
	}
	return own
}

// union is own followed by the items of more whose key (spaces and case
// aside) is neither empty nor already there.
func union[T any](own, more []T, key func(T) string) []T {
	seen := make(map[string]bool, len(own)+len(more))
	norm := func(x T) string { return fold(key(x)) }
	for _, x := range own {
		seen[norm(x)] = true
	}
	for _, x := range more {
		if k := norm(x); k != "" && !seen[k] {
			seen[k] = true
			own = append(own, x)
		}
	}
	return own
}

// fold is s as union compares it: spaces and case aside.
func fold(s string) string { return strings.ToLower(oneLine(s)) }

// Unmapped lists the exit transitions of the engines that have no mapper
// of their own ("source->target", sorted): they are served by the fallback,
// or fail when there is none.
func (r *Mappers) Unmapped(engines []*engine.Definition) []string {
	var out []string
	for _, d := range engines {
		for _, x := range d.ExitTransitions {
			if _, ok := r.Lookup(d.EngineID, x.TargetEngine); !ok {
				out = append(out, Name(d.EngineID, x.TargetEngine))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Builtin returns the context mappers of the shipped engines' exit
// transitions, with Generic as the fallback for engines loaded from
// directories. Each maps a session by the rules of its memory version.
func Builtin() *Mappers {
	r := NewMappers()
	before3 := builtinFieldsBefore3()
	for name, f := range builtinFields() {
		source, target, _ := strings.Cut(name, "->")
		fn := FromFields(f)
		if old, ok := before3[name]; ok {
			fn = since(3, FromFields(old), fn)
		}
		if err := r.Register(source, target, fn); err != nil {
			panic(err) // a duplicate in builtinFields, which only a change here causes
		}
	}
	r.SetFallback(Generic)
	return r
}

// since is the mapper that maps a session of memory version version or
// later with mapper, and one of an earlier version with before.
func since(version int, before, mapper Mapper) Mapper {
	return func(in Input) contracts.EngineHandoff {
		if in.Memory.SchemaVersion < version {
			return before(in)
		}
		return mapper(in)
	}
}
