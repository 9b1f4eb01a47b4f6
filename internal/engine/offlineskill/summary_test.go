package offlineskill

import (
	"fmt"
	"strings"
	"testing"
)

// The summary a user confirms lists everything known when it fits, and
// otherwise stays short enough for the question after it to reach them.
func TestSummaryFitsTheReply(t *testing.T) {
	var known []string
	for i := range 12 {
		known = append(known, fmt.Sprintf("Field %d: value %d", i, i))
	}
	if got := summary(known); strings.Count(got, "\n- ") != 12 || strings.Contains(got, "more") {
		t.Errorf("12 short items: %q, want all of them", got)
	}
	for i := range 200 {
		known = append(known, fmt.Sprintf("Online presence and channels %d: a website, Instagram and a newsletter", i))
	}
	got := summary(known)
	if len(got) > maxSummaryChars+40 || !strings.HasSuffix(got, " more\n") || !strings.Contains(got, "Field 11: value 11") {
		t.Errorf("212 items: %d characters ending %q; want at most about %d, the first items, and how many more", len(got), got[len(got)-30:], maxSummaryChars)
	}
}

// A field known with an empty value is left out of the summary: "- Key
// partners: " asks the user to confirm nothing.
func TestSummaryLeavesOutAnEmptyValue(t *testing.T) {
	got := summary([]string{"Industry: bakery", "Key partners: ", "Team size: 6"})
	if want := "Here is what I have so far:\n- Industry: bakery\n- Team size: 6\n"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}
