package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/sidebar"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Consumers (service roles) of the runner: the session's turns and task
// outcomes, in the session's order; the answers of the background workers,
// routed into that order; the handoffs that start sessions; and the watch
// over the sessions' task attempts, for answers that do not come.
const (
	Consumer          = "runner"
	ConsumerTasks     = "runner-tasks"
	ConsumerHandoffs  = "runner-handoffs"
	ConsumerDeadlines = "runner-deadlines"
)

const source = "/praetor/runner"

// maxStaleRedo bounds how often one event's work is redone at once after
// its session changed under it; past that it is redelivered later.
const maxStaleRedo = 5

// Subscriber starts consumers and encodes events; *events.Bus is one.
type Subscriber interface {
	Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error)
	delivery.Encoder
}

// ServiceConfig configures the runner service.
type ServiceConfig struct {
	DB      store.DB
	Bus     Subscriber
	Relay   *delivery.Relay
	Engines *engine.Catalog
	// Runner runs the turns. Required.
	Runner     *Runner
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// AckWait is the consumer's redelivery delay after a process dies.
	// Default: 30s.
	AckWait time.Duration
	// Unavailable, when set, tells the store's failures that mean the
	// database is down: the consumers then pause, taking no events until
	// DB.Ping answers, instead of using up the events' deliveries on the
	// outage (events.ConsumerConfig.Unavailable). Default: none, every
	// failure counts.
	Unavailable func(error) bool
	// Now stamps the rows the service writes. Default: time.Now. (The turn's
	// own time is the turn.extracted event's.)
	Now func() time.Time
}

// Service consumes turn.extracted, runs the rest of the turn and publishes
// turn.responded; it merges background task outcomes into the session
// between turns, executes handoffs, and starts the sessions handoffs lead
// to.
//
// A session's turns and task outcomes are handled one at a time in stream
// order (a keyed consumer on the session's subject; the workers' answers on
// PRAETOR_TASKS are first routed there as task.returned). The new state,
// the reply, the checkpoints, the handoff and the events to emit commit with
// the inbox row, so a redelivered event has one effect. As a second guard,
// each write names the session version it read (conversation.SaveSession):
// should two handlers of one session ever overlap (a handler outliving its
// ack wait), the later write is refused and its work redone on the fresh
// state, so no update is lost.
type Service struct {
	cfg       ServiceConfig
	runner    *Runner
	inbox     *delivery.Inbox
	tasksIn   *delivery.Inbox
	handoffIn *delivery.Inbox
	expiries  *delivery.Inbox
	m         serviceMetrics

	mu   sync.Mutex
	subs []*events.Subscription
	// afterRead, in tests, runs between reading a session and committing
	// its new state, so a test can change the session in between.
	afterRead func(kind string)
	// memoryVersion is the newest working memory version the runner runs
	// (engine.MemorySchemaVersion; tests lower it to stand for an older
	// build).
	memoryVersion int
}

type serviceMetrics struct {
	answered, degraded, conflicts prometheus.Counter
	handoffs, verifications       *prometheus.CounterVec
	dispatched                    prometheus.Counter
	merged                        *prometheus.CounterVec
}

// NewService returns the service; Start subscribes it.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.DB == nil || cfg.Bus == nil || cfg.Engines == nil || cfg.Runner == nil {
		return nil, errors.New("runner: DB, Bus, Engines and Runner are required")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	inbox := func(consumer string, checkInWork bool) (*delivery.Inbox, error) {
		return delivery.NewInbox(delivery.InboxConfig{DB: cfg.DB, Encoder: cfg.Bus, Consumer: consumer, Relay: cfg.Relay, Now: cfg.Now,
			CheckInWork: checkInWork})
	}
	s := &Service{cfg: cfg, runner: cfg.Runner.withEngines(cfg.Engines), memoryVersion: engine.MemorySchemaVersion}
	var err error
	// The session's events look themselves up in the inbox as they read
	// the session (load).
	if s.inbox, err = inbox(Consumer, true); err != nil {
		return nil, err
	}
	if s.tasksIn, err = inbox(ConsumerTasks, false); err != nil {
		return nil, err
	}
	if s.handoffIn, err = inbox(ConsumerHandoffs, false); err != nil {
		return nil, err
	}
	if s.expiries, err = inbox(ConsumerDeadlines, false); err != nil {
		return nil, err
	}
	s.m = serviceMetrics{
		answered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "praetor_turns_answered_total", Help: "Turns the runner answered."}),
		degraded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "praetor_responses_degraded_total",
			Help: "Turns answered with the fallback reply because response generation failed."}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "praetor_session_write_conflicts_total",
			Help: "Session writes refused because the session changed since it was read; the work was redone."}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_handoffs_total",
			Help: "Exit transitions that fired, by outcome: created (written and published) or rejected (failed validation, not written)."},
			[]string{"outcome"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_handoff_verifications_total",
			Help: "I-PASS checks of the first reply after a handoff, by result (verified, unverified)."},
			[]string{"result"}),
		dispatched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "praetor_background_tasks_dispatched_total", Help: "Background task attempts the runner dispatched."}),
		merged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_task_outcomes_merged_total",
			Help: "Background task outcomes merged into sessions, by the task's status after the merge."}, []string{"status"}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.m.answered, s.m.degraded, s.m.conflicts, s.m.handoffs,
			s.m.verifications, s.m.dispatched, s.m.merged} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	if missing := s.runner.cfg.Mappers.Unmapped(cfg.Engines.All()); len(missing) > 0 {
		cfg.Logger.Warn("exit transitions without a context mapper of their own use the generic one", "transitions", missing)
	}
	return s, nil
}

