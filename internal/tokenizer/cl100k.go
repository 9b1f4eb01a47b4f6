package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// cl100kPieces calls f with each pre-token of text as cl100k_base's pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cuts it when run by regexp2 over the text's runes, without the regexp
// or a []rune of the text: the scanner decodes UTF-8 as it goes (an invalid
// byte is U+FFFD, and the piece holds EF BF BD for it). Each piece is in a
// buffer reused for the next one (f must not keep it).
//
// regexp2 tries the alternatives in order at each position and takes the
// first that matches (not the longest). Every rune starts some alternative,
// so the pieces cover the text with no gap. The classes are regexp2's:
// \p{L} and \p{N} are Go's unicode.IsLetter and unicode.IsNumber, \s is
// unicode.IsSpace (so U+0085, U+00A0, U+2028, U+3000 are spaces, and
// U+001C..U+001F are not), and (?i) lowers the input rune with
// unicode.ToLower, which maps only A-Z to the contractions' letters.
// cl100kNext maps the alternatives to code, in order:
//
//  1. (?i:'s|'t|'re|'ve|'m|'ll|'d): an ASCII apostrophe and a contraction,
//     either case (contraction).
//  2. [^\r\n\p{L}\p{N}]?\p{L}+: a letter run, with the one rune before it
//     when that rune is neither a line break, a letter nor a number (a
//     space, a tab, punctuation, a combining mark...).
//  3. \p{N}{1,3}: up to three numbers.
//  4. ' ?[^\s\p{L}\p{N}]+[\r\n]*': a run of "other" runes (not space,
//     letter or number), with one U+0020 before it, and the line breaks
//     right after it.
//  5. \s*[\r\n]+: in a whitespace run holding a line break, everything up
//     to and with its last \r or \n.
//  6. \s+(?!\S): a whitespace run at the end of text whole; one followed
//     by a non-space without its last rune, when that leaves some (the next
//     piece starts with that rune: 2 puts it before a letter run, 4 puts a
//     U+0020 before other runes, else 7 takes it alone).
//  7. \s+: a lone whitespace rune before a non-space.
func cl100kPieces(text string, f func(piece []byte)) {
	var buf []byte
	for i := 0; i < len(text); {
		end := cl100kNext(text, i)
		piece := text[i:end]
		buf = buf[:0]
		if utf8.ValidString(piece) {
			buf = append(buf, piece...)
		} else {
			for _, r := range piece { // an invalid byte ranges as U+FFFD
				buf = utf8.AppendRune(buf, r)
			}
		}
		f(buf)
		i = end
	}
}

// The classes of runes the pattern tells apart.
const (
	classOther   = iota // [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls, U+FFFD
	classLetter         // \p{L}
	classNumber         // \p{N}
	classSpace          // \s but \r and \n
	classNewline        // \r or \n
	classEnd            // past the end of text
)

// asciiClass is class for runes below 0x80.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			t[c] = classLetter
		case '0' <= c && c <= '9':
			t[c] = classNumber
		case c == '\r' || c == '\n':
			t[c] = classNewline
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			t[c] = classSpace
		}
	}
	return t
}()

// classAt returns the class of the rune at s[i] and its length (an invalid
// byte is U+FFFD, one byte long), classEnd past the end of s.
func classAt(s string, i int) (class uint8, n int) {
	if i >= len(s) {
		return classEnd, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	return classOf(s[i:])
}

// classOf is classAt past ASCII (apart so that classAt inlines).
func classOf(s string) (class uint8, n int) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case unicode.IsLetter(r):
		return classLetter, n
	case unicode.IsNumber(r):
		return classNumber, n
	case unicode.IsSpace(r):
		return classSpace, n
	}
	return classOther, n
}

// cl100kNext returns the end of the piece starting at s[i].
func cl100kNext(s string, i int) int {
	c, n := classAt(s, i)
	next, _ := classAt(s, i+n)
	// 1. The contractions.
	if s[i] == '\'' {
		if end := contraction(s, i+1); end > 0 {
			return end
		}
	}
	// 2. A letter run, maybe with one rune before it.
	if c == classLetter {
		return skip(s, i+n, classLetter, len(s))
	}
	if next == classLetter && c != classNumber && c != classNewline {
		return skip(s, i+n, classLetter, len(s))
	}
	// 3. Up to three numbers.
	if c == classNumber {
		return skip(s, i+n, classNumber, 2)
	}
	// 4. Other runes, maybe after a space, then line breaks.
	if c == classOther || s[i] == ' ' && next == classOther {
		return skip(s, skip(s, i+n, classOther, len(s)), classNewline, len(s))
	}
	// 5-7. A whitespace run: s[i:end], its last rune at last, and the end
	// of its last line break at nl (0 for none).
	end, last, nl := i, i, 0
	for end < len(s) {
		c, n := asciiClass[s[end]&0x7f], 1
		if s[end] >= utf8.RuneSelf {
			c, n = classOf(s[end:])
		}
		if c != classSpace && c != classNewline {
			break
		}
		last, end = end, end+n
		if c == classNewline {
			nl = end
		}
	}
	switch {
	case nl > 0: // 5
		return nl
	case end == len(s) || last == i: // 6 at the end of text, or 7
		return end
	}
	return last // 6
}

// contraction returns the end of the contraction (s, t, re, ve, m, ll, d in
// either case) at s[i], or 0.
func contraction(s string, i int) int {
	lower := func(i int) byte {
		if i >= len(s) {
			return 0
		}
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return s[i]
	}
	switch lower(i) {
	case 's', 't', 'm', 'd':
		return i + 1
	case 'r', 'v':
		if lower(i+1) == 'e' {
			return i + 2
		}
	case 'l':
		if lower(i+1) == 'l' {
			return i + 2
		}
	}
	return 0
}

// skip returns the end of the run of up to max runes of class c from s[i].
func skip(s string, i int, c uint8, max int) int {
	for ; max > 0 && i < len(s); max-- {
		ci, n := asciiClass[s[i]&0x7f], 1 // classAt, inlined by hand
		if s[i] >= utf8.RuneSelf {
			ci, n = classOf(s[i:])
		}
		if ci != c {
			break
		}
		i += n
	}
	return i
}
