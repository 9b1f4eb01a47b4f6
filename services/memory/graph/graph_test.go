package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestScopeKeyAndValidate(t *testing.T) {
	t.Parallel()
	scopes := []Scope{
		GlobalScope(), ProjectScope("p"), ProjectScope("p-f"), FocusScope("p", "f"), FocusScope("p", "f/x"),
		FocusScope("p", "x"), FocusScope("p-f", "x"), FocusScope("p", "f%2Fx"), FocusScope("p", "F"),
	}
	keys := map[string]Scope{}
	for _, s := range scopes {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
		if other, dup := keys[s.Key()]; dup {
			t.Errorf("scopes %+v and %+v share key %q", s, other, s.Key())
		}
		keys[s.Key()] = s
	}
	for _, bad := range []Scope{
		{Level: "team"}, {Level: LevelGlobal, Focus: "x"}, {Level: LevelProject, ProjectID: "a b"},
		{Level: LevelProject, ProjectID: "p", Focus: "x"}, FocusScope("p", ""), FocusScope("p", strings.Repeat("x", 201)),
		FocusScope("", "x"), FocusScope("p", "tab\there"),
	} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", bad, err)
		}
	}
	if a := FocusScope("p", "x").Area(); a != (Area{ProjectID: "p"}) || a.Key() != "p/p" || GlobalArea().Key() != "g" {
		t.Errorf("areas: %+v %q", a, a.Key())
	}
}

func TestSearchTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		max  int
		want []string
	}{
		{`C++ && (foo OR bar) "baz"`, 0, []string{"c", "foo", "or", "bar", "baz"}},
		// Signs are query syntax: SearchTerms never keeps them, whatever
		// SignedWords does.
		{"C# F# g++ Notepad++ Ｃ＋＋ ﹟", 0, []string{"c", "f", "g", "notepad"}},
		{"a a A b", 0, []string{"a", "b"}},
		{"one two three", 2, []string{"one", "two"}},
		{"!!! ??? ***", 0, nil},
		{"ＡＢＣ déjà", 0, []string{"abc", "déjà"}},
	}
	for _, tt := range tests {
		if got := SearchTerms(tt.in, tt.max); !slices.Equal(got, tt.want) {
			t.Errorf("SearchTerms(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
	if n := len(SearchTerms(strings.Repeat("word", 1)+" "+strings.Join(strings.Fields(strings.Repeat("x y z ", 1000)), "1 "), 0)); n > MaxSearchTerms {
		t.Errorf("SearchTerms returned %d terms, more than %d", n, MaxSearchTerms)
	}
	for in, want := range map[string]string{
		"  Postgre-SQL  16 ": "postgre sql 16",
		"C++":                "c++",
		"c++ ":               "c++",
		"C":                  "c",
		"C ++":               "c",
		"C#/.NET":            "c# net",
	} {
		if got := NormalizeEntity(in); got != want {
			t.Errorf("NormalizeEntity(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSignedWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"Use C++ for the engine", []string{"use", "c++", "for", "the", "engine"}},
		{"Use C for the engine", []string{"use", "c", "for", "the", "engine"}},
		{"C#, F# and g++", []string{"c#", "f#", "and", "g++"}},
		{"Notepad++ is fine", []string{"notepad++", "is", "fine"}},
		{"c+++", []string{"c+++"}},
		{"C##", []string{"c#"}},     // one '#' only; the second separates
		{"C ++", []string{"c"}},     // a sign after a space ends no word
		{"a+b", []string{"a", "b"}}, // a sign before a letter joins two words
		{"Redis+Postgres", []string{"redis", "postgres"}},
		{"C++17", []string{"c++", "17"}}, // before a digit it ends the word
		{"C++ 17", []string{"c++", "17"}},
		{"N+1 queries", []string{"n+", "1", "queries"}},
		{"Java 8+", []string{"java", "8+"}},
		{"(C++), [C#]. C++-based", []string{"c++", "c#", "c++", "based"}},
		{"+1 #tag ++", []string{"1", "tag"}},
		{"C#.NET", []string{"c#", "net"}},
		{"Ｃ＋＋ and Ｆ＃", []string{"c++", "and", "f#"}}, // full-width, by NFKC
		{"C⁺⁺", []string{"c++"}},                     // superscript
		{"Ĉ++ déjà-vu", []string{"ĉ++", "déjà", "vu"}},
		{"Ｆｕｌｌ-width ＡＢＣ", []string{"full", "width", "abc"}},
		{"", nil},
		{"++ ## !!", nil},
	}
	for _, tt := range tests {
		if got := SignedWords(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SignedWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// SignRunes must hold every character that NFKC turns into '+' or '#': a
// node whose text has one that SignRunes lacks would keep its old content
// hash when its store opens.
func TestSignRunes(t *testing.T) {
	t.Parallel()
	var want []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) && strings.ContainsAny(norm.NFKC.String(string(r)), "+#") {
			want = append(want, r)
		}
	}
	if got := []rune(SignRunes); !slices.Equal(sortedRunes(got), want) {
		t.Errorf("SignRunes = %q, want %q", SignRunes, string(want))
	}
}

func sortedRunes(rs []rune) []rune {
	out := slices.Clone(rs)
	slices.Sort(out)
	return out
}

// FuzzSignedWords checks what the stores' migration relies on: SignedWords
// only adds signs to the words of Words, and adds none to text without
// SignRunes.
func FuzzSignedWords(f *testing.F) {
	for _, s := range []string{"Use C++ for the engine", "C# F# g++ a+b C++17 N+1", "Ｃ＋＋ C⁺⁺ ﹟", "c+++##", "déjà vu", "\xff+#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, signed := Words(s), SignedWords(s)
		stripped := make([]string, len(signed))
		for i, w := range signed {
			stripped[i] = strings.TrimRight(w, "+#")
			if rest := strings.TrimLeft(stripped[i], "+#"); rest != stripped[i] || rest == "" {
				t.Fatalf("SignedWords(%q) has the word %q: signs only end a word of letters and digits", s, w)
			}
		}
		if !slices.Equal(stripped, words) {
			t.Fatalf("SignedWords(%q) = %q; without signs that is %q, not Words %q", s, signed, stripped, words)
		}
		if !strings.ContainsAny(s, SignRunes) && !slices.Equal(signed, words) {
			t.Fatalf("SignedWords(%q) = %q differs from Words %q for text without signs", s, signed, words)
		}
	})
}

// chainOf builds the nodes of a chain a0 <- a1 <- ... <- a<hops>, a<hops>
// live.
func chainOf(hops int) map[string]Node {
	m := map[string]Node{}
	for i := range hops + 1 {
		n := Node{ID: fmt.Sprintf("a%d", i)}
		if i < hops {
			n.SupersededBy = fmt.Sprintf("a%d", i+1)
		}
		m[n.ID] = n
	}
	return m
}

func TestChainHead(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name     string
		nodes    map[string]Node
		id       string
		wantHead string
		wantErr  error
	}{
		{"superseded once", chainOf(1), "a0", "a1", nil},
		{"a chain", chainOf(3), "a0", "a3", nil},
		{"from the middle", chainOf(3), "a1", "a3", nil},
		{"MaxChainHops hops", chainOf(MaxChainHops), "a0", fmt.Sprintf("a%d", MaxChainHops), nil},
		{"one hop more", chainOf(MaxChainHops + 1), "a0", "", ErrNoLiveHead},
		{"live", chainOf(1), "a1", "", ErrInvalid},
		{"missing", chainOf(1), "zz", "", ErrNotFound},
		{"a cycle", map[string]Node{"a": {ID: "a", SupersededBy: "b"}, "b": {ID: "b", SupersededBy: "c"}, "c": {ID: "c", SupersededBy: "a"}}, "a", "", ErrNoLiveHead},
		{"a cycle further on", map[string]Node{"a": {ID: "a", SupersededBy: "b"}, "b": {ID: "b", SupersededBy: "c"}, "c": {ID: "c", SupersededBy: "b"}}, "a", "", ErrNoLiveHead},
		{"superseded by itself", map[string]Node{"a": {ID: "a", SupersededBy: "a"}}, "a", "", ErrNoLiveHead},
		{"superseded by a node the scope lacks", map[string]Node{"a": {ID: "a", SupersededBy: "b"}, "b": {ID: "b", SupersededBy: "gone"}}, "a", "", ErrNoLiveHead},
		{"a failing look-up", map[string]Node{"a": {ID: "a", SupersededBy: "fail"}}, "a", "", boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lookups := 0
			start, head, err := ChainHead(context.Background(), tt.id, func(_ context.Context, id string) (Node, bool, error) {
				lookups++
				if id == "fail" {
					return Node{}, false, boom
				}
				n, ok := tt.nodes[id]
				return n, ok, nil
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ChainHead(%s) = %s, %v; want error %v", tt.id, head.ID, err, tt.wantErr)
			}
			if err != nil {
				if head.ID != "" || start.ID != "" {
					t.Errorf("ChainHead(%s) failed but returned start %q head %q", tt.id, start.ID, head.ID)
				}
				if lookups > MaxChainHops+1 {
					t.Errorf("ChainHead(%s) looked up %d nodes; the bound is %d", tt.id, lookups, MaxChainHops+1)
				}
				return
			}
			if start.ID != tt.id || head.ID != tt.wantHead || !head.Live() {
				t.Errorf("ChainHead(%s) = start %s, head %+v; want start %s, live head %s", tt.id, start.ID, head, tt.id, tt.wantHead)
			}
		})
	}
}
