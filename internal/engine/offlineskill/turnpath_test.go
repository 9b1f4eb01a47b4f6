package offlineskill_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/services/runner"
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

// turnPathMessages are the turn-path benchmark's messages (cmd/praetor's
// turnpath_bench_test.go), which each of its project-discovery sessions
// sends in turn.
var turnPathMessages = []string{
	"Our field technicians keep losing track of their jobs. We want to build a mobile app.",
	"Last month we missed three urgent repairs and lost a big customer.",
	"About 40 technicians, plus 5 office dispatchers who plan the routes.",
	"We need it within 6 months, before the busy winter season.",
}

// BenchmarkTurnPathSession measures the offline provider on every prompt
// of a turn-path session, not only on the one of turnpath_*.json: an op is
// the 16 turns of a project-discovery session that sends the turn-path
// messages four times, each prompt the extractor's or the runner's of that
// turn (a message hits other cue patterns than another).
func BenchmarkTurnPathSession(b *testing.B) {
	c := &capturing{next: offlineWithSkills(b)}
	reg, cat := enginetest.ShippedWithRegistry(b)
	def, _ := cat.Get("project-discovery")
	pipe, err := extraction.New(extraction.Config{LLM: c})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	run, err := runner.New(runner.Config{LLM: c, Registry: reg, Logger: slog.New(slog.DiscardHandler),
		Clock: func() time.Time { n++; return time.Date(2026, 1, 1, 0, n, 0, 0, time.UTC) }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var state *engine.WorkingMemory
	for turn := 1; turn <= 16; turn++ {
		msg, cur, focus := turnPathMessages[(turn-1)%len(turnPathMessages)], engine.NewExtraction(), ""
		var hist []engine.Message
		if state != nil {
			cur, focus, hist = state.Extraction, state.Obligations.Focus, state.History
		}
		id := fmt.Sprintf("msg-%02d", turn)
		ext, err := pipe.Extract(ctx, extraction.Request{Def: def, Current: cur, Message: msg, History: hist, Focus: focus,
			Meta: extraction.Meta{SessionID: "sess-1", ProjectID: "proj-1", MessageID: id, EngineID: def.EngineID, TurnNumber: turn}})
		if err != nil {
			b.Fatal(err)
		}
		in := runner.FromExtraction(id, turn, msg, ext)
		in.SessionID, in.ProjectID = "sess-1", "proj-1"
		res, err := run.Process(ctx, def, state, in)
		if err != nil {
			b.Fatal(err)
		}
		state = res.State
	}
	skills := offlineskill.Skills()
	for _, purpose := range turnPathPrompts {
		reqs := c.requests[purpose]
		if len(reqs) < 16 {
			b.Fatalf("%d %s prompts in 16 turns", len(reqs), purpose)
		}
		b.Run(purpose, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, req := range reqs {
					if _, err := skills[purpose](ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// capturing keeps the requests it passes on, by purpose.
type capturing struct {
	next     llm.Client
	requests map[string][]llm.Request
}

func (c *capturing) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if c.requests == nil {
		c.requests = map[string][]llm.Request{}
	}
	c.requests[req.Purpose] = append(c.requests[req.Purpose], req)
	return c.next.Complete(ctx, req)
}
