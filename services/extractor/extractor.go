// Package extractor is the extractor service: it consumes turn.received,
// runs the per-turn extraction of the session's engine (steps 2-3 of the
// seed's runner), keeps the session's extraction state and its audit log,
// and publishes turn.extracted for the runner. The state records the
// version of the extraction prompt the session started with, which it keeps
// (extraction.State).
//
// Turns of one session are handled one at a time and in order (a keyed
// consumer on the session); the state, the log rows and the turn.extracted
// event commit in one transaction with the inbox row, so a redelivered turn
// is extracted once. The model call happens before the transaction. An
// answer that does not parse is re-asked with the error and then degraded:
// nothing is updated, and the turn still goes on to be answered.
package extractor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Consumer is the durable consumer (service role) of the extractor.
const Consumer = "extractor"

const source = "/praetor/extractor"

// Subscriber starts consumers; *events.Bus is one.
type Subscriber interface {
	Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error)
	delivery.Encoder
}

// Config configures the service.
type Config struct {
	DB      store.DB
	Bus     Subscriber
	Relay   *delivery.Relay
	Engines *engine.Catalog
	// LLM answers the extraction prompts (the node's recorded client).
	LLM    extraction.Completer
	Logger *slog.Logger
	// Registerer receives the service's metrics.
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
	// PromptVersion is the newest extraction prompt version the service
	// runs: new sessions start with it, and the turns of a session started
	// with a later one (by a newer replica, an upgrade rolling out) are left
	// to a replica that knows it. Default: extraction.CurrentPromptVersion.
	PromptVersion extraction.PromptVersion
	// Now is the clock of the events and rows it writes. Default: time.Now.
	Now func() time.Time
}

// Service is the extractor.
type Service struct {
	cfg      Config
	pipeline *extraction.Pipeline
	inbox    *delivery.Inbox
	sub      *events.Subscription
	degraded prometheus.Counter
}

// New returns the service; Start subscribes it.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Bus == nil || cfg.Engines == nil || cfg.LLM == nil {
		return nil, errors.New("extractor: DB, Bus, Engines and LLM are required")
	}
	cfg.PromptVersion = cmp.Or(cfg.PromptVersion, extraction.CurrentPromptVersion)
	if cfg.PromptVersion < extraction.PromptV1 || cfg.PromptVersion > extraction.CurrentPromptVersion {
		return nil, fmt.Errorf("extractor: prompt version %d is not one of 1 to %d", cfg.PromptVersion, extraction.CurrentPromptVersion)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := extraction.New(extraction.Config{LLM: cfg.LLM, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	in, err := delivery.NewInbox(delivery.InboxConfig{DB: cfg.DB, Encoder: cfg.Bus, Consumer: Consumer, Relay: cfg.Relay, Now: cfg.Now,
		CheckInWork: true})
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, pipeline: p, inbox: in, degraded: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "praetor_extractions_degraded_total",
		Help: "Turns whose extraction answer could not be used after re-asking: nothing updated, the turn still answered.",
	})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.degraded); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start subscribes to turn.received.