// Start subscribes to the session events (turn.extracted, task.returned),
// the workers' answers (task.completed, task.failed), handoff.created and
// the sessions' task.dispatched (to give up on attempts nobody answers).
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	started := len(s.subs) > 0
	s.mu.Unlock()
	if started {
		return errors.New("runner: already started")
	}
	for _, c := range []struct {
		cfg events.ConsumerConfig
		h   events.Handler
	}{
		{events.ConsumerConfig{Stream: contracts.StreamTurns, Name: Consumer, Keyed: true,
			Subjects:       []string{contracts.TurnExtractedSpec.FilterSubject(), contracts.TaskReturnedSpec.FilterSubject()},
			HandlerTimeout: 5 * time.Minute, AckWait: s.cfg.AckWait,
			// A step of a session that a newer replica started may come to
			// older ones, which pass it on (load).
			MaxDeliver: events.PassOnDeliveries, BackoffMax: events.PassOnBackoffMax}, s.redoStale(s.inbox.Handler(s.work))},
		{events.ConsumerConfig{Stream: contracts.StreamTasks, Name: ConsumerTasks,
			Subjects: []string{contracts.TaskCompletedSpec.FilterSubject(), contracts.TaskFailedSpec.FilterSubject()},
			AckWait:  s.cfg.AckWait}, s.sessionTasks(s.tasksIn.TxHandler(s.route))},
		{events.ConsumerConfig{Stream: contracts.StreamHandoffs, Name: ConsumerHandoffs, Keyed: true,
			Subjects: []string{contracts.HandoffCreatedSpec.FilterSubject()}, AckWait: s.cfg.AckWait},
			s.handoffIn.Handler(s.startTarget)},
		// Each dispatch waits here, put back until its attempt is overdue:
		// one for each attempt in flight, with no bound (MaxAckPending -1),
		// where a bound would hold every dispatch past it off the consumer
		// until one before it was overdue, however soon its own attempt
		// was; and what waits is timers, not work to scale the runner on
		// (NoBacklog). A timer is never used up (MaxDeliver -1): a store
		// outage, however long, delays the expiry until the store is back,
		// a minute apart at most, where a bound would dead-letter the timer
		// and leave its attempt waiting for good. A dispatch that cannot be
		// read is still dead-lettered (a contract violation is permanent).
		{events.ConsumerConfig{Stream: contracts.StreamTasks, Name: ConsumerDeadlines,
			Subjects:    []string{contracts.TaskDispatchedSpec.SubjectPrefix() + ".*." + TaskKind},
			Concurrency: 64, MaxDeliver: -1, MaxAckPending: -1, AckWait: s.cfg.AckWait, NoBacklog: true},
			s.whenOverdue(s.expiries.TxHandler(s.expire))},
	} {
		c.cfg.Unavailable = s.cfg.Unavailable
		if c.cfg.Unavailable != nil {
			c.cfg.Probe = s.cfg.DB.Ping
		}
		sub, err := s.cfg.Bus.Subscribe(ctx, c.cfg, c.h)
		if err != nil {
			_ = s.Stop(context.WithoutCancel(ctx))
			return err
		}
		s.mu.Lock()
		s.subs = append(s.subs, sub)
		s.mu.Unlock()
	}
	return nil
}

// Stop drains the consumers; calling it twice is harmless.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.Stop(ctx))
	}
	return errors.Join(errs...)
}

// redoStale runs h again, at once, when its commit found that the session
// had changed since its work read it: the work is redone on the fresh
// state. Past maxStaleRedo tries the error goes back to the consumer, which
// redelivers the event later.
func (s *Service) redoStale(h events.Handler) events.Handler {
	return func(ctx context.Context, ev event.Event) error {
		for i := 1; ; i++ {
			err := h(ctx, ev)
			if !errors.Is(err, conversation.ErrStale) {
				return err
			}
			s.m.conflicts.Inc()
			s.cfg.Logger.Debug("session changed under the handler; redoing its work", "event_id", ev.ID(),
				"event_type", ev.Type(), "try", i, "error", err)
			if i == maxStaleRedo || ctx.Err() != nil {
				return err
			}
		}
	}
}

// work handles one event of a session's order.
func (s *Service) work(ctx context.Context, ev event.Event) (delivery.Step, error) {
	if ev.Type() == contracts.TaskReturnedSpec.Type {
		return s.merge(ctx, ev)
	}
	return s.turn(ctx, ev)
}

