package background_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/background"
	"github.com/praetorhq/praetor/services/runner"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

var t0 = time.Now().UTC().Truncate(time.Second)

// chat is the runner's model: it records the system prompts it is given
// and answers with a question.
type chat struct {
	mu      sync.Mutex
	prompts []string
}

func (c *chat) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	c.mu.Lock()
	c.prompts = append(c.prompts, req.Messages[0].Content)
	c.mu.Unlock()
	return &llm.Response{Content: "What else should I know?", Provider: "fake"}, nil
}

func (c *chat) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prompts[len(c.prompts)-1]
}

// taskEngine is an engine with one background task, "probe", run by
// handler with the failure strategy (YAML flow map) and block flag given.
// Its phase START moves to END once the goal is known; the task is
// dispatched on the first turn.
func taskEngine(handler, strategy string, block bool, duration string) string {
	return fmt.Sprintf(`
engine_id: tasking
name: Tasking Engine
description: An engine with a background task.
version: 1.0.0
engine_type: extract-dominant
initial_phase: START
phases:
  - id: START
    display_name: Start
    order: 1
    next_phase: END
    transition_triggers:
      - {type: obligation_satisfaction, category: basics, min_satisfaction_rate: 0.5}
    mode_blend: {extract: 70, validate: 30}
    active_techniques: [open_ended_questions]
    agent_instructions: Ask about the goal.
  - id: END
    display_name: End
    order: 2
    mode_blend: {validate: 100}
    agent_instructions: Confirm.
obligations:
  - {id: goal_known, category: basics, description: The goal is known, required: true, fields: [basics.goal]}
  - {id: name_known, category: basics, description: The name is known, fields: [basics.name]}
completeness_model:
  type: obligation
  ready_threshold: 0.7
  heuristics:
    - {id: basics, weight: 1.0, category: basics}
background_tasks:
  - task_id: probe
    display_name: Market probe
    description: Probe the market.
    trigger: {type: custom, evaluator: always, min_turn: 1}
    handler: %s
    estimated_duration: %s
    failure_strategy: %s
    block_phase_transition: %t
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
system_prompt_template: "You are {{.EngineName}}."
extraction_schema:
  fields:
    - {path: basics.goal, display_name: Goal, description: What the user wants, value_type: string, required: true}
    - {path: basics.name, display_name: Name, description: The name, value_type: string}
`, handler, duration, strategy, block)
}

// bench is a runner service and a background service on a test bench, for
// one session of the tasking engine.
type bench struct {
	*runnertest.Rig
	chat    *chat
	session string
	turns   int
}

const testHandler = "test.probe"

// taskRig is a rig whose one engine, tasking, dispatches the test's task on
// the first turn with strategy.
func taskRig(t *testing.T, strategy string, block bool, duration string) *runnertest.Rig {
	t.Helper()
	return runnertest.New(t, runnertest.Options{
		Engines:      map[string]string{"tasking.yaml": taskEngine(testHandler, strategy, block, duration)},
		TaskHandlers: []string{testHandler},
		Evaluators:   map[string]engine.Evaluator{"always": func(*engine.WorkingMemory) float64 { return 1 }},
	})
}

