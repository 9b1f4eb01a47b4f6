package engine

import (
	"fmt"
	"sort"
	"strings"
)

// Mode is one of the seven conversation modes.
type Mode string

// The seven modes.
const (
	ModeExtract    Mode = "extract"    // elicit information from the user
	ModeExplore    Mode = "explore"    // jointly discover possibilities
	ModeInform     Mode = "inform"     // teach the user something new
	ModeValidate   Mode = "validate"   // confirm understanding
	ModeRefine     Mode = "refine"     // polish what was extracted
	ModePersuade   Mode = "persuade"   // guide toward a decision
	ModeDeliberate Mode = "deliberate" // weigh tradeoffs
)

// Modes lists the seven modes in the seed's order.
func Modes() []Mode {
	return []Mode{ModeExtract, ModeExplore, ModeInform, ModeValidate, ModeRefine, ModePersuade, ModeDeliberate}
}

// ValidMode reports whether m is one of the seven modes.
func ValidMode(m Mode) bool {
	for _, x := range Modes() {
		if x == m {
			return true
		}
	}
	return false
}

// ModeBlend is a phase's conversation style: a percentage per mode, summing
// to 100. Unset modes are 0.
type ModeBlend struct {
	Extract    int `yaml:"extract,omitempty" json:"extract,omitempty" jsonschema:"minimum=0,maximum=100"`
	Explore    int `yaml:"explore,omitempty" json:"explore,omitempty" jsonschema:"minimum=0,maximum=100"`
	Inform     int `yaml:"inform,omitempty" json:"inform,omitempty" jsonschema:"minimum=0,maximum=100"`
	Validate   int `yaml:"validate,omitempty" json:"validate,omitempty" jsonschema:"minimum=0,maximum=100"`
	Refine     int `yaml:"refine,omitempty" json:"refine,omitempty" jsonschema:"minimum=0,maximum=100"`
	Persuade   int `yaml:"persuade,omitempty" json:"persuade,omitempty" jsonschema:"minimum=0,maximum=100"`
	Deliberate int `yaml:"deliberate,omitempty" json:"deliberate,omitempty" jsonschema:"minimum=0,maximum=100"`
}

// Get returns the percentage of a mode.
func (b ModeBlend) Get(m Mode) int {
	switch m {
	case ModeExtract:
		return b.Extract
	case ModeExplore:
		return b.Explore
	case ModeInform:
		return b.Inform
	case ModeValidate:
		return b.Validate
	case ModeRefine:
		return b.Refine
	case ModePersuade:
		return b.Persuade
	case ModeDeliberate:
		return b.Deliberate
	}
	return 0
}

// Sum is the total percentage.
func (b ModeBlend) Sum() int {
	s := 0
	for _, m := range Modes() {
		s += b.Get(m)
	}
	return s
}

// ModeWeight is one mode's share of a blend.
type ModeWeight struct {
	Mode    Mode `json:"mode"`
	Percent int  `json:"percent"`
}

// Ranked returns the modes with a share, largest first; ties keep the seed's
// mode order so the result is deterministic.
func (b ModeBlend) Ranked() []ModeWeight {
	var out []ModeWeight
	for _, m := range Modes() {
		if p := b.Get(m); p > 0 {
			out = append(out, ModeWeight{m, p})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Percent > out[j].Percent })
	return out
}

// Dominant is the mode with the largest share (extract for an empty blend).
func (b ModeBlend) Dominant() Mode {
	r := b.Ranked()
	if len(r) == 0 {
		return ModeExtract
	}
	return r[0].Mode
}

// String renders "extract 70%, validate 20%, explore 10%".
func (b ModeBlend) String() string {
	var parts []string
	for _, w := range b.Ranked() {
		parts = append(parts, fmt.Sprintf("%s %d%%", w.Mode, w.Percent))
	}
	return strings.Join(parts, ", ")
}
