package offlineskill

import (
	"regexp"

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
// constraint on it, which measures nothing.
func requires(answer string) bool {
	return requireRe.MatchString(trimLeads(answer, leads))
}

var requireRe = regexp.MustCompile(`(?i)^(?:it|this|the\s+(?:app|system|site|website|tool|product|platform|software|` +
	`solution))(?:['’]ll|['’]d|\s+will|\s+would)?\s+(?:(?:also|really|just|still|definitely|absolutely|probably)\s+)?` +
	`(?:has\s+(?:got\s+)?to|have\s+to|must|needs?\s+to|got\s+to|should)\b`)
