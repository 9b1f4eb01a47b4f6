package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/hygiene"
	"github.com/praetorhq/praetor/services/memory/mcpserver"
	"github.com/praetorhq/praetor/services/memory/retrieval"
	"github.com/praetorhq/praetor/services/memory/sqlmemory"
	"github.com/praetorhq/praetor/services/memory/write"
)

// source is the CloudEvents source of the events memory emits.
const source = "/praetor/memory"

// Config configures a Memory.
type Config struct {
	// Graph is the graph store (OpenGraph). Required.
	Graph graph.Store
	// DB is the relational store: governance tokens, pending writes, and
	// the outbox of settlement events. Required, migrated (00005).
	DB store.DB
	// Encoder, when set, turns the settlement of each pending write into a
	// memory.written event in the outbox, written in the transaction that
	// removes the write from the queue. Nil: settlements are only logged
	// (the CLI; a node's service always sets it).
	Encoder delivery.Encoder
	// Relay, when set, is kicked after a settlement event committed.
	Relay *delivery.Relay
	// Owner names this process in the leases of pending writes. Default:
	// host, pid and random bytes.
	Owner string
	// QueueLease is how long this process holds the pending writes it
	// retries. Default: sqlmemory's (2m).
	QueueLease time.Duration
	// Write, Retrieval and Hygiene tune the engines; New sets their stores,
	// tokens, queue, clock, logger and registerer, and zero fields take the
	// engines' defaults.
	Write     write.Config
	Retrieval retrieval.Config
	Hygiene   hygiene.Config
	// Now is the clock of every engine and token check. Default time.Now.
	Now func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives the engines' metrics. Nil registers nothing.
	Registerer prometheus.Registerer
	// Version is reported to MCP clients. Default "dev".
	Version string
	// StoreFlags are the flags that choose this memory's stores, for the
	// commands the MCP tools suggest (StoreFlags). Default: none.
	StoreFlags string
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Memory is graph memory assembled: the engines of seed 001 on a graph, with
// governance tokens and pending writes in the relational store. The service,
// the MCP server and praetor memory all use one.
type Memory struct {
	Graph     graph.Store
	Tokens    *sqlmemory.Tokens
	Queue     *sqlmemory.Queue
	Writes    *write.Engine
	Retrieval *retrieval.Engine
	Hygiene   *hygiene.Engine

	cfg     Config
	mu      sync.Mutex
	started bool
}

// New assembles memory; Start runs the retry loop of pending writes.
func New(cfg Config) (*Memory, error) {
	cfg = cfg.withDefaults()
	if cfg.Graph == nil || cfg.DB == nil {
		return nil, errors.New("memory: Config.Graph and Config.DB are required")
	}
	m := &Memory{Graph: cfg.Graph, cfg: cfg, Tokens: sqlmemory.NewTokens(cfg.DB, cfg.Now)}
	q, err := sqlmemory.NewQueue(sqlmemory.QueueConfig{DB: cfg.DB, Owner: cfg.Owner, Lease: cfg.QueueLease,
		OnDone: m.recordSettlement, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	m.Queue = q

	wc := cfg.Write
	wc.Store, wc.Tokens, wc.Queue = cfg.Graph, m.Tokens, q
	if onSettled := wc.OnSettled; cfg.Relay != nil {
		// The settlement's event committed with the queue row's removal;
		// publish it now rather than at the relay's next poll.
		wc.OnSettled = func(s write.Settlement) {
			cfg.Relay.Kick()
			if onSettled != nil {
				onSettled(s)
			}
		}
	}
	wc.Now, wc.Logger, wc.Registerer = orNow(wc.Now, cfg.Now), cfg.Logger, cfg.Registerer
	if m.Writes, err = write.New(wc); err != nil {
		return nil, err
	}
	rc := cfg.Retrieval
	rc.Store, rc.Now, rc.Logger, rc.Registerer = cfg.Graph, orNow(rc.Now, cfg.Now), cfg.Logger, cfg.Registerer
	if m.Retrieval, err = retrieval.New(rc); err != nil {
		return nil, err
	}
	hc := cfg.Hygiene
	hc.Store, hc.Now, hc.Logger = cfg.Graph, orNow(hc.Now, cfg.Now), cfg.Logger
	if m.Hygiene, err = hygiene.New(hc); err != nil {
		return nil, err
	}
	return m, nil
}

func orNow(a, b func() time.Time) func() time.Time {
	if a != nil {
		return a
	}
	return b
}

// Start runs the retry loop of pending writes: those of this process and
// those other processes left in the queue.
func (m *Memory) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("memory: already started")
	}
	if err := m.Writes.Start(ctx); err != nil {
		return err
	}
	m.started = true
	return nil
}

// Stop ends the retry loop and releases this process's pending writes to
// the next process that looks (another replica, or this one restarted);
// they stay in the queue. Calling it twice, or without Start, is harmless.
func (m *Memory) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.started = false
	m.mu.Unlock()
	return errors.Join(m.Writes.Stop(ctx), m.Queue.Release(context.WithoutCancel(ctx)))
}

