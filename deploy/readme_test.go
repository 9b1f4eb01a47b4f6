package deploy_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeDeadLetterCauses: the metrics table names every cause of
// praetor_dead_letters_total the code gives, and no other, so an operator
// who alerts on one knows them all.
func TestReadmeDeadLetterCauses(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "| `praetor_dead_letters_total") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("README.md has no row for praetor_dead_letters_total in its metrics table")
	}
	// The causes are the words in backquotes within the row's first
	// parentheses.
	paren := regexp.MustCompile(`\(([^)]*)\)`).FindAllStringSubmatch(row, -1)
	if len(paren) == 0 {
		t.Fatalf("the praetor_dead_letters_total row lists no causes in parentheses: %s", row)
	}
	var got []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(paren[0][1], -1) {
		got = append(got, m[1])
	}
	want := deadLetterCauses()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("README.md lists dead-letter causes %v, the code gives %v", got, want)
	}
}
