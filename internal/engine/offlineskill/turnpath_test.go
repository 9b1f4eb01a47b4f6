package offlineskill_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// turnPathPrompts are two requests of the turn-path benchmark
// (cmd/praetor), taken late in a project-discovery conversation: the
// extractor's at turn 17 (27 kB with its schema) and the runner's reply
// prompt at turn 17 (11 kB). The offline provider parses and answers one of
// each every turn.
var turnPathPrompts = []string{"extraction", "response"}

func turnPathRequest(tb testing.TB, purpose string) llm.Request {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "turnpath_"+purpose+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	var req llm.Request
	if err := json.Unmarshal(b, &req); err != nil {
		tb.Fatal(err)
	}
	if req.Purpose != purpose {
		tb.Fatalf("testdata/turnpath_%s.json has purpose %q", purpose, req.Purpose)
	}
	return req
}

func offlineWithSkills(tb testing.TB) *offline.Offline {
	tb.Helper()
	o, err := offline.New(offline.Config{Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	for purpose, skill := range offlineskill.Skills() {
		o.Handle(purpose, skill)
	}
	return o
}

// TestTurnPathAnswers pins the offline provider's answers and token counts
// to the turn-path prompts: a faster parser must read them the same.
func TestTurnPathAnswers(t *testing.T) {
	o := offlineWithSkills(t)
	got := map[string]any{}
	for _, purpose := range turnPathPrompts {
		resp, err := o.Complete(t.Context(), turnPathRequest(t, purpose))
		if err != nil {
			t.Fatalf("%s: %v", purpose, err)
		}
		got[purpose] = map[string]any{"content": resp.Content, "usage": resp.Usage}
	}
	path := filepath.Join("testdata", "turnpath_answers.golden.json")
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if string(b) != string(want) {
		t.Errorf("answers differ from %s:\n got %s\nwant %s", path, b, want)
	}
}

// BenchmarkTurnPathPrompts measures the offline provider on the turn-path
// prompts: the skill alone (parsing the prompt and composing the answer)
// and the whole call (with the token counts of prompt and answer).
func BenchmarkTurnPathPrompts(b *testing.B) {
	o := offlineWithSkills(b)
	skills := offlineskill.Skills()
	for _, purpose := range turnPathPrompts {
		req := turnPathRequest(b, purpose)
		b.Run(purpose+"/skill", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := skills[purpose](b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(purpose+"/complete", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := o.Complete(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
