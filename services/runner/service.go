package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Consumer is the durable consumer (service role) of the runner.
const Consumer = "runner"

const source = "/praetor/runner"

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
	// Now stamps the rows the service writes. Default: time.Now. (The turn's
	// own time is the turn.extracted event's.)
	Now func() time.Time
}

// Service consumes turn.extracted, runs the rest of the turn and publishes
// turn.responded. A session's turns are handled one at a time in order; the
// new state, the reply, the checkpoints and the turn.responded event commit
// with the inbox row, so a redelivered turn is answered once.
type Service struct {
	cfg      ServiceConfig
	inbox    *delivery.Inbox
	sub      *events.Subscription
	answered prometheus.Counter
	degraded prometheus.Counter
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
	in, err := delivery.NewInbox(delivery.InboxConfig{DB: cfg.DB, Encoder: cfg.Bus, Consumer: Consumer, Relay: cfg.Relay, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, inbox: in,
		answered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "praetor_turns_answered_total", Help: "Turns the runner answered."}),
		degraded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "praetor_responses_degraded_total",
			Help: "Turns answered with the fallback reply because response generation failed."}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.answered, s.degraded} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Start subscribes to turn.extracted.
func (s *Service) Start(ctx context.Context) error {
	sub, err := s.cfg.Bus.Subscribe(ctx, events.ConsumerConfig{
		Stream: contracts.StreamTurns, Name: Consumer, Keyed: true,
		Subjects:       []string{contracts.TurnExtractedSpec.FilterSubject()},
		HandlerTimeout: 5 * time.Minute, AckWait: s.cfg.AckWait,
	}, s.inbox.Handler(s.work))
	if err != nil {
		return err
	}
	s.sub = sub
	return nil
}

// Stop drains the consumer.
func (s *Service) Stop(ctx context.Context) error {
	if s.sub == nil {
		return nil
	}
	return s.sub.Stop(ctx)
}

func (s *Service) work(ctx context.Context, ev event.Event) (delivery.Step, error) {
	te, err := contracts.DecodeAs[contracts.TurnExtracted](ev)
	if err != nil {
		return nil, err
	}
	sess, err := conversation.GetSession(ctx, s.cfg.DB, te.TenantID, te.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, events.Permanent(fmt.Errorf("turn %s names unknown session %s", te.TurnID, te.SessionID))
	}
	if err != nil {
		return nil, err
	}
	def, ok := s.cfg.Engines.Get(sess.EngineID)
	if !ok {
		return nil, events.Permanent(fmt.Errorf("session %s runs engine %q, which is not loaded", sess.ID, sess.EngineID))
	}
	var mem engine.WorkingMemory
	if err := json.Unmarshal(sess.State, &mem); err != nil {
		return nil, events.Permanent(fmt.Errorf("session %s: working memory: %w", sess.ID, err))
	}
	in, err := FromContract(*te, sess.ProjectID)
	if err != nil {
		return nil, events.Permanent(err)
	}
	in.Now = ev.Time()
	// Every model call of the turn (reply, summary) belongs to the session.
	ctx = llm.WithOwner(ctx, te.TenantID, te.SessionID)
	res, err := s.cfg.Runner.Process(ctx, def, &mem, in)
	switch {
	case errors.Is(err, ErrDuplicateTurn):
		return func(context.Context, store.Querier) ([]event.Event, error) { return nil, nil }, nil
	case errors.Is(err, ErrTurnGap):
		return nil, err // an earlier turn is still on its way; retried, then dead-lettered
	case err != nil && ctx.Err() == nil:
		return nil, events.Permanent(err)
	case err != nil:
		return nil, err
	}
	return s.commit(sess, te, res)
}

// commit is the step that persists a processed turn.
func (s *Service) commit(sess conversation.Session, te *contracts.TurnExtracted, res *Result) (delivery.Step, error) {
	now := s.cfg.Now().UTC()
	state, err := json.Marshal(res.State)
	if err != nil {
		return nil, events.Permanent(err)
	}
	sidebar, err := json.Marshal(res.Sidebar)
	if err != nil {
		return nil, events.Permanent(err)
	}
	payload, err := res.Responded(te.TenantID, te.TurnID)
	if err != nil {
		return nil, events.Permanent(err)
	}
	out, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(te.TurnID, "responded"), Source: source,
		Time: res.ProcessedAt}, payload)
	if err != nil {
		return nil, events.Permanent(err)
	}
	sess.State, sess.StateHash, sess.Sidebar = state, res.StateHash, sidebar
	sess.Phase, sess.Completeness, sess.TurnCount, sess.UpdatedAt = res.Phase, res.Completeness.Overall, res.State.TurnNumber, now
	turn := conversation.Turn{ID: te.TurnID, TenantID: te.TenantID, SessionID: sess.ID, TurnNumber: res.State.TurnNumber,
		Reply: res.Reply, Phase: res.Phase, Completeness: res.Completeness.Overall, Sidebar: sidebar,
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
		s.answered.Inc()
		if res.Degraded {
			s.degraded.Inc()
		}
		return []event.Event{out}, nil
	}, nil
}
