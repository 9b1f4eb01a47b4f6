package textdist_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/textdist"
)

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"serve", "serve", 0}, {"serv", "serve", 1},
		{"tokens", "token", 1}, {"kitten", "sitting", 3}, {"lst", "list", 1}, {"abc", "", 3},
	} {
		if got := textdist.Levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := textdist.Levenshtein(tc.b, tc.a); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
