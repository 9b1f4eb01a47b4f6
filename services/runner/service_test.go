package runner

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

var t0 = time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)

// replies answers every response request with the reply its function
// gives for the request; it is safe for concurrent use.
type replies func(req llm.Request) string

func (f replies) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: f(req), Provider: "fake", Model: "fake-1"}, nil
}

func fixed(text string) replies { return func(llm.Request) string { return text } }

// newService builds the runner service on a bench, not started.
func newService(t *testing.T, rig *runnertest.Rig, l Completer, edit func(*Config)) (*Service, *prometheus.Registry) {
	t.Helper()
	cfg := Config{LLM: l, Registry: rig.Registry, Logger: rig.Logger}
	if edit != nil {
		edit(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := NewService(ServiceConfig{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Engines: rig.Engines, Runner: r,
		Logger: rig.Logger, Registerer: reg, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func start(t *testing.T, s *Service) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// pendingSession stores an exploration session whose landscape research
// was dispatched, and returns its id.
func pendingSession(t *testing.T, rig *runnertest.Rig, id string) string {
	t.Helper()
	def, _ := rig.Engines.Get("exploration")
	m := engine.NewWorkingMemory(def, id, "proj")
	m.UpdatedAt = t0
	task, _ := tasks.Lookup(def, "landscape_research")
	tasks.Dispatch(m, []engine.BackgroundTask{task})
	rig.SaveNew(t, def, m)
	return id
}

// A background task's result and a turn of the same session race: the
// turn's work reads the session, the task result is merged and committed
// meanwhile, then the turn commits. The turn's write names the version it
// read, is refused, and its work is redone on the merged state: both
// updates are in the session, on SQLite and on PostgreSQL.
func TestTaskResultRacingATurnLosesNothing(t *testing.T) {
	runnertest.ForEachStore(t, func(t *testing.T, rig *runnertest.Rig) {
		s, reg := newService(t, rig, fixed("Which options have you looked at?"), nil)
		sid := pendingSession(t, rig, "race-1")
		turnEv := runnertest.Event(t, "turn-ev", t0.Add(time.Minute),
			runnertest.Turn(sid, 1, "I want to figure out the best way to build a booking system.", nil))
		taskEv := runnertest.Event(t, "task-ev", t0.Add(2*time.Minute), contracts.TaskReturned{TenantID: runnertest.Tenant,
			SessionID: sid, TaskID: "landscape_research", Attempt: 1, Completed: true,
			Output: json.RawMessage(`{"summary":"three kinds of solution","findings":[]}`), ReturnedAt: t0.Add(2 * time.Minute)})

		read, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		s.afterRead = func(kind string) {
			if strings.HasPrefix(kind, "turn ") {
				once.Do(func() { close(read); <-release })
			}
		}
		h := s.redoStale(s.inbox.Handler(s.work))
		turnDone := make(chan error, 1)
		go func() { turnDone <- h(context.Background(), turnEv) }()
		<-read // the turn has read the session, and waits
		if err := h(context.Background(), taskEv); err != nil {
			t.Fatalf("merge: %v", err)
		}
		close(release)
		if err := <-turnDone; err != nil {
			t.Fatalf("turn: %v", err)
		}

		sess, m := rig.Session(t, sid)
		rec, _ := m.BackgroundTasks.Task("landscape_research")
		if m.TurnNumber != 1 || rec.Status != engine.TaskCompleted || !strings.Contains(string(rec.Result), "three kinds") {
			t.Fatalf("the session lost an update: turn %d, task %+v", m.TurnNumber, rec)
		}
		if sess.Version != 2 || sess.TurnCount != 1 {
			t.Errorf("version %d, turn count %d; want 2 writes and 1 turn", sess.Version, sess.TurnCount)
		}
		if got := testutil.ToFloat64(s.m.conflicts); got != 1 {
			t.Errorf("conflicts = %v, want 1 (the turn redone once)", got)
		}
		// The redone turn saw the research: its context carried it.
		if c := testutil.ToFloat64(s.m.answered); c != 1 {
			t.Errorf("answered = %v", c)
		}
		_ = reg
	})
}

// Over JetStream: a turn and the task result published together are both
// merged, in the session's order.
func TestTaskResultAndTurnOverJetStream(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	s, _ := newService(t, rig, fixed("Which options have you looked at?"), nil)
	start(t, s)
	sid := pendingSession(t, rig, "js-1")
	rig.Publish(t, "js-turn-1", t0.Add(time.Minute), runnertest.Turn(sid, 1, "I want to build a booking system.", nil))
	// The worker's answer, as the background service publishes it.
	rig.Publish(t, "js-done", t0.Add(time.Minute), contracts.TaskCompleted{TenantID: runnertest.Tenant, TaskID: "landscape_research",
		Kind: TaskKind, OwnerID: sid, Attempt: 1, Output: json.RawMessage(`{"summary":"three kinds of solution","findings":[]}`)})
	rig.Publish(t, "js-turn-2", t0.Add(2*time.Minute), runnertest.Turn(sid, 2, "I have heard of Mindbody.", nil))
	runnertest.WaitFor(t, 30*time.Second, "both turns and the result", func() bool {
		_, m := rig.Session(t, sid)
		r, _ := m.BackgroundTasks.Task("landscape_research")
		return m.TurnNumber == 2 && r.Status == engine.TaskCompleted
	})
	rig.Drained(t)
	merged := rig.Events(t, contracts.StreamTurns, contracts.TaskMergedSpec.Type)
	if len(merged) != 1 {
		t.Fatalf("%d task.merged events, want 1", len(merged))
	}
	tm, _ := contracts.DecodeAs[contracts.TaskMerged](merged[0])
	if tm.Status != contracts.TaskStatusCompleted || tm.SessionID != sid || tm.StateHash == "" {
		t.Errorf("task.merged = %+v", tm)
	}
	// Another owner's answers (a workflow run's) are not the runner's: they
	// are passed over, while the session's next answer is routed.
	rig.Publish(t, "wf-done", t0, contracts.TaskCompleted{TenantID: runnertest.Tenant, TaskID: "run1/design/1", Kind: "architect",
		OwnerID: "run1", Attempt: 1})
	rig.Publish(t, "js-again", t0.Add(3*time.Minute), contracts.TaskFailed{TenantID: runnertest.Tenant, TaskID: "landscape_research",
		Kind: TaskKind, OwnerID: sid, Attempt: 1, Error: "late duplicate"})
	runnertest.WaitFor(t, 10*time.Second, "the late answer routed", func() bool {
		return len(rig.Events(t, contracts.StreamTurns, contracts.TaskReturnedSpec.Type)) == 2
	})
	for _, ev := range rig.Events(t, contracts.StreamTurns, contracts.TaskReturnedSpec.Type) {
		if tr, _ := contracts.DecodeAs[contracts.TaskReturned](ev); tr.SessionID != sid {
			t.Errorf("routed another owner's answer: %+v", tr)
		}
	}
	// The late failure of a completed task changes nothing.
	runnertest.WaitFor(t, 10*time.Second, "the late answer handled", func() bool {
		done, err := store.Handled(context.Background(), rig.DB, Consumer, events.DeriveID("js-again", "returned"))
		return err == nil && done
	})
	if _, m := rig.Session(t, sid); len(m.BackgroundTasks.Completed) != 1 || m.BackgroundTasks.Completed[0].Status != engine.TaskCompleted {
		t.Errorf("tasks after a late duplicate: %+v", m.BackgroundTasks)
	}
}

// handoffEngine is an engine that hands off to exploration when the user
// asks to explore options.
const handoffEngine = `
engine_id: handing
name: Handing Engine
description: An engine that hands off to exploration.
version: 1.0.0
engine_type: extract-dominant
initial_phase: START
phases:
  - id: START
    display_name: Start
    order: 1
    mode_blend: {extract: 70, validate: 30}
    active_techniques: [open_ended_questions]
    agent_instructions: Ask about the goal.
obligations:
  - id: goal_known
    category: basics
    description: The goal is known
    required: true
    fields: [basics.goal]
  - id: budget_known
    category: basics
    description: The budget is known
    required: true
    fields: [basics.budget]
completeness_model:
  type: obligation
  ready_threshold: 0.5
  heuristics:
    - {id: basics, weight: 1.0, category: basics}
context_config:
  max_tokens: 4000
  allocation: {obligations: 0.4, conversation_history: 0.3, background_intelligence: 0.2, extraction_summary: 0.1}
information_ratio: {user: 70, system: 30}
sidebar_config:
  static_sections:
    - {id: basics, title: Basics, obligation_categories: [basics]}
  phase_indicator: {show: true}
  progress_bar: {show: true}
available_techniques: [open_ended_questions]
exit_transitions:
  - target_engine: exploration
    reason: The user wants to explore the options
    conditions:
      - type: user_request
        keywords: [explore options]
system_prompt_template: "You are {{.EngineName}}."
extraction_schema:
  fields:
    - {path: basics.goal, display_name: Goal, description: What the user wants, value_type: string, required: true}
    - {path: basics.budget, display_name: Budget, description: The budget, value_type: string, required: true}
`

// budgetMapper is the handing engine's context mapper: its budget is a
// constraint on the options to explore.
var budgetMapper = handoff.FromFields(handoff.Fields{Goals: []string{"basics.goal"},
	Constraints: []handoff.Constraint{{Path: "basics.budget", Label: "Budget", Implication: "Options must fit it"}}})

func handingMappers(t *testing.T) *handoff.Mappers {
	t.Helper()
	m := handoff.Builtin()
	if err := m.Register("handing", "exploration", budgetMapper); err != nil {
		t.Fatal(err)
	}
	return m
}

// A handoff that fails validation is not written: no eng_handoffs row, no
// handoff.created, the session stays active and goes on, the reason is in
// its working memory (what the API shows), the log and the metrics. A
// valid one on a later turn is written and published, and the session is
// handed off.
func TestRejectedHandoffIsNotWritten(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"handing.yaml": handoffEngine}})
	mappers := handoff.NewMappers()
	invalid := true
	if err := mappers.Register("handing", "exploration", func(in handoff.Input) contracts.EngineHandoff {
		h := budgetMapper(in)
		if invalid {
			h.ActionList.DecisionsReached = []contracts.Decision{{Decision: "build it", Confidence: 0.9, Reasoning: "TBD"}}
		}
		return h
	}); err != nil {
		t.Fatal(err)
	}
	s, reg := newService(t, rig, fixed("What is your budget?"), func(c *Config) { c.Mappers = mappers })
	sid := rig.CreateSession(t, "handing", "hand-1")
	h := s.redoStale(s.inbox.Handler(s.work))
	say := func(n int, msg string, fields map[string]any) {
		t.Helper()
		ev := runnertest.Event(t, runnertest.TurnID(sid, n), t0.Add(time.Duration(n)*time.Minute), runnertest.Turn(sid, n, msg, fields))
		if err := h(context.Background(), ev); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
	}
	say(1, "Our goal is a booking app. Can we explore options?", map[string]any{"basics.goal": "a booking app"})

	sess, m := rig.Session(t, sid)
	if sess.Status != conversation.StatusActive || sess.OutboundHandoffID != "" || m.Exit != nil {
		t.Fatalf("the session handed off with an invalid handoff: %+v", sess)
	}
	if r := m.HandoffRejection; r == nil || r.TargetEngine != "exploration" || r.AtTurn != 1 ||
		!slices.ContainsFunc(r.Errors, func(e string) bool { return strings.Contains(e, "reasoning") && strings.Contains(e, "placeholder") }) {
		t.Fatalf("rejection = %+v", m.HandoffRejection)
	}
	if hs, _ := conversation.ListHandoffs(context.Background(), rig.DB, runnertest.Tenant, sid); len(hs) != 0 {
		t.Fatalf("eng_handoffs has %+v", hs)
	}
	if !strings.Contains(rig.Logs(), "handoff rejected: not written") || !strings.Contains(rig.Logs(), "placeholder") {
		t.Error("the rejection and its reason are not logged")
	}
	if got := testutil.ToFloat64(s.m.handoffs.WithLabelValues("rejected")); got != 1 {
		t.Errorf("rejected handoffs = %v", got)
	}
	turn, err := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, 1))
	if err == nil && strings.Contains(turn.Reply, "handing you over") {
		t.Errorf("the reply announces a handoff that did not happen: %q", turn.Reply)
	}

	invalid = false
	say(2, "The budget is $5k. Let's explore options now.", map[string]any{"basics.goal": "a booking app", "basics.budget": "$5k"})
	sess, m = rig.Session(t, sid)
	if sess.Status != conversation.StatusHandedOff || m.Exit == nil || m.Exit.HandoffID != HandoffID(runnertest.TurnID(sid, 2)) ||
		sess.OutboundHandoffID != m.Exit.HandoffID || m.HandoffRejection != nil {
		t.Fatalf("after a valid handoff: status %s, exit %+v, rejection %+v", sess.Status, m.Exit, m.HandoffRejection)
	}
	hs, err := conversation.ListHandoffs(context.Background(), rig.DB, runnertest.Tenant, sid)
	if err != nil || len(hs) != 1 || hs[0].TargetEngineID != "exploration" || hs[0].TargetSessionID != TargetSessionID(hs[0].ID) {
		t.Fatalf("handoffs = %+v, %v", hs, err)
	}
	var payload contracts.EngineHandoff
	if err := json.Unmarshal(hs[0].Payload, &payload); err != nil || !handoff.Validate(payload).Valid ||
		payload.Metadata.SessionID != sid || payload.Metadata.TurnCount != 2 {
		t.Errorf("stored payload = %+v, %v", payload.Metadata, err)
	}
	_ = reg
}

