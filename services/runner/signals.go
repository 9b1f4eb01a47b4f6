package runner

import (
	"cmp"
	"math"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// DefaultSaturationWindow is how many recent turns saturation looks at.
const DefaultSaturationWindow = 3

// updateSaturation is step 3: it keeps the new concept counts of the last
// window turns; the score is the share of those turns that brought nothing
// new, and the conversation is saturated when a full window brought nothing.
// A degraded extraction says nothing about saturation and is skipped.
//
// The seed runs saturation inside the runner right after extraction. Here
// extraction runs in the extractor, and saturation — state of the working
// memory — stays in the runner, computed from the count the extractor sends.
func updateSaturation(def *engine.Definition, m *engine.WorkingMemory, in Input) {
	if in.ExtractionDegraded {
		return
	}
	w := cmp.Or(def.CompletenessModel.SaturationWindow, DefaultSaturationWindow)
	s := &m.Saturation
	s.NewConcepts = append(s.NewConcepts, in.NewConceptCount)
	if len(s.NewConcepts) > w {
		s.NewConcepts = s.NewConcepts[len(s.NewConcepts)-w:]
	}
	zeros := 0
	for _, n := range s.NewConcepts {
		if n == 0 {
			zeros++
		}
	}
	s.Score = round4(float64(zeros) / float64(w))
	s.Saturated = len(s.NewConcepts) == w && zeros == w
}

var (
	positiveCues = []string{"thanks", "thank you", "great", "perfect", "love it", "awesome", "helpful",
		"exactly", "good question", "makes sense", "nice"}
	frictionCues = []string{"already told you", "already said", "i said", "again?", "annoying", "frustrating",
		"frustrated", "waste of time", "stop asking", "not helpful", "useless", "confusing", "you keep", "why do you"}
	guardedCues = []string{"rather not say", "prefer not to", "private", "confidential", "none of your business"}
	confirmCues = []string{"yes", "yep", "correct", "right", "exactly", "confirmed", "confirm", "that's it", "sounds good"}
)

// updateSocioEmotional is step 4: rapport, trust and friction move with cues
// in the user's message. Friction fades by a tenth each turn; thanks and
// praise raise rapport and ease friction; complaints raise friction and cost
// rapport; sharing details (or sensitive information) builds trust, and
// guardedness costs it. Values stay in [0,1].
func updateSocioEmotional(m *engine.WorkingMemory, in Input) {
	s := &m.SocioEmotional
	s.Friction *= 0.9
	pos := countCues(in.Message, positiveCues, 2)
	neg := countCues(in.Message, frictionCues, 2)
	if strings.Count(in.Message, "!") >= 3 || strings.Contains(in.Message, "?!") {
		neg++
	}
	s.Rapport += 0.05*float64(pos) - 0.05*float64(neg)
	s.Friction += 0.15*float64(neg) - 0.05*float64(pos)
	if in.SensitiveInfoShared {
		s.Trust += 0.05
	}
	if len(strings.Fields(in.Message)) > 40 {
		s.Trust += 0.02
	}
	s.Trust -= 0.05 * float64(countCues(in.Message, guardedCues, 1))
	s.Rapport = round4(engine.Clamp01(s.Rapport))
	s.Trust = round4(engine.Clamp01(s.Trust))
	s.Friction = round4(engine.Clamp01(s.Friction))
}

func countCues(text string, cues []string, limit int) int {
	n := 0
	t := engine.LowerText(text)
	for _, c := range cues {
		if n == limit {
			break
		}
		if t.Contains(c) {
			n++
		}
	}
	return n
}

// confirms reports whether the user confirmed or corrected something.
func confirms(text string) bool {
	return countCues(text, confirmCues, 1) > 0 || extraction.CorrectionMarker(text) != ""
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
