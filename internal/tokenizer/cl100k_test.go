package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// cl100kPattern is the oracle of cl100kPieces: the pattern run by regexp2.
var cl100kPattern = &bpe{pattern: regexp2.MustCompile(encodings["cl100k_base"], regexp2.None)}

// cl100kSeeds are texts made to trip the scanner, besides the corpus: the
// classes' edges (what regexp2 counts as \s, \p{L}, \p{N}), the
// contractions' cases, whitespace runs against what follows them, and
// invalid UTF-8. The fuzzer's findings are at the end.
var cl100kSeeds = []string{
	"'s 'S 'T 're 'RE 'Re 'rE 've 'VE 'm 'M 'll 'LL 'lL 'd 'D 'x 'r 'l 'v", "’s ’S ‘t", "'", "''s", "'ſ 'İ 'K",
	"it's", "IT'S", "'sup", "'llama", "' s", "'\ns", "'1", "'re'", "x'''s", "'\xffs", "'\u00e9",
	"a\u0301b e\u0301 \u0301a \u0301\u0301", "\u0915\u093f\u0924", "ǅungla ǈ ǋ", "ﬁ ß ŉ", "ª º µ",
	"x\u0085y \u0085\u0085a \u0085", "\u00a0a \u00a0\u00a0b\u00a0", "a\u2028b \u2028\u2029\n", "\u3000日本\u3000\u3000語",
	"\u1680x\u2000\u200a\u200b\u202f\u205fy\ufeffz", "\x1c\x1d\x1e\x1f a\x1fb \x1c", "\v\f\va \f\n\v",
	"١٢٣٤٥ ۱۲۳ १२३४ ０１２３４ ²³¹ ¼½ Ⅻ ⅷ 〇 𝟘𝟙𝟚𝟛", "12345678", "1a2b3c", "a123b", " 123", "x1234.5",
	"    \n", "    \nfoo", "  \n  foo", "\n\n\n  bar", " \n \n \n", "\r\n\r\n\t x", "\t\t\tx", "\t\t\t", "   ",
	"a  b", "a   !", "a \u00a0b", "a\u3000\u3000b", "  !!", " !", "!\n\n\r", "! \n", "?!\r\nx", "  \u0301a",
	" ", "\n", "\r", "\t", "x ", "x  ", "x \n", " \nx", "\n x", "\u00a0", "\u00a0\u00a0", "a\u00a0", "a\u00a0\u00a0",
	"invalid \xff\xfe bytes \xc3 here \xe2\x82", "\xed\xa0\x80", "a\xed\xa0\x80b", "\xef\xbf\xbd", "\xf4\x90\x80\x80",
	"\xc0\x80", "\xffabc", " \xff", "\xff\n", "a\xff", "\x80\x80\x80", "\xf0\x9f\x99", "🙂a", " 🙂🙂\n",
	"\x00", "\x00a", " \x00", "\x7f\x7f", "a\x00\x00b",
}

// collect returns the pieces of text, as strings.
func collect(pieces func(string, func([]byte)), text string) []string {
	var out []string
	pieces(text, func(p []byte) { out = append(out, string(p)) })
	return out
}

func checkCl100k(t *testing.T, text string) {
	t.Helper()
	want := collect(cl100kPattern.patternPieces, text)
	got := collect(cl100kPieces, text)
	if slices.Equal(got, want) {
		return
	}
	k := 0
	for k < min(len(got), len(want)) && got[k] == want[k] {
		k++
	}
	at := len(strings.Join(want[:k], ""))
	t.Fatalf("cl100kPieces(%+.200q): at byte %d (%+.40q), pieces %+q..., regexp2 %+q...",
		text, at, text[at:], got[k:min(k+4, len(got))], want[k:min(k+4, len(want))])
}

func TestCl100kPiecesMatchPattern(t *testing.T) {
	for _, s := range append(corpus(t), cl100kSeeds...) {
		checkCl100k(t, s)
	}
}

// Every rune, in the places where its class matters: after a space, a
// letter, an apostrophe, a number and spaces, before a letter, a number and
// a line break, and doubled.
func TestCl100kPiecesEveryRune(t *testing.T) {
	if testing.Short() {
		t.Skip("runs regexp2 over about 20 MB")
	}
	var b strings.Builder
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0x800 && r%runeStride != 0 {
			continue
		}
		c := string(r)
		b.WriteString(" " + c + "a" + c + "'" + c + c + "1" + c + "  " + c + "\n")
		if b.Len() >= 16<<10 {
			checkCl100k(t, b.String())
			b.Reset()
		}
	}
	checkCl100k(t, b.String())
}

// FuzzCl100kPiecesMatchPattern checks the scanner against regexp2 running
// the pattern, on any text.
func FuzzCl100kPiecesMatchPattern(f *testing.F) {
	for _, s := range append(corpus(f), cl100kSeeds...) {
		if len(s) < 2000 {
			f.Add(s)
		}
	}
	f.Fuzz(checkCl100k)
}
