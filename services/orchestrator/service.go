package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// ServiceFactory is the orchestrator service of a node. It consumes
// workflow.requested events (keyed by run), starts each run from the
// workflow file the request names (under PRAETOR_WORKFLOW_DIR), and carries
// its runs on with the JetStream dispatcher: attempts go to agent-worker
// pools, every change is kept in the database and published on
// PRAETOR_WORKFLOWS through the outbox.
//
// Runs are shared between replicas by leases (sqlstore.Leases): a replica
// renews the leases of the runs it carries, and claims and resumes the runs
// whose lease expired — their replica died — or was released by a replica
// that drained. A request is acknowledged once its run is recorded, so a
// replica that dies before that leaves the request to be redelivered.
func ServiceFactory(lookup func(string) (string, bool)) node.Factory {
	return func(_ context.Context, d node.Deps) (node.Service, error) {
		s, err := SettingsFromEnv(lookup)
		if err != nil {
			return nil, fmt.Errorf("orchestrator: %w", err)
		}
		return NewService(s, d)
	}
}

// Service is the orchestrator service.
type Service struct {
	set    Settings
	deps   node.Deps
	owner  string
	disp   *dispatch.Dispatcher
	leases *sqlstore.Leases
	res    *sqlstore.Results
	log    *slog.Logger
	met    *serviceMetrics

	mu      sync.Mutex
	sub     *events.Subscription
	tenants map[string]*tenantRuns
	active  map[sqlstore.RunRef]*activeRun
	started map[sqlstore.RunRef]chan struct{}
	stopped bool

	loopCancel context.CancelFunc
	loopDone   chan struct{}
	runs       sync.WaitGroup
}

type tenantRuns struct {
	store *sqlstore.Store
	exec  *executor.Executor
}

type activeRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// NewService returns the orchestrator service on a node's dependencies.
func NewService(s Settings, d node.Deps) (*Service, error) {
	s = s.WithDefaults()
	if d.Bus == nil || d.DB == nil {
		return nil, errors.New("orchestrator: the node gives no bus or database")
	}
	wd, err := filepath.Abs(s.WorkflowDir)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %s: %w", EnvWorkflowDir, err)
	}
	s.WorkflowDir = wd
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dcfg := dispatch.Config{Bus: d.Bus, Results: sqlstore.NewResults(d.DB), MaxEventBytes: payloadLimit(d),
		AckWait: d.AckWait, Logger: log, Registerer: d.Registerer, Unavailable: d.StoreUnavailable()}
	if dcfg.Unavailable != nil {
		dcfg.Probe = d.DB.Ping
	}
	disp, err := dispatch.New(dcfg)
	if err != nil {
		return nil, err
	}
	met, err := newServiceMetrics(d.Registerer)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	host, _ := os.Hostname()
	return &Service{set: s, deps: d, met: met, owner: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8]),
		disp: disp, leases: sqlstore.NewLeases(d.DB), res: sqlstore.NewResults(d.DB), log: log.With("service", "orchestrator"),
		tenants: map[string]*tenantRuns{}, active: map[sqlstore.RunRef]*activeRun{}, started: map[sqlstore.RunRef]chan struct{}{}}, nil
}

// Owner is the name this replica holds leases under.
func (s *Service) Owner() string { return s.owner }