// The whole path of a handoff through the service over JetStream: the
// source turn writes and publishes it, the consumer starts the target
// session with the handoff in its memory (and its session.started), the
// target's first reply is checked (I-PASS) and the verdict stored; a reply
// that ignores the handoff is stored unverified, counted and logged, and
// the conversation goes on. A replay of the target session from its events
// rebuilds its state.
func TestHandoffStartsTheTargetAndVerifiesItsFirstReply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verified bool
	}{{"acknowledged", true}, {"ignored", false}} {
		t.Run(tc.name, func(t *testing.T) {
			rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"handing.yaml": handoffEngine}})
			l := replies(func(req llm.Request) string {
				sys := req.Messages[0].Content
				if strings.Contains(sys, handoff.Title) && tc.verified {
					return "Picking up from the handing engine: your goal is a booking app and the budget of $5k is noted. What options have you heard of?"
				}
				return "What options have you heard of?"
			})
			s, sid, target := askForTheHandoff(t, rig, l, "hand-2", "t1", t0.Add(time.Minute))
			runnertest.WaitFor(t, 30*time.Second, "the target session", func() bool {
				_, err := conversation.GetSession(context.Background(), rig.DB, runnertest.Tenant, target)
				return err == nil
			})
			tsess, tm := rig.Session(t, target)
			var in contracts.EngineHandoff
			if tsess.EngineID != "exploration" || tsess.InboundHandoffID == "" || json.Unmarshal(tm.InboundHandoff, &in) != nil ||
				in.Metadata.SessionID != sid {
				t.Fatalf("target session %+v with handoff %s", tsess, tm.InboundHandoff)
			}
			rig.Publish(t, "t2", t0.Add(2*time.Minute), runnertest.Turn(target, 1, "Yes, let's look at the options.", nil))
			var h conversation.Handoff
			runnertest.WaitFor(t, 30*time.Second, "the verification", func() bool {
				h, _ = conversation.GetHandoff(context.Background(), rig.DB, runnertest.Tenant, tsess.InboundHandoffID)
				return len(h.Verification) > 0
			})
			var v handoff.Verification
			if err := json.Unmarshal(h.Verification, &v); err != nil || h.Verified != tc.verified || v.Verified != tc.verified ||
				!v.Details.IdentityMatch || !v.Details.ProjectMatch {
				t.Fatalf("verified %t, result %s (%v); want %t", h.Verified, h.Verification, err, tc.verified)
			}
			result := "verified"
			if !tc.verified {
				result = "unverified"
				if !strings.Contains(rig.Logs(), "handoff not verified") {
					t.Error("an unverified handoff is not logged")
				}
			}
			if got := testutil.ToFloat64(s.m.verifications.WithLabelValues(result)); got != 1 {
				t.Errorf("%s verifications = %v", result, got)
			}
			// The conversation went on: the turn was answered either way.
			if _, m := rig.Session(t, target); m.TurnNumber != 1 {
				t.Errorf("the target's turn was not answered: turn %d", m.TurnNumber)
			}

			// praetor replay --session rebuilds the target from its events.
			runnertest.WaitFor(t, 10*time.Second, "the turn.responded", func() bool {
				evs := rig.SessionEvents(t, target)
				return slices.ContainsFunc(evs, func(e event.Event) bool { return e.Type() == contracts.TurnRespondedSpec.Type })
			})
			replayRunner, err := New(Config{LLM: l, Registry: rig.Registry, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Replay(context.Background(), replayRunner, rig.Engines, rig.SessionEvents(t, target))
			if err != nil {
				t.Fatal(err)
			}
			live, _ := rig.Session(t, target)
			if res.Diverged || res.StateHash != live.StateHash || len(res.State.InboundHandoff) == 0 {
				t.Errorf("replay: diverged %t, hash %s, live %s", res.Diverged, res.StateHash, live.StateHash)
			}
		})
	}
}

