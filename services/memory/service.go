package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/mcpserver"
	"github.com/praetorhq/praetor/services/memory/write"
)

// Consumer is the durable consumer (service role) of the memory service.
const Consumer = "memory"

// MCPPath is where the memory service mounts its MCP endpoint on the node's
// HTTP mux.
const MCPPath = "/mcp"

// Subscriber starts consumers and encodes events; *events.Bus is one.
type Subscriber interface {
	Subscribe(ctx context.Context, cfg events.ConsumerConfig, h events.Handler) (*events.Subscription, error)
	delivery.Encoder
}

// ServiceConfig configures the memory service.
type ServiceConfig struct {
	// Memory is the graph memory the service runs. Required.
	Memory *Memory
	// Bus consumes memory.write.requested. Required.
	Bus Subscriber
	// DB holds the inbox and the outbox. Required.
	DB store.DB
	// Relay is kicked after a commit that emitted memory.written.
	Relay *delivery.Relay
	// Mux, when set, gets the streamable HTTP MCP endpoint at MCPPath.
	Mux *http.ServeMux
	// OpenTenant, when set, serves MCP requests without a token from
	// loopback as this tenant (praetor dev).
	OpenTenant string
	// AckWait is the consumer's redelivery delay after a process dies.
	// Default 30s.
	AckWait time.Duration
	// Unavailable, when set, tells the failures of DB that mean the
	// database is down (postgres.IsUnavailable): a request failing so (its
	// inbox row, governance token or pending write out of reach) pauses
	// the consumer, probing DB.Ping, rather than spend its deliveries on
	// the outage (events.ConsumerConfig.Unavailable). The graph's outage
	// needs none: a write then answers pending_retry. Default: none.
	Unavailable func(error) bool
	// Close, when set, releases at Stop what the service owns besides
	// Memory (the graph the factory opened).
	Close func(context.Context) error
	// Now is the clock of the events it emits. Default time.Now.
	Now func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Service is the memory service: it answers memory.write.requested with
// memory.written, retries pending writes in the background, and serves the
// memory tools over MCP.
type Service struct {
	cfg   ServiceConfig
	mem   *Memory
	inbox *delivery.Inbox
	mcp   *mcpserver.HTTPHandler

	mu      sync.Mutex
	sub     *events.Subscription
	stopped bool
}

// ServiceFactory is the memory service of a node. In dev its graph is
// embedded in <data-dir>/memory.db; in serve it is Neo4j at NEO4J_URI
// (NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE), read through lookup, and a
// missing NEO4J_URI is a configuration error naming it. Governance tokens
// and pending writes live in the node's relational store.
func ServiceFactory(lookup func(string) (string, bool)) node.Factory {
	return func(ctx context.Context, d node.Deps) (node.Service, error) {
		gs, err := GraphSettingsFromEnv(d.Dev, d.DataDir, lookup)
		if err != nil {
			return nil, err
		}
		g, closeGraph, err := OpenGraph(ctx, gs, d.Logger)
		if err != nil {
			return nil, fmt.Errorf("memory: open %s: %w", gs.Where(), err)
		}
		m, err := New(Config{Graph: g, DB: d.DB, Encoder: d.Bus, Relay: d.Relay, Logger: d.Logger, Registerer: d.Registerer,
			StoreFlags: StoreFlags(gs, d.DatabaseURL, d.DataDir)})
		if err == nil {
			var s *Service
			s, err = NewService(ServiceConfig{Memory: m, Bus: d.Bus, DB: d.DB, Relay: d.Relay, Mux: d.Mux,
				OpenTenant: d.DevTenant, AckWait: d.AckWait, Close: closeGraph, Logger: d.Logger,
				Unavailable: d.StoreUnavailable()})
			if err == nil {
				return s, nil
			}
		}
		_ = closeGraph(ctx)
		return nil, err
	}
}

// NewService returns the service; when cfg.Mux is set the MCP endpoint is
// mounted at once (the node serves HTTP after every service started).
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Memory == nil || cfg.Bus == nil || cfg.DB == nil {
		return nil, errors.New("memory: ServiceConfig.Memory, Bus and DB are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	in, err := delivery.NewInbox(delivery.InboxConfig{DB: cfg.DB, Encoder: cfg.Bus, Consumer: Consumer, Relay: cfg.Relay, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, mem: cfg.Memory, inbox: in}
	if cfg.Mux != nil {
		tools, err := cfg.Memory.MCP()
		if err != nil {
			return nil, err
		}
		if s.mcp, err = tools.Handler(mcpserver.HTTPConfig{Authenticate: mcpserver.StoreAuthenticator(cfg.DB, cfg.Now),
			OpenTenant: cfg.OpenTenant, Logger: cfg.Logger}); err != nil {
			return nil, err
		}
		cfg.Mux.Handle(MCPPath, s.mcp)
	}
	return s, nil
}

// Start runs the retry loop of pending writes and consumes write requests,
// one at a time per (tenant, project).
func (s *Service) Start(ctx context.Context) error {
	if err := s.mem.Start(ctx); err != nil {
		return err
	}
	cfg := events.ConsumerConfig{
		Stream: contracts.StreamMemory, Name: Consumer, Keyed: true,
		Subjects: []string{contracts.MemoryWriteRequestedSpec.FilterSubject()},
		AckWait:  s.cfg.AckWait, Validate: contracts.Validate,
		Unavailable: s.cfg.Unavailable,
	}
	if cfg.Unavailable != nil {
		cfg.Probe = s.cfg.DB.Ping
	}
	sub, err := s.cfg.Bus.Subscribe(ctx, cfg, s.inbox.Handler(s.work))
	if err != nil {
		_ = s.mem.Stop(ctx)
		return fmt.Errorf("memory: %w", err)
	}
	s.mu.Lock()
	s.sub = sub
	s.mu.Unlock()
	s.cfg.Logger.Info("memory service started", "mcp", s.mcp != nil)
	return nil
}

// Stop drains the consumer, closes MCP sessions, stops the retry loop
// (pending writes stay queued for the next process) and closes the graph.
// Calling it twice is harmless.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	sub := s.sub
	s.mu.Unlock()
	var errs []error
	if sub != nil {
		errs = append(errs, sub.Stop(ctx))
	}
	if s.mcp != nil {
		s.mcp.Close()
	}
	errs = append(errs, s.mem.Stop(ctx))
	if s.cfg.Close != nil {
		errs = append(errs, s.cfg.Close(context.WithoutCancel(ctx)))
	}
	return errors.Join(errs...)
}

// Memory is the memory the service runs.
func (s *Service) Memory() *Memory { return s.mem }

// work saves the requested node and returns the step that commits the
// answer. The save is an effect outside the transaction, like a model call
// elsewhere: a redelivery after a crash saves again, which dedup turns into
// duplicate_skip of the node the first attempt wrote — the node's id derives
// from the request id, so dedup knows it for the request's own even if
// another write superseded it in between, and leaves that write in place.
func (s *Service) work(ctx context.Context, ev event.Event) (delivery.Step, error) {
	m, err := contracts.DecodeAs[contracts.MemoryWriteRequested](ev)
	if err != nil {
		return nil, err
	}
	req := s.WriteRequest(*m)
	rc, err := s.mem.Writes.Save(ctx, req)
	var bad *write.InputError
	switch {
	case errors.As(err, &bad):
		// The request's content breaks a rule: the requester learns which.
		rc = write.Receipt{RequestID: m.RequestID, Status: write.Failed, Detail: bad.Error()}
	case err != nil:
		// The graph is unavailable and the queue refused the write: nothing
		// was kept, so the event is retried.
		return nil, err
	}
	if rc.Status == write.BlockedScope && m.ProjectID == contracts.GlobalProject && m.FromProjectID == "" {
		rc.Detail += "; a global write names the project it comes from in from_project_id"
	}
	out, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(ev.ID(), "written"), Source: source, Time: s.cfg.Now()},
		Written(req, rc))
	if err != nil {
		return nil, events.Permanent(err)
	}
	s.cfg.Logger.Debug("memory write handled", "tenant", m.TenantID, "request", m.RequestID, "status", rc.Status,
		"outcome", rc.Outcome)
	return func(context.Context, store.Querier) ([]event.Event, error) { return []event.Event{out}, nil }, nil
}

