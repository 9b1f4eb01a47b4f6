package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/hooks"
)

// run is one run in progress; its loop runs on one goroutine and owns s.
type run struct {
	x   *Executor
	b   *definition.Bundle
	s   engine.State
	log *slog.Logger
	// plan indexes s.Plan, which no transition changes.
	plan *engine.PlanIndex
	// saved is the last state the store accepted: what a failed run returns.
	saved engine.State
	// change holds the transitions applied since the last save, unsaved
	// (their events in unsaved), so the answers a batch brings and the
	// dispatches they make ready are saved together: one transaction, not
	// two, between an answer and the next attempt. Nothing outside the loop
	// sees a change before it is saved: attempts launch, and hooks that
	// follow a task's end run, only after their save.
	change  *engine.Change
	unsaved []engine.Event

	results  chan outcome
	inflight map[string]*flight
	wg       sync.WaitGroup
}

type flight struct {
	task   agent.Task
	cancel context.CancelCauseFunc
	start  time.Time
}

// outcome is what an attempt goroutine reports.
type outcome struct {
	task  agent.Task
	resp  engine.Response
	notes []hooks.Annotation
	// interrupted means the run is stopping: the attempt was cut short and
	// is not recorded, so it is re-dispatched on resume.
	interrupted bool
	// answered is when the Dispatcher returned (zero when the attempt
	// never reached it): when the tasks this answer makes ready, or whose
	// slot it frees, became ready to dispatch.
	answered time.Time
}

// abortCause cancels attempts when the run must stop (run timeout): they
// are recorded as failed with the reason.
type abortCause struct{ reason string }

func (a abortCause) Error() string { return a.reason }

func (x *Executor) newRun(b *definition.Bundle, s engine.State) *run {
	return &run{
		x: x, b: b, s: s, saved: s, plan: engine.NewPlanIndex(s.Plan),
		log: x.cfg.Logger.With("run", s.RunID, "workflow", s.Workflow),
		// At most one attempt per task is out, so this never blocks.
		results:  make(chan outcome, len(s.Plan.Tasks)),
		inflight: map[string]*flight{},
	}
}

// cur is the run's state, unsaved transitions included. Read it only, and
// not past the next transition.
func (r *run) cur() engine.State {
	if r.change != nil {
		return r.change.View()
	}
	return r.s
}

// edit returns the change the next transitions go to.
func (r *run) edit() *engine.Change {
	if r.change == nil {
		r.change = engine.NewChange(r.s)
	}
	return r.change
}

// flush saves the unsaved transitions, if any.
func (r *run) flush(ctx context.Context) error {
	ch, evs := r.change, r.unsaved
	r.change, r.unsaved = nil, nil
	if len(evs) == 0 {
		return nil
	}
	return r.persist(ctx, ch.State(), evs)
}

// persist saves a change; a failure is critical.
func (r *run) persist(ctx context.Context, s engine.State, evs []engine.Event) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.x.cfg.PersistTimeout)
	defer cancel()
	if err := r.x.cfg.Store.Save(pctx, s, evs); err != nil {
		r.log.Error("critical: workflow state not saved; stopping the run", "seq", s.Seq, "error", err)
		return fmt.Errorf("%w: run %s at event %d: %w", ErrPersist, s.RunID, s.Seq, err)
	}
	r.s, r.saved = s, s
	if r.x.cfg.Observe != nil {
		r.x.cfg.Observe(s, evs)
	}
	return nil
}