// MCP returns the MCP server of the memory tools on this memory.
func (m *Memory) MCP() (*mcpserver.Server, error) {
	return mcpserver.New(mcpserver.Config{Retrieval: m.Retrieval, Writes: m.Writes, Hygiene: m.Hygiene,
		Version: m.cfg.Version, StoreFlags: m.cfg.StoreFlags, Logger: m.cfg.Logger})
}

// Background is the runner's background-intelligence source on this memory.
func (m *Memory) Background() *BackgroundSource { return NewBackgroundSource(m.Retrieval) }

// recordSettlement writes memory.written for a settled pending write, in the
// transaction that removes it from the queue.
func (m *Memory) recordSettlement(ctx context.Context, tx store.Querier, p write.Pending, s write.Settlement) error {
	m.cfg.Logger.Info("memory pending write settled", "tenant", p.Request.TenantID, "request", p.Request.RequestID,
		"status", s.Receipt.Status, "node", s.Receipt.NodeID, "attempts", s.Attempts)
	if m.cfg.Encoder == nil {
		return nil
	}
	ev, err := contracts.NewEvent(contracts.Meta{
		ID:     events.DeriveID(p.Request.TenantID+"/"+p.NodeID, "memory.settled"),
		Source: source, Time: m.cfg.Now(),
	}, Written(p.Request, s.Receipt))
	if err != nil {
		// A settlement that cannot become an event must not keep the write
		// in the queue forever: it is logged, and the write leaves.
		m.cfg.Logger.Error("memory settlement has no valid memory.written event", "tenant", p.Request.TenantID,
			"request", p.Request.RequestID, "err", err)
		return nil
	}
	if _, err := delivery.Emit(ctx, tx, m.cfg.Encoder, ev); err != nil {
		return fmt.Errorf("memory: record settlement of %s: %w", p.Request.RequestID, err)
	}
	return nil
}

// Written is the memory.written payload of a write request's receipt. The
// project_id is the request's ordering key: contracts.GlobalProject for a
// global write, else its project.
func Written(r write.Request, rc write.Receipt) contracts.MemoryWritten {
	project := r.ProjectID
	if r.Level == graph.LevelGlobal {
		project = contracts.GlobalProject
	}
	w := contracts.MemoryWritten{TenantID: r.TenantID, RequestID: r.RequestID, ProjectID: project,
		Status: string(rc.Status), Outcome: string(rc.Outcome), Scope: rc.Scope.Key(), Detail: rc.Detail}
	if rc.Status == write.Saved || rc.Status == write.PendingRetry {
		// Otherwise the engine's node id names a node that will not exist.
		w.NodeID = rc.NodeID
	}
	if rc.Match != nil {
		w.MatchID = rc.Match.ID
	}
	return w
}