// A retry comes back as a new dispatch not before its backoff; a stale
// outcome (an attempt a retry replaced) is ignored.
func TestFailedTaskIsRetriedWithBackoff(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	s, _ := newService(t, rig, fixed("Anything else?"), nil)
	def, _ := rig.Engines.Get("project-discovery")
	m := engine.NewWorkingMemory(def, "retry-1", "proj")
	task, _ := tasks.Lookup(def, "competitive_scan")
	tasks.Dispatch(m, []engine.BackgroundTask{task})
	rig.SaveNew(t, def, m)
	h := s.redoStale(s.inbox.Handler(s.work))
	failed := t0.Add(time.Minute)
	fail := func(id string, attempt int) {
		t.Helper()
		ev := runnertest.Event(t, id, failed, contracts.TaskReturned{TenantID: runnertest.Tenant, SessionID: "retry-1",
			TaskID: "competitive_scan", Attempt: attempt, Error: "search API timed out", ReturnedAt: failed})
		if err := h(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	fail("f1", 1)
	_, m = rig.Session(t, "retry-1")
	r, _ := m.BackgroundTasks.Task("competitive_scan")
	if r.Status != engine.TaskRetrying || r.Attempt != 2 || !r.NotBefore.Equal(failed.Add(5*time.Second)) {
		t.Fatalf("after a failure: %+v", r)
	}
	fail("f1-again", 1) // attempt 1 again: replaced by attempt 2, ignored
	if _, m2 := rig.Session(t, "retry-1"); !slices.EqualFunc(m2.BackgroundTasks.Pending, m.BackgroundTasks.Pending,
		func(a, b engine.TaskRecord) bool { return a.Attempt == b.Attempt && a.Status == b.Status }) {
		t.Errorf("a stale outcome changed the task: %+v", m2.BackgroundTasks.Pending)
	}
	// The outbox holds the second attempt's dispatch, not before 5s.
	var dispatch contracts.TaskDispatched
	runnertest.WaitFor(t, 10*time.Second, "the retry's dispatch", func() bool {
		for _, ev := range rig.Events(t, contracts.StreamTasks, contracts.TaskDispatchedSpec.Type) {
			if ev.ID() == DispatchEventID("retry-1", "competitive_scan", 2) {
				d, _ := contracts.DecodeAs[contracts.TaskDispatched](ev)
				dispatch = *d
				return true
			}
		}
		return false
	})
	if dispatch.Attempt != 2 || !dispatch.NotBefore.Equal(failed.Add(5*time.Second)) || dispatch.Kind != TaskKind ||
		dispatch.Handler != "research.competitors" || dispatch.Timeout != 90*time.Second {
		t.Errorf("retry dispatch = %+v", dispatch)
	}
	var in tasks.Input
	if err := json.Unmarshal(dispatch.Input, &in); err != nil || in.TaskID != "competitive_scan" || in.DisplayName != "Competitive scan" {
		t.Errorf("dispatch input = %s (%v)", dispatch.Input, err)
	}
}

// intelligence is a memory service stand-in.
type intelligence struct {
	mu    sync.Mutex
	lines []string
	err   error
	asked int
}

func (i *intelligence) Background(_ context.Context, tenantID, projectID string) ([]string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.asked++
	if tenantID != runnertest.Tenant || projectID != "proj" {
		return nil, errors.New("wrong scope")
	}
	return slices.Clone(i.lines), i.err
}

// Background intelligence from the memory service is merged into the
// session after the turn that asked for it, in the session's order (so a
// replay meets it there), and shows in the next turns' background section;
// a failing memory service is logged and the turns go on.
func TestIntelligenceJoinsTheBackgroundSection(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	var mu sync.Mutex
	var prompts []string
	l := replies(func(req llm.Request) string {
		mu.Lock()
		prompts = append(prompts, req.Messages[0].Content)
		mu.Unlock()
		return "What else?"
	})
	intel := &intelligence{lines: []string{"Decision (project proj): bookings must sync with Google Calendar"}}
	// Read at every turn (no TTL), so the memory service's failure shows at
	// the third.
	s, _ := newService(t, rig, l, func(c *Config) { c.Intelligence, c.IntelligenceTTL = intel, -1 })
	start(t, s)
	sid := rig.CreateSession(t, "exploration", "intel-1")
	say := func(n int) *engine.WorkingMemory {
		t.Helper()
		rig.Publish(t, runnertest.TurnID(sid, n), t0.Add(time.Duration(n)*time.Minute), runnertest.Turn(sid, n, "Tell me more.", nil))
		var m *engine.WorkingMemory
		runnertest.WaitFor(t, 20*time.Second, "the turn", func() bool {
			_, m = rig.Session(t, sid)
			return m.TurnNumber == n
		})
		return m
	}
	say(1)
	runnertest.WaitFor(t, 20*time.Second, "the intelligence merged", func() bool {
		_, m := rig.Session(t, sid)
		return len(m.BackgroundTasks.Intelligence) == 1
	})
	say(2)
	mu.Lock()
	first, second := prompts[0], prompts[1]
	mu.Unlock()
	const line = "- Decision (project proj): bookings must sync with Google Calendar"
	if strings.Contains(first, line) || !strings.Contains(second, line) {
		t.Errorf("the line should join the context from the turn after it was fetched:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
	// Unchanged lines are not merged again: turn 2 would have published
	// their task.returned with its reply.
	rig.Drained(t)
	if n := len(rig.Events(t, contracts.StreamTurns, contracts.TaskReturnedSpec.Type)); n != 1 {
		t.Errorf("%d intelligence merges, want 1", n)
	}
	intel.mu.Lock()
	intel.err = errors.New("memory service down")
	intel.mu.Unlock()
	if m := say(3); len(m.BackgroundTasks.Intelligence) != 1 {
		t.Errorf("a failing memory service changed the session: %v", m.BackgroundTasks.Intelligence)
	}
	if !strings.Contains(rig.Logs(), "background intelligence unavailable") {
		t.Error("the memory service's failure is not logged")
	}
	// The replay meets the intelligence where the live run did.
	runnertest.WaitFor(t, 10*time.Second, "three replies", func() bool {
		n := 0
		for _, ev := range rig.SessionEvents(t, sid) {
			if ev.Type() == contracts.TurnRespondedSpec.Type {
				n++
			}
		}
		return n == 3
	})
	r, _ := New(Config{LLM: l, Registry: rig.Registry, Logger: slog.New(slog.DiscardHandler)})
	res, err := Replay(context.Background(), r, rig.Engines, rig.SessionEvents(t, sid))
	if err != nil {
		t.Fatal(err)
	}
	if live, _ := rig.Session(t, sid); res.Diverged || res.StateHash != live.StateHash {
		t.Errorf("replay: diverged %v, hash %s, live %s", res.Diverged, res.StateHash, live.StateHash)
	}
}

// A turn the runner never got (dead-lettered: its retries ran out, say)
// does not stop its session: the extractor numbered the later turns after
// it, and the runner answers them, with a warning, rather than wait for a
// turn that will not come. A message over the runner's limit is cut to it
// and answered (degraded), not refused. Found by helper-50's review: both
// used to dead-letter every later turn of the session.
func TestSessionGoesOnAfterATurnItNeverGot(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	s, _ := newService(t, rig, fixed("Which options have you looked at?"), func(c *Config) { c.MaxMessageBytes = 1 << 10 })
	sid := pendingSession(t, rig, "gap-1")
	h := s.redoStale(s.inbox.Handler(s.work))
	say := func(n int, msg string) {
		t.Helper()
		at := t0.Add(time.Duration(n) * time.Minute)
		if err := conversation.CreateTurn(context.Background(), rig.DB, conversation.Turn{ID: runnertest.TurnID(sid, n),
			TenantID: runnertest.Tenant, SessionID: sid, Message: msg, ReceivedAt: at}); err != nil {
			t.Fatal(err)
		}
		ev := runnertest.Event(t, runnertest.TurnID(sid, n), at, runnertest.Turn(sid, n, msg, nil))
		if err := h(context.Background(), ev); err != nil {
			t.Fatalf("turn %d: %v (permanent: %t)", n, err, events.IsPermanent(err))
		}
	}
	say(1, strings.Repeat("We looked at two vendors last week. ", 100)) // 3.6 kB
	turn, err := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, 1))
	if err != nil || !turn.Answered() || !turn.Degraded {
		t.Fatalf("the long message's turn = %+v (%v), want answered, degraded", turn, err)
	}
	_, m := rig.Session(t, sid)
	if got := m.History[len(m.History)-2].Content; len(got) > 1<<10 || !strings.HasPrefix(strings.Repeat("We looked at two vendors last week. ", 100), got) {
		t.Errorf("the long message went into the history as %d bytes, want its first 1 kB at most", len(got))
	}

	// Turn 2 never comes.
	say(3, "We want it live before the summer.")
	_, m = rig.Session(t, sid)
	if m.TurnNumber != 3 || m.History[len(m.History)-2].Content != "We want it live before the summer." {
		t.Fatalf("state at turn %d, last message %q; want turn 3 answered", m.TurnNumber, m.History[len(m.History)-2].Content)
	}
	if !strings.Contains(rig.Logs(), "never reached the runner") {
		t.Error("the missing turn is not logged")
	}
	say(4, "The budget is about $5k.")
	if _, m = rig.Session(t, sid); m.TurnNumber != 4 {
		t.Errorf("state at turn %d, want 4", m.TurnNumber)
	}
}

// A replay leaves out the turns the live run went on without, as their
// turn.responded recorded (SkippedTurns), and so rebuilds the live state:
// whether the skipped turn was one the runner refused (here an empty
// message) or an ordinary one whose deliveries ran out. Found by helper-51.
func TestReplayLeavesOutTheTurnsLiveSkipped(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	l := fixed("What else?")
	s, _ := newService(t, rig, l, nil)
	start(t, s)
	sid := rig.CreateSession(t, "exploration", "gap-replay-1")
	say := func(n int, msg string) {
		rig.Publish(t, runnertest.TurnID(sid, n), t0.Add(time.Duration(n)*time.Minute), runnertest.Turn(sid, n, msg, nil))
	}
	say(1, "Tell me more.")
	runnertest.WaitFor(t, 20*time.Second, "turn 1", func() bool { _, m := rig.Session(t, sid); return m.TurnNumber == 1 })
	say(2, "   ") // refused by the runner for good: dead-lettered
	say(3, "We want it live before the summer.")
	runnertest.WaitFor(t, 20*time.Second, "turn 3", func() bool { _, m := rig.Session(t, sid); return m.TurnNumber == 3 })
	var replies []contracts.TurnResponded
	runnertest.WaitFor(t, 10*time.Second, "two replies", func() bool {
		replies = nil
		for _, ev := range rig.SessionEvents(t, sid) {
			if ev.Type() == contracts.TurnRespondedSpec.Type {
				tr, _ := contracts.DecodeAs[contracts.TurnResponded](ev)
				replies = append(replies, *tr)
			}
		}
		return len(replies) == 2
	})
	if !slices.Equal(replies[1].SkippedTurns, []int{2}) {
		t.Errorf("turn 3's reply records skipped turns %v, want [2]", replies[1].SkippedTurns)
	}
	live, _ := rig.Session(t, sid)
	evs := rig.SessionEvents(t, sid)
	r, err := New(Config{LLM: l, Registry: rig.Registry, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, evs []event.Event) {
		t.Helper()
		res, err := Replay(context.Background(), r, rig.Engines, evs)
		if err != nil {
			t.Fatalf("%s: replay: %v", name, err)
		}
		if res.Diverged || res.StateHash != live.StateHash || len(res.Turns) != 2 {
			t.Errorf("%s: replay diverged %t, %d turns, hash %s; live %s", name, res.Diverged, len(res.Turns), res.StateHash, live.StateHash)
		}
	}
	check("a refused turn", evs)
	var timedOut []event.Event // turn 2 an ordinary message whose deliveries ran out
	for _, ev := range evs {
		if ev.ID() == runnertest.TurnID(sid, 2) {
			ev = runnertest.Event(t, ev.ID(), ev.Time(), runnertest.Turn(sid, 2, "Some ordinary words.", nil))
		}
		timedOut = append(timedOut, ev)
	}
	check("a turn whose deliveries ran out", timedOut)
	// A turn missing from the events, not skipped live, is still an error.
	var missing []event.Event
	for _, ev := range evs {
		if ev.ID() != runnertest.TurnID(sid, 1) {
			missing = append(missing, ev)
		}
	}
	if _, err := Replay(context.Background(), r, rig.Engines, missing); !errors.Is(err, ErrTurnGap) {
		t.Errorf("replay without turn 1: %v, want ErrTurnGap", err)
	}
}

// A turn the session went on without, redriven from the dead-letter
// stream, is answered as set aside (degraded, the state unchanged) rather
// than acknowledged as a duplicate and left pending for ever; a turn
// answered before is left alone. Found by helper-51.
func TestSkippedTurnRedrivenIsAnsweredAsSetAside(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	s, _ := newService(t, rig, fixed("Which options?"), nil)
	sid := pendingSession(t, rig, "set-aside-1")
	h := s.redoStale(s.inbox.Handler(s.work))
	deliver := func(n int, msg string, create bool) {
		t.Helper()
		at := t0.Add(time.Duration(n) * time.Minute)
		if create {
			if err := conversation.CreateTurn(context.Background(), rig.DB, conversation.Turn{ID: runnertest.TurnID(sid, n),
				TenantID: runnertest.Tenant, SessionID: sid, Message: msg, ReceivedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		if err := h(context.Background(), runnertest.Event(t, runnertest.TurnID(sid, n), at, runnertest.Turn(sid, n, msg, nil))); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
	}
	deliver(1, "one", true)
	if err := conversation.CreateTurn(context.Background(), rig.DB, conversation.Turn{ID: runnertest.TurnID(sid, 2),
		TenantID: runnertest.Tenant, SessionID: sid, Message: "two", ReceivedAt: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	deliver(3, "three", true) // turn 2 was dead-lettered
	before, _ := rig.Session(t, sid)
	first, _ := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, 1))

	deliver(2, "two", false) // redriven
	turn, err := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, 2))
	if err != nil || !turn.Answered() || !turn.Degraded || turn.Reply != setAsideReply || turn.TurnNumber != 2 {
		t.Fatalf("the redriven turn 2 = %+v (%v), want answered as set aside", turn, err)
	}
	// Answered now, after turn 3: a stream resumed after turn 3 sends it.
	if third, _ := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, 3)); !turn.RespondedAt.After(*third.RespondedAt) {
		t.Errorf("the set-aside turn 2 answered at %v, not after turn 3 (%v)", turn.RespondedAt, third.RespondedAt)
	}
	if after, _ := rig.Session(t, sid); after.StateHash != before.StateHash || after.Version != before.Version {
		t.Errorf("answering the set-aside turn changed the session (version %d → %d)", before.Version, after.Version)
	}
	// A copy of turn 1, answered before, under another event id (the inbox
	// does not know it): its reply is left alone.
	copyOf1 := runnertest.Event(t, "copy-of-turn-1", t0.Add(time.Minute), runnertest.Turn(sid, 1, "one", nil))
	if err := h(context.Background(), copyOf1); err != nil {
		t.Fatalf("a copy of turn 1: %v", err)
	}
	if again, _ := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, 1)); again.Reply != first.Reply || again.Degraded {
		t.Errorf("turn 1 answered again: %q", again.Reply)
	}
}