// loop drives the run to its end. redispatch lists the tasks that are
// RUNNING in the loaded state and must be dispatched again.
func (r *run) loop(ctx context.Context, redispatch []string) (state engine.State, err error) {
	// Attempts hang off a context of their own: when ctx ends they are
	// cancelled on purpose (cause: the caller's), and when the loop returns
	// for any reason, with errLoopEnded; each reports on the buffered
	// results channel, so none blocks once the loop is gone.
	runCtx, stopAttempts := context.WithCancelCause(context.WithoutCancel(ctx))
	defer func() {
		stopAttempts(errLoopEnded)
		r.wg.Wait()
		for len(r.results) > 0 {
			<-r.results
			r.x.metrics.inflight.Dec()
		}
	}()
	// Latencies are wall-clock times, whatever the transitions' Clock.
	start := time.Now()
	for _, id := range redispatch {
		t := r.s.Tasks[id]
		r.launch(context.WithValue(runCtx, redispatchKey{}, true), start, id, t.Iterations, t.DispatchID)
	}
	// readyAt is when the tasks the next decision dispatches became ready
	// (dependencies done, a slot free): the earliest answer of the batch
	// just handled, or the decision itself when no answer preceded it.
	var readyAt time.Time

	done := ctx.Done()
	interrupted := false
	aborting := ""
	for r.s.Status == engine.RunRunning {
		now := r.x.cfg.Clock()
		if readyAt.IsZero() {
			readyAt = time.Now()
		}
		free := r.x.cfg.MaxParallel - len(r.inflight)
		if interrupted || aborting != "" {
			free = 0
		}
		d := engine.DecideN(r.cur(), now, max(free, 0))

		if d.Abort != "" && aborting == "" {
			aborting = d.Abort
			r.log.Warn("aborting running attempts", "reason", aborting)
			for _, f := range r.inflight {
				f.cancel(abortCause{aborting})
			}
		}
		if interrupted && len(r.inflight) == 0 {
			if err := r.flush(ctx); err != nil {
				return r.saved, err
			}
			r.log.Info("workflow run interrupted; resume to continue", "seq", r.s.Seq)
			return r.saved, fmt.Errorf("%w: %s: %w", ErrInterrupted, r.s.RunID, context.Cause(ctx))
		}
		if d.Finalize != nil && len(r.inflight) == 0 && !interrupted {
			if err := r.finalize(ctx, *d.Finalize); err != nil {
				return r.saved, err
			}
			break
		}
		if len(d.Actions) > 0 {
			// DecideN gave no more than the free slots, and dispatching
			// changes neither retry times nor the deadline, so the decision's
			// WakeAt still holds: go on to wait.
			if err := r.dispatch(ctx, runCtx, readyAt, d.Actions); err != nil {
				return r.saved, err
			}
		} else if err := r.flush(ctx); err != nil {
			// Nothing to dispatch: save what the last answers changed
			// before waiting for more.
			return r.saved, err
		}

		var (
			wake  <-chan time.Time
			timer *time.Timer
		)
		if d.WakeAt != nil && !interrupted {
			timer = time.NewTimer(max(d.WakeAt.Sub(now), 0))
			wake = timer.C
		}
		if len(r.inflight) == 0 && wake == nil {
			return r.saved, fmt.Errorf("executor: run %s has nothing running and nothing to wait for (decision %+v)", r.s.RunID, d)
		}
		var o outcome
		got := false
		select {
		case o = <-r.results:
			got = true
		case <-wake:
		case <-done:
			done = nil
			interrupted = true
			r.log.Info("stopping: cancelling attempts in flight", "attempts", len(r.inflight))
			for _, f := range r.inflight {
				f.cancel(context.Cause(ctx))
			}
		}
		if timer != nil {
			timer.Stop()
		}
		readyAt = time.Time{}
		// Take this outcome and every other one already waiting: one save
		// and one decision per batch, not per attempt.
		if got {
			batch := []outcome{o}
			for more := true; more; {
				select {
				case o = <-r.results:
					batch = append(batch, o)
				default:
					more = false
				}
			}
			for _, o := range batch {
				if !o.answered.IsZero() && (readyAt.IsZero() || o.answered.Before(readyAt)) {
					readyAt = o.answered
				}
			}
			if err := r.handle(ctx, batch); err != nil {
				return r.saved, err
			}
		}
	}
	return r.s, nil
}

var errLoopEnded = errors.New("executor: run loop ended")

