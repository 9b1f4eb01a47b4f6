package runner_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/services/runner"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// BenchmarkTurn measures one offline turn of project-discovery at turn 10:
// extraction (prompt, offline skill, schema check, apply) and the runner's
// 19 steps (with the offline reply skill), through the offline provider
// ("offline") and with the skills called directly ("skills").
func BenchmarkTurn(b *testing.B) {
	b.Run("offline", func(b *testing.B) { benchTurn(b, false) })
	b.Run("skills", func(b *testing.B) { benchTurn(b, true) })
}

func benchTurn(b *testing.B, direct bool) {
	s := newSession(b, "project-discovery")
	if direct {
		var err error
		if s.pipe, err = extraction.New(extraction.Config{LLM: runnertest.Skills{}}); err != nil {
			b.Fatal(err)
		}
		if s.run, err = runner.New(runner.Config{LLM: runnertest.Skills{}, Registry: s.reg, Logger: slog.New(slog.DiscardHandler)}); err != nil {
			b.Fatal(err)
		}
	} else {
		var err error
		if s.run, err = runner.New(runner.Config{LLM: s.llm, Registry: s.reg, Logger: slog.New(slog.DiscardHandler)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, m := range []string{
		"Hi! Our field technicians keep losing track of their jobs because everything runs on paper and spreadsheets.",
		"Last month we missed three urgent repairs and lost a big customer.",
		"About 40 technicians, plus 5 office dispatchers who plan the routes.",
		"They need to see their daily jobs, record the work done, take photos and get the customer's signature.",
		"The paperwork is slow and they waste an hour every evening on double entry.",
		"We want to cut missed appointments in half and reduce the time spent on paperwork by 30 percent.",
		"We need it within 6 months, before the busy winter season.",
		"Our budget is around $60k to $80k.",
		"It has to run on Android tablets and be hosted on Azure.",
	} {
		s.quiet(m)
	}
	ctx := context.Background()
	msg := "It needs to sync with our scheduling system and with QuickBooks for invoicing."
	b.Run("extract", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.pipe.Extract(ctx, s.request(msg)); err != nil {
				b.Fatal(err)
			}
		}
	})
	ext, _ := s.pipe.Extract(ctx, s.request(msg))
	in := runner.FromExtraction("msg-10", 10, msg, ext)
	b.Run("process", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.run.Process(ctx, s.def, s.state, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func (s *session) request(msg string) extraction.Request {
	turn := s.state.TurnNumber + 1
	return extraction.Request{Def: s.def, Current: s.state.Extraction, Message: msg, History: s.state.History,
		Focus: s.state.Obligations.Focus, Meta: extraction.Meta{SessionID: "sess-1", MessageID: fmt.Sprintf("msg-%d", turn),
			EngineID: s.def.EngineID, TurnNumber: turn}}
}

// quiet plays a turn without logging or assertions.
func (s *session) quiet(msg string) {
	ctx := context.Background()
	var req extraction.Request
	if s.state == nil {
		req = extraction.Request{Def: s.def, Current: engine.NewExtraction(), Message: msg,
			Meta: extraction.Meta{SessionID: "sess-1", MessageID: "msg-1", EngineID: s.def.EngineID, TurnNumber: 1}}
	} else {
		req = s.request(msg)
	}
	ext, err := s.pipe.Extract(ctx, req)
	if err != nil {
		panic(err)
	}
	res, err := s.run.Process(ctx, s.def, s.state, runner.FromExtraction(req.Meta.MessageID, req.Meta.TurnNumber, msg, ext))
	if err != nil {
		panic(err)
	}
	s.state = res.State
}
