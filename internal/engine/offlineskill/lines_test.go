package offlineskill

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The regular expressions the line readers stand for: the reference they
// are checked against.
var (
	phaseLineRe = regexp.MustCompile(`(?m)^Phase: ([^|]+?) \| ([^|]+?) \|`)
	blendLineRe = regexp.MustCompile(`(?m)^Mode blend: ([a-z]+) `)
	techLineRe  = regexp.MustCompile(`(?m)^- [^\[\n]+ \[([a-z_]+)\]: `)
	knownLineRe = regexp.MustCompile(`^- [a-z0-9_.]+ \(([^)]+)\): (.+) \[confidence [0-9.]+, turns ([0-9,]+)\]$`)
	lastReplyRe = regexp.MustCompile(`^\[turn (\d+)\] assistant: (.+)$`)
	userLineRe  = regexp.MustCompile(`^\[turn (\d+)\] user: (.+)$`)
)

// checkLineReaders compares every reader with its regular expression on
// text, and plainValue with its shortcuts with the decoding it stands for.
func checkLineReaders(t *testing.T, text string) {
	t.Helper()
	// check compares a reader's groups with those of its regexp's first
	// match.
	check := func(reader string, got []string, ok bool, re *regexp.Regexp) {
		t.Helper()
		want, wok := make([]string, re.NumSubexp()), false
		if m := re.FindStringSubmatch(text); m != nil {
			want, wok = m[1:], true
		}
		if !slices.Equal(got, want) || ok != wok {
			t.Errorf("%s(%q) = %q, %v; the regexp reads %q, %v", reader, text, got, ok, want, wok)
		}
	}
	id, name, ok := phaseLine(text)
	check("phaseLine", []string{id, name}, ok, phaseLineRe)
	mode, ok := blendLine(text)
	check("blendLine", []string{mode}, ok, blendLineRe)
	name, value, turns, ok := knownLine(text)
	check("knownLine", []string{name, value, turns}, ok, knownLineRe)
	turn, reply, ok := assistantLine(text)
	check("assistantLine", []string{turn, reply}, ok, lastReplyRe)
	turn, said, ok := userLine(text)
	check("userLine", []string{turn, said}, ok, userLineRe)
	var wids []string
	for _, m := range techLineRe.FindAllStringSubmatch(text, -1) {
		wids = append(wids, m[1])
	}
	if ids := techLines(text); !slices.Equal(ids, wids) {
		t.Errorf("techLines(%q) = %q; the regexp reads %q", text, ids, wids)
	}
	if got, want := plainValue(text), decodedValue(text); got != want {
		t.Errorf("plainValue(%q) = %q; json.Unmarshal reads %q", text, got, want)
	}
}

var lineSeeds = []string{
	"Phase: VALIDATION | Validation & Confirmation | 5 of 5 | turn 1 in phase",
	"Intro\nPhase: A | B |",
	"Phase: A| B |\nPhase: C | D | x",
	"Phase: A |B |",
	"Phase: A\nB | C\nD |",
	"Phase:  | B |",
	"Mode blend: validate 70%, refine 20%",
	"Mode blend: Validate 70%\nMode blend: refine 1",
	"Mode blend: abc",
	"- Teach Back [teach_back]: Ask the user to explain.\n- Mirror [mirror]: x",
	"- [x]: y\n-  [a_b]: c\n- a [B]: c\n- a [b] : c\n- a\n[b]: c",
	"- x [a]:",
	"- purpose.core_problem (Core problem): \"Our field technicians\" [confidence 0.75, turns 1]",
	"- users.count (Number of users): 40 [confidence 0.85, turns 3,5]",
	"- a.b (Name): v [confidence 1, turns 2] [confidence 0.5, turns 1]",
	"- a.b (Name): [confidence 1, turns 2]",
	"- a.b (Na)me): v [confidence 1, turns 2]",
	"- a.b (N\nx): v [confidence 1, turns 2]",
	"- a.b (N): v\nw [confidence 1, turns 2]",
	"- a.b (N): v [confidence 1, turns 2]x",
	"- A.b (N): v [confidence 1, turns ]",
	"[turn 17] assistant: How fast does it need to be?",
	"[turn 3] user: About 40 technicians",
	"[turn 3] user: ",
	"[turn 3] user: a\nb",
	"[turn ] assistant: x",
	"[turn 4] assistant: ",
	"[turn 4] assistant: a\nb",
	`"plain"`, `"esc\"aped"`, `"\u00e9t\u00e9"`, `["a","b",3]`, `[]`, `["x"]`, `null`, ` "x"`, `40`, `true`, `"x`, "\"\xff\"", `"tab	in"`,
	`["a","b"]`, `["a",]`, `[,"a"]`, `"a"]`, `["a"`, `[ "a" ]`, `["a" ,"b"]`, `["a\"b","c"]`, `[""]`, `["",""]`, `[[]]`, `["a"]]`, `[`, `]`, "[\"\xff\"]",
}

func TestLineReaders(t *testing.T) {
	for _, s := range lineSeeds {
		checkLineReaders(t, s)
	}
}

func FuzzLineReaders(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add(s)
	}
	f.Fuzz(checkLineReaders)
}

func FuzzIsLower(f *testing.F) {
	for _, s := range []string{"abc", "aBc", "ǅx", "ǆx", "caf\xff", "é", "É", "x1-2'", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, w string) {
		if got, want := isLower(w), strings.ToLower(w) == w; got != want {
			t.Errorf("isLower(%q) = %v; strings.ToLower says %v", w, got, want)
		}
	})
}
