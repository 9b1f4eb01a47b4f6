package dedup

import (
	"slices"
	"testing"

	"github.com/praetorhq/praetor/services/memory/graph"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Use  Postgres!", "use postgres"},
		{"  USE\tpostgres\n", "use postgres"},
		{"C++ && Rust", "c rust"},
		{"Ｆｕｌｌ-width ＡＢＣ", "full width abc"}, // NFKC
		{"Café déjà vu", "café déjà vu"},
		{"", ""},
		{"!!!", ""},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestContentHash(t *testing.T) {
	t.Parallel()
	h := ContentHash(graph.Decision, "", "Use Postgres", "ACID.")
	if len(h) != 64 {
		t.Fatalf("hash %q is not hex SHA-256", h)
	}
	same := []struct{ title, rationale string }{
		{"use postgres", "acid"}, {"USE POSTGRES!", "  ACID  "}, {"Use\nPostgres", "ACID!!"},
	}
	for _, s := range same {
		if got := ContentHash(graph.Decision, "", s.title, s.rationale); got != h {
			t.Errorf("ContentHash(%q, %q) differs from the normalized equal content", s.title, s.rationale)
		}
	}
	different := []struct{ title, rationale string }{
		{"Use Postgres ACID", ""}, {"Use Postgres", "ACID 2"}, {"Use Postgre", "ACID"},
	}
	for _, d := range different {
		if got := ContentHash(graph.Decision, "", d.title, d.rationale); got == h {
			t.Errorf("ContentHash(%q, %q) equals the hash of other content", d.title, d.rationale)
		}
	}
	if ContentHash(graph.EntityFact, "Redis", "fast", "") == ContentHash(graph.EntityFact, "Valkey", "fast", "") {
		t.Error("entity facts about different entities hash the same")
	}
}

func TestTitleTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"Use Redis for the session caches", []string{"use", "redis", "session", "cache"}},
		{"Cache sessions in Redis", []string{"cache", "session", "redis"}},
		{"Access policies and status analysis", []string{"access", "policy", "status", "analysis"}},
		{"the a an of", nil},
		{"Redis redis REDIS", []string{"redis"}},
		{"v1 v2 servers", []string{"v1", "v2", "server"}},
	}
	for _, tt := range tests {
		if got := TitleTokens(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("TitleTokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJaccard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b []string
		want float64
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, 1},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h"}, []string{"a", "b", "c", "d", "e", "f", "g", "x", "y"}, 0.7},
		{[]string{"a", "b"}, []string{"c"}, 0},
		{[]string{"a", "a", "b"}, []string{"a", "b", "b"}, 1},
		{nil, nil, 0},
		{[]string{"a"}, nil, 0},
	}
	for _, tt := range tests {
		if got := Jaccard(tt.a, tt.b); got != tt.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := Jaccard(tt.b, tt.a); got != tt.want {
			t.Errorf("Jaccard is not symmetric for %v, %v", tt.a, tt.b)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		score float64
		want  Outcome
	}{
		{1, OutcomeSupersede}, {0.7, OutcomeSupersede}, {0.6999, OutcomeManualReview},
		{0.5, OutcomeManualReview}, {0.4999, OutcomeNew}, {0, OutcomeNew},
	}
	for _, tt := range tests {
		if got := e.Classify(tt.score); got != tt.want {
			t.Errorf("Classify(%v) = %s, want %s", tt.score, got, tt.want)
		}
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if c.SupersedeAt != 0.70 || c.ReviewAt != 0.50 || c.Candidates != 5 {
		t.Errorf("defaults = %+v, want 0.70 / 0.50 / 5 (seed 001)", c)
	}
	for _, bad := range []Config{{SupersedeAt: 0.4, ReviewAt: 0.5}, {SupersedeAt: 1.2}, {Candidates: 101}, {ReviewAt: -1}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted a bad config", bad)
		}
	}
}

func TestReplacedWord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b   string
		want   bool
		fa, fb string
	}{
		{"Add a Redis cache in front of the pricing service", "Add a Redis cache in front of the inventory service", true, "pricing", "inventory"},
		{"Run the indexer every 15 minutes", "Run the indexer every 5 minutes", false, "", ""},
		{"Deploy services with Helm", "Deploy all services with Helm charts", false, "", "chart"},
		{"Use Node.js 18 for builds", "Use Node.js 20 for builds", false, "", ""},
		{"Sunset API v1 by Q2", "Sunset API v1 by Q3", true, "q2", "q3"},
		{"same", "same", false, "", ""},
	}
	for _, tt := range tests {
		fa, fb, ok := ReplacedWord(TitleTokens(tt.a), TitleTokens(tt.b))
		if ok != tt.want || fa != tt.fa || fb != tt.fb {
			t.Errorf("ReplacedWord(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.a, tt.b, fa, fb, ok, tt.fa, tt.fb, tt.want)
		}
	}
}
