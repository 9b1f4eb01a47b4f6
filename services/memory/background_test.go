package memory_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/retrieval"
	"github.com/praetorhq/praetor/services/memory/scope"
)

type fakeRetriever struct {
	b   retrieval.Bundle
	err error
}

func (f fakeRetriever) Retrieve(context.Context, string, string, string) (retrieval.Bundle, error) {
	return f.b, f.err
}

func TestBackground(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dec := graph.Node{ID: "d1", Kind: graph.Decision, Scope: graph.ProjectScope("shop"), Title: "Use PostgreSQL",
		Rationale: "the team\nknows it", CreatedAt: at}
	other := graph.Node{ID: "d2", Kind: graph.Decision, Scope: graph.ProjectScope("shop"), Title: "Use MySQL", CreatedAt: at}
	pat := graph.Node{ID: "p1", Kind: graph.Pattern, Scope: graph.GlobalScope(), Title: "Outbox", Rationale: "events commit with the state", CreatedAt: at}
	fact := graph.Node{ID: "f1", Kind: graph.EntityFact, Scope: graph.ProjectScope("shop"), EntityName: "Stripe",
		Title: "rate limited", Rationale: "their docs", CreatedAt: at}
	long := graph.Node{ID: "l1", Kind: graph.Decision, Scope: graph.ProjectScope("shop"), Title: strings.Repeat("word ", 30),
		Rationale: strings.Repeat("because ", 40), CreatedAt: at}
	tests := []struct {
		name    string
		r       fakeRetriever
		want    []string
		wantErr string
	}{
		{"nodes, a conflict and hygiene due", fakeRetriever{b: retrieval.Bundle{Status: retrieval.Conflicted,
			Nodes: []graph.Node{dec, other, fact, pat}, Conflicts: []retrieval.Conflict{{A: dec, B: other}}, HygieneDue: true}},
			[]string{"[project decision] Use PostgreSQL: the team knows it", "[project decision] Use MySQL",
				"[project fact] Stripe: rate limited", "[global pattern] Outbox: events commit with the state",
				`conflict: "Use PostgreSQL" contradicts "Use MySQL"`, "memory hygiene is due for this project (praetor memory hygiene)"}, ""},
		{"unknown project", fakeRetriever{b: retrieval.Bundle{Status: retrieval.Empty, Scope: scope.Resolution{State: scope.Uncertain}}}, nil, ""},
		{"graph down", fakeRetriever{b: retrieval.Bundle{Status: retrieval.Failed, Detail: "retry exhausted after 3 attempts"}}, nil,
			"retry exhausted after 3 attempts"},
		{"bad project id", fakeRetriever{err: errors.New("project_id must be ...")}, nil, "project_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := memory.NewBackgroundSource(tt.r).Background(context.Background(), "acme", "shop")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Background = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
	got, _ := memory.NewBackgroundSource(fakeRetriever{b: retrieval.Bundle{Status: retrieval.Succeeded, Nodes: []graph.Node{long}}}).
		Background(context.Background(), "acme", "shop")
	if len(got) != 1 || len([]rune(got[0])) != memory.MaxBackgroundLine || !strings.HasSuffix(got[0], "…") {
		t.Errorf("long line = %q (%d characters), want it clipped to %d", got, len([]rune(got[0])), memory.MaxBackgroundLine)
	}
}

func TestGraphSettingsFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	full := env(map[string]string{"NEO4J_URI": " bolt://neo4j:7687 ", "NEO4J_USER": "praetor", "NEO4J_PASSWORD": "pw", "NEO4J_DATABASE": "mem"})
	s, err := memory.GraphSettingsFromEnv(false, "", full)
	if err != nil || s != (memory.GraphSettings{Neo4jURI: "bolt://neo4j:7687", Neo4jUser: "praetor", Neo4jPassword: "pw", Neo4jDatabase: "mem"}) {
		t.Errorf("serve = %+v, %v", s, err)
	}
	if s, err := memory.GraphSettingsFromEnv(true, "/data", full); err != nil || s.Dir != "/data" || !strings.Contains(s.Where(), "/data/memory.db") {
		t.Errorf("dev = %+v, %v; want the embedded graph under the data dir, NEO4J_URI ignored", s, err)
	}
	var se *memory.SettingError
	if _, err := memory.GraphSettingsFromEnv(false, "", env(nil)); !errors.As(err, &se) || se.Variable != "NEO4J_URI" {
		t.Errorf("serve without NEO4J_URI: %v", err)
	}
	if _, err := memory.GraphSettingsFromEnv(true, "", env(nil)); !errors.As(err, &se) || se.Variable != "data-dir" {
		t.Errorf("dev without a data dir: %v", err)
	}
}
