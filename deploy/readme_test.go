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

// TestReadmeCommandsPutFlagsFirst: a praetor command line of the READMEs
// (in sh blocks and inline code) gives its flags before its arguments, as
// praetor requires (only workflow reads flags after them): a user copying
// "praetor tenant token revoke --tenant acme tok_... --database-url U" got
// exit 2. A word after a flag's value is an argument; a flag after one is
// refused.
func TestReadmeCommandsPutFlagsFirst(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"README.md", "../README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var inSh, inBlock bool
		n := 0
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				inBlock = !inBlock
				inSh = inBlock && strings.TrimPrefix(line, "```") == "sh"
				continue
			}
			var cmds []string
			switch {
			case inSh:
				cmds = []string{line}
			case !inBlock:
				for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
					cmds = append(cmds, m[1])
				}
			}
			for _, c := range cmds {
				words, ok := praetorCommand(c)
				if !ok {
					continue
				}
				n++
				if bad := flagAfterArgument(words); bad != "" {
					t.Errorf("%s:%d: %q: the flag %s comes after an argument: put flags first", file, i+1, c, bad)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no praetor command found: is the extraction broken?", file)
		}
	}
}

// praetorCommand returns the words after praetor of a shell line that runs
// it (after variable assignments), up to a comment or the next command.
func praetorCommand(line string) ([]string, bool) {
	words := shellWords(line)
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "praetor" || words[1] == "workflow" {
		return nil, false
	}
	words = words[1:]
	for i, w := range words {
		if w == "#" || strings.HasPrefix(w, "#") || w == "|" || w == "&&" || w == ";" || w == "\\" {
			return words[:i], true
		}
	}
	return words, true
}

// flagAfterArgument returns the first flag that follows an argument: a
// word after flags that is not the value of the flag before it.
func flagAfterArgument(words []string) string {
	seenFlag, valueMayFollow, seenArg := false, false, false
	for _, w := range words {
		switch {
		case w == "--":
			return ""
		case len(w) > 1 && w[0] == '-':
			if seenArg {
				return w
			}
			seenFlag, valueMayFollow = true, !strings.Contains(w, "=")
		case valueMayFollow:
			valueMayFollow = false
		case seenFlag:
			seenArg = true
		}
	}
	return ""
}

// shellWords splits a line into words as a shell would for these
// examples: spaces separate, quotes group.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
			}
			in = false
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