// Start consumes run requests and begins renewing leases and taking over
// orphaned runs, until ctx ends: the node's stop begins, and it drains every
// consumer before it stops the services. From then on the replica takes over
// no run (it would carry it only until Stop, and hold it from the replicas
// that go on); it renews the leases of those it carries until Stop.
func (s *Service) Start(ctx context.Context) error {
	if err := s.disp.Start(ctx); err != nil {
		return err
	}
	cfg := events.ConsumerConfig{
		Stream:   contracts.StreamWorkflows,
		Name:     "orchestrator",
		Subjects: []string{contracts.WorkflowRequestedSpec.FilterSubject()},
		Keyed:    true,
		AckWait:  s.deps.AckWait,
		Validate: contracts.Validate,
		// On PostgreSQL a request that finds the database down (its run
		// cannot be looked up or recorded) pauses the consumer until the
		// database answers, rather than spend its deliveries.
		Unavailable: s.deps.StoreUnavailable(),
	}
	if cfg.Unavailable != nil {
		cfg.Probe = s.deps.DB.Ping
	}
	sub, err := s.deps.Bus.Subscribe(ctx, cfg, s.onRequest)
	if err != nil {
		_ = s.disp.Stop(ctx)
		return fmt.Errorf("orchestrator: %w", err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Lock()
	s.sub, s.loopCancel, s.loopDone = sub, cancel, make(chan struct{})
	s.mu.Unlock()
	go s.loop(lctx, ctx.Done())
	s.log.Info("orchestrator started", "owner", s.owner, "workflow_dir", s.set.WorkflowDir, "lease", s.set.Lease)
	return nil
}

// Stop drains: no new requests, the runs in progress are stopped (their
// state saved, resumable) and their leases released so another replica
// takes them over at once. Calling it twice is harmless.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	sub, cancel, done := s.sub, s.loopCancel, s.loopDone
	s.mu.Unlock()
	var errs []error
	if sub != nil {
		errs = append(errs, sub.Stop(ctx))
	}
	if cancel != nil {
		cancel()
		<-done
	}
	s.mu.Lock()
	for _, r := range s.active {
		r.cancel()
	}
	s.mu.Unlock()
	s.runs.Wait()
	errs = append(errs, s.disp.Stop(ctx))
	return errors.Join(errs...)
}

// loop renews this replica's leases, and takes over expired ones until
// stopping closes.
func (s *Service) loop(ctx context.Context, stopping <-chan struct{}) {
	defer close(s.loopDone)
	tick := time.NewTicker(s.set.Lease / 3)
	defer tick.Stop()
	var pruned time.Time
	for {
		s.renew(ctx)
		select {
		case <-stopping:
		default:
			s.takeOver(ctx)
		}
		if time.Since(pruned) >= resultsPruneEvery {
			s.pruneResults(ctx)
			pruned = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// resultsPruneEvery is how often a replica deletes the answers of settled
// runs that came after their run's end; resultsKeep is how long an answer is
// kept at least, so one is never deleted before its run is stored.
const (
	resultsPruneEvery = time.Hour
	resultsKeep       = time.Hour
)

func (s *Service) pruneResults(ctx context.Context) {
	n, err := s.res.PruneSettled(ctx, time.Now().Add(-resultsKeep))
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("pruning the answers of settled runs failed; the next round tries again", "error", err)
	case n > 0:
		s.log.Info("pruned the answers of settled runs", "answers", n)
	}
}

// renew extends the leases of the runs this replica carries on.
func (s *Service) renew(ctx context.Context) {
	s.mu.Lock()
	refs := make([]sqlstore.RunRef, 0, len(s.active))
	for ref := range s.active {
		refs = append(refs, ref)
	}
	s.mu.Unlock()
	if len(refs) == 0 {
		return
	}
	if _, err := s.leases.Renew(ctx, s.owner, time.Now().Add(s.set.Lease), refs); err != nil && ctx.Err() == nil {
		s.log.Error("renewing leases failed; other replicas may take these runs over", "error", err)
	}
}

// carrying reports whether this replica carries the run on.
func (s *Service) carrying(ref sqlstore.RunRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.active[ref]
	return ok
}

// takeOver claims and resumes runs whose lease expired.
func (s *Service) takeOver(ctx context.Context) {
	now := time.Now()
	refs, err := s.leases.Expired(ctx, now, 16)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("looking for orphaned runs failed", "error", err)
		}
		return
	}
	for _, ref := range refs {
		ok, err := s.leases.Claim(ctx, ref, s.owner, now, now.Add(s.set.Lease))
		if err != nil || !ok {
			continue
		}
		if s.carrying(ref) {
			// Its own run, whose lease ran out while renewing failed: the
			// claim renewed it; a second executor would race the first.
			continue
		}
		if err := s.resume(ref); err != nil {
			s.log.Error("an orphaned run cannot be resumed; it is left to expire again", "tenant", ref.TenantID, "run", ref.RunID, "error", err)
		}
	}
}

func (s *Service) resume(ref sqlstore.RunRef) error {
	tr, err := s.tenant(ref.TenantID)
	if err != nil {
		return err
	}
	raw, err := tr.store.Source(context.Background(), ref.RunID)
	if err != nil {
		return err
	}
	src, err := DecodeSource(raw)
	if err != nil {
		return err
	}
	b, err := definition.Load(src.LoadOptions())
	if err != nil {
		return err
	}
	s.log.Info("taking over a run", "tenant", ref.TenantID, "run", ref.RunID)
	if s.launch(ref, func(ctx context.Context) (engine.State, error) { return tr.exec.Resume(ctx, b, ref.RunID) }) == nil {
		return errStopping
	}
	return nil
}

// tenant returns the store and executor of a tenant's runs.
func (s *Service) tenant(id string) (*tenantRuns, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tr, ok := s.tenants[id]; ok {
		return tr, nil
	}
	st, err := sqlstore.New(sqlstore.Config{DB: s.deps.DB, TenantID: id, Encoder: s.deps.Bus, Relay: s.deps.Relay})
	if err != nil {
		return nil, err
	}
	x, err := executor.New(executor.Config{Dispatcher: s.disp.Tenant(id), Store: st, Artifacts: st,
		MaxParallel: s.set.MaxParallel, Logger: s.log.With("tenant", id), Registerer: s.deps.Registerer,
		Observe: func(state engine.State, evs []engine.Event) {
			if len(evs) > 0 && evs[0].Seq == 1 {
				s.recorded(sqlstore.RunRef{TenantID: id, RunID: state.RunID})
			}
		}})
	if err != nil {
		return nil, err
	}
	tr := &tenantRuns{store: st, exec: x}
	s.tenants[id] = tr
	return tr, nil
}

func (s *Service) recorded(ref sqlstore.RunRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.started[ref]; ok {
		close(ch)
		delete(s.started, ref)
	}
}

// errStopping refuses work while the service drains.
var errStopping = errors.New("orchestrator: stopping")

// launch carries a run on in a goroutine of the service's; nil while the
// service drains.
func (s *Service) launch(ref sqlstore.RunRef, run func(context.Context) (engine.State, error)) chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	ar := &activeRun{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		cancel()
		return nil
	}
	s.active[ref] = ar
	s.runs.Add(1)
	s.mu.Unlock()
	s.met.runsInFlight.Inc()
	go func() {
		defer s.runs.Done()
		defer close(ar.done)
		defer cancel()
		defer s.met.runsInFlight.Dec()
		st, err := run(ctx)
		s.mu.Lock()
		if s.active[ref] == ar {
			delete(s.active, ref)
		}
		s.mu.Unlock()
		log := s.log.With("tenant", ref.TenantID, "run", ref.RunID)
		switch {
		case errors.Is(err, executor.ErrInterrupted):
			// Drained: let another replica carry it on at once.
			if err := s.leases.Release(context.Background(), ref, s.owner, time.Now()); err != nil {
				log.Warn("lease not released; another replica takes the run over when it expires", "error", err)
			}
			log.Info("run stopped; released to another replica", "seq", st.Seq)
		case err != nil:
			// No longer renewed: its lease runs out, and a replica (this
			// one too) takes it over and resumes it then.
			log.Error("run stopped; a replica resumes it once its lease runs out", "error", err, "lease", s.set.Lease)
		default:
			log.Info("run finished", "status", st.Status)
			if err := s.res.PruneRun(context.Background(), ref.TenantID, ref.RunID); err != nil {
				log.Warn("answers of the run not pruned", "error", err)
			}
		}
	}()
	return ar.done
}

