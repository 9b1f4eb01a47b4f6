package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

var errStoreDown = errors.New("store down")

// outage is the runner's store while it is down: its first failures
// statements and transactions fail, then it answers again.
type outage struct {
	store.DB
	mu       sync.Mutex
	failures int
}

func (o *outage) down() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failures == 0 {
		return nil
	}
	o.failures--
	return errStoreDown
}

func (o *outage) left() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failures
}

func (o *outage) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := o.down(); err != nil {
		return 0, err
	}
	return o.DB.Exec(ctx, query, args...)
}

func (o *outage) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	if err := o.down(); err != nil {
		return nil, err
	}
	return o.DB.Query(ctx, query, args...)
}

func (o *outage) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if err := o.down(); err != nil {
		return failedRow{err}
	}
	return o.DB.QueryRow(ctx, query, args...)
}

func (o *outage) Tx(ctx context.Context, fn func(tx store.Querier) error) error {
	if err := o.down(); err != nil {
		return err
	}
	return o.DB.Tx(ctx, fn)
}

type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// quickRetries is the bench's bus with the deadlines consumer's redelivery
// backoff shortened from seconds to milliseconds, so that a test goes
// through many failed deliveries quickly.
type quickRetries struct{ *events.Bus }

func (q quickRetries) Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error) {
	if cfg.Name == ConsumerDeadlines {
		cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 5*time.Millisecond
	}
	return q.Bus.Subscribe(ctx, cfg, h)
}

