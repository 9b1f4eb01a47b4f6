package offlineskill_test

import (
	"reflect"
	"testing"

	"github.com/praetorhq/praetor/internal/engine/offlineskill"
)

// An "or" that makes one phrase parts no items: an idiom ("rain or
// shine", "one way or another") or the subject of a verb that follows the
// second noun ("Tea or coffee is fine").
func TestSplitItemsOrOfOnePhrase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"Online booking, rain or shine alerts and reminders": {"Online booking", "rain or shine alerts", "reminders"},
		"Word of mouth, one way or another":                  {"Word of mouth", "one way or another"},
		"Mindbody is expensive, and it's all or nothing":     {"Mindbody is expensive", "it's all or nothing"},
		"A stall at the market, sooner or later":             {"A stall at the market", "sooner or later"},
		"Tea or coffee is fine":                              {"Tea or coffee is fine"},
		"Mindbody or Glofox would both work":                 {"Mindbody or Glofox would both work"},
		"Mindbody or Glofox is fine, I just need one":        {"Mindbody or Glofox is fine", "I just need one"},
		"Xero or QuickBooks":                                 {"Xero", "QuickBooks"},
		"Xero or QuickBooks if it's cheaper":                 {"Xero", "QuickBooks if it's cheaper"},
		"Fewer no-shows or late cancellations":               {"Fewer no-shows", "late cancellations"},
		"Mindbody, Glofox or maybe a spreadsheet":            {"Mindbody", "Glofox", "a spreadsheet"},
		"It needs to sync with Xero or QuickBooks":           {"It needs to sync with Xero", "QuickBooks"},
	} {
		if got := offlineskill.SplitItems(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitItems(%q) = %q, want %q", in, got, want)
		}
	}
}