// load reads a session, its engine and its working memory for the event
// ev of the session's order; delivery.ErrHandled when the runner has
// handled ev already (the inbox look-up rides along with the read).
func (s *Service) load(ctx context.Context, ev event.Event, tenantID, sessionID, what string) (conversation.Session, *engine.Definition, *engine.WorkingMemory, error) {
	sess, handled, err := conversation.GetSessionForEvent(ctx, s.cfg.DB, tenantID, sessionID, Consumer, ev.ID())
	switch {
	case err == nil && handled:
		return sess, nil, nil, delivery.ErrHandled
	case errors.Is(err, store.ErrNotFound):
		return sess, nil, nil, events.Permanent(fmt.Errorf("%s names unknown session %s: %w", what, sessionID, err))
	case err != nil:
		return sess, nil, nil, err
	}
	def, ok := s.cfg.Engines.Get(sess.EngineID)
	if !ok {
		return sess, nil, nil, events.Permanent(fmt.Errorf("session %s runs engine %q, which is not loaded", sess.ID, sess.EngineID))
	}
	var mem engine.WorkingMemory
	if err := fastjson.Unmarshal(sess.State, &mem); err != nil {
		return sess, nil, nil, events.Permanent(fmt.Errorf("session %s: working memory: %w", sess.ID, err))
	}
	if mem.SchemaVersion > s.memoryVersion {
		// A newer replica started the session (an upgrade rolling out):
		// its rules are not this build's, so one that has them takes it.
		return sess, nil, nil, events.PassOn(ctx, fmt.Errorf("session %s: working memory version %d is newer than this runner runs (%d)",
			sess.ID, mem.SchemaVersion, s.memoryVersion), events.PassOnDeliveries)
	}
	if _, ok := def.Phase(mem.Phase.Current); !ok {
		if _, has := s.cfg.Engines.Version(sess.EngineID, mem.EngineVersion); !has {
			// A newer replica ran the session on a version of its engine
			// this one has not loaded (an upgrade rolling out), into a
			// phase this one's does not have: one that has it takes it.
			return sess, nil, nil, events.PassOn(ctx, fmt.Errorf("session %s is in phase %q of %s %s, which this runner has not loaded (it runs %s)",
				sess.ID, mem.Phase.Current, sess.EngineID, mem.EngineVersion, def.Version), events.PassOnDeliveries)
		}
	}
	// As the copy a turn used to work on: the turn now works on mem itself
	// (processOwned).
	if err := mem.NormalizeDecoded(); err != nil {
		return sess, nil, nil, events.Permanent(fmt.Errorf("session %s: working memory: %w", sess.ID, err))
	}
	if s.afterRead != nil {
		s.afterRead(what)
	}
	return sess, def, &mem, nil
}

func (s *Service) turn(ctx context.Context, ev event.Event) (delivery.Step, error) {
	te, err := contracts.DecodeAs[contracts.TurnExtracted](ev)
	if err != nil {
		return nil, err
	}
	sess, def, mem, err := s.load(ctx, ev, te.TenantID, te.SessionID, "turn "+te.TurnID)
	if err != nil {
		return nil, err
	}
	in, err := FromContract(*te, sess.ProjectID)
	if err != nil {
		return nil, events.Permanent(err)
	}
	in.Now = ev.Time()
	// A session's turns come in order, one at a time: when the state is
	// turns behind this one, those turns were dead-lettered (a turn the
	// runner refused, or one whose retries ran out) and are not coming. The
	// session goes on without them; the dead-letter stream has them.
	in.AcceptGap = true
	// The background intelligence is read while the turn runs: it waits on
	// another store, and it is merged after the turn whatever the turn does.
	var intel chan []event.Event
	if s.runner.cfg.Intelligence != nil {
		intel = make(chan []event.Event, 1)
		go func(ctx context.Context, known []string) {
			intel <- s.intelligence(ctx, sess, known, te.TurnID, ev.Time())
		}(ctx, mem.BackgroundTasks.Intelligence)
	}
	// Every model call of the turn (reply, summary) belongs to the session,
	// and is the turn's: redone, it is answered as recorded the first time.
	ctx = llm.WithWork(llm.WithOwner(ctx, te.TenantID, te.SessionID), "turn/"+te.TurnID)
	// mem was just decoded (and normalized) for this turn alone: the turn
	// may work on it.
	res, err := s.runner.processOwned(ctx, def, mem, in)
	var extra []event.Event
	if intel != nil {
		extra = <-intel
	}
	switch {
	case errors.Is(err, ErrDuplicateTurn):
		return s.setAside(sess, te, ev.Time()), nil
	case errors.Is(err, ErrHandedOff):
		return s.movedOn(sess, te, mem.Exit, ev.Time()), nil
	case err != nil && ctx.Err() == nil:
		return nil, events.Permanent(err)
	case err != nil:
		return nil, err
	}
	if len(res.SkippedTurns) > 0 {
		s.runner.cfg.Logger.Warn("runner: turns of the session never reached the runner (dead-lettered); answering the next",
			"session_id", te.SessionID, "turn", te.TurnNumber, "skipped", res.SkippedTurns, "turn_id", te.TurnID)
	}
	return s.commitTurn(sess, te, res, extra)
}