// A message the gateway took while the session was still active, but that
// reaches the runner after the turn that handed off (the user sent two
// quickly), is not answered by the engine the conversation left: the
// session stays as the handoff left it, and the turn is answered at once
// with where to send the message, so no client waits for it and the user
// knows it went nowhere. So is a second one (the user sent three), which
// comes with turns missing between the state and it. A replay skips them as
// the live run did.
func TestTurnAfterTheHandoffIsAnsweredWithWhereToGo(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"handing.yaml": handoffEngine}})
	s, _ := newService(t, rig, fixed("What is your budget?"), func(c *Config) { c.Mappers = handingMappers(t) })
	sid := rig.CreateSession(t, "handing", "hand-late")
	h := s.redoStale(s.inbox.Handler(s.work))
	msgs := []string{"Our goal is a booking app; the budget is $5k. Can we explore options?", "Also, it must work in Spanish.",
		"And it should send reminders."}
	for n, msg := range msgs {
		if err := conversation.CreateTurn(context.Background(), rig.DB, conversation.Turn{ID: runnertest.TurnID(sid, n+1),
			TenantID: runnertest.Tenant, SessionID: sid, Message: msg, ReceivedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	deliver := func(n int, fields map[string]any) {
		t.Helper()
		id, at, te := runnertest.TurnID(sid, n), t0.Add(time.Duration(n)*time.Minute), runnertest.Turn(sid, n, msgs[n-1], fields)
		if err := h(context.Background(), runnertest.Event(t, id, at, te)); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		rig.Publish(t, id, at, te) // for the replay (the service is not started)
	}
	deliver(1, map[string]any{"basics.goal": "a booking app", "basics.budget": "$5k"})
	before, _ := rig.Session(t, sid)
	if before.Status != conversation.StatusHandedOff {
		t.Fatalf("status = %s after the turn that hands off", before.Status)
	}
	deliver(2, nil)
	deliver(3, nil)

	after, m := rig.Session(t, sid)
	if after.StateHash != before.StateHash || m.TurnNumber != 1 || after.Status != conversation.StatusHandedOff {
		t.Errorf("the engine the conversation left took the message: turn %d, status %s", m.TurnNumber, after.Status)
	}
	target := TargetSessionID(HandoffID(runnertest.TurnID(sid, 1)))
	for n := 2; n <= 3; n++ {
		turn, err := conversation.GetTurn(context.Background(), rig.DB, runnertest.Tenant, runnertest.TurnID(sid, n))
		if err != nil || !turn.Answered() || !turn.Degraded || turn.TurnNumber != n ||
			!strings.Contains(turn.Reply, "Solution Exploration") || strings.Contains(turn.Reply, "budget") {
			t.Fatalf("turn %d = %+v (%v), want answered with where the conversation went", n, turn, err)
		}
	}
	if hs, _ := conversation.ListHandoffs(context.Background(), rig.DB, runnertest.Tenant, sid); len(hs) != 1 {
		t.Errorf("handoffs = %d, want 1", len(hs))
	}
	responded := rig.Events(t, contracts.StreamTurns, contracts.TurnRespondedSpec.Type)
	var late *contracts.TurnResponded
	for _, ev := range responded {
		if tr, err := contracts.DecodeAs[contracts.TurnResponded](ev); err == nil && tr.TurnID == runnertest.TurnID(sid, 2) {
			late = tr
		}
	}
	if late == nil || !late.Degraded || !strings.Contains(late.DegradedReason, target) {
		t.Errorf("turn.responded of turn 2 = %+v", late)
	}

	res, err := Replay(context.Background(), s.runner, rig.Engines, rig.SessionEvents(t, sid))
	if err != nil {
		t.Fatal(err)
	}
	if res.Diverged || res.StateHash != after.StateHash || len(res.Turns) != 1 {
		t.Errorf("replay: diverged %t, %d turns, hash %s, live %s", res.Diverged, len(res.Turns), res.StateHash, after.StateHash)
	}
}

// Research the source session dispatched on the turn that handed off comes
// back after the handoff: the source records it, and the session the
// conversation went on in gets it too, in its own order, before its first
// turn reads its context; both sessions replay from their events to their
// stored states.
func TestResearchAfterTheHandoffReachesTheTarget(t *testing.T) {
	engineYAML := strings.Replace(handoffEngine, "exit_transitions:", `background_tasks:
  - task_id: budget_research
    display_name: Budget research
    trigger: {type: custom, evaluator: always}
    handler: research.solution_landscape
    estimated_duration: 30s
    failure_strategy: {type: retry, max_retries: 2}
exit_transitions:`, 1)
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"handing.yaml": engineYAML},
		Evaluators: map[string]engine.Evaluator{"always": func(*engine.WorkingMemory) float64 { return 1 }}})
	var mu sync.Mutex
	var prompts []string
	l := replies(func(req llm.Request) string {
		mu.Lock()
		prompts = append(prompts, req.Messages[0].Content)
		mu.Unlock()
		return "What options have you heard of?"
	})
	// The turn is dated now: the research it dispatches is answered
	// before the attempt's deadline, which counts from the turn.
	now := time.Now()
	s, sid, target := askForTheHandoff(t, rig, l, "hand-research", "hr-1", now)
	runnertest.WaitFor(t, 30*time.Second, "the handoff", func() bool {
		sess, m := rig.Session(t, sid)
		return sess.Status == conversation.StatusHandedOff && m.BackgroundTasks.IsPending("budget_research")
	})
	rig.Publish(t, "hr-done", now.Add(time.Second), contracts.TaskCompleted{TenantID: runnertest.Tenant, TaskID: "budget_research",
		Kind: TaskKind, OwnerID: sid, Attempt: 1, Output: json.RawMessage(`{"summary":"booking apps cost $2k-$8k","findings":[]}`)})
	runnertest.WaitFor(t, 30*time.Second, "the research in the target session", func() bool {
		if _, err := conversation.GetSession(context.Background(), rig.DB, runnertest.Tenant, target); err != nil {
			return false
		}
		_, m := rig.Session(t, target)
		r, _ := m.BackgroundTasks.Task("budget_research")
		return r.Status == engine.TaskCompleted
	})
	if _, m := rig.Session(t, sid); len(m.BackgroundTasks.Completed) != 1 || m.BackgroundTasks.Completed[0].Status != engine.TaskCompleted {
		t.Errorf("source tasks: %+v", m.BackgroundTasks)
	}
	rig.Publish(t, "hr-2", now.Add(2*time.Second), runnertest.Turn(target, 1, "Yes, let's look at the options.", nil))
	runnertest.WaitFor(t, 30*time.Second, "the target's first turn", func() bool {
		_, m := rig.Session(t, target)
		return m.TurnNumber == 1
	})
	mu.Lock()
	last := prompts[len(prompts)-1]
	mu.Unlock()
	if !strings.Contains(last, "booking apps cost $2k-$8k") {
		t.Errorf("the target's context lacks the research:\n%s", last)
	}
	rig.Drained(t) // the merges' task.merged and the target's turn.responded
	for _, id := range []string{sid, target} {
		res, err := Replay(context.Background(), s.runner, rig.Engines, rig.SessionEvents(t, id))
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range res.Turns {
			if rt.RecordedHash == "" {
				t.Errorf("replay of %s: step %s has no recorded state to compare with", id, rt.TurnID)
			}
		}
		live, _ := rig.Session(t, id)
		if res.Diverged || res.StateHash != live.StateHash {
			t.Errorf("replay of %s: diverged %t, hash %s, live %s", id, res.Diverged, res.StateHash, live.StateHash)
		}
	}
	// A result forwarded before the handoff's target session is started
	// waits for it (a retryable error keeps its place in the order) instead
	// of being dead-lettered.
	early := runnertest.Event(t, "hr-early", t0, contracts.TaskReturned{TenantID: runnertest.Tenant, SessionID: "not-started-yet",
		TaskID: "budget_research", Attempt: 1, Completed: true, Output: json.RawMessage(`{}`), ReturnedAt: t0, FromSessionID: sid})
	if err := s.inbox.Handler(s.work)(context.Background(), early); err == nil || events.IsPermanent(err) {
		t.Errorf("a result forwarded to a session not started yet: %v, want a retryable error", err)
	}
}

