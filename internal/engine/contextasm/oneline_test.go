package contextasm

import (
	"strings"
	"testing"
)

// oneLine keeps what strings.Fields and Join would give, whether or not it
// takes its shortcut.
func TestOneLine(t *testing.T) {
	for _, s := range []string{"", " ", "a", "a b", "a  b", " a", "a ", "a\nb", "a\tb", "é — ü", "a\u00a0b", "a\u0085b",
		"a\u2003b", "The kind of product is known (web app, mobile app, ...)", "x\r\ny", "\xffa b", "a \xff"} {
		want := strings.Join(strings.Fields(s), " ")
		if got := oneLine(s); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", s, got, want)
		}
		if isOneLine(s) != (s == want) {
			t.Errorf("isOneLine(%q) = %v, want %v", s, isOneLine(s), s == want)
		}
	}
}