// intelligence asks the memory service for the project's background
// intelligence; lines that differ from the session's come back as a
// task.returned, merged right after this turn. Errors are logged: the turn
// goes on without.
func (s *Service) intelligence(ctx context.Context, sess conversation.Session, known []string, turnID string,
	at time.Time) []event.Event {
	src := s.runner.cfg.Intelligence
	if src == nil {
		return nil
	}
	same := func(lines []string) bool { return slices.Equal(lines, known) || (len(lines) == 0 && len(known) == 0) }
	var (
		lines []string
		err   error
	)
	if c, ok := src.(*cachedIntelligence); ok {
		var remembered bool
		lines, remembered, err = c.lines(ctx, sess.TenantID, sess.ProjectID)
		// Remembered lines only confirm that nothing changed: the session
		// may hold newer ones, merged by another replica.
		if err == nil && remembered && !same(lines) {
			lines, err = c.Fresh(ctx, sess.TenantID, sess.ProjectID)
		}
	} else {
		lines, err = src.Background(ctx, sess.TenantID, sess.ProjectID)
	}
	if err != nil {
		s.cfg.Logger.Warn("background intelligence unavailable; the turn goes on without it", "session_id", sess.ID,
			"project_id", sess.ProjectID, "error", err)
		return nil
	}
	if same(lines) {
		return nil
	}
	if lines == nil {
		lines = []string{}
	}
	out, _ := json.Marshal(lines)
	ev, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(turnID, "intelligence"), Source: source, Time: at},
		contracts.TaskReturned{TenantID: sess.TenantID, SessionID: sess.ID, TaskID: IntelligenceTaskID, Attempt: 1,
			Completed: true, Output: out, ReturnedAt: at})
	if err != nil {
		s.cfg.Logger.Warn("background intelligence not recorded", "session_id", sess.ID, "error", err)
		return nil
	}
	return []event.Event{ev}
}

// setAsideReply answers a turn the session went on without.
const setAsideReply = "This message reached me after our conversation had gone on without it, so I set it aside. " +
	"If it still matters, please send it again."

// setAside is the step for a turn the state is already past: a redelivery
// of a turn answered before, which it leaves alone, or a turn the session
// went on without (dead-lettered, then redriven), which is still pending:
// it is answered, degraded, as set aside, so no client waits for it for
// ever. The state does not change.
func (s *Service) setAside(sess conversation.Session, te *contracts.TurnExtracted, at time.Time) delivery.Step {
	return s.answerUnprocessed(sess, te, at, setAsideReply,
		fmt.Sprintf("set aside: the session went on to turn %d without it", sess.TurnCount), "")
}

// movedOn is the step for a turn that reached the session after the turn
// that handed it off (the gateway took it while the session was still
// active): the engine the conversation left does not answer it; the turn is
// answered, degraded, with where the conversation went, so the user sends
// it again there. The state does not change.
func (s *Service) movedOn(sess conversation.Session, te *contracts.TurnExtracted, x *engine.ExitState, at time.Time) delivery.Step {
	name := x.TargetEngine
	if def, ok := s.cfg.Engines.Get(x.TargetEngine); ok {
		name = cmp.Or(def.Name, name)
	}
	reply := "This message reached me after I had handed our conversation over to " + name +
		", so I did not answer it here. If it still matters, please send it again there."
	return s.answerUnprocessed(sess, te, at, reply, fmt.Sprintf("handed off: the session handed off to %s at turn %d "+
		"(handoff %s); post to session %s", x.TargetEngine, x.AtTurn, x.HandoffID, TargetSessionID(x.HandoffID)), x.HandoffID)
}

// answerUnprocessed is the step that answers a pending turn the session
// does not process, degraded with reply and reason, and with the handoff
// it came after, if any; a turn answered before is left alone.
func (s *Service) answerUnprocessed(sess conversation.Session, te *contracts.TurnExtracted, at time.Time, reply, reason,
	handoffID string) delivery.Step {
	return func(ctx context.Context, tx store.Querier) ([]event.Event, error) {
		t, err := conversation.GetTurn(ctx, tx, te.TenantID, te.TurnID)
		switch {
		case errors.Is(err, store.ErrNotFound), err == nil && t.Answered():
			return nil, nil
		case err != nil:
			return nil, err
		}
		at = at.UTC()
		now := s.cfg.Now().UTC() // when it is answered: after the turns the session went on with
		payload := contracts.TurnResponded{TenantID: te.TenantID, SessionID: sess.ID, TurnID: te.TurnID, TurnNumber: te.TurnNumber,
			Text: reply, Phase: sess.Phase, Completeness: sess.Completeness, Degraded: true,
			DegradedReason: reason, StateHash: sess.StateHash, HandoffID: handoffID}
		if err := conversation.AnswerTurn(ctx, tx, conversation.Turn{ID: te.TurnID, TenantID: te.TenantID, SessionID: sess.ID,
			TurnNumber: te.TurnNumber, Reply: reply, Phase: sess.Phase, Completeness: sess.Completeness, Degraded: true,
			RespondedAt: &now}); err != nil {
			return nil, err
		}
		out, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(te.TurnID, "responded"), Source: source, Time: at}, payload)
		if err != nil {
			return nil, events.Permanent(err)
		}
		s.cfg.Logger.Warn("runner: a turn answered without being processed",
			"session_id", sess.ID, "turn", te.TurnNumber, "turn_id", te.TurnID, "state_turn", sess.TurnCount, "reason", reason)
		return []event.Event{out}, nil
	}
}

