package scope

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/graph"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		project, focus string
		facts          Facts
		want           State
	}{
		{"", "", Facts{}, Unresolved},
		{"  ", "api", Facts{ProjectExists: true, FocusExists: true}, Unresolved},
		{"p", "", Facts{}, Uncertain},
		{"p", "api", Facts{FocusExists: true}, Uncertain},
		{"p", "", Facts{ProjectExists: true}, ResolvedProject},
		{"p", "api", Facts{ProjectExists: true}, ResolvedProject},
		{"p", "api", Facts{ProjectExists: true, FocusExists: true}, ResolvedFocus},
		{"p", "", Facts{ProjectExists: true, FocusExists: true}, ResolvedProject},
	}
	for _, tt := range tests {
		if got := Classify(tt.project, tt.focus, tt.facts); got != tt.want {
			t.Errorf("Classify(%q, %q, %+v) = %s, want %s", tt.project, tt.focus, tt.facts, got, tt.want)
		}
	}
}

func TestGates(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		r       Resolution
		reads   []graph.Scope
		level   graph.Level
		write   graph.Scope
		blocked bool
	}{
		{"unresolved reads nothing", Resolve("", "", graph.ScopeInfo{}), nil, "", graph.Scope{}, true},
		{"uncertain reads project", Resolve("p", "", graph.ScopeInfo{}), []graph.Scope{graph.ProjectScope("p")}, graph.LevelProject, graph.Scope{}, true},
		{"project default write", Resolve("p", "", graph.ScopeInfo{ProjectExists: true}),
			[]graph.Scope{graph.ProjectScope("p"), graph.GlobalScope()}, "", graph.ProjectScope("p"), false},
		{"project global write", Resolve("p", "", graph.ScopeInfo{ProjectExists: true}),
			[]graph.Scope{graph.ProjectScope("p"), graph.GlobalScope()}, graph.LevelGlobal, graph.GlobalScope(), false},
		{"project focus write", Resolve("p", "x", graph.ScopeInfo{ProjectExists: true}),
			[]graph.Scope{graph.ProjectScope("p"), graph.GlobalScope()}, graph.LevelFocus, graph.Scope{}, true},
		{"focus default write", Resolve("p", "x", graph.ScopeInfo{ProjectExists: true, FocusExists: true, LastHygieneAt: at}),
			[]graph.Scope{graph.FocusScope("p", "x"), graph.ProjectScope("p"), graph.GlobalScope()}, "", graph.FocusScope("p", "x"), false},
		{"focus project write", Resolve("p", "x", graph.ScopeInfo{ProjectExists: true, FocusExists: true}),
			[]graph.Scope{graph.FocusScope("p", "x"), graph.ProjectScope("p"), graph.GlobalScope()}, graph.LevelProject, graph.ProjectScope("p"), false},
	}
	for _, tt := range tests {
		if got := tt.r.ReadScopes(); !slices.Equal(got, tt.reads) {
			t.Errorf("%s: ReadScopes = %v, want %v", tt.name, got, tt.reads)
		}
		got, err := tt.r.WriteScope(tt.level)
		if tt.blocked != errors.Is(err, ErrBlocked) || (!tt.blocked && got != tt.write) {
			t.Errorf("%s: WriteScope(%q) = %v, %v; want %v blocked=%v", tt.name, tt.level, got, err, tt.write, tt.blocked)
		}
	}
	r := Resolve("p", "x", graph.ScopeInfo{ProjectExists: true})
	if !r.FocusDropped || r.Focus != "" {
		t.Errorf("missing focus area: %+v, want the focus dropped", r)
	}
	if _, err := r.WriteScope("team"); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("WriteScope(team): err = %v, want ErrInvalid", err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range [][2]string{{"", ""}, {"p-1_x", ""}, {"p", "API / gateway"}} {
		if err := Validate(ok[0], ok[1]); err != nil {
			t.Errorf("Validate(%q, %q) = %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][2]string{{"p 1", ""}, {"p.1", ""}, {"p", " "}, {"p", "a\x00b"}} {
		if err := Validate(bad[0], bad[1]); !errors.Is(err, graph.ErrInvalid) {
			t.Errorf("Validate(%q, %q) = %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}
