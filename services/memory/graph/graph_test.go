package graph

import (
	"context"
	"errors"
	"fmt"
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
