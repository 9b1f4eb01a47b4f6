package offlineskill

import (
	"regexp"
	"slices"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// measured reports whether a field holds how something will be measured
// ("How success will be measured"): its name or description says so.
func measured(f extraction.PromptField) bool {
	w := contentWords(f.DisplayName + " " + f.Description)
	return w["measure"] || w["measured"] || w["metric"] || w["metrics"]
}

// measureBeside reports whether an answer to how success will be measured
// states a measure beside the time bound that the cues filed as a timeline
// ("We want 500 bookings a month by summer"): a number of things or a rate
// with a time bound is a metric as well, which the answer gives too. An
// answer whose cues found anything but a timeline is about that.
func measureBeside(p extraction.Prompt, ans Answer, answer string) bool {
	focus := focusFields(p)
	if len(focus) == 0 || len(ans.Fields) == 0 {
		return false
	}
	f := promptField(p, focus[0])
	if f == nil || !measured(*f) || isKnown(*f) {
		return false
	}
	if _, answered := ans.Fields[f.Path]; answered {
		return false
	}
	for path := range ans.Fields {
		g := promptField(p, path)
		if g == nil || !timeline(*g) {
			return false
		}
	}
	if requires(answer) {
		return false
	}
	return slices.ContainsFunc(measureClauses(answer), func(c string) bool {
		return statesMeasure(c) && !needsResource(c)
	})
}

// measureClauses are the clauses of an answer a measure or a need is said
// in: "We need 2 more vans by spring, and 50 new customers a month" needs
// the vans and measures the customers.
func measureClauses(answer string) []string {
	return strings.FieldsFunc(clauseJoinRe.ReplaceAllString(answer, ";"), func(r rune) bool { return r == ';' })
}

// clauseJoinRe joins two clauses: a comma, a semicolon, an "and" or a
// "but" after one.
var clauseJoinRe = regexp.MustCompile(`(?i)\s*[,;]\s*(?:(?:and|but|plus)\s+)?|\s+(?:and|but|plus)\s+(?:also\s+)?`)

// needsResource reports whether an answer says what the business needs
// to get, a number of things more that it works with ("We need 2 more vans
// by spring", "we'll have to hire 3 new drivers"): a need, which measures
// no success. A number of people or things more that it serves or sells
// to ("We need 50 new customers by spring", "20 more regular cafes") is
// what it achieves: a measure.
func needsResource(answer string) bool {
	for _, m := range resourceRe.FindAllStringSubmatch(figures(answer), -1) {
		if !slices.ContainsFunc(strings.Fields(strings.ToLower(m[1])), func(w string) bool {
			return outcomes[strings.Trim(w, ".,;:!?")]
		}) {
			return true
		}
	}
	return false
}

// resourceRe finds a need or a getting of a number of things more; group 1
// is the words after it, which name the things.
var resourceRe = regexp.MustCompile(`(?i)\b(?:need|needs|needed|require|requires|get|buy|hire|recruit|lease|rent|take\s+on)\s+` +
	`(?:(?:another|an\s+extra|about|around|maybe|at\s+least)\s+)?\d+\s+(?:more|extra|new|additional|further)\b` +
	`((?:\s+[\w'’-]+){0,3})`)

// outcomes are the people and things a business serves or sells to, whose
// number more is what it achieves: customers, members, sign-ups, bookings,
// the cafes or clients that buy from it.
var outcomes = engine.WordSet(`customer customers member members subscriber subscribers sign-up sign-ups signup signups
	booking bookings client clients cafe cafes café cafés user users order orders sale sales buyer buyers student students
	patient patients guest guests visitor visitors follower followers download downloads lead leads account accounts
	shop shops store stores stockist stockists restaurant restaurants venue venues`)

// timeline reports whether a field holds when something is needed ("When
// it is needed and any hard deadline"): its name or description says so.
func timeline(f extraction.PromptField) bool {
	w := contentWords(f.DisplayName + " " + f.Description)
	return w["timeline"] || w["deadline"]
}

// timelineOf is the timeline field, still open, that an answer bounding
// only a time fills ("It should be live within a month"); nil when the
// answer bounds none or the engine has no such field.
func timelineOf(p extraction.Prompt, answer string) *extraction.PromptField {
	if !boundRe.MatchString(figures(answer)) {
		return nil
	}
	for i := range p.Fields {
		if f := &p.Fields[i]; f.ValueType == engine.TypeString && timeline(*f) && !isKnown(*f) {
			return f
		}
	}
	return nil
}

// requires reports whether an answer states what the product has to be or
// do ("It has to work with our Shopify store and take card payments", "It
// must run on iPads", "The app will need to take card payments"): a
// constraint on it, which measures nothing. One that states a measure ("It
// should get 200 sign-ups in the first month", "It must pay for itself
// within a year") is a target, which measures.
func requires(answer string) bool {
	return requireRe.MatchString(trimLeads(answer, leads)) && !statesMeasure(answer)
}

var requireRe = regexp.MustCompile(`(?i)^(?:it|this|the\s+(?:app|system|site|website|tool|product|platform|software|` +
	`solution))(?:['’]ll|['’]d|\s+will|\s+would)?\s+(?:(?:also|really|just|still|definitely|absolutely|probably)\s+)?` +
	`(?:has\s+(?:got\s+)?to|have\s+to|must|needs?\s+to|got\s+to|should)\b`)

// statesMeasure reports whether an answer states a measure: a number, in
// figures or in words ("200 sign-ups", "forty a week"), a rate ("3
// percent", "the no-show rate", "halve") or a target bound in time ("pay
// for itself within a year"). A number that is part of a name ("Windows
// 10") is none, nor is one that only bounds a time ("within 2 months", "by
// 2027"); and a time bound of the product's being ready ("It should be
// live within a month") or a date to be ready by ("before Christmas")
// bounds the work, not what it achieves: a timeline, no measure.
func statesMeasure(answer string) bool {
	s := figures(answer)
	for _, loc := range figureRe.FindAllStringIndex(s, -1) {
		before := lastWordOf(s[:loc[0]])
		if upper(before) || timeBounds[strings.ToLower(before)] && boundsTime(s[loc[0]:loc[1]], s[loc[1]:]) {
			continue
		}
		return true
	}
	return rateRe.MatchString(s) || boundRe.MatchString(s) && !readyRe.MatchString(s)
}

// boundsTime reports whether a number after a word that bounds a time is
// part of that bound: a year ("by 2027"), or a count of the unit after it
// ("within 2 months").
func boundsTime(figure, after string) bool {
	if len(figure) == 4 && (strings.HasPrefix(figure, "19") || strings.HasPrefix(figure, "20")) {
		return true
	}
	w := strings.Fields(strings.ToLower(after))
	return len(w) > 0 && timeUnits[strings.Trim(w[0], ".,;:!?")]
}

// lastWordOf is the last word of s as written.
func lastWordOf(s string) string {
	if i := strings.LastIndexByte(strings.TrimRight(s, " "), ' '); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return strings.TrimSpace(s)
}

var (
	figureRe = regexp.MustCompile(`\d+`)
	rateRe   = regexp.MustCompile(`(?i)%|\b(?:percent|per\s+cent|rate|half|halve|double|triple)\b`)
	boundRe  = regexp.MustCompile(`(?i)\b(?:within|in\s+(?:the\s+)?(?:first|next)|by\s+the\s+end\s+of)\s+` +
		`(?:(?:a|an|the|one|first|next|few|couple\s+of|\d+)\s+)*(?:days?|weeks?|months?|quarters?|years?|terms?|seasons?)\b`)
	// readyRe says the product is to be ready: live, launched, running.
	readyRe = regexp.MustCompile(`(?i)\b(?:be|been|get)\s+(?:up\s+and\s+running|live|ready|launched|done|built|finished|` +
		`available|in\s+place|set\s+up|rolled\s+out|online)\b|\b(?:go|goes)\s+live\b|\b(?:to|should|must|will|would|can)\s+` +
		`(?:launch|ship)\b`)
	// timeBounds bound a time; timeUnits are what the time is counted in.
	timeBounds = engine.WordSet(`within in by under inside after before`)
	timeUnits  = engine.WordSet(`day days week weeks month months quarter quarters year years term terms season seasons`)
)

// measuresAlone takes off the list of how success will be measured, when
// the message answers it with a measure beside a need, the items that say
// no measure: a need for things the business works with ("We need 2 more
// vans by spring, and 50 new customers a month" measures the customers),
// and the remark that a measure met is success ("If we get 20 more regular
// cafes by spring, it worked"). Items the list held before stay.
func measuresAlone(p extraction.Prompt, ans Answer) {
	for path, fa := range ans.Fields {
		f := promptField(p, path)
		if f == nil || f.ValueType != engine.TypeArray || !measured(*f) {
			continue
		}
		was := currentValues(f.Current)
		items := texts(fa.Value)
		needs := needRe.MatchString(p.Message)
		kept := slices.DeleteFunc(slices.Clone(items), func(it string) bool {
			return !slices.Contains(was, it) && (needsResource(it) || successRemark.MatchString(it) || needs && staffNeeded(it))
		})
		if len(kept) == len(items) || !slices.ContainsFunc(kept, func(it string) bool { return !slices.Contains(was, it) }) {
			continue
		}
		v := make([]any, len(kept))
		for i, it := range kept {
			v[i] = it
		}
		fa.Value = v
		ans.Fields[path] = fa
	}
}

// staffNeeded reports whether an item is itself people or things the
// business works with, counted ("a second coach by June", "two
// receptionists", "2 more drivers"): said in a need, they are a resource,
// no measure. An item that measures something about them ("staff
// turnover", "every driver on time", "hire rate") ends on no staff word
// and is counted by none, so it stays a metric.
func staffNeeded(item string) bool {
	m := staffNeededRe.FindStringSubmatch(figures(strings.TrimSpace(item)))
	if m == nil || !staff[strings.ToLower(m[1])] {
		return false
	}
	return !slices.ContainsFunc(strings.Fields(strings.ToLower(m[0])), func(w string) bool { return outcomes[w] })
}

// staffNeededRe is an item that is a count of one kind of people or
// things, after a need and before a time bound; group 1 is the last word,
// which names them.
var staffNeededRe = regexp.MustCompile(`(?i)^(?:(?:and|but|plus|also)\s+)*` +
	`(?:(?:we|i)(?:['’]ll|\s+will|\s+would|['’]d)?\s+(?:also\s+|still\s+)?(?:need|require|want|have\s+to\s+(?:get|hire))\s+` +
	`(?:to\s+(?:get|hire|recruit|take\s+on)\s+)?)?(?:(?:hire|recruit|get|take\s+on)\s+)?` +
	`(?:a|an|another|some|more|extra|a\s+couple\s+of|a\s+few|\d+)\s+(?:[\w'’-]+\s+){0,2}?([\w'’-]+)` +
	`(?:\s+(?:by|before|until|within|in|from|this|next|for)\b.*)?[.!]*$`)

// staff are the people a business works with, whose number more it needs
// rather than achieves.
var staff = engine.WordSet(`staff coach coaches trainer trainers instructor instructors receptionist receptionists
	manager managers baker bakers driver drivers chef chefs cook cooks barista baristas cleaner cleaners
	assistant assistants employee employees hire hires teacher teachers therapist therapists technician technicians
	tech techs waiter waiters waitress waitresses server servers developer developers designer designers
	accountant accountants bookkeeper bookkeepers admin admins worker workers apprentice apprentices
	volunteer volunteers van vans`)

// needRe is a message that says the business needs or gets something.
var needRe = regexp.MustCompile(`(?i)\b(?:need|needs|needed|require|requires|hire|hiring|recruit|take\s+on|have\s+to\s+get)\b`)

// successRemark says that what was said before it is success ("it
// worked", "that's a win").
var successRemark = regexp.MustCompile(`(?i)^\s*(?:then\s+)?(?:it|that|we)(?:['’]s|['’]ve|\s+has|\s+have|\s+is|\s+was)?\s+` +
	`(?:worked|works|succeeded|done\s+it|made\s+it|nailed\s+it|a\s+(?:win|success))\s*[.!]*\s*$`)
