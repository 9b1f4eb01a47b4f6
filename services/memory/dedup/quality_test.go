package dedup_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/embedded"
	neo4jstore "github.com/praetorhq/praetor/services/memory/graph/neo4j"
)

type content struct {
	Title     string `json:"title"`
	Rationale string `json:"rationale"`
}

type pair struct {
	ID string `json:"id"`
	// Set is "dev" (the pairs the replaced-word rule was designed on) or
	// "holdout" (written afterwards, before running dedup on them).
	Set      string  `json:"set"`
	Label    string  `json:"label"`
	Existing content `json:"existing"`
	Incoming content `json:"incoming"`
}

func loadPairs(t *testing.T) []pair {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "dedup_pairs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pair
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var p pair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("dedup_pairs.jsonl line %d: %v", line, err)
		}
		switch p.Label {
		case "duplicate", "near_duplicate", "related", "distinct":
		default:
			t.Fatalf("dedup_pairs.jsonl line %d: label %q", line, p.Label)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 200 {
		t.Fatalf("only %d labelled pairs; the quality test needs at least 200", len(out))
	}
	return out
}

// TestDedupQuality runs the labelled pairs through dedup on each adapter
// and measures it.
func TestDedupQuality(t *testing.T) {
	pairs := loadPairs(t)
	t.Run("embedded", func(t *testing.T) {
		s, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "q.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		measure(t, s, "t-quality", pairs)
	})
	t.Run("neo4j", func(t *testing.T) {
		uri, user, password := testenv.Neo4j(t)
		tenant := testenv.Neo4jTenant(t)
		s, err := neo4jstore.Open(context.Background(), neo4jstore.Config{URI: uri, User: user, Password: password})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		measure(t, s, tenant, pairs)
	})
}

