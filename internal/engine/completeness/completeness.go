// Package completeness is the completeness engine: it scores how far a
// conversation is with one of the seed's seven models and says whether it is
// ready and what is missing.
//
// A model is a weighted sum of heuristics (weights sum to 1.0). Each
// heuristic has one source: an obligation category, a custom evaluator, an
// extraction field prefix, or the saturation signal. What a model changes is
// how a category or a field prefix is scored:
//
//	model               category of obligations           field prefix
//	obligation          satisfied / total                  met / total
//	decision-readiness  satisfied / total                  met / total
//	maturity            (satisfied + ½ partial) / total    (met + ½ below threshold) / total
//	estimability        Σ confidence of satisfied, ½ of    Σ confidence of met / total
//	                    partial, / total
//	coverage            (satisfied + partial) / total      extracted / total
//	profile             satisfied / total                  met / total, required fields count twice
//	saturation          satisfied / total                  met / total
//
// An evaluator scores itself in [0,1]; the saturation signal is the share of
// recent turns that brought no new concept. Without heuristics, a model
// weighs every obligation category equally (saturation: the signal alone).
// overall = Σ weight × score; is_ready = overall ≥ ready_threshold; gaps are
// the unsatisfied obligations, unmet fields and short heuristics, in
// heuristic order; the maturity model also names its level.
package completeness

import (
	"math"
	"slices"

	"github.com/praetorhq/praetor/internal/engine"
)

// Evaluate scores the memory with the engine's completeness model. It reads
// the obligation statuses, so derive them first (package obligation).
func Evaluate(def *engine.Definition, m *engine.WorkingMemory, reg *engine.Registry) engine.CompletenessState {
	model := def.CompletenessModel
	hs := Heuristics(def)
	out := engine.CompletenessState{ByCategory: map[string]float64{}, Gaps: []string{}}
	overall := 0.0
	for _, h := range hs {
		score, gaps := scoreHeuristic(def, model.Type, h, m, reg)
		score = engine.Clamp01(score)
		key := h.ID
		if h.Category != "" {
			key = h.Category
		}
		out.ByCategory[key] = round4(score)
		overall += h.Weight * score
		for _, g := range gaps {
			if !slices.Contains(out.Gaps, g) {
				out.Gaps = append(out.Gaps, g)
			}
		}
	}
	out.Overall = round4(engine.Clamp01(overall))
	out.IsReady = out.Overall+1e-9 >= model.ReadyThreshold
	if model.Type == engine.ModelMaturity {
		for _, l := range model.Levels {
			if out.Overall+1e-9 >= l.MinScore {
				out.Level = l.Name
			}
		}
	}
	return out
}

// Heuristics returns the model's heuristics, or its defaults when none are
// configured.
func Heuristics(def *engine.Definition) []engine.Heuristic {
	model := def.CompletenessModel
	if len(model.Heuristics) > 0 {
		return model.Heuristics
	}
	if model.Type == engine.ModelSaturation {
		return []engine.Heuristic{{ID: engine.SignalSaturation, Weight: 1, Signal: engine.SignalSaturation}}
	}
	cats := def.Categories()
	out := make([]engine.Heuristic, len(cats))
	for i, c := range cats {
		out[i] = engine.Heuristic{ID: c, Weight: 1 / float64(len(cats)), Category: c}
	}
	return out
}

func scoreHeuristic(def *engine.Definition, t engine.CompletenessModelType, h engine.Heuristic,
	m *engine.WorkingMemory, reg *engine.Registry) (float64, []string) {
	switch {
	case h.Category != "":
		return scoreCategory(def, t, h.Category, m)
	case h.FieldPrefix != "":
		return scoreFields(def, t, h.FieldPrefix, m)
	case h.Evaluator != "":
		s := 0.0
		if reg != nil {
			s = reg.Evaluate(h.Evaluator, m)
		}
		if s < 1 {
			return s, []string{h.ID}
		}
		return s, nil
	case h.Signal == engine.SignalSaturation:
		s := m.Saturation.Score
		if !m.Saturation.Saturated {
			return s, []string{h.ID}
		}
		return s, nil
	}
	return 0, []string{h.ID}
}

func scoreCategory(def *engine.Definition, t engine.CompletenessModelType, cat string, m *engine.WorkingMemory) (float64, []string) {
	// The items are read in place: each is a large struct, and this runs
	// for every category heuristic on every turn.
	n, sum := 0, 0.0
	var gaps []*engine.ObligationItem
	for i := range m.Obligations.Items {
		it := &m.Obligations.Items[i]
		if it.Category != cat {
			continue
		}
		n++
		sat, part := it.Status == engine.StatusSatisfied, it.Status == engine.StatusPartial
		switch t {
		case engine.ModelMaturity:
			sum += val(sat, 1) + val(part, 0.5)
		case engine.ModelEstimability:
			sum += val(sat, it.Confidence) + val(part, it.Confidence/2)
		case engine.ModelCoverage:
			sum += val(sat || part, 1)
		default:
			sum += val(sat, 1)
		}
		if !sat {
			gaps = append(gaps, it)
		}
	}
	if n == 0 {
		return 0, nil
	}
	// Required and higher-priority gaps first, definition order otherwise.
	slices.SortStableFunc(gaps, func(a, b *engine.ObligationItem) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return a.Priority.Rank() - b.Priority.Rank()
	})
	ids := make([]string, len(gaps))
	for i, g := range gaps {
		ids[i] = g.ID
	}
	return sum / float64(n), ids
}

func scoreFields(def *engine.Definition, t engine.CompletenessModelType, prefix string, m *engine.WorkingMemory) (float64, []string) {
	fields := engine.FieldsUnder(def, prefix)
	if len(fields) == 0 {
		return 0, nil
	}
	sum, total := 0.0, 0.0
	var gaps []string
	for _, f := range fields {
		x, present := m.Extraction.Fields[f.Path]
		met := present && f.Met(x)
		w := 1.0
		if t == engine.ModelProfile && f.Required {
			w = 2
		}
		total += w
		switch t {
		case engine.ModelMaturity:
			sum += val(met, 1) + val(present && !met, 0.5)
		case engine.ModelEstimability:
			sum += val(met, x.Confidence)
		case engine.ModelCoverage:
			sum += val(present, 1)
		default:
			sum += w * val(met, 1)
		}
		if !met {
			gaps = append(gaps, f.Path)
		}
	}
	return sum / total, gaps
}

func val(cond bool, v float64) float64 {
	if cond {
		return v
	}
	return 0
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
