package handoff

import (
	"math"
	"regexp"
	"strings"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Receiver is the session that received a handoff.
type Receiver struct {
	EngineID  string
	ProjectID string
}

// Thresholds of the I-PASS check.
const (
	// VerifiedAbove: verified when more than this share of the critical
	// elements is acknowledged (the seed's "> 0.5").
	VerifiedAbove = 0.5
	// KeywordMatch is the Jaccard similarity of character bigrams at which
	// a keyword of the reply counts as one of the element's ("integration"
	// and "integrations" match, "budget" and "bucket" do not).
	KeywordMatch = 0.6
	// ElementCovered is the share of an element's keywords the reply must
	// carry for the element to count as acknowledged.
	ElementCovered = 0.5
)

// Element kinds: the critical elements a receiver must acknowledge.
const (
	KindDecision    = "decision"
	KindConstraint  = "constraint"
	KindGap         = "knowledge_gap"
	KindSensitivity = "sensitivity"
)

// ElementCheck is one critical element and what the reply made of it.
type ElementCheck struct {
	Kind         string   `json:"kind"`
	Text         string   `json:"text"`
	Keywords     []string `json:"keywords"`
	Matched      []string `json:"matched"`
	Acknowledged bool     `json:"acknowledged"`
}

// Component is one I-PASS component's tally.
type Component struct {
	Total        int     `json:"total"`
	Acknowledged int     `json:"acknowledged"`
	Share        float64 `json:"share"`
}

// Details are the parts of a verification (the seed's details, and the
// I-PASS components they make).
type Details struct {
	// Identity: the handoff names the receiving engine as its target and
	// another engine as its source.
	IdentityMatch bool `json:"identity_match"`
	// Project: the handoff is of the receiving session's project.
	ProjectMatch bool `json:"project_match"`
	// Assessment: the decisions reached.
	DecisionsAcknowledged float64 `json:"decisions_acknowledged"`
	// Situation: the constraints and the knowledge gaps.
	ConstraintsAcknowledged float64 `json:"constraints_acknowledged"`
	GapsAcknowledged        float64 `json:"gaps_acknowledged"`
	// Safety: the sensitivities, so nothing delicate is dropped.
	SensitivitiesAcknowledged float64 `json:"sensitivities_acknowledged"`
	// OverallAcknowledgment is the share of every critical element.
	OverallAcknowledgment float64              `json:"overall_acknowledgment"`
	Components            map[string]Component `json:"components"`
	Elements              []ElementCheck       `json:"elements"`
}

// Verification is the I-PASS verdict on a receiver's first reply.
type Verification struct {
	Verified bool `json:"verified"`
	// Score is the mean of the I-PASS components that apply (identity,
	// project, assessment, situation, safety), in [0, 1].
	Score   float64 `json:"score"`
	Details Details `json:"details"`
}

// Verify checks that the receiving engine's first reply acknowledges the
// handoff (I-PASS): Identity (the handoff targets the receiver, from
// another engine), Project (the same project), Assessment (the decisions
// reached), Situation (the constraints and knowledge gaps), Safety (the
// sensitivities). Each decision, constraint, gap and sensitivity is a
// critical element; its keywords (lower case, stopwords and words of three
// letters or fewer removed) are fuzzily matched against the reply's by the
// Jaccard similarity of their character bigrams, and it is acknowledged when
// at least half of them are found. The handoff is verified when identity
// and project match and more than half of the critical elements are
// acknowledged. Verification never blocks the conversation: its result is
// recorded.
func Verify(h contracts.EngineHandoff, reply string, r Receiver) Verification {
	md := h.Metadata
	d := Details{
		IdentityMatch: md.TargetEngineID == r.EngineID && md.SourceEngineID != "" && md.SourceEngineID != r.EngineID,
		ProjectMatch:  md.ProjectID == r.ProjectID,
		Components:    map[string]Component{},
	}
	replyWords := Keywords(reply)
	var elements []ElementCheck
	add := func(kind string, texts ...string) {
		for _, t := range nonEmpty(texts) {
			elements = append(elements, check(kind, t, replyWords))
		}
	}
	for _, dec := range h.ActionList.DecisionsReached {
		add(KindDecision, dec.Decision)
	}
	for _, c := range h.ActionList.ConstraintsIdentified {
		add(KindConstraint, c.Constraint)
	}
	add(KindGap, h.SituationAwareness.KnowledgeGapsRevealed...)
	add(KindSensitivity, h.RelationalState.Sensitivities...)

	tally := map[string]*Component{}
	for _, k := range []string{KindDecision, KindConstraint, KindGap, KindSensitivity} {
		tally[k] = &Component{}
	}
	var total, acked int
	for _, e := range elements {
		if len(e.Keywords) == 0 {
			continue // nothing checkable in it
		}
		c := tally[e.Kind]
		c.Total++
		total++
		if e.Acknowledged {
			c.Acknowledged++
			acked++
		}
	}
	share := func(c *Component) float64 {
		if c.Total == 0 {
			return 0
		}
		return round4(float64(c.Acknowledged) / float64(c.Total))
	}
	for k, c := range tally {
		c.Share = share(c)
		d.Components[k] = *c
	}
	d.DecisionsAcknowledged = tally[KindDecision].Share
	d.ConstraintsAcknowledged = tally[KindConstraint].Share
	d.GapsAcknowledged = tally[KindGap].Share
	d.SensitivitiesAcknowledged = tally[KindSensitivity].Share
	if total > 0 {
		d.OverallAcknowledgment = round4(float64(acked) / float64(total))
	}
	d.Elements = elements
	if d.Elements == nil {
		d.Elements = []ElementCheck{}
	}

	// The I-PASS components that apply: identity and project always;
	// assessment, situation and safety when the handoff has their elements.
	var parts []float64
	parts = append(parts, b2f(d.IdentityMatch), b2f(d.ProjectMatch))
	if c := tally[KindDecision]; c.Total > 0 {
		parts = append(parts, c.Share)
	}
	if c, g := tally[KindConstraint], tally[KindGap]; c.Total+g.Total > 0 {
		parts = append(parts, float64(c.Acknowledged+g.Acknowledged)/float64(c.Total+g.Total))
	}
	if c := tally[KindSensitivity]; c.Total > 0 {
		parts = append(parts, c.Share)
	}
	sum := 0.0
	for _, p := range parts {
		sum += p
	}
	return Verification{
		Verified: d.IdentityMatch && d.ProjectMatch && d.OverallAcknowledgment > VerifiedAbove,
		Score:    round4(sum / float64(len(parts))),
		Details:  d,
	}
}

// check is the element text of kind against the reply's keywords. Its own
// keywords are those of what it says, without the mapper's framing
// (unframed): "Shortlisted idea to explore: the pause button" is
// acknowledged by a reply that names the pause button, not by one that
// says "you shortlisted some ideas to explore".
func check(kind, text string, reply []string) ElementCheck {
	e := ElementCheck{Kind: kind, Text: text, Keywords: Keywords(unframed(text)), Matched: []string{}}
	for _, k := range e.Keywords {
		for _, w := range reply {
			if k == w || Jaccard(bigrams(k), bigrams(w)) >= KeywordMatch {
				e.Matched = append(e.Matched, k)
				break
			}
		}
	}
	e.Acknowledged = len(e.Keywords) > 0 && float64(len(e.Matched)) >= ElementCovered*float64(len(e.Keywords))
	return e
}

// splitRe splits text into words on white space and punctuation.
var splitRe = regexp.MustCompile("[\\s,.:;!?()\\[\\]{}\"'`]+")

// Keywords returns the distinct keywords of text, in order: lower-cased
// words longer than three characters that are not stopwords.
func Keywords(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range splitRe.Split(strings.ToLower(text), -1) {
		w = strings.Trim(w, "-–—/*_#&+=<>|~")
		if len([]rune(w)) <= 3 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// Jaccard is |a ∩ b| / |a ∪ b| (1 when both are empty).
func Jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func bigrams(w string) map[string]bool {
	r := []rune(w)
	out := map[string]bool{}
	if len(r) < 2 {
		out[w] = true
		return out
	}
	for i := 0; i+1 < len(r); i++ {
		out[string(r[i:i+2])] = true
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// stopwords are English function words too common to show that a reply
// took anything in (only words longer than three letters matter here).
var stopwords = engine.WordSet(`about above after again against all also although among another any anyone
		anything are aren't around because been before being below between both cannot could couldn't does doesn't
		doing don't down during each either else even ever every few first from further going gonna have haven't
		having here here's hers herself himself however into itself just know last less like made make many maybe
		might more most much must myself need needs neither never next none nor not nothing now often once only onto
		other others otherwise ought ours ourselves over own perhaps please quite rather really same seem seems
		shall should shouldn't since some something still such than that that's their theirs them themselves then
		there there's these they they're thing things think this those though through thus together too toward
		under until upon very want wants was wasn't well were weren't what what's whatever when where whether which
		while who whom whose why will with within without won't would wouldn't yeah yes yet you you're your yours
		yourself yourselves user user's users`)