func measure(t *testing.T, s graph.Store, tenant string, pairs []pair) {
	ctx := context.Background()
	d, err := dedup.New(dedup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(sc graph.Scope, c content) dedup.Result {
		t.Helper()
		n := graph.Node{ID: uuid.NewString(), Kind: graph.Decision, Scope: sc, Title: c.Title, Rationale: c.Rationale, CreatedAt: at}
		var res dedup.Result
		err := s.Write(ctx, tenant, sc, func(ctx context.Context, tx graph.WriteTx) error {
			var err error
			res, err = d.Run(ctx, tx, n, dedup.Options{})
			return err
		})
		if err != nil {
			t.Fatalf("dedup %q: %v", c.Title, err)
		}
		return res
	}
	outcomes := make(map[string]dedup.Outcome, len(pairs))
	for _, p := range pairs {
		project := "q-" + p.ID
		if err := s.EnsureProject(ctx, tenant, project); err != nil {
			t.Fatal(err)
		}
		sc := graph.ProjectScope(project)
		if r := run(sc, p.Existing); r.Outcome != dedup.OutcomeNew {
			t.Fatalf("%s: first write %s, want new", p.ID, r.Outcome)
		}
		outcomes[p.ID] = run(sc, p.Incoming).Outcome
	}
	var report strings.Builder
	var overall metrics
	for _, set := range []string{"dev", "holdout", "all"} {
		var sub []pair
		for _, p := range pairs {
			if set == "all" || p.Set == set {
				sub = append(sub, p)
			}
		}
		m := score(sub, outcomes)
		m.write(&report, set, len(sub))
		if set == "all" {
			overall = m
		}
	}
	var misses []string
	for _, p := range pairs {
		if o := outcomes[p.ID]; o != ideal[p.Label] {
			misses = append(misses, fmt.Sprintf("  %s %-7s %-14s -> %-14s %q -> %q", p.ID, p.Set, p.Label, o, p.Existing.Title, p.Incoming.Title))
		}
	}
	fmt.Fprintf(&report, "pairs whose outcome is not the ideal one (%d):\n%s\n", len(misses), strings.Join(misses, "\n"))
	t.Log("\n" + report.String())

	if overall.supPrecision < 0.95 {
		t.Errorf("supersede precision %.3f is below 0.95", overall.supPrecision)
	}
	if overall.skipPrecision < 1 {
		t.Errorf("duplicate_skip precision %.3f: an exact-hash match on content labelled different", overall.skipPrecision)
	}
}

type metrics struct {
	confusion                                     map[string]map[dedup.Outcome]int
	supPrecision, supRecall, revPrecision         float64
	revRecall, revSafe, skipPrecision, skipRecall float64
	supersedes, reviews, skips                    int
}

var labels = []string{"duplicate", "near_duplicate", "related", "distinct"}

func score(pairs []pair, outcomes map[string]dedup.Outcome) metrics {
	m := metrics{confusion: map[string]map[dedup.Outcome]int{}}
	total := map[string]int{}
	for _, l := range labels {
		m.confusion[l] = map[dedup.Outcome]int{}
	}
	for _, p := range pairs {
		m.confusion[p.Label][outcomes[p.ID]]++
		total[p.Label]++
	}
	sum := func(o dedup.Outcome, ls ...string) int {
		n := 0
		for _, l := range ls {
			n += m.confusion[l][o]
		}
		return n
	}
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 1
		}
		return float64(a) / float64(b)
	}
	m.supersedes = sum(dedup.OutcomeSupersede, labels...)
	m.reviews = sum(dedup.OutcomeManualReview, labels...)
	m.skips = sum(dedup.OutcomeDuplicateSkip, labels...)
	// A supersede of a duplicate replaces a node by the same decision: right.
	m.supPrecision = ratio(sum(dedup.OutcomeSupersede, "near_duplicate", "duplicate"), m.supersedes)
	m.supRecall = ratio(m.confusion["near_duplicate"][dedup.OutcomeSupersede], total["near_duplicate"])
	m.revPrecision = ratio(m.confusion["related"][dedup.OutcomeManualReview], m.reviews)
	m.revRecall = ratio(m.confusion["related"][dedup.OutcomeManualReview], total["related"])
	m.revSafe = ratio(sum(dedup.OutcomeManualReview, "related", "near_duplicate"), m.reviews)
	m.skipPrecision = ratio(m.confusion["duplicate"][dedup.OutcomeDuplicateSkip], m.skips)
	m.skipRecall = ratio(m.confusion["duplicate"][dedup.OutcomeDuplicateSkip], total["duplicate"])
	return m
}

func (m metrics) write(w *strings.Builder, set string, n int) {
	fmt.Fprintf(w, "set %s, %d pairs:\n", set, n)
	fmt.Fprintf(w, "  supersede      precision %.3f  recall %.3f  (%d predicted)\n", m.supPrecision, m.supRecall, m.supersedes)
	fmt.Fprintf(w, "  manual_review  precision %.3f  recall %.3f  (%d predicted; right = labelled related; %.3f of them near_duplicate or related)\n",
		m.revPrecision, m.revRecall, m.reviews, m.revSafe)
	fmt.Fprintf(w, "  duplicate_skip precision %.3f  recall %.3f  (%d predicted)\n", m.skipPrecision, m.skipRecall, m.skips)
	fmt.Fprintf(w, "  %-15s %14s %14s %14s %14s\n", "label \\ outcome", "duplicate_skip", "supersede", "manual_review", "new")
	for _, l := range labels {
		c := m.confusion[l]
		fmt.Fprintf(w, "  %-15s %14d %14d %14d %14d\n", l, c[dedup.OutcomeDuplicateSkip], c[dedup.OutcomeSupersede], c[dedup.OutcomeManualReview], c[dedup.OutcomeNew])
	}
}

var ideal = map[string]dedup.Outcome{
	"duplicate":      dedup.OutcomeDuplicateSkip,
	"near_duplicate": dedup.OutcomeSupersede,
	"related":        dedup.OutcomeManualReview,
	"distinct":       dedup.OutcomeNew,
}
