package offlineskill

import "strings"

// The readers of a reply prompt's lines. The runner builds the prompt in a
// fixed format (package contextasm) and the offline provider reads it at
// every turn, so they are hand-written scanners rather than regular
// expressions: each is the regular expression in its comment, which
// FuzzLineReaders checks it against.

// phaseLine reads the phase section's first match of
// `(?m)^Phase: ([^|]+?) \| ([^|]+?) \|`.
func phaseLine(text string) (id, name string, ok bool) {
	for start := range lineStarts(text) {
		rest, found := strings.CutPrefix(text[start:], "Phase: ")
		if !found {
			continue
		}
		id, rest, found = cutField(rest)
		if !found || !strings.HasPrefix(rest, " ") {
			continue
		}
		if name, _, found = cutField(rest[1:]); found {
			return id, name, true
		}
	}
	return "", "", false
}

// cutField reads `([^|]+?) \|`: the text before the first '|', which a space
// ends, and the text after that '|'.
func cutField(s string) (field, rest string, ok bool) {
	i := strings.IndexByte(s, '|')
	if i < 2 || s[i-1] != ' ' {
		return "", "", false
	}
	return s[:i-1], s[i+1:], true
}

// blendLine reads the first match of `(?m)^Mode blend: ([a-z]+) `.
func blendLine(text string) (mode string, ok bool) {
	for start := range lineStarts(text) {
		rest, found := strings.CutPrefix(text[start:], "Mode blend: ")
		if !found {
			continue
		}
		n := span(rest, isLowerLetter)
		if n > 0 && n < len(rest) && rest[n] == ' ' {
			return rest[:n], true
		}
	}
	return "", false
}

// techLines reads every match of `(?m)^- [^\[\n]+ \[([a-z_]+)\]: `.
func techLines(text string) []string {
	var ids []string
	for start := range lineStarts(text) {
		rest, found := strings.CutPrefix(text[start:], "- ")
		if !found {
			continue
		}
		// The name runs to the line's first '[', which a space precedes.
		p := strings.IndexAny(rest, "[\n")
		if p < 2 || rest[p] != '[' || rest[p-1] != ' ' {
			continue
		}
		rest = rest[p+1:]
		n := span(rest, func(c byte) bool { return isLowerLetter(c) || c == '_' })
		if n > 0 && strings.HasPrefix(rest[n:], "]: ") {
			ids = append(ids, rest[:n])
		}
	}
	return ids
}

// knownLine reads a line of the extraction summary, a match of
// `^- [a-z0-9_.]+ \(([^)]+)\): (.+) \[confidence [0-9.]+, turns ([0-9,]+)\]$`.
func knownLine(l string) (name, value, turns string, ok bool) {
	rest, found := strings.CutPrefix(l, "- ")
	if !found {
		return "", "", "", false
	}
	n := span(rest, func(c byte) bool { return isLowerLetter(c) || isDigit(c) || c == '_' || c == '.' })
	if n == 0 || !strings.HasPrefix(rest[n:], " (") {
		return "", "", "", false
	}
	rest = rest[n+2:]
	n = strings.IndexByte(rest, ')')
	if n < 1 || !strings.HasPrefix(rest[n:], "): ") {
		return "", "", "", false
	}
	name, rest = rest[:n], rest[n+3:]
	// The value is as long as it can be: the suffix is the last one.
	n = strings.LastIndex(rest, " [confidence ")
	if n < 1 {
		return "", "", "", false
	}
	value, rest = rest[:n], rest[n+len(" [confidence "):]
	if strings.IndexByte(value, '\n') >= 0 {
		return "", "", "", false
	}
	k := span(rest, func(c byte) bool { return isDigit(c) || c == '.' })
	if k == 0 || !strings.HasPrefix(rest[k:], ", turns ") {
		return "", "", "", false
	}
	rest = rest[k+len(", turns "):]
	k = span(rest, func(c byte) bool { return isDigit(c) || c == ',' })
	if k == 0 || rest[k:] != "]" {
		return "", "", "", false
	}
	return name, value, rest[:k], true
}

// assistantLine reads a history line, a match of
// `^\[turn (\d+)\] assistant: (.+)$`.
func assistantLine(l string) (turn, text string, ok bool) { return historyLine(l, "assistant") }

// userLine reads a history line, a match of `^\[turn (\d+)\] user: (.+)$`.
func userLine(l string) (turn, text string, ok bool) { return historyLine(l, "user") }

func historyLine(l, role string) (turn, text string, ok bool) {
	rest, found := strings.CutPrefix(l, "[turn ")
	if !found {
		return "", "", false
	}
	n := span(rest, isDigit)
	if n == 0 {
		return "", "", false
	}
	text, found = strings.CutPrefix(rest[n:], "] "+role+": ")
	if !found || text == "" || strings.IndexByte(text, '\n') >= 0 {
		return "", "", false
	}
	return rest[:n], text, true
}

// lineStarts yields the offset of every line of text, as (?m)^ matches.
func lineStarts(text string) func(yield func(int) bool) {
	return func(yield func(int) bool) {
		start := 0
		for {
			if !yield(start) {
				return
			}
			i := strings.IndexByte(text[start:], '\n')
			if i < 0 {
				return
			}
			start += i + 1
		}
	}
}

// span returns the length of s's prefix whose bytes all satisfy ok.
func span(s string, ok func(byte) bool) int {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return i
		}
	}
	return len(s)
}

func isLowerLetter(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool       { return '0' <= c && c <= '9' }
