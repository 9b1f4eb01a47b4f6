package offlineskill

import (
	"regexp"
	"strings"

	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// measured reports whether a field holds how something will be measured
// ("How success will be measured"): its name or description says so.
func measured(f extraction.PromptField) bool {
	w := contentWords(f.DisplayName + " " + f.Description)
	return w["measure"] || w["measured"] || w["metric"] || w["metrics"]
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
// percent", "the no-show rate", "halve") or a target bound in time
// ("within a year", "in the first month"). A number that is part of a
// name ("Windows 10") is none, nor is a date to be ready by ("before
// Christmas"), which bounds the work, not what it achieves.
func statesMeasure(answer string) bool {
	s := figures(answer)
	for _, loc := range figureRe.FindAllStringIndex(s, -1) {
		if !upper(lastWordOf(s[:loc[0]])) {
			return true
		}
	}
	return measureRe.MatchString(s)
}

// lastWordOf is the last word of s as written.
func lastWordOf(s string) string {
	if i := strings.LastIndexByte(strings.TrimRight(s, " "), ' '); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return strings.TrimSpace(s)
}

var (
	figureRe  = regexp.MustCompile(`\d+`)
	measureRe = regexp.MustCompile(`(?i)%|\b(?:percent|per\s+cent|rate|half|halve|double|triple)\b|` +
		`\b(?:within|in\s+(?:the\s+)?(?:first|next)|by\s+the\s+end\s+of)\s+(?:(?:a|an|the|one|first|next|few|couple\s+of)\s+)*` +
		`(?:days?|weeks?|months?|quarters?|years?|terms?|seasons?)\b`)
)