func newBench(t *testing.T, strategy string, block bool, duration string, fn background.Handler) *bench {
	t.Helper()
	rig := taskRig(t, strategy, block, duration)
	b := &bench{Rig: rig, chat: &chat{}}
	r, err := runner.New(runner.Config{LLM: b.chat, Registry: rig.Registry, Logger: rig.Logger, TaskTimeoutFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runner.NewService(runner.ServiceConfig{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Engines: rig.Engines,
		Runner: r, Logger: rig.Logger, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	startService(t, rs)
	b.worker(t, rig.Bus, fn)
	b.session = rig.CreateSession(t, "tasking", "sess-1")
	return b
}

type service interface {
	Start(context.Context) error
	Stop(context.Context) error
}

func startService(t *testing.T, s service) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
}

// worker starts a background service running fn as the test handler.
func (b *bench) worker(t *testing.T, bus background.Subscriber, fn background.Handler) *prometheus.Registry {
	t.Helper()
	h := background.NewHandlers()
	if err := h.Register(testHandler, "the test's handler", fn); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := background.New(background.Config{DB: b.DB, Bus: bus, Relay: b.Relay, Handlers: h, Logger: b.Logger,
		AckWait: time.Second, Concurrency: 2, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	startService(t, s)
	return reg
}

// say sends the session's next turn (the goal extracted when goal is set)
// and waits until the runner answered it.
func (b *bench) say(t *testing.T, msg string, goal bool) *engine.WorkingMemory {
	t.Helper()
	return b.sayAt(t, msg, goal, time.Now())
}

// sayAt is say with a turn the extractor published at at: in the past, a
// turn the runner takes late (a backlog).
func (b *bench) sayAt(t *testing.T, msg string, goal bool, at time.Time) *engine.WorkingMemory {
	t.Helper()
	b.turns++
	fields := map[string]any{}
	if goal {
		fields["basics.goal"] = "sell coffee online"
	}
	n := b.turns
	b.Publish(t, runnertest.TurnID(b.session, n), at, runnertest.Turn(b.session, n, msg, fields))
	var m *engine.WorkingMemory
	runnertest.WaitFor(t, 30*time.Second, fmt.Sprintf("turn %d", n), func() bool {
		_, m = b.Session(t, b.session)
		return m.TurnNumber == n
	})
	return m
}

// task waits until the probe task's record satisfies cond, and returns it.
func (b *bench) task(t *testing.T, what string, cond func(engine.TaskRecord) bool) engine.TaskRecord {
	t.Helper()
	var r engine.TaskRecord
	runnertest.WaitFor(t, 30*time.Second, what, func() bool {
		_, m := b.Session(t, b.session)
		var ok bool
		r, ok = m.BackgroundTasks.Task("probe")
		return ok && cond(r)
	})
	return r
}

func status(s string) func(engine.TaskRecord) bool {
	return func(r engine.TaskRecord) bool { return r.Status == s }
}

// merged returns the statuses of the probe's task.merged events, in order,
// once the outbox has relayed them: a session's state is saved before its
// events reach the stream.
func (b *bench) merged(t *testing.T) []string {
	t.Helper()
	b.Drained(t)
	var out []string
	for _, ev := range b.Events(t, contracts.StreamTurns, contracts.TaskMergedSpec.Type) {
		m, err := contracts.DecodeAs[contracts.TaskMerged](ev)
		if err != nil {
			t.Fatal(err)
		}
		if m.TaskID == "probe" {
			out = append(out, m.Status)
		}
	}
	return out
}

// attempts records when each attempt of the handler started and fails the
// first `fails` of them.
type attempts struct {
	mu     sync.Mutex
	starts []time.Time
	nums   []int
	fails  int
}

func (a *attempts) handler(_ context.Context, t background.Task) (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts = append(a.starts, time.Now())
	a.nums = append(a.nums, t.Attempt)
	if len(a.starts) <= a.fails {
		return nil, errors.New("search API timed out")
	}
	return json.RawMessage(`{"summary":"two competitors","findings":[{"title":"Roastery A","detail":"online shop"}]}`), nil
}

// retry: the attempts follow the exponential backoff (here retry_delay 1s:
// 1s, then 2s), and the third succeeds.
func TestRetryWithExponentialBackoff(t *testing.T) {
	a := &attempts{fails: 2}
	b := newBench(t, "{type: retry, max_retries: 3, retry_delay: 1s}", false, "30s", a.handler)
	b.say(t, "Hello", false)
	r := b.task(t, "the task to complete", status(engine.TaskCompleted))
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Equal(a.nums, []int{1, 2, 3}) || r.Attempt != 3 || !strings.Contains(string(r.Result), "two competitors") {
		t.Fatalf("attempts %v, record %+v", a.nums, r)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if gap := a.starts[i+1].Sub(a.starts[i]); gap < want {
			t.Errorf("attempt %d started %s after attempt %d; the backoff is %s", i+2, gap, i+1, want)
		}
	}
	if got := b.merged(t); !slices.Equal(got, []string{"retrying", "retrying", "completed"}) {
		t.Errorf("merges = %v", got)
	}
	// The result reaches the context's background intelligence.
	b.say(t, "What did you find?", false)
	if p := b.chat.last(); !strings.Contains(p, "Market probe: two competitors | Roastery A (online shop)") {
		t.Errorf("the context lacks the result:\n%s", p)
	}
	b.replay(t)
}

// A turn the runner takes late (here ten minutes after the extractor
// published it, a backlog longer than twice the task's timeout) dispatches
// an attempt the workers still have the whole timeout for: its deadline
// counts from when it is dispatched, not from when the user spoke.
func TestLateTurnDispatchesATaskInTime(t *testing.T) {
	a := &attempts{}
	b := newBench(t, "{type: degrade, degraded_behavior: skip}", false, "30s", a.handler)
	b.sayAt(t, "Hello", false, time.Now().Add(-10*time.Minute))
	r := b.task(t, "the task to settle", func(r engine.TaskRecord) bool {
		return r.Status == engine.TaskCompleted || r.Status == engine.TaskDegraded
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Status != engine.TaskCompleted || !slices.Equal(a.nums, []int{1}) {
		t.Fatalf("record %+v after attempts %v; want it completed by its one attempt", r, a.nums)
	}
	b.replay(t)
}

// replay rebuilds the session from its events, the task outcomes merged
// where the live run merged them, and checks every turn and merge matches
// the live run's hash, and the final state the stored one.
func (b *bench) replay(t *testing.T) {
	t.Helper()
	runnertest.WaitFor(t, 10*time.Second, "the last turn.responded", func() bool {
		n := 0
		for _, ev := range b.SessionEvents(t, b.session) {
			if ev.Type() == contracts.TurnRespondedSpec.Type {
				n++
			}
		}
		return n == b.turns
	})
	r, err := runner.New(runner.Config{LLM: b.chat, Registry: b.Registry, Logger: b.Logger, TaskTimeoutFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Replay(context.Background(), r, b.Engines, b.SessionEvents(t, b.session))
	if err != nil {
		t.Fatal(err)
	}
	live, _ := b.Session(t, b.session)
	merges := 0
	for _, step := range res.Turns {
		if step.TaskID != "" {
			merges++
		}
		if step.RecordedHash == "" {
			t.Errorf("replayed step %+v has no recorded hash to compare with", step)
		}
	}
	if res.Diverged || res.StateHash != live.StateHash || merges != len(b.merged(t)) {
		t.Errorf("replay: diverged %t, %d merges of %d, hash %s; live %s", res.Diverged, merges, len(b.merged(t)),
			res.StateHash, live.StateHash)
	}
}

// degrade: the conversation proceeds, and the agent is told how.
func TestDegrade(t *testing.T) {
	a := &attempts{fails: 99}
	b := newBench(t, "{type: degrade, degraded_behavior: Quote no market figures}", false, "30s", a.handler)
	b.say(t, "Hello", false)
	r := b.task(t, "the task to degrade", status(engine.TaskDegraded))
	if r.Note != "Quote no market figures" || r.Error != "search API timed out" {
		t.Errorf("record = %+v", r)
	}
	m := b.say(t, "Our goal is to sell coffee online.", true)
	if m.Phase.Current != "END" {
		t.Errorf("phase %s: a degraded task must not hold the conversation", m.Phase.Current)
	}
	if p := b.chat.last(); !strings.Contains(p, "Market probe: unavailable (search API timed out); proceed this way: Quote no market figures") {
		t.Errorf("the context does not tell the agent how to proceed:\n%s", p)
	}
}

// stall: progress (the phase) waits while the task fails, the user is told
// it is waiting for research, and the task is tried again until it
// succeeds; then progress resumes.
func TestStall(t *testing.T) {
	var allowed atomic.Bool
	var calls atomic.Int32
	b := newBench(t, "{type: stall, retry_delay: 1s}", true, "30s", func(_ context.Context, _ background.Task) (json.RawMessage, error) {
		calls.Add(1)
		if !allowed.Load() {
			return nil, errors.New("research service unavailable")
		}
		return json.RawMessage(`{"summary":"ready","findings":[]}`), nil
	})
	b.say(t, "Hello", false)
	b.task(t, "the task to stall", status(engine.TaskStalled))
	m := b.say(t, "Our goal is to sell coffee online.", true)
	if m.Phase.Current != "START" {
		t.Fatalf("phase %s: a stalled task let the phase advance", m.Phase.Current)
	}
	last := m.History[len(m.History)-1]
	if !strings.Contains(last.Content, "Waiting for background research: Market probe") {
		t.Errorf("the user is not told of the wait: %q", last.Content)
	}
	if p := b.chat.last(); !strings.Contains(p, "Market probe: WAITING") {
		t.Errorf("the context does not say the task is awaited:\n%s", p)
	}
	runnertest.WaitFor(t, 20*time.Second, "a second attempt", func() bool { return calls.Load() >= 2 })
	allowed.Store(true)
	r := b.task(t, "the stalled task to complete", status(engine.TaskCompleted))
	if r.Attempt < 2 {
		t.Errorf("completed at attempt %d", r.Attempt)
	}
	if m := b.say(t, "Anything else?", true); m.Phase.Current != "END" {
		t.Errorf("phase %s after the task completed, want END", m.Phase.Current)
	}
	b.replay(t)
}

// proceed-with-gap: the conversation goes on with a gap flagged; the next
// phase dispatches the task again and fills it.
func TestProceedWithGap(t *testing.T) {
	a := &attempts{fails: 1}
	b := newBench(t, "{type: proceed-with-gap}", false, "30s", a.handler)
	b.say(t, "Hello", false)
	r := b.task(t, "the gap", status(engine.TaskGap))
	_, m := b.Session(t, b.session)
	if !slices.Equal(m.BackgroundTasks.Gaps, []string{"probe"}) || r.Note == "" {
		t.Fatalf("gaps = %v, record %+v", m.BackgroundTasks.Gaps, r)
	}
	m = b.say(t, "Our goal is to sell coffee online.", true)
	if m.Phase.Current != "END" {
		t.Fatalf("phase %s, want END: a gap does not hold the conversation", m.Phase.Current)
	}
	r = b.task(t, "the gap filled in the new phase", status(engine.TaskCompleted))
	_, m = b.Session(t, b.session)
	if r.Attempt != 2 || r.DispatchedAtTurn != 2 || len(m.BackgroundTasks.Gaps) != 0 {
		t.Errorf("record %+v, gaps %v", r, m.BackgroundTasks.Gaps)
	}
	b.replay(t)
}

// block_phase_transition: while the task runs the phase cannot advance;
// once it completes, it can.
func TestBlockPhaseTransition(t *testing.T) {
	release := make(chan struct{})
	b := newBench(t, "{type: degrade, degraded_behavior: skip it}", true, "30s", func(ctx context.Context, _ background.Task) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"summary":"done","findings":[]}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	b.say(t, "Hello", false)
	m := b.say(t, "Our goal is to sell coffee online.", true)
	if m.Phase.Current != "START" {
		t.Fatalf("phase %s: the running task did not block the transition", m.Phase.Current)
	}
	close(release)
	b.task(t, "the task to complete", status(engine.TaskCompleted))
	if m := b.say(t, "Anything else?", true); m.Phase.Current != "END" {
		t.Errorf("phase %s once the task completed, want END", m.Phase.Current)
	}
}

// A task's timeout comes from its estimated duration: an attempt that runs
// longer fails as timed out, and follows its strategy.
func TestTimeoutFromEstimatedDuration(t *testing.T) {
	b := newBench(t, "{type: degrade, degraded_behavior: skip it}", false, "1s", func(ctx context.Context, _ background.Task) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	start := time.Now()
	b.say(t, "Hello", false)
	r := b.task(t, "the task to time out", status(engine.TaskDegraded))
	if !strings.Contains(r.Error, "timed out after 1s") {
		t.Errorf("error = %q", r.Error)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("the timeout took %s", time.Since(start))
	}
}

// A handler that panics is a permanent failure: the retries are skipped
// and the strategy's fallback applies; the worker survives.
func TestPanickingHandlerFollowsItsStrategy(t *testing.T) {
	var calls atomic.Int32
	b := newBench(t, "{type: retry, max_retries: 3, retry_delay: 1s, then: degrade, degraded_behavior: go without}", false, "30s",
		func(context.Context, background.Task) (json.RawMessage, error) {
			calls.Add(1)
			var m map[string]int
			m["boom"]++ // a nil map: the handler panics
			return nil, nil
		})
	b.say(t, "Hello", false)
	r := b.task(t, "the task to degrade", status(engine.TaskDegraded))
	if !strings.Contains(r.Error, "panicked") || r.Attempt != 1 || calls.Load() != 1 || r.Note != "go without" {
		t.Errorf("record %+v after %d calls", r, calls.Load())
	}
	if !strings.Contains(b.Logs(), "background task handler panicked") {
		t.Error("the panic is not logged")
	}
}

// A worker dies mid-task (its connection closes, nothing acked): after the
// ack wait another worker runs the attempt; the task completes once and its
// result is merged once, even when the dead worker's handler returns later.
func TestKilledWorkerCompletesOnce(t *testing.T) {
	var calls atomic.Int32
	first, entered := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	fn := func(ctx context.Context, _ background.Task) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release // the first worker hangs until the test is done with it
			close(first)
		}
		return json.RawMessage(`{"summary":"found it","findings":[]}`), nil
	}
	rig := taskRig(t, "{type: degrade, degraded_behavior: skip}", false, "30s")
	b := &bench{Rig: rig, chat: &chat{}}
	r, _ := runner.New(runner.Config{LLM: b.chat, Registry: rig.Registry, Logger: rig.Logger})
	rs, err := runner.NewService(runner.ServiceConfig{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Engines: rig.Engines,
		Runner: r, Logger: rig.Logger, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	startService(t, rs)
	doomed := rig.NewProcess(t)
	doomedMetrics := b.worker(t, doomed.Bus, fn)
	b.session = rig.CreateSession(t, "tasking", "sess-kill")
	b.say(t, "Hello", false)
	<-entered
	doomed.Conn.Close() // the worker's process dies mid-task
	b.worker(t, rig.NewProcess(t).Bus, fn)
	b.task(t, "the task to complete on the second worker", status(engine.TaskCompleted))
	close(release)
	<-first // the dead worker's handler returns too; its answer must not count
	runnertest.WaitFor(t, 10*time.Second, "the dead worker to finish its attempt", func() bool {
		n, _ := testutil.GatherAndCount(doomedMetrics, "praetor_background_task_attempts_total")
		return n == 1
	})
	b.Drained(t)
	completed := rig.Events(t, contracts.StreamTasks, contracts.TaskCompletedSpec.Type)
	if len(completed) != 1 || calls.Load() != 2 {
		t.Fatalf("%d task.completed events after %d runs; want 1 after 2", len(completed), calls.Load())
	}
	if got := b.merged(t); !slices.Equal(got, []string{"completed"}) {
		t.Errorf("merges = %v, want one", got)
	}
	_, m := b.Session(t, b.session)
	n := 0
	for _, r := range m.BackgroundTasks.Completed {
		if r.TaskID == "probe" {
			n++
		}
	}
	if n != 1 || len(m.BackgroundTasks.Pending) != 0 {
		t.Errorf("the task is recorded %d times: %+v", n, m.BackgroundTasks)
	}
}

// An engine naming a handler the background service does not run is a
// configuration error when the service is built, naming the file and the
// handler; the engine loader refuses a handler nobody registered.
func TestUnknownHandlerIsAConfigurationError(t *testing.T) {
	rig := taskRig(t, "{type: degrade, degraded_behavior: skip}", false, "30s")
	h, err := background.DefaultHandlers(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = background.New(background.Config{DB: rig.DB, Bus: rig.Bus, Handlers: h, Engines: rig.Engines})
	var ce *background.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "tasking.yaml") || !strings.Contains(err.Error(), `"test.probe"`) ||
		!strings.Contains(err.Error(), "background_tasks[0].handler") {
		t.Fatalf("New with an engine naming an unknown handler = %v", err)
	}

	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	_, rep, err := engine.Load(reg, engine.Source{FS: fsOf("tasking.yaml", taskEngine("no.such.handler", "{type: degrade}", false, "30s")), Dir: "."})
	if err == nil || !slices.ContainsFunc(rep.Errors, func(i engine.Issue) bool {
		return i.Rule == "task-handler" && strings.Contains(i.Message, "no.such.handler")
	}) {
		t.Errorf("loading an engine naming an unregistered handler = %v, %v", err, rep.Errors)
	}
}

// The handlers the background service runs by default are exactly those
// the engine registry declares (the names the shipped engines may use).
func TestDefaultHandlersAreTheRegisteredOnes(t *testing.T) {
	h, err := background.DefaultHandlers(nil)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for name := range builtin.TaskHandlers() {
		declared = append(declared, name)
	}
	slices.Sort(declared)
	if !slices.Equal(h.Names(), declared) {
		t.Errorf("the background service runs %v; the registry declares %v", h.Names(), declared)
	}
}

// The research handlers ask the LLM port; the offline provider answers them
// with deterministic findings from the session's facts.
func TestResearchHandlerOffline(t *testing.T) {
	o, err := offline.New(offline.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for purpose, skill := range offlineskill.Skills() {
		o.Handle(purpose, skill)
	}
	h, err := background.DefaultHandlers(o)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(tasks.Input{TaskID: "competitive_scan", DisplayName: "Competitive scan", EngineID: "project-discovery",
		Facts: []string{"Core problem: technicians lose track of jobs", "Primary user: field technicians"}})
	fn, _ := h.Lookup(background.HandlerCompetitors)
	run := func() tasks.Findings {
		out, err := fn(context.Background(), background.Task{TenantID: "acme", TaskID: "competitive_scan", OwnerID: "s1", Attempt: 1,
			Handler: background.HandlerCompetitors, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		var f tasks.Findings
		if err := json.Unmarshal(out, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := run(), run()
	if !strings.Contains(a.Summary, "technicians lose track of jobs") || len(a.Findings) < 3 || a.Source != "offline" ||
		fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("findings %+v, again %+v", a, b)
	}
	if _, err := fn(context.Background(), background.Task{TaskID: "x", Input: json.RawMessage(`[]`)}); !errors.Is(err, background.ErrPermanent) {
		t.Errorf("a bad input = %v, want a permanent failure", err)
	}
}

func fsOf(name, data string) fstest.MapFS {
	return fstest.MapFS{name: &fstest.MapFile{Data: []byte(data)}}
}

// An attempt that reaches a worker after its session gave up on it (its
// deadline: it waited in a backlog, or the workers were down) is not run:
// its answer would be of no use, and a research call costs money. One
// within its deadline runs.
func TestAttemptPastItsDeadlineIsNotRun(t *testing.T) {
	var mu sync.Mutex
	var ran []int
	fn := func(_ context.Context, task background.Task) (json.RawMessage, error) {
		mu.Lock()
		ran = append(ran, task.Attempt)
		mu.Unlock()
		return json.RawMessage(`{"summary":"found it","findings":[]}`), nil
	}
	rig := taskRig(t, "{type: degrade, degraded_behavior: skip}", false, "30s")
	b := &bench{Rig: rig, chat: &chat{}}
	reg := b.worker(t, rig.Bus, fn)
	now := time.Now()
	for attempt, deadline := range map[int]time.Time{1: now.Add(-time.Second), 2: now.Add(time.Hour)} {
		rig.Publish(t, fmt.Sprintf("dl-%d", attempt), now, contracts.TaskDispatched{TenantID: runnertest.Tenant, TaskID: "probe",
			Kind: contracts.TaskKindBackground, Handler: testHandler, OwnerID: "sess-dl", Attempt: attempt, Timeout: 30 * time.Second,
			Deadline: deadline, Input: json.RawMessage(`{}`)})
	}
	runnertest.WaitFor(t, 30*time.Second, "both dispatches taken", func() bool {
		n, _ := testutil.GatherAndCount(reg, "praetor_background_task_attempts_total")
		return n == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran, []int{2}) {
		t.Errorf("ran attempts %v, want only 2 (1 was past its deadline)", ran)
	}
	if got := attemptsOf(t, reg, "expired"); got != 1 {
		t.Errorf("expired attempts counted %v, want 1", got)
	}
}

// A copy of a dispatch the workers completed that comes back after its
// deadline (a redrive after the stream's duplicate window; a redelivery
// of an attempt whose acknowledgement was lost) is a duplicate: skipped
// with no second count. Counted expired as well, the one attempt was both
// completed and expired, which trips an expiry alert.
func TestCopyOfACompletedAttemptPastItsDeadline(t *testing.T) {
	var ran atomic.Int32
	fn := func(context.Context, background.Task) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`{"summary":"found it","findings":[]}`), nil
	}
	rig := taskRig(t, "{type: degrade, degraded_behavior: skip}", false, "30s")
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	h := background.NewHandlers()
	if err := h.Register(testHandler, "the test's handler", fn); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := background.New(background.Config{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Handlers: h, Logger: rig.Logger,
		AckWait: time.Second, Registerer: reg, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	startService(t, s)
	ev := runnertest.Event(t, "dispatch-done", now(), contracts.TaskDispatched{TenantID: runnertest.Tenant, TaskID: "probe",
		Kind: contracts.TaskKindBackground, Handler: testHandler, OwnerID: "sess-done", Attempt: 1, Timeout: 30 * time.Second,
		Deadline: now().Add(time.Hour), Input: json.RawMessage(`{}`)})
	if err := rig.Bus.Publish(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	runnertest.WaitFor(t, 30*time.Second, "the attempt handled", func() bool {
		done, err := store.Handled(t.Context(), rig.DB, background.Consumer, ev.ID())
		if err != nil {
			t.Fatal(err)
		}
		return done
	})

	clock.Add(int64(2 * time.Hour))
	// The copy, byte for byte but for the message id the stream would
	// drop it by within its duplicate window.
	msg, err := rig.Bus.Encode(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	msg.Header.Del(jetstream.MsgIDHeader)
	js, err := jetstream.New(rig.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Duplicate {
		t.Fatal("the stream dropped the copy as a duplicate")
	}
	runnertest.WaitFor(t, 30*time.Second, "the copy acknowledged", func() bool {
		c, err := js.Consumer(t.Context(), contracts.StreamTasks, background.Consumer)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return info.AckFloor.Stream >= ack.Sequence
	})
	if got := attemptsOf(t, reg, "expired"); got != 0 {
		t.Errorf("expired attempts counted %v, want 0 (the copy is of an attempt completed)", got)
	}
	if got := attemptsOf(t, reg, "completed"); got != 1 {
		t.Errorf("completed attempts counted %v, want 1", got)
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("the handler ran %d times, want 1", got)
	}
}

// attemptsOf is the attempts counted with an outcome.
func attemptsOf(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "praetor_background_task_attempts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// Dispatches that wait for their not_before (a retry's backoff, a stall's)
// stay pending on the server meanwhile; however many wait, one due now is
// run at once. With the consumer's default bound on pending events (256)
// the due one waited for the first of them to come due.
func TestDueDispatchBehindManyWaiting(t *testing.T) {
	ran := make(chan string, 1)
	fn := func(_ context.Context, task background.Task) (json.RawMessage, error) {
		ran <- task.OwnerID
		return json.RawMessage(`{"summary":"found it","findings":[]}`), nil
	}
	rig := taskRig(t, "{type: degrade, degraded_behavior: skip}", false, "30s")
	b := &bench{Rig: rig, chat: &chat{}}
	now := time.Now()
	const waiting = 300
	for i := range waiting + 1 {
		owner, notBefore := fmt.Sprintf("sess-wait-%d", i), now.Add(time.Hour)
		if i == waiting {
			owner, notBefore = "sess-due", time.Time{}
		}
		rig.Publish(t, "dispatch-"+owner, now, contracts.TaskDispatched{TenantID: runnertest.Tenant, TaskID: "probe",
			Kind: contracts.TaskKindBackground, Handler: testHandler, OwnerID: owner, Attempt: 1, Timeout: 30 * time.Second,
			NotBefore: notBefore, Deadline: now.Add(2 * time.Hour), Input: json.RawMessage(`{}`)})
	}
	b.worker(t, rig.Bus, fn)
	select {
	case got := <-ran:
		if got != "sess-due" {
			t.Errorf("ran %s, want sess-due (the others wait an hour)", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the due dispatch did not run in 30s: it waits behind the dispatches waiting for their not_before")
	}
}