// onRequest starts a requested run and acknowledges the request once the
// run is recorded.
func (s *Service) onRequest(ctx context.Context, ev event.Event) error {
	req, err := contracts.DecodeAs[contracts.WorkflowRequested](ev)
	if err != nil {
		return err
	}
	opts, err := s.loadOptions(*req)
	if err != nil {
		return events.Permanent(err)
	}
	b, err := definition.Load(opts)
	if err != nil {
		// Invalid files do not get better on redelivery: the dead letter
		// carries every problem, with file, field and rule.
		return events.Permanent(fmt.Errorf("run %s: %w", req.RunID, err))
	}
	src, err := SourceOf(opts)
	if err != nil {
		return events.Permanent(err)
	}
	if err := s.knownTenant(ctx, *req); err != nil {
		return err
	}
	tr, err := s.tenant(req.TenantID)
	if err != nil {
		return err
	}
	ref := sqlstore.RunRef{TenantID: req.TenantID, RunID: req.RunID}
	if _, err := tr.store.Load(ctx, req.RunID); err == nil {
		return s.redelivery(ctx, tr, *req, src)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	tr.store.SetSource(req.RunID, src.Encode())
	tr.store.SetLease(req.RunID, s.owner, time.Now().Add(s.set.Lease))
	recorded := make(chan struct{})
	s.mu.Lock()
	s.started[ref] = recorded
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.started, ref)
		s.mu.Unlock()
	}()
	var runErr error
	done := s.launch(ref, func(rctx context.Context) (engine.State, error) {
		st, err := tr.exec.Run(rctx, b, executor.RunOptions{RunID: req.RunID, Seed: req.Seed})
		runErr = err
		return st, err
	})
	if done == nil {
		return errStopping // redelivered to a replica that is not draining
	}
	select {
	case <-recorded:
		s.log.Info("run started", "tenant", req.TenantID, "run", req.RunID, "workflow", b.Workflow.Name)
		return nil
	case <-done:
		if errors.Is(runErr, executor.ErrRunExists) {
			return nil
		}
		if runErr == nil {
			return nil
		}
		return fmt.Errorf("start run %s: %w", req.RunID, runErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// knownTenant refuses a request of a tenant the node's database does not
// have: nothing else would stop a misspelt --tenant from running. Only a
// node with tenants checks: praetor serve's PostgreSQL, where tenants are
// added with praetor tenant add; praetor dev serves anyone on its SQLite.
func (s *Service) knownTenant(ctx context.Context, req contracts.WorkflowRequested) error {
	if s.deps.Dev || s.deps.DB.Dialect() != store.Postgres {
		return nil
	}
	_, err := store.GetTenant(ctx, s.deps.DB, req.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return events.Permanent(fmt.Errorf("run %s: tenant %s does not exist in the node's database: add it with praetor tenant add --tenant %s, then request the run again",
			req.RunID, req.TenantID, req.TenantID))
	}
	return err
}

// redelivery handles a request for a run id the tenant already has: the
// same workflow and registry is the request delivered again (the run is
// carried on by its lease holder); another is a new run reusing the id,
// refused rather than dropped without a word.
func (s *Service) redelivery(ctx context.Context, tr *tenantRuns, req contracts.WorkflowRequested, src Source) error {
	raw, err := tr.store.Source(ctx, req.RunID)
	if err != nil {
		return err
	}
	if len(raw) == 0 {
		// A run started before sources were recorded: nothing to compare
		// the request with, so it is taken for the redelivery it most
		// likely is, as it was before the comparison.
		return nil
	}
	have, err := DecodeSource(raw)
	if err == nil && have.Workflow == src.Workflow && have.Registry == src.Registry {
		return nil
	}
	existing := "its recorded source cannot be read"
	if err == nil {
		existing = "workflow " + s.relative(have.Workflow)
		if have.Registry != "" {
			existing += " with registry " + s.relative(have.Registry)
		}
	}
	asked := "workflow " + req.Workflow
	if req.Registry != "" {
		asked += " with registry " + req.Registry
	}
	return events.Permanent(fmt.Errorf("run %s of tenant %s already exists, a run of %s: the request for %s reuses its id; request it again with another run id",
		req.RunID, req.TenantID, existing, asked))
}

// relative names a file under the workflow directory as a request would.
func (s *Service) relative(path string) string {
	if rel, err := filepath.Rel(s.set.WorkflowDir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}

// loadOptions resolves a request's files under the workflow directory.
func (s *Service) loadOptions(req contracts.WorkflowRequested) (definition.LoadOptions, error) {
	wf, err := s.within(req.Workflow)
	if err != nil {
		return definition.LoadOptions{}, fmt.Errorf("run %s: workflow: %w", req.RunID, err)
	}
	opts := definition.LoadOptions{Workflow: wf}
	if req.Registry != "" {
		if opts.Registry, err = s.within(req.Registry); err != nil {
			return definition.LoadOptions{}, fmt.Errorf("run %s: registry: %w", req.RunID, err)
		}
	}
	return opts, nil
}

func (s *Service) within(p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("%q must be relative to %s (%s)", p, EnvWorkflowDir, s.set.WorkflowDir)
	}
	full := filepath.Join(s.set.WorkflowDir, p)
	rel, err := filepath.Rel(s.set.WorkflowDir, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q leaves %s (%s)", p, EnvWorkflowDir, s.set.WorkflowDir)
	}
	return full, nil
}

func registryDir(path string) string { return filepath.Dir(path) }
