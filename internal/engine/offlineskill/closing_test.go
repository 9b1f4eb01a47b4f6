package offlineskill_test

import (
	"context"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
)

// closingRemarks end what the user has to say: they answer no question.
var closingRemarks = []string{"I think that covers it.", "That's all.", "That's everything for now.", "Nothing else.",
	"I think we're done.", "That covers everything, thanks.", "Yeah, I think that's about it."}

// A closing remark answers no question of any engine, whichever is asked:
// not the one just asked, nor one whose cue word it holds, nor a list
// asked for as having none; and it puts none off.
func TestExtractionSkillClosingRemarkAnswersNothing(t *testing.T) {
	t.Parallel()
	cat := enginetest.Shipped(t)
	for _, id := range []string{"project-discovery", "exploration", "business-profile", "ideation"} {
		def, ok := cat.Get(id)
		if !ok {
			t.Fatalf("no shipped engine %s", id)
		}
		for _, o := range def.Obligations {
			for _, msg := range closingRemarks {
				if len(o.Fields) == 0 {
					continue // an evaluator's, asked of no field
				}
				ans := extract(t, def, engine.NewExtraction(), o.ID, msg)
				if fd, _ := def.Field(o.Fields[0]); fd.ValueType == engine.TypeBoolean && strings.HasPrefix(msg, "Yeah") {
					// A yes-or-no question reads the yes beside it.
					if got := string(ans.Fields[o.Fields[0]].Value); got != "true" || len(ans.Fields) != 1 {
						t.Errorf("%s, asked %s: %q answers %v (%s), want %s true", id, o.ID, msg, fieldPaths(ans.Fields),
							got, o.Fields[0])
					}
					continue
				}
				if len(ans.Fields) > 0 || len(ans.DeferredObligations) > 0 {
					t.Errorf("%s, asked %s: %q answers %v, defers %v", id, o.ID, msg, fieldPaths(ans.Fields),
						ans.DeferredObligations)
				}
			}
		}
	}
}

func fieldPaths[V any](m map[string]V) []string {
	var out []string
	for p := range m {
		out = append(out, p)
	}
	return out
}

// What a closing remark says is no matter of the user's to reflect back:
// "So what matters to you is that you think that covers it."
func TestReplyDoesNotEchoAClosingRemark(t *testing.T) {
	t.Parallel()
	def := discovery(t)
	for _, tech := range []string{"reflective_listening", "active_listening", "mirroring"} {
		for _, msg := range closingRemarks {
			m := engine.NewWorkingMemory(def, "s", "p")
			m.TurnNumber = 5
			got, err := offlineskill.Reply(context.Background(),
				replyPrompt(t, def, "USERS_AND_GOALS", []string{tech}, "key_features_listed", m, msg))
			if err != nil {
				t.Fatal(err)
			}
			if want := "Which features must it have?"; got != want {
				t.Errorf("%s, %q: reply = %q, want %q", tech, msg, got, want)
			}
		}
	}
}
