package engine

import (
	"reflect"
	"testing"
)

func TestSentences(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		want []string
	}{
		{"We spent $2.5k. Then what? OK; fine\nnext", []string{"We spent $2.5k.", "Then what?", "OK;", "fine", "next"}},
		{"Really?! Yes.", []string{"Really?!", "Yes."}},
		{"Wait... what", []string{"Wait...", "what"}},
		{"Tools, e.g. Jobber, fit. Fine", []string{"Tools, e.g. Jobber, fit.", "Fine"}},
		{"Priorities:\n1. speed\n2. cost", []string{"Priorities:", "1. speed", "2. cost"}},
		{"Team size: 12. Budget next", []string{"Team size: 12.", "Budget next"}},
		{"We ship v2.0. Then v3", []string{"We ship v2.0.", "Then v3"}},
		{"See https://x.example/a?b=1 for it. Done", []string{"See https://x.example/a?b=1 for it.", "Done"}},
		{`He said "no." Then left`, []string{`He said "no."`, "Then left"}},
		{"Ask Dr. Lee vs. Mr. Kim today. Ok", []string{"Ask Dr. Lee vs. Mr. Kim today.", "Ok"}},
		{"Email me at bob@example.com. We have 3 devs", []string{"Email me at bob@example.com.", "We have 3 devs"}},
		{"See https://example.com/docs. The team is 4", []string{"See https://example.com/docs.", "The team is 4"}},
		{"We use Jobber.com. It works", []string{"We use Jobber.com.", "It works"}},
		{"Call at 5 p.m. or 9 a.m. in the U.S. Ok", []string{"Call at 5 p.m. or 9 a.m. in the U.S. Ok"}},
		{"好的，我记下了。你还有什么要补充的吗？好", []string{"好的，我记下了。", "你还有什么要补充的吗？", "好"}},
		{"「はい。」次は？", []string{"「はい。」", "次は？"}},
		{"شكرا. هل تريد إضافة شيء؟ نعم", []string{"شكرا.", "هل تريد إضافة شيء؟", "نعم"}},
		{"  \n ", nil},
	} {
		if got := Sentences(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Sentences(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestNegative(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"No, not really": true, "I don't think so": true, "Nope.": true, "That wasn't it": true, "Never": true,
		"Not quite": true, "We can't afford it": true,
		"Yes, no problem": false, "Sure, why not": false, "Yes": false, "It is a no-code tool": false,
		"Correct, nothing to add": false, "No doubt about it": false, "I wouldn't mind": false,
		"Yes, not an issue": false, "Right, without a doubt": false,
	} {
		if got := LowerText(text).Negative(); got != want {
			t.Errorf("Negative(%q) = %v, want %v", text, got, want)
		}
	}
}