// commitTurn is the step that persists a processed turn: the session's new
// state (handed off when its exit transition fired), the answered turn, the
// checkpoints, the handoff row and the I-PASS verdict, and the events:
// turn.responded, then handoff.created, the tasks to dispatch and the
// intelligence to merge.
func (s *Service) commitTurn(sess conversation.Session, te *contracts.TurnExtracted, res *Result, extra []event.Event) (delivery.Step, error) {
	now := s.cfg.Now().UTC()
	state, err := res.StateJSON()
	if err != nil {
		return nil, events.Permanent(err)
	}
	sb, err := json.Marshal(res.Sidebar)
	if err != nil {
		return nil, events.Permanent(err)
	}
	// The sidebar, kilobytes of JSON just encoded, goes into the event as it
	// is.
	payload := res.responded(te.TenantID, te.TurnID)
	out, err := contracts.NewEventRaw(contracts.Meta{ID: events.DeriveID(te.TurnID, "responded"), Source: source,
		Time: res.ProcessedAt}, payload, "sidebar", sb)
	if err != nil {
		return nil, events.Permanent(err)
	}
	emitted := []event.Event{out}

	var hrow *conversation.Handoff
	if x := res.Effects.Exit; x != nil {
		hrow, emitted, err = s.handoff(sess, x, res.ProcessedAt, emitted)
		if err != nil {
			return nil, err
		}
		sess.Status, sess.OutboundHandoffID = conversation.StatusHandedOff, x.HandoffID
	}
	for _, d := range res.Effects.Tasks {
		ev, err := s.dispatchEvent(sess, d, res.ProcessedAt)
		if err != nil {
			return nil, err
		}
		emitted = append(emitted, ev)
	}
	emitted = append(emitted, extra...)
	var verification json.RawMessage
	if v := res.Effects.Verification; v != nil && sess.InboundHandoffID != "" {
		if verification, err = json.Marshal(v); err != nil {
			return nil, events.Permanent(err)
		}
	}

	sess.State, sess.StateHash, sess.Sidebar = state, res.StateHash, sb
	sess.Phase, sess.Completeness, sess.TurnCount, sess.UpdatedAt = res.Phase, res.Completeness.Overall, res.State.TurnNumber, now
	// The version this turn ran: new turns run on the newest.
	sess.EngineVersion = res.State.EngineVersion
	turn := conversation.Turn{ID: te.TurnID, TenantID: te.TenantID, SessionID: sess.ID, TurnNumber: res.State.TurnNumber,
		Reply: res.Reply, Phase: res.Phase, Completeness: res.Completeness.Overall, Sidebar: sb,
		Degraded: payload.Degraded, RespondedAt: &now}
	return func(ctx context.Context, tx store.Querier) ([]event.Event, error) {
		if err := conversation.SaveSession(ctx, tx, sess); err != nil {
			return nil, err
		}
		if err := conversation.AnswerTurn(ctx, tx, turn); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		for _, c := range res.Effects.Checkpoints {
			if err := conversation.SaveCheckpoint(ctx, tx, conversation.Checkpoint{
				ID:       events.DeriveID(sess.ID, fmt.Sprintf("checkpoint/%d/%s", c.AtTurn, c.Reason)),
				TenantID: sess.TenantID, SessionID: sess.ID, AtTurn: c.AtTurn, Reason: c.Reason, Snapshot: c.State,
				ContextTokens: c.ContextTokens, CreatedAt: now,
			}); err != nil {
				return nil, err
			}
		}
		if hrow != nil {
			if err := conversation.CreateHandoff(ctx, tx, *hrow); err != nil {
				return nil, err
			}
		}
		if verification != nil {
			err := conversation.RecordVerification(ctx, tx, sess.TenantID, sess.InboundHandoffID, res.Effects.Verification.Verified, verification)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
		s.count(sess, res)
		return emitted, nil
	}, nil
}

// count updates the metrics and logs of a committed turn. (A transaction
// retried by the store counts twice; these are operational figures.)
func (s *Service) count(sess conversation.Session, res *Result) {
	s.m.answered.Inc()
	if res.Degraded {
		s.m.degraded.Inc()
	}
	s.m.dispatched.Add(float64(len(res.Effects.Tasks)))
	switch {
	case res.Effects.Exit != nil:
		s.m.handoffs.WithLabelValues("created").Inc()
		s.cfg.Logger.Info("handoff created", "session_id", sess.ID, "handoff_id", res.Effects.Exit.HandoffID,
			"target_engine_id", res.Effects.Exit.TargetEngine, "target_session_id", res.Effects.Exit.TargetSessionID)
	case res.HandoffRejected != nil:
		s.m.handoffs.WithLabelValues("rejected").Inc()
	}
	if v := res.Effects.Verification; v != nil {
		if v.Verified {
			s.m.verifications.WithLabelValues("verified").Inc()
			return
		}
		s.m.verifications.WithLabelValues("unverified").Inc()
		s.cfg.Logger.Warn("handoff not verified: the first reply does not acknowledge it (the conversation goes on)",
			"session_id", sess.ID, "handoff_id", sess.InboundHandoffID, "score", v.Score,
			"acknowledged", v.Details.OverallAcknowledgment, "identity_match", v.Details.IdentityMatch,
			"project_match", v.Details.ProjectMatch)
	}
}

// handoff is the eng_handoffs row and the handoff.created event of a fired
// exit transition, appended to emitted.
func (s *Service) handoff(sess conversation.Session, x *ExitTransition, at time.Time, emitted []event.Event) (*conversation.Handoff, []event.Event, error) {
	payload, err := x.Payload()
	if err != nil {
		return nil, nil, events.Permanent(err)
	}
	row := &conversation.Handoff{ID: x.HandoffID, TenantID: sess.TenantID, ProjectID: sess.ProjectID,
		SourceEngineID: sess.EngineID, SourceSessionID: sess.ID, TargetEngineID: x.TargetEngine,
		TargetSessionID: x.TargetSessionID, Payload: payload, TransitionReason: x.Reason, CreatedAt: at.UTC()}
	ev, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(x.HandoffID, "created"), Source: source, Time: at},
		contracts.HandoffCreated{TenantID: sess.TenantID, HandoffID: x.HandoffID, ProjectID: sess.ProjectID,
			SourceEngineID: sess.EngineID, SourceSessionID: sess.ID, TargetEngineID: x.TargetEngine,
			TargetSessionID: x.TargetSessionID, Payload: payload})
	if err != nil {
		return nil, nil, events.Permanent(err)
	}
	return row, append(emitted, ev), nil
}

