package hygiene

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// TestDuplicatesMatchesBruteForce compares the prefix-filtered join with
// the all-pairs definition on random titles drawn from a small vocabulary,
// so that many pairs sit near the threshold.
func TestDuplicatesMatchesBruteForce(t *testing.T) {
	t.Parallel()
	vocab := strings.Fields("cache redis session token queue kafka topic retry backoff limit rate api gateway auth oauth jwt ledger billing invoice report")
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		var rows []graph.TitleRow
		for i := range 300 {
			n := 3 + rng.IntN(10)
			var w []string
			for range n {
				w = append(w, vocab[rng.IntN(len(vocab))])
			}
			kind := graph.Decision
			if rng.IntN(4) == 0 {
				kind = graph.Pattern
			}
			rows = append(rows, graph.TitleRow{ID: fmt.Sprintf("n%03d", i), Kind: kind, Title: strings.Join(w, " ")})
		}
		for _, th := range []float64{0.9, 0.75} {
			got, omitted := Duplicates(rows, th, 1<<30)
			if omitted != 0 {
				t.Fatalf("omitted %d with no cap", omitted)
			}
			// Expected: connected pairs, where identical token sets are
			// represented by their group's first row.
			rep := map[string]string{}
			first := map[string]string{}
			for _, r := range rows {
				toks := dedup.TitleTokens(r.Title)
				slices.Sort(toks)
				key := string(r.Kind) + "|" + strings.Join(toks, " ")
				if f, ok := first[key]; ok {
					rep[r.ID] = f
				} else {
					first[key] = r.ID
					rep[r.ID] = r.ID
				}
			}
			want := map[[2]string]bool{}
			for i, a := range rows {
				for _, b := range rows[i+1:] {
					if a.Kind != b.Kind {
						continue
					}
					ra, rb := rep[a.ID], rep[b.ID]
					s := dedup.Jaccard(dedup.TitleTokens(a.Title), dedup.TitleTokens(b.Title))
					switch {
					case ra == rb && (a.ID == ra || b.ID == ra):
						want[[2]string{min(a.ID, b.ID), max(a.ID, b.ID)}] = true
					case ra != rb && a.ID == ra && b.ID == rb && s > th:
						want[[2]string{min(a.ID, b.ID), max(a.ID, b.ID)}] = true
					}
				}
			}
			gotSet := map[[2]string]bool{}
			for _, d := range got {
				gotSet[[2]string{d.A, d.B}] = true
			}
			for p := range want {
				if !gotSet[p] {
					t.Errorf("trial %d threshold %v: missing pair %v", trial, th, p)
				}
			}
			for p := range gotSet {
				if !want[p] {
					t.Errorf("trial %d threshold %v: extra pair %v", trial, th, p)
				}
			}
		}
	}
}

func TestDuplicatesCap(t *testing.T) {
	t.Parallel()
	var rows []graph.TitleRow
	for i := range 10 {
		rows = append(rows, graph.TitleRow{ID: fmt.Sprint(i), Kind: graph.Decision, Title: "same title every time"})
	}
	got, omitted := Duplicates(rows, 0.9, 4)
	if len(got) != 4 || omitted != 5 {
		t.Errorf("10 copies with a cap of 4: %d pairs, %d omitted; want 4 and 5 (n-1 pairs in all)", len(got), omitted)
	}
}

// Titles that differ by a sign ending a name are about different things:
// not duplicates, while case and punctuation still are.
func TestDuplicatesKeepSigns(t *testing.T) {
	t.Parallel()
	rows := []graph.TitleRow{
		{ID: "cpp", Kind: graph.Decision, Title: "Use C++ for the engine"},
		{ID: "c", Kind: graph.Decision, Title: "Use C for the engine"},
		{ID: "csharp", Kind: graph.Decision, Title: "Use C# for the engine"},
		{ID: "cpp2", Kind: graph.Decision, Title: "use c++ for the engine!"},
	}
	got, _ := Duplicates(rows, 0.9, 100)
	if want := []Duplicate{{A: "cpp", B: "cpp2", Kind: graph.Decision, Score: 1}}; !slices.Equal(got, want) {
		t.Errorf("Duplicates = %+v, want %+v", got, want)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if c.DuplicateAbove != 0.9 || c.OutdatedAfter.Hours() != 180*24 || c.ObsoleteAfter.Hours() != 90*24 {
		t.Errorf("defaults = %+v, want 0.9, 180 days, 90 days (seed 001)", c)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
}