func (s *Service) Start(ctx context.Context) error {
	cfg := events.ConsumerConfig{
		Stream: contracts.StreamTurns, Name: Consumer, Keyed: true,
		Subjects: []string{contracts.TurnReceivedSpec.FilterSubject()},
		// A model call may take a while; the consumer keeps the turn alive.
		HandlerTimeout: 5 * time.Minute, AckWait: s.cfg.AckWait,
		// A turn of a session that a newer replica started may come to older
		// ones, which pass it on (work).
		MaxDeliver: events.PassOnDeliveries, BackoffMax: events.PassOnBackoffMax,
		// A database outage pauses the consumer rather than use them up.
		Unavailable: s.cfg.Unavailable,
	}
	if cfg.Unavailable != nil {
		cfg.Probe = s.cfg.DB.Ping
	}
	sub, err := s.cfg.Bus.Subscribe(ctx, cfg, s.inbox.Handler(s.work))
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

// work extracts a turn and returns the step that commits it.
func (s *Service) work(ctx context.Context, ev event.Event) (delivery.Step, error) {
	turn, err := contracts.DecodeAs[contracts.TurnReceived](ev)
	if err != nil {
		return nil, err
	}
	// One read: the session, its extraction state, and the inbox look-up.
	sess, st, handled, err := conversation.GetSessionExtraction(ctx, s.cfg.DB, turn.TenantID, turn.SessionID, Consumer, ev.ID())
	switch {
	case err == nil && handled:
		return nil, delivery.ErrHandled
	case errors.Is(err, store.ErrNotFound):
		return nil, events.Permanent(fmt.Errorf("turn %s names unknown session %s", turn.TurnID, turn.SessionID))
	case err != nil:
		return nil, err
	}
	def, ok := s.cfg.Engines.Get(sess.EngineID)
	if !ok {
		return nil, events.Permanent(fmt.Errorf("session %s runs engine %q, which is not loaded", sess.ID, sess.EngineID))
	}
	// The session's state holds the prompt version it started with, which
	// it keeps (a state from before versions were recorded: PromptV1).
	state, err := extraction.DecodeState(st.Extraction, s.cfg.PromptVersion)
	switch {
	case errors.Is(err, extraction.ErrNewerPromptVersion):
		// A newer replica started the session: put back, for one that
		// knows its version (an upgrade rolling out), and dead-lettered
		// when none has taken it by the last delivery.
		return nil, events.PassOn(ctx, fmt.Errorf("session %s: %w", sess.ID, err), events.PassOnDeliveries)
	case err != nil:
		return nil, events.Permanent(fmt.Errorf("session %s: extraction state: %w", sess.ID, err))
	}
	// The runner's memory gives the conversation so far and the obligation
	// its last reply asked about; only those two are decoded.
	var mem memoryView
	if err := fastjson.Unmarshal(sess.State, &mem); err != nil {
		return nil, events.Permanent(fmt.Errorf("session %s: working memory: %w", sess.ID, err))
	}
	number := st.TurnNumber + 1
	meta := extraction.Meta{SessionID: sess.ID, ProjectID: sess.ProjectID, MessageID: turn.TurnID,
		EngineID: def.EngineID, TurnNumber: number, PromptVersion: state.PromptVersion}
	ctx = llm.WithWork(llm.WithOwner(ctx, turn.TenantID, sess.ID), "turn/"+turn.TurnID)
	res, err := s.pipeline.Extract(ctx, extraction.Request{Def: def, Current: state.Extraction, Message: turn.Message,
		History: mem.History, Focus: mem.Obligations.Focus, Meta: meta, TenantID: turn.TenantID, Scope: sess.ID})
	if err != nil {
		if errors.Is(err, extraction.ErrEmptyMessage) {
			return nil, events.Permanent(err)
		}
		return nil, err
	}
	if res.Degraded {
		s.degraded.Inc()
	}
	now := s.cfg.Now().UTC()
	payload, err := res.Contract(turn.TenantID, turn.SessionID, turn.TurnID, number, turn.Message)
	if err != nil {
		return nil, events.Permanent(err)
	}
	// The runner bounds the reply's model call by what is left of the
	// turn's budget, counted from when the gateway received it.
	payload.ReceivedAt = turn.ReceivedAt.UTC()
	// The state saved is the one published: kilobytes of JSON just encoded,
	// which go into the event as they are.
	extracted := payload.Extraction
	payload.Extraction = nil
	out, err := contracts.NewEventRaw(contracts.Meta{ID: events.DeriveID(turn.TurnID, "extracted"), Source: source, Time: now},
		payload, "extraction", extracted)
	if err != nil {
		return nil, events.Permanent(err)
	}
	return func(ctx context.Context, tx store.Querier) ([]event.Event, error) {
		if err := conversation.SaveExtractionState(ctx, tx, turn.TenantID, sess.ID,
			conversation.ExtractionState{TurnNumber: number, Extraction: extracted}, now); err != nil {
			return nil, err
		}
		if err := conversation.LogExtractions(ctx, tx, logRows(turn.TenantID, now, res.Log)...); err != nil {
			return nil, err
		}
		for _, l := range res.Links {
			if err := conversation.MarkSuperseded(ctx, tx, turn.TenantID, l.EntryID, l.SupersededByEntryID); err != nil {
				return nil, err
			}
		}
		return []event.Event{out}, nil
	}, nil
}

// memoryView is the part of the runner's working memory (engine.WorkingMemory)
// the extractor reads: decoding only these fields skips the allocations of
// the rest.
type memoryView struct {
	History     []engine.Message `json:"history"`
	Obligations struct {
		Focus string `json:"focus"`
	} `json:"obligations"`
}

func logRows(tenant string, at time.Time, entries []extraction.LogEntry) []conversation.ExtractionLogEntry {
	rows := make([]conversation.ExtractionLogEntry, len(entries))
	for i, e := range entries {
		rows[i] = conversation.ExtractionLogEntry{ID: e.ID, TenantID: tenant, SessionID: e.SessionID, ProjectID: e.ProjectID,
			MessageID: e.MessageID, EngineID: e.EngineID, FieldPath: e.FieldPath, Value: e.ExtractedValue,
			Confidence: e.Confidence, Type: string(e.ExtractionType), Reasoning: e.Reasoning, TurnNumber: e.TurnNumber,
			CreatedAt: at}
	}
	return rows
}
