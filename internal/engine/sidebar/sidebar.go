// Package sidebar maps working memory to the sidebar the chat page shows:
// static sections (always present) and dynamic sections (present while
// their appears_when condition holds: turn_count over the conversation,
// completeness_score, obligation_satisfaction of a category, or a custom
// evaluator, optionally limited to some phases), each listing its
// categories' obligations with status and confidence; a phase indicator
// with the engine's friendly labels; and a progress bar at
// round(overall completeness × 100).
package sidebar

import (
	"math"
	"slices"

	"github.com/praetorhq/praetor/internal/engine"
)

// State is the sidebar.
type State struct {
	Sections       []Section       `json:"sections"`
	PhaseIndicator *PhaseIndicator `json:"phase_indicator"`
	ProgressBar    *ProgressBar    `json:"progress_bar"`
}

// Section is a group of obligations.
type Section struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Visible   bool   `json:"visible"`
	Collapsed bool   `json:"collapsed"`
	Dynamic   bool   `json:"dynamic,omitempty"`
	Items     []Item `json:"items"`
}

// Item is one obligation in a section.
type Item struct {
	ObligationID string                       `json:"obligation_id"`
	Label        string                       `json:"label"`
	Status       engine.ObligationStatusValue `json:"status"`
	Confidence   float64                      `json:"confidence"`
	Required     bool                         `json:"required"`
}

// PhaseIndicator names the current phase.
type PhaseIndicator struct {
	CurrentPhase string `json:"current_phase"`
	Label        string `json:"label"`
	Order        int    `json:"order"`
	Total        int    `json:"total"`
}

// ProgressBar shows overall completeness.
type ProgressBar struct {
	Percentage     int  `json:"percentage"`
	Visible        bool `json:"visible"`
	ShowPercentage bool `json:"show_percentage"`
}

// Build maps the memory to the sidebar. Obligation statuses and
// completeness must be current.
func Build(def *engine.Definition, m *engine.WorkingMemory, reg *engine.Registry) State {
	cfg := def.SidebarConfig
	st := State{Sections: []Section{}}
	for _, s := range cfg.StaticSections {
		st.Sections = append(st.Sections, section(s, m, true, false))
	}
	env := engine.CondEnv{Memory: m, Registry: reg}
	for _, d := range cfg.DynamicSections {
		visible := d.AppearsWhen.Holds(env) && (len(d.Phases) == 0 || slices.Contains(d.Phases, m.Phase.Current))
		st.Sections = append(st.Sections, section(d.Section, m, visible, true))
	}
	if cfg.PhaseIndicator.Show {
		pi := &PhaseIndicator{CurrentPhase: m.Phase.Current, Label: m.Phase.Current, Total: len(def.Phases)}
		if p, ok := def.Phase(m.Phase.Current); ok {
			pi.Label, pi.Order = p.DisplayName, p.Order
		}
		if l, ok := cfg.PhaseIndicator.Labels[m.Phase.Current]; ok {
			pi.Label = l
		}
		st.PhaseIndicator = pi
	}
	if cfg.ProgressBar.Show {
		st.ProgressBar = &ProgressBar{Percentage: Percentage(m.Completeness.Overall), Visible: true,
			ShowPercentage: cfg.ProgressBar.ShowPercentage}
	}
	return st
}

// Percentage is round(overall × 100).
func Percentage(overall float64) int { return int(math.Round(overall * 100)) }

func section(s engine.SidebarSection, m *engine.WorkingMemory, visible, dynamic bool) Section {
	out := Section{ID: s.ID, Title: s.Title, Visible: visible, Collapsed: s.DefaultCollapsed, Dynamic: dynamic, Items: []Item{}}
	for _, o := range m.Obligations.Items {
		if slices.Contains(s.ObligationCategories, o.Category) {
			out.Items = append(out.Items, Item{ObligationID: o.ID, Label: o.Description, Status: o.Status,
				Confidence: o.Confidence, Required: o.Required})
		}
	}
	return out
}