type (
	redispatchKey struct{}
	readyKey      struct{}
)

// ReadyAt reports when the attempt being dispatched under ctx became ready
// to go out: its dependencies done and a slot free (the answer that made it
// so reached the executor), or the run started or resumed. From then to an
// agent starting it is the attempt's dispatch latency; a Dispatcher may pass
// it on for measurements.
func ReadyAt(ctx context.Context) (time.Time, bool) {
	v, ok := ctx.Value(readyKey{}).(time.Time)
	return v, ok
}

// Redispatched reports whether the attempt being dispatched under ctx was
// in flight when the run was last stopped: dispatched before, by this or an
// earlier process, so its answer may already exist (a Dispatcher that keeps
// answers looks there first). An attempt not redispatched is new: nobody has
// seen its dispatch id yet.
func Redispatched(ctx context.Context) bool {
	v, _ := ctx.Value(redispatchKey{}).(bool)
	return v
}

// dispatch records the actions (RUNNING, new attempt), saves them with
// the answers not saved yet, then launches the attempts: a crash in between
// re-dispatches the same attempts.
func (r *run) dispatch(ctx, runCtx context.Context, readyAt time.Time, acts []engine.Action) error {
	ch := r.edit()
	for _, a := range acts {
		ev, err := ch.ApplyAction(a, ch.Next(r.x.cfg.Clock()))
		if err != nil {
			return fmt.Errorf("executor: run %s: %w", r.s.RunID, err)
		}
		r.unsaved = append(r.unsaved, ev)
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	for _, a := range acts {
		t := r.s.Tasks[a.TaskID]
		r.launch(runCtx, readyAt, a.TaskID, t.Iterations, t.DispatchID)
	}
	return nil
}

// launch starts an attempt goroutine.
func (r *run) launch(runCtx context.Context, readyAt time.Time, taskID string, attempt int, dispatchID string) {
	pt, _ := r.plan.Task(taskID)
	t := agent.Task{RunID: r.s.RunID, TaskID: taskID, DispatchID: dispatchID, Attempt: attempt,
		Agent: pt.Agent, Kind: string(pt.Kind), Outputs: pt.Outputs, Timeout: time.Duration(pt.Timeout)}
	actx, cancel := context.WithCancelCause(context.WithValue(runCtx, readyKey{}, readyAt))
	r.inflight[taskID] = &flight{task: t, cancel: cancel, start: time.Now()}
	r.x.metrics.inflight.Inc()
	snapshot := r.s // states are never modified in place, so sharing one is safe
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel(nil)
		o := r.attempt(actx, snapshot, t)
		r.results <- o
	}()
	r.log.Debug("attempt dispatched", "task", taskID, "attempt", attempt, "dispatch", dispatchID)
}