// deadlinesService starts the runner service on the bench with db for its
// store and bus for its consumers.
func deadlinesService(t *testing.T, rig *runnertest.Rig, db store.DB, bus Subscriber) {
	t.Helper()
	r, err := New(Config{LLM: fixed("Go on."), Registry: rig.Registry, Logger: rig.Logger})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(ServiceConfig{DB: db, Bus: bus, Relay: rig.Relay, Engines: rig.Engines, Runner: r,
		Logger: rig.Logger, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
}

// dispatchOf is the dispatch of a session's landscape research, made at
// `at` with timeout, carrying the deadline the runner gives it
// (dispatchEvent): twice the timeout after `at`.
func dispatchOf(sid string, at time.Time, timeout time.Duration) contracts.TaskDispatched {
	return contracts.TaskDispatched{TenantID: runnertest.Tenant, TaskID: "landscape_research", Kind: TaskKind,
		Handler: "research.solution_landscape", OwnerID: sid, Attempt: 1, Timeout: timeout, Deadline: at.Add(2 * timeout)}
}

// overdueDispatch is the dispatch of a session's landscape research, whose
// attempt is overdue a moment after it is published.
func overdueDispatch(sid string) contracts.TaskDispatched {
	return dispatchOf(sid, time.Now(), time.Millisecond)
}

// An overdue attempt whose session cannot be read, the store being down,
// is given up on once the store is back, however many deliveries the
// outage took: the watch over it is not dead-lettered. A dispatch that can
// never be handled (it breaks its contract) is dead-lettered, with why.
func TestDeadlineOutlastsAStoreOutage(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	sid := pendingSession(t, rig, "outage")
	const failures = 15 // deliveries, each failing on its first statement: more than the 10 the consumer once had
	db := &outage{DB: rig.DB, failures: failures}
	deadlinesService(t, rig, db, quickRetries{rig.Bus})

	bad := runnertest.Event(t, "bad-dispatch", time.Now(), overdueDispatch("elsewhere"))
	if err := bad.SetData("application/json", map[string]any{"tenant_id": runnertest.Tenant, "kind": TaskKind}); err != nil {
		t.Fatal(err)
	}
	if err := rig.Bus.Publish(t.Context(), bad); err != nil {
		t.Fatal(err)
	}
	rig.Publish(t, "outage-dispatch", time.Now(), overdueDispatch(sid))

	var rec engine.TaskRecord
	var dls []events.DeadLetter
	// The bad dispatch's dead letter is published on its own schedule: wait
	// for it too, not only for the attempt given up on.
	runnertest.WaitFor(t, 30*time.Second, "the attempt given up on and the bad dispatch dead-lettered", func() bool {
		_, m := rig.Session(t, sid)
		rec, _ = m.BackgroundTasks.Task("landscape_research")
		dls = eventstest.DeadLetters(t, rig.Bus, contracts.StreamTasks, ConsumerDeadlines)
		return (!m.BackgroundTasks.IsPending("landscape_research") && len(dls) > 0) || len(dls) > 1
	})
	if rec.Status != engine.TaskDegraded || !strings.Contains(rec.Error, "no answer") {
		t.Errorf("record after the outage = %+v, want degraded for want of an answer", rec)
	}
	if db.left() != 0 {
		t.Errorf("the outage has %d of its %d failures left; the test did not go through it", db.left(), failures)
	}
	if len(dls) != 1 || dls[0].EventID != "bad-dispatch" || dls[0].Cause != events.CausePermanent ||
		!strings.Contains(dls[0].Reason, "owner_id") {
		for _, dl := range dls {
			t.Errorf("dead letter: %s (%s): %s", dl.EventID, dl.Cause, dl.Reason)
		}
		t.Errorf("%d dead letters, want the bad dispatch's alone, naming its contract", len(dls))
	}
}

// Every attempt in flight holds its dispatch on the deadlines consumer
// until it is overdue, however many there are: an attempt due soon is
// given up on in time behind more than the 512 the consumer once held,
// each waiting for a deadline an hour or two away.
func TestDeadlineBehindManyAttemptsInFlight(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	sid := pendingSession(t, rig, "behind-many")
	deadlinesService(t, rig, rig.DB, quickRetries{rig.Bus})
	const inFlight = 600
	var evs []event.Event
	for i := range inFlight {
		now := time.Now()
		evs = append(evs, runnertest.Event(t, fmt.Sprintf("in-flight-%d", i), now, dispatchOf(fmt.Sprintf("waiting-%d", i), now, time.Hour)))
	}
	if err := rig.Bus.PublishBatch(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	rig.Publish(t, "due-soon", time.Now(), overdueDispatch(sid))
	runnertest.WaitFor(t, 30*time.Second, "the attempt due soon given up on", func() bool {
		_, m := rig.Session(t, sid)
		return !m.BackgroundTasks.IsPending("landscape_research")
	})
}

// failFirst is the bench's bus with the deadlines consumer refusing, for
// good, the first delivery of the dispatch with id: it is dead-lettered,
// as a handler's panic would have it.
type failFirst struct {
	*events.Bus
	id string
}

func (f failFirst) Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error) {
	if cfg.Name != ConsumerDeadlines {
		return f.Bus.Subscribe(ctx, cfg, h)
	}
	return f.Bus.Subscribe(ctx, cfg, func(ctx context.Context, ev event.Event) error {
		if d, _ := events.DeliveryFrom(ctx); ev.ID() == f.id && !d.Redriven {
			return events.Permanent(errors.New("a bug, since mended"))
		}
		return h(ctx, ev)
	})
}

// A dispatch dead-lettered off the deadlines consumer and redriven once its
// cause is mended keeps the deadline it was dispatched with, not one counted
// from the redrive: an attempt dispatched an hour ago with a ten-minute
// timeout is given up on at once.
func TestRedrivenDeadlineCountsFromTheDispatch(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	sid := pendingSession(t, rig, "redriven")
	deadlinesService(t, rig, rig.DB, failFirst{rig.Bus, "redriven-dispatch"})
	// A redrive within the stream's duplicate window is dropped as a copy:
	// the window is cut to a second, the redrive tried until it is past.
	js, err := jetstream.New(rig.Conn)
	if err != nil {
		t.Fatal(err)
	}
	tasksStream, err := js.Stream(t.Context(), contracts.StreamTasks)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tasksStream.CachedInfo().Config
	cfg.Duplicates = time.Second
	if _, err := js.UpdateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}

	dispatched := time.Now().Add(-time.Hour)
	rig.Publish(t, "redriven-dispatch", dispatched, dispatchOf(sid, dispatched, 10*time.Minute))
	var seq uint64
	runnertest.WaitFor(t, 30*time.Second, "the dispatch dead-lettered", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_ = rig.Bus.Replay(ctx, events.ReplayConfig{Stream: events.DeadLetterStream,
			Subjects: []string{events.DeadLetterSubject(contracts.StreamTasks, ConsumerDeadlines)}}, func(r events.Record) error {
			if dl, err := events.AsDeadLetter(r.Event); err == nil && dl.EventID == "redriven-dispatch" {
				seq = r.StreamSeq
			}
			return nil
		})
		return seq > 0
	})
	runnertest.WaitFor(t, 30*time.Second, "the dispatch redriven past the duplicate window", func() bool {
		r, err := rig.Bus.Redrive(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		return !r.Duplicate
	})
	var rec engine.TaskRecord
	runnertest.WaitFor(t, 30*time.Second, "the redriven attempt given up on", func() bool {
		_, m := rig.Session(t, sid)
		rec, _ = m.BackgroundTasks.Task("landscape_research")
		return !m.BackgroundTasks.IsPending("landscape_research")
	})
	if rec.Status != engine.TaskDegraded || !strings.Contains(rec.Error, "no answer") {
		t.Errorf("record = %+v, want degraded for want of an answer", rec)
	}
}

// firstAnswers is the bench's bus noting what the deadlines consumer's
// handler answered to each dispatch's first delivery.
type firstAnswers struct {
	*events.Bus
	mu  sync.Mutex
	got map[string]error
}

func (f *firstAnswers) Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error) {
	if cfg.Name != ConsumerDeadlines {
		return f.Bus.Subscribe(ctx, cfg, h)
	}
	return f.Bus.Subscribe(ctx, cfg, func(ctx context.Context, ev event.Event) error {
		err := h(ctx, ev)
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.got[ev.ID()]; !ok {
			f.got[ev.ID()] = err
		}
		return err
	})
}