// WriteRequest maps a memory.write.requested event to a write request:
//
//   - project_id P (not "global"): a write to P, to its focus area when
//     focus names an existing one (else to P; a missing P is blocked_scope);
//   - project_id "global": a global write (Level global) coming from
//     project from_project_id, which the scope gate must resolve as any
//     other write's project (no from_project_id: unresolved, blocked_scope).
//     Its governance is the event's proof (contracts.SignMemoryWrite),
//     checked by Tokens.VerifyWrite when the request is accepted; a missing,
//     forged, revoked or expired one fails the write.
//
// The request id is the event's request_id, so both answers of a pending
// write carry it.
func (s *Service) WriteRequest(m contracts.MemoryWriteRequested) write.Request {
	r := write.Request{RequestID: m.RequestID, TenantID: m.TenantID, ProjectID: m.ProjectID, Focus: m.Focus,
		Kind: graph.Kind(m.Kind), Title: m.Node.Title, Rationale: m.Node.Rationale, EntityName: m.Node.EntityName,
		Confirmed: m.Confirmed}
	if m.ProjectID == contracts.GlobalProject {
		r.ProjectID, r.Level = m.FromProjectID, graph.LevelGlobal
		r.Authorize = func(ctx context.Context) error { return s.mem.Tokens.VerifyWrite(ctx, m) }
	}
	return r
}