// A background task nobody answers (no worker runs) is given up on without
// waiting for the user's next turn: twice its timeout after each attempt
// could start, the runner fails the attempt and the task's strategy goes
// on: here one more attempt, then the gap, which settles the task. Two
// runner replicas watch the attempts; each attempt is dispatched and given
// up on once, and a replay of the session folds the same.
func TestUnansweredTaskIsGivenUpWithoutATurn(t *testing.T) {
	for _, tc := range []struct{ name, strategy, waiting string }{
		{"retry", "{type: retry, max_retries: 1, retry_delay: 1s}", engine.TaskRetrying},
		{"stall", "{type: stall, max_retries: 1, retry_delay: 1s}", engine.TaskStalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engineYAML := strings.Replace(handoffEngine, "exit_transitions:", `background_tasks:
  - task_id: budget_research
    display_name: Budget research
    trigger: {type: custom, evaluator: always}
    handler: research.solution_landscape
    estimated_duration: 1s
    failure_strategy: `+tc.strategy+`
    block_phase_transition: true
exit_transitions:`, 1)
			rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"handing.yaml": engineYAML},
				Evaluators: map[string]engine.Evaluator{"always": func(*engine.WorkingMemory) float64 { return 1 }}})
			var replicas []*Service
			for range 2 {
				s, _ := newService(t, rig, fixed("What is your budget?"), func(c *Config) { c.TaskTimeoutFactor = 1 })
				start(t, s)
				replicas = append(replicas, s)
			}
			sid := rig.CreateSession(t, "handing", "unanswered-"+tc.name)
			rig.Publish(t, "u1-"+tc.name, time.Now(), runnertest.Turn(sid, 1, "Our goal is a booking app.",
				map[string]any{"basics.goal": "a booking app"}))
			runnertest.WaitFor(t, 30*time.Second, "the task given up on", func() bool {
				_, m := rig.Session(t, sid)
				r, _ := m.BackgroundTasks.Task("budget_research")
				return r.Status == engine.TaskGap && !m.BackgroundTasks.IsPending("budget_research")
			})
			_, m := rig.Session(t, sid)
			if r, _ := m.BackgroundTasks.Task("budget_research"); r.Attempt != 2 || !strings.Contains(r.Error, "no answer") || m.TurnNumber != 1 {
				t.Errorf("record %+v at turn %d", r, m.TurnNumber)
			}
			// The state commits before its events are published: wait for
			// the second merge to reach the stream.
			var statuses []string
			merges := func() bool {
				statuses = nil
				for _, ev := range rig.SessionEvents(t, sid) {
					if tm, err := contracts.DecodeAs[contracts.TaskMerged](ev); err == nil && ev.Type() == contracts.TaskMergedSpec.Type {
						statuses = append(statuses, tm.Status)
					}
				}
				return len(statuses) >= 2
			}
			runnertest.WaitFor(t, 30*time.Second, "both merges published", merges)
			if want := []string{tc.waiting, contracts.TaskStatusGap}; !slices.Equal(statuses, want) {
				t.Errorf("merges = %v, want %v", statuses, want)
			}
			attempts := map[int]int{}
			for _, ev := range rig.Events(t, contracts.StreamTasks, contracts.TaskDispatchedSpec.Type) {
				if td, err := contracts.DecodeAs[contracts.TaskDispatched](ev); err == nil && td.OwnerID == sid {
					attempts[td.Attempt]++
				}
			}
			if len(attempts) != 2 || attempts[1] != 1 || attempts[2] != 1 {
				t.Errorf("dispatches by attempt = %v, want one each of attempts 1 and 2", attempts)
			}
			res, err := Replay(context.Background(), replicas[0].runner, rig.Engines, rig.SessionEvents(t, sid))
			if err != nil {
				t.Fatal(err)
			}
			live, _ := rig.Session(t, sid)
			if res.Diverged || res.StateHash != live.StateHash {
				t.Errorf("replay: diverged %t, hash %s, live %s", res.Diverged, res.StateHash, live.StateHash)
			}
		})
	}
}