// DispatchEventID is the id of a task attempt's task.dispatched event.
func DispatchEventID(sessionID, taskID string, attempt int) string {
	return events.DeriveID(sessionID, fmt.Sprintf("task/%s/%d", taskID, attempt))
}

func (s *Service) dispatchEvent(sess conversation.Session, d TaskDispatch, at time.Time) (event.Event, error) {
	// The workers and runner-deadlines give up on the attempt twice its
	// timeout after it could start (whenOverdue): a worker that takes it
	// later leaves it, its answer being of no use. It cannot start before
	// it is dispatched, now, which is later than at when the runner takes
	// a turn late (a backlog): the attempt still gets its whole time.
	var deadline time.Time
	if d.Timeout > 0 {
		from := at
		for _, t := range []time.Time{s.cfg.Now(), d.NotBefore} {
			if t.After(from) {
				from = t
			}
		}
		deadline = from.Add(2 * d.Timeout)
	}
	ev, err := contracts.NewEvent(contracts.Meta{ID: DispatchEventID(sess.ID, d.TaskID, d.Attempt), Source: source, Time: at},
		contracts.TaskDispatched{TenantID: sess.TenantID, TaskID: d.TaskID, Kind: TaskKind, Handler: d.Handler,
			OwnerID: sess.ID, Attempt: d.Attempt, Timeout: d.Timeout, NotBefore: d.NotBefore, Deadline: deadline, Input: d.Input})
	if err != nil {
		return event.Event{}, events.Permanent(err)
	}
	return ev, nil
}

