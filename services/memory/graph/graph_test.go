package graph

import (
	"errors"
	"slices"
	"strings"
	"testing"
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
	if got := NormalizeEntity("  Postgre-SQL  16 "); got != "postgre sql 16" {
		t.Errorf("NormalizeEntity = %q", got)
	}
}
