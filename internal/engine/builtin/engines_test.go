package builtin_test

import (
	"errors"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/praetorhq/praetor/engines"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/engine/evaluators/businessprofile"
	"github.com/praetorhq/praetor/internal/engine/evaluators/ideation"
)

func load(t *testing.T) *engine.Catalog {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	cat, rep, err := builtin.Load(reg)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, w := range rep.Warnings {
		t.Errorf("warning: %v", w)
	}
	return cat
}

func get(t *testing.T, cat *engine.Catalog, id string) *engine.Definition {
	t.Helper()
	d, ok := cat.Get(id)
	if !ok {
		t.Fatalf("engine %s not loaded (have %v)", id, cat.IDs())
	}
	return d
}

// The four engines load with neither errors nor warnings.
func TestFourEnginesLoadClean(t *testing.T) {
	cat := load(t)
	if got, want := cat.IDs(), []string{"business-profile", "exploration", "ideation", "project-discovery"}; !slices.Equal(got, want) {
		t.Errorf("engines = %v, want %v", got, want)
	}
}

// fieldsByDimension counts extraction fields by their first path segment.
func fieldsByDimension(d *engine.Definition) map[string]int {
	out := map[string]int{}
	for _, f := range d.ExtractionSchema.Fields {
		dim, _, _ := strings.Cut(f.Path, ".")
		out[dim]++
	}
	return out
}

func TestBusinessProfileEngine(t *testing.T) {
	d := get(t, load(t), "business-profile")
	if d.EngineType != engine.ExtractDominant || d.InformationRatio.User <= d.InformationRatio.System {
		t.Errorf("type %s, ratio %+v: want extract-dominant, user-heavy", d.EngineType, d.InformationRatio)
	}
	dims := businessprofile.Dimensions()
	if len(dims) != 14 {
		t.Fatalf("%d dimensions", len(dims))
	}
	// The 14 dimensions are the obligation categories, plus the review.
	if got, want := sorted(d.Categories()), sorted(append(slices.Clone(dims), "review")); !slices.Equal(got, want) {
		t.Errorf("categories = %v, want %v", got, want)
	}
	fields := fieldsByDimension(d)
	for _, dim := range dims {
		req := 0
		for _, o := range d.Obligations {
			if o.Category == dim && o.Required {
				req++
			}
		}
		if req == 0 {
			t.Errorf("dimension %s has no required obligation", dim)
		}
		if fields[dim] < 3 {
			t.Errorf("dimension %s has %d extraction fields, want at least 3", dim, fields[dim])
		}
	}
	// Profile completeness: one field-prefix heuristic per dimension,
	// weights summing to 1.
	m := d.CompletenessModel
	if m.Type != engine.ModelProfile {
		t.Errorf("completeness model %s, want profile", m.Type)
	}
	sum := 0.0
	var prefixes []string
	for _, h := range m.Heuristics {
		sum += h.Weight
		prefixes = append(prefixes, h.FieldPrefix)
	}
	if math.Abs(sum-1) > 1e-9 || !slices.Equal(sorted(prefixes), sorted(dims)) {
		t.Errorf("heuristics: weights sum %v, prefixes %v", sum, prefixes)
	}
	// The phases walk the groups in order, each focusing on its group's
	// dimensions, then a review that cannot be left unconfirmed.
	groups := businessprofile.Groups()
	if len(d.Phases) != len(groups)+1 {
		t.Fatalf("%d phases, want %d", len(d.Phases), len(groups)+1)
	}
	for i, g := range groups {
		p := d.Phases[i]
		if p.ID != g.Phase || !slices.Equal(p.FocusCategories, g.Categories) {
			t.Errorf("phase %d = %s focusing %v, want %s focusing %v", i+1, p.ID, p.FocusCategories, g.Phase, g.Categories)
		}
		if p.TransitionTriggers[0].EvaluatorName != g.Name+"Settled" {
			t.Errorf("phase %s is not driven by %sSettled", p.ID, g.Name)
		}
	}
	last := d.Phases[len(d.Phases)-1]
	if last.ID != "PROFILE_REVIEW" || len(last.MandatoryCheckpoints) != 1 || !last.MandatoryCheckpoints[0].Required ||
		last.MandatoryCheckpoints[0].ObligationID != "profile_confirmed" || len(last.EntryConditions) == 0 {
		t.Errorf("final phase = %+v", last)
	}
	if len(d.SidebarConfig.StaticSections) == 0 || len(d.SidebarConfig.DynamicSections) == 0 {
		t.Error("the sidebar needs static and dynamic sections")
	}
	if got, want := sorted(d.CustomEvaluators), sorted(slices.Collect(maps.Keys(businessprofile.Evaluators()))); !slices.Equal(got, want) {
		t.Errorf("custom_evaluators = %v, want %v", got, want)
	}
	if len(d.Obligations) < 40 || len(d.ExtractionSchema.Fields) < 50 {
		t.Errorf("%d obligations, %d fields: not a full profile", len(d.Obligations), len(d.ExtractionSchema.Fields))
	}
}