// answer is what the handler answered to the first delivery of the
// dispatch with id, and whether it has answered yet.
func (f *firstAnswers) answer(id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err, ok := f.got[id]
	return ok, err
}

// An attempt is given up on at the deadline its dispatch carries, the one
// the background workers keep, however far that lies from when the stream
// took the dispatch: a deadline already past when the dispatch is published
// (it waited in the runner's outbox, or its turn in a backlog) is given up
// on at once, where it waited twice its timeout more for an answer no
// worker would give; one ahead is waited for, whenever the dispatch says it
// was made. A dispatch from before dispatches carried their deadline waits
// twice its timeout from when the stream took it.
func TestDeadlineIsTheOneTheDispatchCarries(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	bus := &firstAnswers{Bus: rig.Bus, got: map[string]error{}}
	deadlinesService(t, rig, rig.DB, bus)
	now := time.Now()
	for _, tc := range []struct {
		name     string
		at       time.Time // the dispatch's time
		timeout  time.Duration
		deadline time.Time
		// wait is how long the first delivery is put back for, about; zero
		// when the attempt is given up on at once.
		wait time.Duration
	}{
		{"past-when-published", now, 10 * time.Minute, now.Add(-time.Second), 0},
		{"ahead-of-an-old-dispatch", t0, time.Millisecond, now.Add(time.Hour), time.Hour},
		{"none-on-an-old-dispatch", now.Add(-time.Hour), 10 * time.Minute, time.Time{}, 20 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := pendingSession(t, rig, tc.name)
			d := dispatchOf(sid, tc.at, tc.timeout)
			d.Deadline = tc.deadline
			rig.Publish(t, tc.name, tc.at, d)
			var err error
			runnertest.WaitFor(t, 30*time.Second, "the first delivery handled", func() bool {
				var ok bool
				ok, err = bus.answer(tc.name)
				return ok
			})
			if tc.wait == 0 {
				if err != nil {
					t.Fatalf("first delivery: %v, want the attempt given up on", err)
				}
				runnertest.WaitFor(t, 30*time.Second, "the attempt given up on", func() bool {
					_, m := rig.Session(t, sid)
					return !m.BackgroundTasks.IsPending("landscape_research")
				})
				return
			}
			var re *events.RetryError
			if !errors.As(err, &re) || !re.Scheduled || re.After > tc.wait || re.After < tc.wait-time.Minute {
				t.Errorf("first delivery: %v, want it put back for about %s", err, tc.wait)
			}
			if _, m := rig.Session(t, sid); !m.BackgroundTasks.IsPending("landscape_research") {
				t.Errorf("the attempt was given up on before its deadline: %+v", m.BackgroundTasks)
			}
		})
	}
}
