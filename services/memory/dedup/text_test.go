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
		{"C++ && Rust", "c++ rust"},
		{"C ++ && Rust", "c rust"},
		{"C#, F# or g++?", "c# f# or g++"},
		{"a+b", "a b"},
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

// A sign that ends a name is content: each pair is other content, in the
// title, the rationale or the entity name.
func TestContentHashKeepsSigns(t *testing.T) {
	t.Parallel()
	type content struct {
		kind                     graph.Kind
		entity, title, rationale string
	}
	dec := func(title, rationale string) content { return content{graph.Decision, "", title, rationale} }
	fact := func(entity string) content { return content{graph.EntityFact, entity, "compiles slowly", ""} }
	tests := []struct{ a, b content }{
		{dec("Use C++ for the engine", "speed"), dec("Use C for the engine", "speed")},
		{dec("Use C# for the tools", "speed"), dec("Use C for the tools", "speed")},
		{dec("Use F# for the pricing model", ""), dec("Use F for the pricing model", "")},
		{dec("Build with g++", ""), dec("Build with g", "")},
		{dec("Edit configs in Notepad++", ""), dec("Edit configs in Notepad", "")},
		{dec("Engine language", "C++ for speed"), dec("Engine language", "C for speed")},
		{fact("C++"), fact("C")},
		{fact("C#"), fact("C")},
	}
	for _, tt := range tests {
		a := ContentHash(tt.a.kind, tt.a.entity, tt.a.title, tt.a.rationale)
		if b := ContentHash(tt.b.kind, tt.b.entity, tt.b.title, tt.b.rationale); a == b {
			t.Errorf("%+v and %+v hash the same", tt.a, tt.b)
		}
	}
	same := []struct{ a, b content }{
		{dec("Use C++ for the engine", "speed"), dec("use c++ for the engine!", "Speed.")},
		{dec("Use C++17", ""), dec("use c++ 17", "")},
		{dec("Use C ++", ""), dec("Use C", "")},
		{dec("Use Redis+Postgres", ""), dec("Use Redis Postgres", "")},
		{dec("Use Ｃ＃", ""), dec("Use C#", "")},
		{fact("C++"), fact(" c++ ")},
	}
	for _, tt := range same {
		a := ContentHash(tt.a.kind, tt.a.entity, tt.a.title, tt.a.rationale)
		if b := ContentHash(tt.b.kind, tt.b.entity, tt.b.title, tt.b.rationale); a != b {
			t.Errorf("%+v and %+v hash differently; they are the same content", tt.a, tt.b)
		}
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
		{"Use C++ for the engine", []string{"use", "c++", "engine"}},
		{"Use C for the engine", []string{"use", "c", "engine"}},
		{"Port the C# tools to F#", []string{"port", "c#", "tool", "f#"}},
		{"Build with g++ and Notepad++", []string{"build", "g++", "notepad++"}},
		{"A+ ratings", []string{"a+", "rating"}}, // "a+" is no stopword
	}
	for _, tt := range tests {
		if got := TitleTokens(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("TitleTokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// C++ and C are half alike as titles: a decision about one waits for review
// next to a decision about the other; it never supersedes it, which a
// similarity of 1 (the signs dropped) would make it do.
func TestSignsInTitleSimilarity(t *testing.T) {
	t.Parallel()
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		a, b  string
		score float64
	}{
		{"Use C++ for the engine", "Use C for the engine", 0.5},
		{"Use C# for the tools", "Use C for the tools", 0.5},
		{"Use F# for pricing", "Use F for pricing", 0.5},
		{"Build with g++", "Build with g", 1.0 / 3},
	}
	for _, tt := range tests {
		got := Jaccard(TitleTokens(tt.a), TitleTokens(tt.b))
		if got != tt.score {
			t.Errorf("Jaccard(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.score)
		}
		if o := e.Classify(got); o == OutcomeSupersede {
			t.Errorf("%q after %q classifies as %s", tt.b, tt.a, o)
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
		{"Build the engine with g++ on the Linux release builders", "Build the engine with g on the Linux release builders", true, "g++", "g"},
		{"Write the engine in C#", "Write the engine in C++", true, "c#", "c++"},
		{"Require Java 8+ on the build agents", "Require Java 11+ on the build agents", false, "", ""},
	}
	for _, tt := range tests {
		fa, fb, ok := ReplacedWord(TitleTokens(tt.a), TitleTokens(tt.b))
		if ok != tt.want || fa != tt.fa || fb != tt.fb {
			t.Errorf("ReplacedWord(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.a, tt.b, fa, fb, ok, tt.fa, tt.fb, tt.want)
		}
	}
}
