package hygiene

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// Store is the part of the graph port the engine uses.
type Store interface {
	Read(ctx context.Context, tenant string, fn func(ctx context.Context, tx graph.ReadTx) error) error
	MarkHygiene(ctx context.Context, tenant string, area graph.Area, at time.Time) error
}

// Config configures the hygiene engine.
type Config struct {
	// Store is the graph. Required.
	Store Store
	// DuplicateAbove is the title similarity above which two nodes are
	// reported as duplicates. Default 0.9.
	DuplicateAbove float64
	// OutdatedAfter is the time since its last confirmation (LastValidatedAt,
	// else creation) past which an unsuperseding decision is outdated.
	// Default 180 days.
	OutdatedAfter time.Duration
	// ObsoleteAfter is the time since validation past which a pattern is
	// obsolete. Default 90 days.
	ObsoleteAfter time.Duration
	// MaxDuplicatePairs caps the duplicate pairs of one report (the rest are
	// counted in DuplicatesOmitted). Default 10000.
	MaxDuplicatePairs int
	// MaxListed caps the ids of each other list of one report: outdated
	// decisions, obsolete patterns, entity merges and unresolved saves (the
	// rest are counted in Omitted), so a large graph's report stays a size
	// an MCP client takes. Default 10000.
	MaxListed int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.DuplicateAbove = cmp.Or(c.DuplicateAbove, 0.9)
	c.OutdatedAfter = cmp.Or(c.OutdatedAfter, 180*24*time.Hour)
	c.ObsoleteAfter = cmp.Or(c.ObsoleteAfter, 90*24*time.Hour)
	c.MaxDuplicatePairs = cmp.Or(c.MaxDuplicatePairs, 10000)
	c.MaxListed = cmp.Or(c.MaxListed, 10000)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("hygiene: Config.Store is required")
	case c.DuplicateAbove <= 0 || c.DuplicateAbove >= 1:
		return fmt.Errorf("hygiene: DuplicateAbove is %v; it must be in (0, 1)", c.DuplicateAbove)
	case c.OutdatedAfter <= 0 || c.ObsoleteAfter <= 0 || c.MaxDuplicatePairs < 1 || c.MaxListed < 1:
		return errors.New("hygiene: OutdatedAfter, ObsoleteAfter, MaxDuplicatePairs and MaxListed must be positive")
	}
	return nil
}

// Engine is the hygiene engine. It keeps no state between runs.
type Engine struct {
	cfg Config
}

// New returns a hygiene engine.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg}, nil
}

// Duplicate is a pair of nodes whose titles are near-identical.
type Duplicate struct {
	A, B  string
	Kind  graph.Kind
	Score float64
}

// EntityMerge proposes MERGES_INTO from each of From to Into (the oldest
// node of the entity).
type EntityMerge struct {
	EntityName string
	Into       string
	From       []string
}

// Report is the seed's HygieneReport: candidate ids per category.
type Report struct {
	TenantID    string
	Area        graph.Area
	GeneratedAt time.Time
	// Scanned is how many live decisions and patterns the duplicate check
	// compared.
	Scanned           int
	Duplicates        []Duplicate
	DuplicatesOmitted int
	Outdated          []string
	ObsoletePatterns  []string
	EntityMerges      []EntityMerge
	Unresolved        []string
	// Omitted counts, per list, the candidates past Config.MaxListed:
	// "outdated", "obsolete_patterns", "entity_merges", "entity_merge_ids"
	// (the ids past it in one merge's From), "unresolved".
	Omitted map[string]int
	// Recorded is set when last_hygiene_at was updated to GeneratedAt.
	Recorded bool
}

// capped keeps the first max items of list, counting the rest in omitted
// under name.
func capped[T any](list []T, max int, omitted map[string]int, name string) []T {
	if len(list) <= max {
		return list
	}
	omitted[name] += len(list) - max
	return list[:max:max]
}

// Candidates is the number of candidate ids the report holds.
func (r *Report) Candidates() int {
	n := 2*len(r.Duplicates) + len(r.Outdated) + len(r.ObsoletePatterns) + len(r.Unresolved)
	for _, m := range r.EntityMerges {
		n += 1 + len(m.From)
	}
	return n
}