func TestIdeationEngine(t *testing.T) {
	d := get(t, load(t), "ideation")
	if d.EngineType != engine.Balanced || d.InformationRatio.User != d.InformationRatio.System {
		t.Errorf("type %s, ratio %+v: want balanced, 50:50", d.EngineType, d.InformationRatio)
	}
	// The seed's five dimensions with 9/7/5/5/6 fields.
	want := map[string]int{"problem_space": 9, "idea_generation": 7, "evaluation": 5, "refinement": 5, "selection": 6}
	if got := fieldsByDimension(d); !maps.Equal(got, want) {
		t.Errorf("fields by dimension = %v, want %v", got, want)
	}
	if got := sorted(d.Categories()); !slices.Equal(got, sorted(slices.Collect(maps.Keys(want)))) {
		t.Errorf("categories = %v", got)
	}
	var phases []string
	for _, p := range d.Phases {
		phases = append(phases, p.ID)
	}
	if got := strings.Join(phases, ","); got != "PROBLEM_FRAMING,DIVERGE,EVALUATE,REFINE,SELECT" {
		t.Errorf("phases = %s", got)
	}
	m := d.CompletenessModel
	if m.Type != engine.ModelMaturity || len(m.Levels) < 3 {
		t.Errorf("completeness = %+v, want maturity with levels", m)
	}
	if got, want := sorted(d.CustomEvaluators), sorted(slices.Collect(maps.Keys(ideation.Evaluators()))); !slices.Equal(got, want) {
		t.Errorf("custom_evaluators = %v, want %v", got, want)
	}
	// Every mode of divergence and convergence is used somewhere.
	dominant := map[engine.Mode]bool{}
	for _, p := range d.Phases {
		dominant[p.ModeBlend.Dominant()] = true
	}
	for _, md := range []engine.Mode{engine.ModeExtract, engine.ModeExplore, engine.ModeDeliberate, engine.ModeRefine} {
		if !dominant[md] {
			t.Errorf("no phase is dominated by %s (dominant modes %v)", md, dominant)
		}
	}
}

// The exit transitions link the four engines as the issue describes, and
// every target is a loaded engine.
func TestExitTransitionsLinkTheEngines(t *testing.T) {
	cat := load(t)
	var edges []string
	for _, d := range cat.All() {
		for _, x := range d.ExitTransitions {
			if _, ok := cat.Get(x.TargetEngine); !ok {
				t.Errorf("%s exits to %s, which is not loaded", d.EngineID, x.TargetEngine)
			}
			edges = append(edges, d.EngineID+"->"+x.TargetEngine)
		}
	}
	want := []string{"business-profile->ideation", "business-profile->project-discovery", "exploration->project-discovery",
		"ideation->exploration", "ideation->project-discovery", "project-discovery->exploration"}
	if got := sorted(edges); !slices.Equal(got, want) {
		t.Errorf("exit transitions = %v, want %v", got, want)
	}
}

// Loaded without the engines they hand over to, the new engines are
// rejected, with the file, path and rule of each missing target.
func TestExitTargetsMustBeLoaded(t *testing.T) {
	for _, tt := range []struct {
		file    string
		missing []string // exit_transitions paths that must be reported
	}{
		{"ideation.yaml", []string{"exit_transitions[0].target_engine", "exit_transitions[1].target_engine"}},
		{"business-profile.yaml", []string{"exit_transitions[0].target_engine", "exit_transitions[1].target_engine"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := fs.ReadFile(engines.FS, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			reg, err := builtin.Registry()
			if err != nil {
				t.Fatal(err)
			}
			cat, rep, err := engine.Load(reg, engine.Source{FS: fstest.MapFS{tt.file: {Data: data}}, Dir: ".", Label: "alone"})
			if !errors.Is(err, engine.ErrInvalid) || cat.Len() != 0 {
				t.Fatalf("err = %v, %d engines loaded; want ErrInvalid and none", err, cat.Len())
			}
			var paths []string
			for _, e := range rep.Errors {
				if e.Rule != "exit-transition" || e.File != "alone/"+tt.file || e.Pos.Line == 0 {
					t.Errorf("unexpected error %v", e)
				}
				paths = append(paths, e.Path)
			}
			if !slices.Equal(sorted(paths), tt.missing) {
				t.Errorf("errors at %v, want %v", paths, tt.missing)
			}
		})
	}
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