// merge handles a task.returned: the outcome merges into working memory
// (Runner.Merge); the new state, a task.merged for the gateway and the
// replay, the attempts to dispatch (a retry) and the result forwarded to
// the handoff's target session (when the session has handed off) commit
// together. An outcome the session no longer waits for changes nothing.
func (s *Service) merge(ctx context.Context, ev event.Event) (delivery.Step, error) {
	tr, err := contracts.DecodeAs[contracts.TaskReturned](ev)
	if err != nil {
		return nil, err
	}
	sess, def, mem, err := s.load(ctx, ev, tr.TenantID, tr.SessionID, "task "+tr.TaskID)
	if tr.FromSessionID != "" && errors.Is(err, store.ErrNotFound) {
		// The handoff's target session is being started (runner-handoffs):
		// the result waits for it, keeping its place in the session's order.
		return nil, fmt.Errorf("runner: task %s forwarded from session %s to session %s, not started yet",
			tr.TaskID, tr.FromSessionID, tr.SessionID)
	}
	if err != nil {
		return nil, err
	}
	mg, err := s.runner.Merge(def, mem, OutcomeOf(*tr))
	if err != nil {
		return nil, events.Permanent(err)
	}
	if !mg.Applied {
		s.m.merged.WithLabelValues(contracts.TaskStatusIgnored).Inc()
		s.cfg.Logger.Info("task outcome ignored: the session does not wait for it", "session_id", sess.ID,
			"task_id", tr.TaskID, "attempt", tr.Attempt)
		return func(context.Context, store.Querier) ([]event.Event, error) { return nil, nil }, nil
	}
	state, err := json.Marshal(mg.State)
	if err != nil {
		return nil, events.Permanent(err)
	}
	sb, err := json.Marshal(mg.Sidebar)
	if err != nil {
		return nil, events.Permanent(err)
	}
	at := cmp.Or(tr.ReturnedAt, ev.Time())
	merged, err := contracts.NewEvent(contracts.Meta{ID: mergedEventID(ev.ID()), Source: source, Time: at},
		contracts.TaskMerged{TenantID: sess.TenantID, SessionID: sess.ID, TaskID: tr.TaskID, Attempt: tr.Attempt,
			Status: mg.Status, Note: mg.Note, Sidebar: sb, StateHash: mg.StateHash, EngineVersion: def.Version,
			EngineDigest: def.Digest()})
	if err != nil {
		return nil, events.Permanent(err)
	}
	emitted := []event.Event{merged}
	for _, d := range mg.Tasks {
		dev, err := s.dispatchEvent(sess, d, at)
		if err != nil {
			return nil, err
		}
		emitted = append(emitted, dev)
	}
	if f := mg.Forward; f != nil {
		o := f.Outcome
		fev, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(ev.ID(), "forwarded"), Source: source, Time: at},
			contracts.TaskReturned{TenantID: sess.TenantID, SessionID: f.SessionID, TaskID: o.TaskID, Attempt: o.Attempt,
				Completed: true, Output: o.Output, ReturnedAt: at, FromSessionID: o.From})
		if err != nil {
			return nil, events.Permanent(err)
		}
		emitted = append(emitted, fev)
	}
	sess.State, sess.StateHash, sess.Sidebar = state, mg.StateHash, sb
	sess.Completeness, sess.UpdatedAt = mg.State.Completeness.Overall, s.cfg.Now().UTC()
	return func(ctx context.Context, tx store.Querier) ([]event.Event, error) {
		if err := conversation.SaveSession(ctx, tx, sess); err != nil {
			return nil, err
		}
		s.m.merged.WithLabelValues(mg.Status).Inc()
		s.m.dispatched.Add(float64(len(mg.Tasks)))
		if f := mg.Forward; f != nil {
			s.cfg.Logger.Info("task result forwarded to the session the conversation went on in", "session_id", sess.ID,
				"task_id", tr.TaskID, "target_session_id", f.SessionID)
		}
		return emitted, nil
	}, nil
}

// errNotOverdue puts back the dispatch of an attempt that may still be
// answered.
var errNotOverdue = errors.New("runner: the task attempt may still be answered")

// whenOverdue passes on a session's task.dispatched once its attempt is
// overdue: at the deadline the dispatch carries (dispatchEvent), the one a
// background worker keeps too, so the session gives up on the attempt when
// no worker will start it any more, however long the dispatch waited to be
// published or redriven. A dispatch from before the deadline was carried is
// overdue twice its timeout after it could start (its not_before, or when
// the stream took it). Until then the dispatch goes back to the stream,
// which delivers it again when it is due, to whichever replica is free: the
// watch is durable, and needs no turn. An attempt without a timeout is
// never overdue.
func (s *Service) whenOverdue(h events.Handler) events.Handler {
	return func(ctx context.Context, ev event.Event) error {
		td, err := contracts.DecodeAs[contracts.TaskDispatched](ev)
		if err != nil {
			return err
		}
		if td.Kind != TaskKind || td.Timeout <= 0 {
			return nil
		}
		deadline := td.Deadline
		if deadline.IsZero() {
			from := ev.Time()
			if d, ok := events.DeliveryFrom(ctx); ok && !d.Timestamp.IsZero() {
				from = d.Timestamp
			}
			if td.NotBefore.After(from) {
				from = td.NotBefore
			}
			deadline = from.Add(2 * td.Timeout)
		}
		if wait := deadline.Sub(s.cfg.Now()); wait > 0 {
			return events.Postpone(errNotOverdue, wait)
		}
		return h(ctx, ev)
	}
}

// expire gives up on an overdue attempt that its session still waits for:
// a failure goes to the session's order as a task.returned, merged like a
// worker's (Runner.Merge), so the task's strategy decides what follows and
// a replay folds it where the live run did. An attempt answered or
// replaced meanwhile, or one of a session that has handed off (whose
// result the target session may still use), is left alone. Two replicas
// giving up on one attempt emit one event (its id is derived), and the
// session merges the failure of an attempt once.
func (s *Service) expire(ctx context.Context, tx store.Querier, ev event.Event) ([]event.Event, error) {
	td, err := contracts.DecodeAs[contracts.TaskDispatched](ev)
	if err != nil {
		return nil, err
	}
	sess, err := conversation.GetSession(ctx, tx, td.TenantID, td.OwnerID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var mem engine.WorkingMemory
	if err := fastjson.Unmarshal(sess.State, &mem); err != nil {
		return nil, events.Permanent(fmt.Errorf("session %s: working memory: %w", sess.ID, err))
	}
	if mem.Exit != nil || !slices.ContainsFunc(mem.BackgroundTasks.Pending, func(r engine.TaskRecord) bool {
		return r.TaskID == td.TaskID && r.Attempt == td.Attempt
	}) {
		return nil, nil
	}
	now := s.cfg.Now().UTC()
	out, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(ev.ID(), "overdue"), Source: source, Time: now},
		contracts.TaskReturned{TenantID: td.TenantID, SessionID: td.OwnerID, TaskID: td.TaskID, Attempt: td.Attempt,
			Error:      fmt.Sprintf("no answer from the background workers in time (twice the attempt's timeout of %s)", td.Timeout),
			ReturnedAt: now})
	if err != nil {
		return nil, events.Permanent(err)
	}
	s.cfg.Logger.Warn("background task attempt overdue: given up on", "session_id", sess.ID, "task_id", td.TaskID,
		"attempt", td.Attempt, "timeout", td.Timeout)
	return []event.Event{out}, nil
}