// Run runs the five checks on area and, once the report is complete,
// records its time as the area's last hygiene. When only the recording
// fails, Run returns the report and the error.
func (e *Engine) Run(ctx context.Context, tenant string, area graph.Area) (*Report, error) {
	if !graph.ValidToken(tenant) {
		return nil, fmt.Errorf("%w: tenant id %q must be 1-128 characters of [A-Za-z0-9_-]", graph.ErrInvalid, tenant)
	}
	if err := area.Validate(); err != nil {
		return nil, err
	}
	now := e.cfg.Now().UTC()
	var rep *Report
	err := e.cfg.Store.Read(ctx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
		rep = &Report{TenantID: tenant, Area: area, GeneratedAt: now} // fresh on a rerun
		if !area.Global() {
			info, err := tx.Scope(ctx, area.ProjectID, "")
			if err != nil {
				return err
			}
			if !info.ProjectExists {
				return fmt.Errorf("%w: project %s of tenant %s", graph.ErrScopeNotFound, area.ProjectID, tenant)
			}
		}
		var rows []graph.TitleRow
		if err := tx.Titles(ctx, area, func(r graph.TitleRow) error { rows = append(rows, r); return nil }); err != nil {
			return fmt.Errorf("duplicates: %w", err)
		}
		rep.Scanned = len(rows)
		rep.Duplicates, rep.DuplicatesOmitted = Duplicates(rows, e.cfg.DuplicateAbove, e.cfg.MaxDuplicatePairs)
		var err error
		if rep.Outdated, err = tx.Outdated(ctx, area, now.Add(-e.cfg.OutdatedAfter)); err != nil {
			return fmt.Errorf("outdated decisions: %w", err)
		}
		if rep.ObsoletePatterns, err = tx.StalePatterns(ctx, area, now.Add(-e.cfg.ObsoleteAfter)); err != nil {
			return fmt.Errorf("obsolete patterns: %w", err)
		}
		groups, err := tx.EntityGroups(ctx, area)
		if err != nil {
			return fmt.Errorf("entity facts: %w", err)
		}
		for _, g := range groups {
			rep.EntityMerges = append(rep.EntityMerges, EntityMerge{EntityName: g.EntityName, Into: g.IDs[0], From: g.IDs[1:]})
		}
		if rep.Unresolved, err = tx.Unresolved(ctx, area); err != nil {
			return fmt.Errorf("unresolved saves: %w", err)
		}
		rep.Omitted = map[string]int{}
		rep.Outdated = capped(rep.Outdated, e.cfg.MaxListed, rep.Omitted, "outdated")
		rep.ObsoletePatterns = capped(rep.ObsoletePatterns, e.cfg.MaxListed, rep.Omitted, "obsolete_patterns")
		rep.EntityMerges = capped(rep.EntityMerges, e.cfg.MaxListed, rep.Omitted, "entity_merges")
		for i := range rep.EntityMerges {
			rep.EntityMerges[i].From = capped(rep.EntityMerges[i].From, e.cfg.MaxListed, rep.Omitted, "entity_merge_ids")
		}
		rep.Unresolved = capped(rep.Unresolved, e.cfg.MaxListed, rep.Omitted, "unresolved")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hygiene: %w", err)
	}
	if err := e.cfg.Store.MarkHygiene(ctx, tenant, area, now); err != nil {
		return rep, fmt.Errorf("hygiene: report complete, but recording last_hygiene_at failed: %w", err)
	}
	rep.Recorded = true
	e.cfg.Logger.Info("memory hygiene report", "tenant", tenant, "area", area.Key(), "scanned", rep.Scanned,
		"candidates", rep.Candidates())
	return rep, nil
}

// Duplicates returns the pairs of rows of one kind whose title similarity
// is above threshold, at most max of them (and how many were omitted).
// Rows with identical token sets form a group reported as pairs of its first
// row with each other row, not as every pair, so n copies give n-1 pairs.
func Duplicates(rows []graph.TitleRow, threshold float64, max int) ([]Duplicate, int) {
	type rec struct {
		rows   []int // indexes into rows; rows[0] represents the group
		tokens []string
		kind   graph.Kind
	}
	// Group exact token sets.
	groups := map[string]*rec{}
	var recs []*rec
	for i, r := range rows {
		toks := dedup.TitleTokens(r.Title)
		if len(toks) == 0 {
			continue
		}
		slices.Sort(toks)
		key := string(r.Kind) + "\x00" + strings.Join(toks, "\x00")
		if g, ok := groups[key]; ok {
			g.rows = append(g.rows, i)
			continue
		}
		g := &rec{rows: []int{i}, tokens: toks, kind: r.Kind}
		groups[key] = g
		recs = append(recs, g)
	}
	var out []Duplicate
	omitted := 0
	add := func(a, b int, kind graph.Kind, s float64) {
		if len(out) >= max {
			omitted++
			return
		}
		x, y := rows[a].ID, rows[b].ID
		if y < x {
			x, y = y, x
		}
		out = append(out, Duplicate{A: x, B: y, Kind: kind, Score: s})
	}
	for _, g := range recs {
		for _, o := range g.rows[1:] {
			add(g.rows[0], o, g.kind, 1)
		}
	}

	// Number the tokens rarest first; each record becomes a sorted list of
	// token numbers, so prefixes share one global order and intersections
	// are merges.
	freq := map[string]int{}
	for _, g := range recs {
		for _, t := range g.tokens {
			freq[t]++
		}
	}
	vocab := make([]string, 0, len(freq))
	for t := range freq {
		vocab = append(vocab, t)
	}
	slices.SortFunc(vocab, func(a, b string) int { return cmp.Or(cmp.Compare(freq[a], freq[b]), strings.Compare(a, b)) })
	num := make(map[string]int32, len(vocab))
	for i, t := range vocab {
		num[t] = int32(i)
	}
	sets := make([][]int32, len(recs))
	for i, g := range recs {
		set := make([]int32, len(g.tokens))
		for j, t := range g.tokens {
			set[j] = num[t]
		}
		slices.Sort(set)
		sets[i] = set
	}
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return len(sets[order[i]]) < len(sets[order[j]]) })

	index := make([][]int32, len(vocab)) // token -> records (positions in order) indexed so far
	seen := make([]int32, len(recs))     // record -> last probe that met it, plus one
	for pi, ri := range order {
		x := sets[ri]
		n := len(x)
		prefix := min(n-int(math.Ceil(threshold*float64(n)))+1, n)
		for _, tok := range x[:prefix] {
			for _, pj := range index[tok] {
				rj := order[pj]
				if seen[rj] == int32(pi+1) || recs[rj].kind != recs[ri].kind || float64(len(sets[rj])) < threshold*float64(n) {
					continue
				}
				seen[rj] = int32(pi + 1)
				if s := jaccard(x, sets[rj]); s > threshold {
					add(recs[rj].rows[0], recs[ri].rows[0], recs[ri].kind, s)
				}
			}
			index[tok] = append(index[tok], int32(pi))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].A != out[j].A {
			return out[i].A < out[j].A
		}
		return out[i].B < out[j].B
	})
	return out, omitted
}

// jaccard is dedup.Jaccard of two sorted sets of token numbers.
func jaccard(a, b []int32) float64 {
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