// An attempt the runner gave up on as overdue, with a gap, can still
// answer (a worker took it late): the result closes the gap. The attempt
// is then merged twice, the failure and the result, each with its
// task.merged; a replay compares each merge with its own record, and
// finds the live run.
func TestReplayOfAGapClosedByALateAnswer(t *testing.T) {
	engineYAML := strings.Replace(handoffEngine, "exit_transitions:", `background_tasks:
  - task_id: budget_research
    display_name: Budget research
    trigger: {type: custom, evaluator: always}
    handler: research.solution_landscape
    estimated_duration: 1s
    failure_strategy: {type: proceed-with-gap}
exit_transitions:`, 1)
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"handing.yaml": engineYAML},
		Evaluators: map[string]engine.Evaluator{"always": func(*engine.WorkingMemory) float64 { return 1 }}})
	s, _ := newService(t, rig, fixed("What is your budget?"), func(c *Config) { c.TaskTimeoutFactor = 1 })
	start(t, s)
	sid := rig.CreateSession(t, "handing", "late-answer")
	rig.Publish(t, "la-1", time.Now(), runnertest.Turn(sid, 1, "Our goal is a booking app.",
		map[string]any{"basics.goal": "a booking app"}))
	runnertest.WaitFor(t, 30*time.Second, "the task given up on", func() bool {
		_, m := rig.Session(t, sid)
		r, _ := m.BackgroundTasks.Task("budget_research")
		return r.Status == engine.TaskGap
	})
	rig.Publish(t, "la-done", time.Now(), contracts.TaskCompleted{TenantID: runnertest.Tenant, TaskID: "budget_research",
		Kind: TaskKind, OwnerID: sid, Attempt: 1, Output: json.RawMessage(`{"summary":"booking apps cost $2k-$8k","findings":[]}`)})
	runnertest.WaitFor(t, 30*time.Second, "the late result", func() bool {
		_, m := rig.Session(t, sid)
		r, _ := m.BackgroundTasks.Task("budget_research")
		return r.Status == engine.TaskCompleted
	})
	rig.Drained(t) // the late result's task.merged
	res, err := Replay(context.Background(), s.runner, rig.Engines, rig.SessionEvents(t, sid))
	if err != nil {
		t.Fatal(err)
	}
	live, _ := rig.Session(t, sid)
	var merges int
	for _, rt := range res.Turns {
		if rt.TaskID != "" {
			merges++
			if rt.RecordedHash == "" {
				t.Errorf("merge %s has no task.merged to compare with", rt.TurnID)
			}
			if !rt.Match {
				t.Errorf("merge %s: replayed %s, recorded %s", rt.TurnID, rt.StateHash, rt.RecordedHash)
			}
		}
	}
	if merges != 2 || res.Diverged || res.StateHash != live.StateHash {
		t.Errorf("replay: %d merges, diverged %t, hash %s, live %s", merges, res.Diverged, res.StateHash, live.StateHash)
	}
}

// askForTheHandoff starts a service of the handing engine with l, creates
// a session of project, and publishes its first turn (event id, at at),
// which asks for the handoff; it returns the service, the session and the
// handoff's target session.
func askForTheHandoff(t *testing.T, rig *runnertest.Rig, l llm.Client, project, id string, at time.Time) (s *Service, sid, target string) {
	t.Helper()
	s, _ = newService(t, rig, l, func(c *Config) { c.Mappers = handingMappers(t) })
	start(t, s)
	sid = rig.CreateSession(t, "handing", project)
	rig.Publish(t, id, at, runnertest.Turn(sid, 1, "Our goal is a booking app; the budget is $5k. Can we explore options?",
		map[string]any{"basics.goal": "a booking app", "basics.budget": "$5k"}))
	return s, sid, TargetSessionID(HandoffID(runnertest.TurnID(sid, 1)))
}
