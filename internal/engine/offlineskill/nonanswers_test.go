package offlineskill_test

import "testing"

// Asked for the timeline, a guess after a doubt that names no time is no
// timeline: "when" alone, or a "when" about knowing, telling or being
// ready, puts it off; a number of four digits out of this century is no
// year. "When" and an event in the world ("when the grant comes through")
// is a time, and so is any year of the century, however far.
func TestExtractionSkillNonAnswerIsNoTimeline(t *testing.T) {
	t.Parallel()
	var tests []extractionCase
	for _, msg := range []string{
		"Not sure, maybe when.",
		"Not sure, maybe when I know more.",
		"Not sure, maybe when you tell me.",
		"Not sure, maybe when it's ready.",
		"Not sure, maybe when pigs fly.",
		"Not sure, maybe once we know more.",
		"Not sure, maybe 1850.",
		"Not sure, maybe 2150.",
	} {
		tests = append(tests, extractionCase{name: msg, focus: "timeline_known", msg: msg,
			absent: []string{"constraints.timeline"}})
	}
	tests = append(tests,
		extractionCase{name: "the grant coming through", focus: "timeline_known",
			msg:  "Not sure, maybe when the grant comes through.",
			want: map[string]any{"constraints.timeline": "when the grant comes through"}},
		extractionCase{name: "a year", focus: "timeline_known",
			msg:  "Not sure, maybe 2026.",
			want: map[string]any{"constraints.timeline": "2026"}},
		extractionCase{name: "a year past the skill's decade", focus: "timeline_known",
			msg:  "Not sure, maybe 2041.",
			want: map[string]any{"constraints.timeline": "2041"}},
		extractionCase{name: "late in the decade", focus: "timeline_known",
			msg:  "Not sure, maybe mid-2030.",
			want: map[string]any{"constraints.timeline": "mid-2030"}},
	)
	runExtractionCases(t, tests)
}
