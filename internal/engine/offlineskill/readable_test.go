package offlineskill_test

import (
	"context"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
)

// replyOf is the offline reply of engineID's session m to msg, its prompt
// built as the runner builds it, in phase with techniques, asking next.
func replyOf(t *testing.T, engineID string, m func(*engine.Definition) *engine.WorkingMemory, phase string, techniques []string,
	next, msg string) string {
	t.Helper()
	def, ok := enginetest.Shipped(t).Get(engineID)
	if !ok {
		t.Fatalf("no shipped engine %s", engineID)
	}
	got, err := offlineskill.Reply(context.Background(), replyPrompt(t, def, phase, techniques, next, m(def), msg))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The summary a user is asked to confirm says a yes or a no in words, and
// a field the user said there is none of as none: it printed "- Selection
// confirmed: true" and "- System integrations: " (null, after "Nothing is
// connected.").
func TestSummarySaysValuesInWords(t *testing.T) {
	got := replyOf(t, "business-profile", func(def *engine.Definition) *engine.WorkingMemory {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		m.Extraction = known(t, def, map[string]any{"financial_model.funding": "Our own savings, no loans",
			"partnerships_and_integrations.system_integrations": nil, "review.profile_confirmed": true,
			"competitive_landscape.competitors": []string{}})
		return m
	}, "PROFILE_REVIEW", []string{"summary_reflection"}, "profile_confirmed", "ok")
	for _, want := range []string{"- Funding: Our own savings, no loans\n", "- System integrations: none\n", "- Profile confirmed: yes\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary\n%s\ndoes not say %q", got, want)
		}
	}
	for _, not := range []string{"true", "false", ": \n"} {
		if strings.Contains(got, not) {
			t.Errorf("summary\n%s\nsays %q", got, not)
		}
	}
}