// handle applies a batch of attempt outcomes — every one that was waiting
// — to the run's change, which the loop saves with the dispatches they make
// ready (or alone, when there are none). When a task that ended has
// on-failure or on-loop-exit hooks, the change is saved at once instead, and
// the hooks run with it durable.
func (r *run) handle(ctx context.Context, batch []outcome) error {
	ch := r.edit()
	var ended []hooks.Event
	for _, o := range batch {
		if f := r.inflight[o.task.TaskID]; f != nil {
			r.x.metrics.duration.WithLabelValues(o.task.Agent).Observe(time.Since(f.start).Seconds())
		}
		delete(r.inflight, o.task.TaskID)
		r.x.metrics.inflight.Dec()
		if o.interrupted {
			r.x.metrics.attempts.WithLabelValues("interrupted").Inc()
			continue
		}
		r.unsaved = append(r.unsaved, r.applyNotes(ch, o.notes)...)
		ev, err := ch.ApplyResponse(o.resp, ch.Next(r.x.cfg.Clock()))
		if errors.Is(err, engine.ErrStaleResponse) {
			r.log.Warn("stale response dropped", "task", o.task.TaskID, "attempt", o.task.Attempt, "error", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("executor: run %s: %w", r.s.RunID, err)
		}
		r.unsaved = append(r.unsaved, ev)
		ts := ch.Task(o.task.TaskID)
		switch ts.Status {
		case engine.TaskCompleted:
			r.x.metrics.attempts.WithLabelValues("completed").Inc()
			if r.log.Enabled(ctx, slog.LevelInfo) {
				r.log.Info("task completed", "task", o.task.TaskID, "attempt", o.task.Attempt, "status", ts.Status)
			}
		case engine.TaskPending:
			r.x.metrics.attempts.WithLabelValues("retry").Inc()
			r.log.Warn("attempt failed; retrying", "task", o.task.TaskID, "attempt", o.task.Attempt, "status", ts.Status,
				"error", ts.Error.Message, "retry_at", ts.RetryAt)
		case engine.TaskFailed:
			r.x.metrics.attempts.WithLabelValues("failed").Inc()
			r.x.metrics.failed.WithLabelValues(o.task.Agent).Inc()
			r.log.Error("task failed", "task", o.task.TaskID, "attempt", o.task.Attempt, "status", ts.Status,
				"kind", ts.Error.Kind, "error", ts.Error.Message)
		}
		if ts.Status.Terminal() {
			ended = append(ended, hooks.Event{RunID: r.s.RunID, TaskID: o.task.TaskID, Task: o.task,
				Status: ts.Status, Iterations: ts.Iterations, Error: ts.Error})
		}
	}
	type call struct {
		e hooks.Event
		p hooks.Point
	}
	var calls []call
	for _, e := range ended {
		points := []hooks.Point{hooks.OnLoopExit}
		if e.Status == engine.TaskFailed {
			points = []hooks.Point{hooks.OnFailure, hooks.OnLoopExit}
		}
		for _, p := range points {
			if r.x.cfg.Hooks.Has(p, e.TaskID) {
				calls = append(calls, call{e, p})
			}
		}
	}
	if len(calls) == 0 {
		return nil
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	var notes []hooks.Annotation
	for _, c := range calls {
		e := c.e
		e.Point = c.p
		n, err := r.x.cfg.Hooks.Run(ctx, e)
		if err != nil {
			r.log.Warn("hook failed", "point", c.p, "task", e.TaskID, "error", err)
		}
		notes = append(notes, n...)
	}
	r.unsaved = append(r.unsaved, r.applyNotes(r.edit(), notes)...)
	return r.flush(ctx)
}

// applyNotes applies hook annotations to a change and returns their
// events; an invalid one is a hook's bug and is logged, not fatal.
func (r *run) applyNotes(ch *engine.Change, notes []hooks.Annotation) []engine.Event {
	var evs []engine.Event
	for _, n := range notes {
		ev, err := ch.ApplyAction(engine.Action{Type: engine.Annotate, TaskID: n.TaskID, Key: n.Key, Value: n.Value},
			ch.Next(r.x.cfg.Clock()))
		if err != nil {
			r.log.Warn("hook annotation rejected", "key", n.Key, "error", err)
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}

// finalize closes the run, in one save with the last answers.
func (r *run) finalize(ctx context.Context, f engine.Finalization) error {
	ch := r.edit()
	ev, err := ch.Finalize(f, ch.Next(r.x.cfg.Clock()))
	if err != nil {
		return fmt.Errorf("executor: run %s: %w", r.s.RunID, err)
	}
	r.unsaved = append(r.unsaved, ev)
	if err := r.flush(ctx); err != nil {
		return err
	}
	r.x.metrics.runs.WithLabelValues(string(r.s.Status)).Inc()
	if r.s.Status == engine.RunCompleted {
		r.log.Info("workflow run completed")
	} else {
		r.log.Error("workflow run failed", "error", r.s.Error)
	}
	return nil
}

// attempt runs one attempt: pre-task hooks, context assembly, dispatch with
// the task's timeout, output checks, post-task hooks, output storage.
func (r *run) attempt(ctx context.Context, s engine.State, t agent.Task) outcome {
	o := outcome{task: t, resp: engine.Response{TaskID: t.TaskID, Attempt: t.Attempt, DispatchID: t.DispatchID}}
	fail := func(kind engine.ErrorKind, retryable bool, err error) outcome {
		if ctx.Err() != nil {
			var ab abortCause
			if errors.As(context.Cause(ctx), &ab) {
				kind, retryable, err = engine.ErrorAborted, false, ab
			} else {
				o.interrupted = true
				return o
			}
		}
		o.resp.OK = false
		o.resp.Error = &engine.TaskError{Kind: kind, Message: err.Error(), Retryable: retryable}
		return o
	}

	notes, err := r.x.cfg.Hooks.Run(ctx, hooks.Event{Point: hooks.PreTask, RunID: t.RunID, TaskID: t.TaskID, Task: t})
	o.notes = append(o.notes, notes...)
	if err != nil {
		return fail(engine.ErrorHook, !events.IsPermanent(err), err)
	}
	actx, err := assemble(ctx, r.b, r.x.cfg.Artifacts, s, r.plan, t.TaskID, r.x.cfg.MaxOutputBytes)
	if err != nil {
		return fail(engine.ErrorInternal, false, err)
	}

	res, err := r.call(ctx, t, actx)
	o.answered = time.Now()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fail(engine.ErrorTimeout, true, fmt.Errorf("attempt timed out after %s: %w", t.Timeout, err))
		}
		kind, retryable := classify(err)
		return fail(kind, retryable, err)
	}
	if err := agent.Check(t, res, r.x.cfg.MaxOutputBytes); err != nil {
		kind, retryable := classify(err)
		return fail(kind, retryable, err)
	}
	notes, err = r.x.cfg.Hooks.Run(ctx, hooks.Event{Point: hooks.PostTask, RunID: t.RunID, TaskID: t.TaskID, Task: t, Result: &res})
	o.notes = append(o.notes, notes...)
	if err != nil {
		return fail(engine.ErrorHook, !events.IsPermanent(err), err)
	}
	for _, name := range t.Outputs {
		ref, err := r.x.cfg.Artifacts.Put(ctx, t.RunID, t.TaskID, name, res.Outputs[name])
		if err != nil {
			return fail(engine.ErrorInternal, true, fmt.Errorf("store output %s: %w", name, err))
		}
		o.resp.Outputs = append(o.resp.Outputs, ref)
	}
	o.resp.OK = true
	o.resp.Handover = res.Handover
	return o
}

// call dispatches with the attempt's timeout. A Dispatcher that does not
// return once its context ends is abandoned after AbandonGrace, so a hung
// runtime cannot hold the run.
func (r *run) call(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	dctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	type answer struct {
		res agent.Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := r.x.cfg.Dispatcher.Dispatch(dctx, t, c)
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-dctx.Done():
	}
	grace := time.NewTimer(r.x.cfg.AbandonGrace)
	defer grace.Stop()
	select {
	case a := <-ch:
		if a.err == nil {
			a.err = dctx.Err()
		}
		return agent.Result{}, a.err
	case <-grace.C:
		r.log.Error("dispatcher ignored the end of its context; attempt abandoned", "task", t.TaskID, "dispatch", t.DispatchID)
		return agent.Result{}, fmt.Errorf("dispatcher did not return: %w", dctx.Err())
	}
}

// classify maps a runtime error to a task error kind and whether another
// attempt may help.
func classify(err error) (engine.ErrorKind, bool) {
	var rejected *agent.RejectedError
	var output *agent.OutputError
	switch {
	case errors.As(err, &rejected):
		return engine.ErrorRejected, false
	case errors.As(err, &output):
		return engine.ErrorOutput, !events.IsPermanent(err)
	default:
		return engine.ErrorAgent, !events.IsPermanent(err)
	}
}