// sessionTasks passes on the answers to the sessions' background tasks
// only: the workflow runs' answers on the same subjects are the
// orchestrator's, and need no inbox row here.
func (s *Service) sessionTasks(h events.Handler) events.Handler {
	return func(ctx context.Context, ev event.Event) error {
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(ev.Data(), &kind); err == nil && kind.Kind != TaskKind {
			return nil
		}
		return h(ctx, ev)
	}
}

// route hands a background worker's answer to its session's order as a
// task.returned; answers to other owners' tasks (workflow runs) are left to
// their consumers.
func (s *Service) route(_ context.Context, _ store.Querier, ev event.Event) ([]event.Event, error) {
	p, err := contracts.Decode(ev)
	if err != nil {
		return nil, err
	}
	var tr contracts.TaskReturned
	switch a := p.(type) {
	case *contracts.TaskCompleted:
		if a.Kind != TaskKind {
			return nil, nil
		}
		tr = contracts.TaskReturned{TenantID: a.TenantID, SessionID: a.OwnerID, TaskID: a.TaskID, Attempt: a.Attempt,
			Completed: true, Output: a.Output}
	case *contracts.TaskFailed:
		if a.Kind != TaskKind {
			return nil, nil
		}
		tr = contracts.TaskReturned{TenantID: a.TenantID, SessionID: a.OwnerID, TaskID: a.TaskID, Attempt: a.Attempt,
			Error: a.Error, Permanent: a.Permanent}
	default:
		return nil, nil
	}
	tr.ReturnedAt = ev.Time().UTC()
	out, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(ev.ID(), "returned"), Source: source, Time: ev.Time()}, tr)
	if err != nil {
		return nil, events.Permanent(err)
	}
	return []event.Event{out}, nil
}

// startTarget handles a handoff.created: it starts the target engine's
// session, holding the handoff in its working memory, and publishes its
// session.started (with the handoff, so a replay of the session starts it
// the same way). A session already started is left as it is.
func (s *Service) startTarget(ctx context.Context, ev event.Event) (delivery.Step, error) {
	hc, err := contracts.DecodeAs[contracts.HandoffCreated](ev)
	if err != nil {
		return nil, err
	}
	eh, err := hc.Handoff()
	if err != nil {
		return nil, events.Permanent(err)
	}
	def, ok := s.cfg.Engines.Get(hc.TargetEngineID)
	if !ok {
		return nil, events.Permanent(fmt.Errorf("handoff %s targets engine %q, which is not loaded", hc.HandoffID, hc.TargetEngineID))
	}
	at := ev.Time().UTC()
	started := contracts.SessionStarted{TenantID: hc.TenantID, SessionID: hc.TargetSessionID, ProjectID: hc.ProjectID,
		EngineID: def.EngineID, EngineVersion: def.Version, MemoryVersion: engine.MemorySchemaVersion, InboundHandoffID: hc.HandoffID, InboundHandoff: &eh, StartedAt: at}
	mem, err := StartMemory(def, started)
	if err != nil {
		return nil, events.Permanent(err)
	}
	state, err := json.Marshal(mem)
	if err != nil {
		return nil, events.Permanent(err)
	}
	hash, err := engine.StateHash(mem)
	if err != nil {
		return nil, events.Permanent(err)
	}
	sb, err := json.Marshal(sidebar.Build(def, mem, s.runner.cfg.Registry))
	if err != nil {
		return nil, events.Permanent(err)
	}
	sess := conversation.Session{ID: hc.TargetSessionID, TenantID: hc.TenantID, ProjectID: hc.ProjectID, EngineID: def.EngineID,
		EngineVersion: def.Version, Status: conversation.StatusActive, Phase: mem.Phase.Current, State: state, StateHash: hash,
		Sidebar: sb, InboundHandoffID: hc.HandoffID, CreatedAt: at, UpdatedAt: at}
	out, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(hc.HandoffID, "target-started"), Source: source, Time: at}, started)
	if err != nil {
		return nil, events.Permanent(err)
	}
	return func(ctx context.Context, tx store.Querier) ([]event.Event, error) {
		switch _, err := conversation.GetSession(ctx, tx, hc.TenantID, hc.TargetSessionID); {
		case err == nil:
			return nil, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		if err := conversation.CreateSession(ctx, tx, sess); err != nil {
			return nil, err
		}
		s.cfg.Logger.Info("session started from a handoff", "session_id", sess.ID, "engine_id", def.EngineID,
			"handoff_id", hc.HandoffID, "source_session_id", hc.SourceSessionID)
		return []event.Event{out}, nil
	}, nil
}
