package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/provider"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/agent/command"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/dispatch"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
	"github.com/praetorhq/praetor/services/orchestrator/filestore"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
	"github.com/praetorhq/praetor/services/orchestrator/worker"
)

// codedError is an error with its own exit status.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) ExitCode() int { return e.code }

// Exit statuses of the workflow commands besides 0 (completed) and 1 (the
// run failed, or an error).
const (
	exitInvalid     = 2   // the definition files are invalid: nothing ran
	exitInterrupted = 130 // stopped by a signal: resume it
)

func workflowCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	fs := ff.NewFlagSet("workflow").SetParent(parent)
	cmd := &ff.Command{
		Name:      "workflow",
		Usage:     "praetor workflow <run|resume|status|validate|submit> [FLAGS] ...",
		ShortHelp: "run DAG workflows of agent tasks: run, resume, status, validate, submit",
		LongHelp: strings.TrimSpace(`
A workflow is a YAML file of tasks (id, agent, depends_on, inputs, outputs,
retries, timeout); its agents come from a registry YAML (mock, llm or command
runtimes). Tasks run in dependency order, independent ones at once.

A command agent's path: with a slash, or starting with ".", is relative to
the registry file's directory (./agent.sh, scripts/agent.sh); a bare name
(python3, claude) is looked up in $PATH.

By default a run lives in files: its state in .praetor/state/workflow-state.json
(the seed's schema), its events and outputs beside it, and its tasks run in
this process. With --database-url the state is kept in PostgreSQL; with
--nats-url as well, every attempt is dispatched over JetStream to agent workers
(this process runs a pool of them unless --workers 0) and every state change is
published on PRAETOR_WORKFLOWS, so praetor replay --workflow RUN rebuilds it.
All of these run the orchestrator in this process: praetor workflow submit
asks the orchestrators of a running praetor serve or dev to run it instead.

A run stopped by a signal or a crash continues with praetor workflow resume:
finished tasks are not run again, and a command agent still running from the
stopped process is waited for, not started twice.`),
		Flags: fs,
	}
	cmd.Subcommands = []*ff.Command{
		workflowRunCommand(g, fs),
		workflowResumeCommand(g, fs),
		workflowStatusCommand(g, fs),
		workflowValidateCommand(g, fs),
		workflowSubmitCommand(g, fs),
	}
	return cmd
}

// backendFlags select where runs live and how tasks are dispatched.
type backendFlags struct {
	stateDir    string
	databaseURL string
	natsURL     string
	tenant      string
	migrate     bool
	workers     int
	maxParallel int
}

// defaultBackendFlags are the defaults of backendFlags.
func defaultBackendFlags() backendFlags {
	return backendFlags{stateDir: filestore.DefaultDir, tenant: "default", workers: 4, maxParallel: 4}
}

// register binds the flags, each defaulting to its current value (see
// interspersed).
func (f *backendFlags) register(fs *ff.FlagSet, dispatching bool) {
	fs.StringVar(&f.stateDir, 0, "state-dir", f.stateDir, "directory of the run state in file mode (without --database-url), and of command agents' attempts in every mode")
	fs.StringVar(&f.databaseURL, 0, "database-url", f.databaseURL, "keep runs in this PostgreSQL database instead of files (DATABASE_URL is not read implicitly)")
	fs.StringVar(&f.tenant, 0, "tenant", f.tenant, "tenant owning the runs (with --database-url)")
	fs.BoolVarDefault(&f.migrate, 0, "migrate", f.migrate, "apply pending database migrations first (with --database-url)")
	if dispatching {
		fs.StringVar(&f.natsURL, 0, "nats-url", f.natsURL, "dispatch attempts over this NATS JetStream to agent workers, and publish the run's events (needs --database-url)")
		fs.IntVar(&f.workers, 0, "workers", f.workers, "attempts of each agent this process runs itself (with --nats-url), joining the agent's worker consumer; 0 leaves them to praetor serve --services agent-worker")
		fs.IntVar(&f.maxParallel, 0, "max-parallel", f.maxParallel, "attempts in flight at once")
	}
}

// interspersed parses the flags that come after positional arguments
// (praetor workflow run FILE --seed 7): ff stops at the first positional
// one. Each round binds a new flag set whose defaults are the values parsed
// so far, and returns the positional arguments.
func interspersed(parent *ff.FlagSet, name string, bind func(*ff.FlagSet), args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "--":
			return append(pos, args[1:]...), nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
			args = args[1:]
		default:
			fs := ff.NewFlagSet(name).SetParent(parent)
			bind(fs)
			if err := fs.Parse(args); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			args = fs.GetArgs()
		}
	}
	return pos, nil
}

func (f *backendFlags) check() error {
	if f.natsURL != "" && f.databaseURL == "" {
		return settingErr("nats-url", "JetStream dispatch needs --database-url too: the worker inbox, the outbox and the answers live there")
	}
	if f.databaseURL != "" && !contracts.ValidToken(f.tenant) {
		return settingErr("tenant", "%q must be 1-128 of [A-Za-z0-9_-]", f.tenant)
	}
	if f.workers < 0 || f.maxParallel < 0 {
		return settingErr("workers", "--workers and --max-parallel must not be negative")
	}
	return nil
}

// runStore is what the commands need of a store beyond the executor's
// ports: the run's source, its events, the runs it knows.
type runStore interface {
	executor.StateStore
	executor.ArtifactStore
	saveSource(runID string, src orchestrator.Source) error
	source(ctx context.Context, runID string) (orchestrator.Source, error)
	events(ctx context.Context, runID string) ([]engine.Event, error)
	// latest is the run to use when none is named.
	latest(ctx context.Context) (string, error)
	where() string
}

type fileRuns struct{ *filestore.Store }

func (f fileRuns) saveSource(runID string, src orchestrator.Source) error {
	return f.SaveSource(runID, src.Encode())
}

func (f fileRuns) source(_ context.Context, runID string) (orchestrator.Source, error) {
	raw, err := f.Source(runID)
	if err != nil {
		return orchestrator.Source{}, err
	}
	return orchestrator.DecodeSource(raw)
}

func (f fileRuns) events(ctx context.Context, runID string) ([]engine.Event, error) {
	return f.Events(ctx, runID)
}

func (f fileRuns) latest(ctx context.Context) (string, error) {
	s, err := f.Current(ctx)
	if err != nil {
		return "", err
	}
	return s.RunID, nil
}

func (f fileRuns) where() string { return f.StatePath() }

type sqlRuns struct{ *sqlstore.Store }

func (s sqlRuns) saveSource(runID string, src orchestrator.Source) error {
	s.SetSource(runID, src.Encode())
	return nil
}

func (s sqlRuns) source(ctx context.Context, runID string) (orchestrator.Source, error) {
	raw, err := s.Source(ctx, runID)
	if err != nil {
		return orchestrator.Source{}, err
	}
	return orchestrator.DecodeSource(raw)
}

func (s sqlRuns) events(ctx context.Context, runID string) ([]engine.Event, error) {
	return s.Events(ctx, runID)
}

func (s sqlRuns) latest(ctx context.Context) (string, error) {
	runs, err := s.Runs(ctx, 1)
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "", fmt.Errorf("no run of tenant %s in the database: %w", s.TenantID(), store.ErrNotFound)
	}
	return runs[0].ID, nil
}

func (s sqlRuns) where() string { return "tenant " + s.TenantID() + " in the database" }

// backend is an opened store, and — for run and resume — the dispatcher.
type backend struct {
	runs       runStore
	dispatcher executor.Dispatcher
	// attempts is where command agents keep durable attempts.
	attempts string
	closers  []func()
	// startWorkers starts the in-process worker pool once the registry's
	// runtimes are known (JetStream mode).
	startWorkers func(ctx context.Context, rt agent.Runtime, agents []string) error
	// flush publishes what the outbox still holds before the process ends.
	flush func(ctx context.Context)
}

func (b *backend) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// openBackend opens the store; with dispatch, the JetStream dispatcher too
// (when --nats-url is set).
func openBackend(ctx context.Context, f backendFlags, log *slog.Logger, withDispatch bool) (*backend, error) {
	// Command agents keep their attempts under the state directory in every
	// mode: on this host, an attempt outlives the process that started it.
	b := &backend{flush: func(context.Context) {}, attempts: filepath.Join(f.stateDir, "attempts")}
	if f.databaseURL == "" {
		fs, err := filestore.New(filestore.Config{Dir: f.stateDir})
		if err != nil {
			return nil, err
		}
		b.runs = fileRuns{fs}
		return b, nil
	}
	db, err := node.OpenStore(ctx, false, "", f.databaseURL)
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { _ = db.Close() })
	if err := checkSchema(ctx, db, f.migrate); err != nil {
		b.close()
		return nil, err
	}
	cfg := sqlstore.Config{DB: db, TenantID: f.tenant}
	if !withDispatch || f.natsURL == "" {
		st, err := sqlstore.New(cfg)
		if err != nil {
			b.close()
			return nil, err
		}
		b.runs = sqlRuns{st}
		return b, nil
	}

	nc, err := events.Connect(f.natsURL, "praetor-workflow")
	if err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() { _ = nc.Drain(); nc.Close() })
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject, Logger: log})
	if err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bus.Close(cctx)
	})
	if err := provisionMissing(ctx, bus); err != nil {
		b.close()
		return nil, err
	}
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: bus, Logger: log, Interval: 200 * time.Millisecond})
	if err != nil {
		b.close()
		return nil, err
	}
	if err := relay.Start(ctx); err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() { _ = relay.Stop(context.Background()) })
	b.flush = func(ctx context.Context) { flushOutbox(ctx, relay, log) }

	cfg.Encoder, cfg.Relay = bus, relay
	st, err := sqlstore.New(cfg)
	if err != nil {
		b.close()
		return nil, err
	}
	b.runs = sqlRuns{st}
	limit := payloadLimit(nc)
	consumer, err := answersConsumer(f.databaseURL)
	if err != nil {
		b.close()
		return nil, err
	}
	// Answers come on a consumer of this store's own, created here before
	// the first dispatch: on the orchestrators' (praetor dev's, praetor
	// serve's), they would be taken by whichever pulled first, and saved in
	// its store, not this one.
	from, err := answersFrom(ctx, db)
	if err != nil {
		b.close()
		return nil, err
	}
	disp, err := dispatch.New(dispatch.Config{Bus: bus, Results: sqlstore.NewResults(db), Consumer: consumer,
		DeliverNew: from.IsZero(), DeliverFrom: from, InactiveThreshold: answersInactiveThreshold,
		MaxEventBytes: limit, Logger: log})
	if err != nil {
		b.close()
		return nil, err
	}
	if err := disp.Start(ctx); err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = disp.Stop(cctx)
	})
	b.dispatcher = disp.Tenant(f.tenant)
	if f.workers > 0 {
		b.startWorkers = func(ctx context.Context, rt agent.Runtime, agents []string) error {
			pool, err := worker.New(worker.Config{Bus: bus, DB: db, Relay: relay, Runtime: rt, Agents: agents,
				Concurrency: f.workers, MaxResultBytes: limit, Logger: log})
			if err != nil {
				return err
			}
			if err := pool.Start(ctx); err != nil {
				return err
			}
			b.closers = append(b.closers, func() {
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = pool.Stop(cctx)
			})
			return nil
		}
	}
	return b, nil
}

// answersConsumer names the CLI's consumer of answers after its store: a
// short hash of the database's host, port, name and search_path (never its
// user or password). Runs on one database share it, as the orchestrator's
// replicas share theirs; runs on another database, and the orchestrators of
// praetor dev and praetor serve, have their own.
func answersConsumer(databaseURL string) (string, error) {
	pc, err := pgconn.ParseConfig(databaseURL)
	if err != nil {
		return "", settingErr("database-url", "%v", err)
	}
	identity := fmt.Sprintf("%s:%d/%s?search_path=%s", pc.Host, pc.Port, pc.Database, pc.RuntimeParams["search_path"])
	sum := sha256.Sum256([]byte(identity))
	return "workflow-cli-" + hex.EncodeToString(sum[:6]), nil
}

// answersInactiveThreshold is how long the CLI's consumer of answers stays
// on the server once no CLI pulls from it: a running CLI pulls all the
// time, however long its tasks, so this bounds only the backlog a consumer
// no run reads any more gathers (every answer of every orchestrator on the
// server) before the server deletes it.
const answersInactiveThreshold = 24 * time.Hour

// answersFrom is where the CLI's consumer of answers starts when it is made
// (again: it goes away once no CLI has pulled from it for
// answersInactiveThreshold): where the answers a run of the database may
// still wait for begin, at the start of its oldest unfinished run (a
// minute earlier, for the clocks of the database and the NATS server), or,
// when every run has finished, the zero time: at the answers published from
// then on. PRAETOR_TASKS keeps its events whether or not a consumer reads
// them (limits retention), so a run resumed after the threshold still
// receives the answers of the attempts it left in flight, published while
// no consumer existed, which a worker that has answered once does not
// publish again. An existing consumer keeps its start
// (events.Bus.Subscribe).
func answersFrom(ctx context.Context, db store.Querier) (time.Time, error) {
	since, ok, err := unfinishedSince(ctx, db)
	if err != nil {
		return time.Time{}, fmt.Errorf("find the oldest unfinished run, where the answers consumer starts: %w", err)
	}
	if !ok {
		return time.Time{}, nil
	}
	return since.Add(-time.Minute), nil
}

// unfinishedSince returns when the oldest run of the database (any tenant:
// the CLI's consumer serves them all) that has not finished started.
func unfinishedSince(ctx context.Context, db store.Querier) (time.Time, bool, error) {
	var since *time.Time
	if err := db.QueryRow(ctx, `SELECT min(started_at) FROM workflow_runs WHERE finished_at IS NULL`).Scan(&since); err != nil {
		return time.Time{}, false, err
	}
	if since == nil {
		return time.Time{}, false, nil
	}
	return *since, true, nil
}

// payloadLimit is the largest event data the server takes, with room for
// the headers.
func payloadLimit(nc *nats.Conn) int {
	return int(max(nc.MaxPayload()-64<<10, 4<<10))
}

// checkSchema applies the migrations, or checks that they are applied.
func checkSchema(ctx context.Context, db store.DB, migrate bool) error {
	if migrate {
		_, err := store.Migrate(ctx, db)
		return err
	}
	return requireMigrated(ctx, db)
}

// provisionMissing creates the streams the server lacks (catalog and
// dead-letter), with the defaults of praetor serve (ordered ones with the
// partitions of those that exist), leaving the existing ones (their
// partitions, replicas, compression...) as they are.
func provisionMissing(ctx context.Context, bus *events.Bus) error {
	missing := func(name string) bool {
		_, err := bus.JetStream().Stream(ctx, name)
		return err != nil
	}
	partitions, err := node.ResolvePartitions(ctx, bus, 0, node.ServePartitions)
	if err != nil {
		return err
	}
	for _, def := range contracts.Streams() {
		if !missing(def.Name) {
			continue
		}
		sc := events.StreamConfig{Name: def.Name, Subjects: def.Subjects, Compression: node.DefaultCompression(false)}
		if def.Ordered {
			sc.Partitions = partitions
		}
		if err := bus.EnsureStream(ctx, sc); err != nil {
			return err
		}
	}
	if !missing(events.DeadLetterStream) && !missing(events.AdvisoryStream) {
		return nil
	}
	return bus.EnsureDeadLetterStreams(ctx, events.StreamConfig{Compression: node.DefaultCompression(false)})
}

// flushOutbox publishes what the outbox holds, so the run's events are on
// the stream when the command returns.
func flushOutbox(ctx context.Context, relay *delivery.Relay, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		n, leader, err := relay.Flush(ctx)
		if err != nil {
			log.Warn("outbox not flushed; the next relay will publish it", "error", err)
			return
		}
		if leader && n == 0 {
			return
		}
		if !leader {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// loadDefinition loads and checks the files; invalid ones end the command
// before anything runs.
func loadDefinition(opts definition.LoadOptions) (*definition.Bundle, error) {
	b, err := definition.Load(opts)
	if err != nil {
		var ve *definition.ValidationError
		if errors.As(err, &ve) {
			return nil, &codedError{code: exitInvalid, err: fmt.Errorf("nothing was run: %w", err)}
		}
		return nil, &codedError{code: exitInvalid, err: err}
	}
	return b, nil
}

// runtimes builds the agents of a registry; llm agents get the configured
// model (the offline provider without a key).
func runtimes(b *definition.Bundle, attempts string, log *slog.Logger) (*agent.Router, error) {
	deps := orchestrator.RuntimeDeps{RegistryDir: b.RegistryDir(), AttemptsDir: attempts, Logger: log}
	for _, a := range b.Registry.Agents {
		if a.Kind == definition.KindLLM {
			client, err := llmClient(log)
			if err != nil {
				return nil, err
			}
			deps.LLM = client
			break
		}
	}
	return orchestrator.BuildRuntimes(b.Registry, deps)
}

func llmClient(log *slog.Logger) (llm.Client, error) {
	cfg, err := provider.FromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c, _, err := provider.New(cfg, log)
	return c, err
}

// quietLogger keeps the executor's log at warnings unless debug was asked
// for: the progress lines say what info would.
func quietLogger(g *globals) (*slog.Logger, error) {
	level := slog.LevelWarn
	if strings.EqualFold(g.logLevel, "debug") {
		level = slog.LevelDebug
	}
	format := cmpOr(g.logFormat, "text")
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(g.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(g.stderr, opts)), nil
	}
	return nil, settingErr("log-format", "%q is not text or json", format)
}

func workflowRunCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var (
		bf                       = defaultBackendFlags()
		registry, project, runID string
		seed                     int64
		timeout                  time.Duration
	)
	bind := func(fs *ff.FlagSet) {
		bf.register(fs, true)
		fs.StringVar(&registry, 0, "registry", registry, "agent registry YAML file, instead of the one the workflow's agents: names")
		fs.StringVar(&registry, 0, "agents", registry, "another name of --registry, after the workflow's agents: key: a registry YAML file, "+
			"not agent names (PRAETOR_WORKFLOW_AGENTS is those: the agents of the registry a praetor dev or serve agent-worker runs)")
		fs.StringVar(&project, 0, "project", project, "project directory the inputs are read from (default: the workflow's project:, or its directory)")
		fs.StringVar(&runID, 0, "run-id", runID, "id of the new run, 1-128 of [A-Za-z0-9_-] (default: a new UUID)")
		fs.Func(0, "seed", func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n == 0 {
				return fmt.Errorf("%q is not a non-zero 64-bit integer", v)
			}
			seed = n
			return nil
		}, "seed of the run's random draws, a non-zero `INT` (default: derived from the run id)")
		fs.DurationVar(&timeout, 0, "timeout", timeout, "stop the run (resumable) after this long; 0: no limit beyond the workflow's own")
	}
	fs := ff.NewFlagSet("run").SetParent(parent)
	bind(fs)
	return &ff.Command{
		Name:      "run",
		Usage:     "praetor workflow run [FLAGS] FILE",
		ShortHelp: "start a run of a workflow file and carry it to its end",
		LongHelp: strings.TrimSpace(`
Checks the workflow, its registry and constitutions first: any problem is
printed with its file, line, field and rule, and nothing runs (exit 2).
Then runs the tasks, printing a line on stderr per task state change and a
summary on stdout. Exits 0 when the run completes, 1 when it fails, 130 when
a signal stops it (resume it with praetor workflow resume RUN).

With --nats-url beside a praetor dev or praetor serve on the same NATS (the
dev's --nats-listen): the run takes its workers' answers on a consumer of its
own, named after its database (workflow-cli- and a hash of the host, port,
database name and search_path), so each orchestrator receives every answer
and keeps it in its own store, harmlessly for runs it does not know. The
consumer stays on the server for the next run or resume on that database,
and the server deletes it once no CLI has pulled from it for 24h. A run
or resume made after that creates it again, starting
from the oldest unfinished run of the database (or from then on, when
every run has finished): PRAETOR_TASKS keeps the answers published
meanwhile, unless its max age has removed them.
A task whose answer never comes fails at its timeout (10m unless the task,
its agent or the workflow's defaults set one), naming the task, its dispatch
and the consumer it waited on.`),
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			args, err := interspersed(parent, "run", bind, args)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return fmt.Errorf("run takes one workflow file: praetor workflow run FILE (got %d arguments)", len(args))
			}
			if err := bf.check(); err != nil {
				return err
			}
			log, err := quietLogger(g)
			if err != nil {
				return err
			}
			if runID != "" && !contracts.ValidToken(runID) {
				return settingErr("run-id", "%q must be 1-128 of [A-Za-z0-9_-]", runID)
			}
			opts := definition.LoadOptions{Workflow: args[0], Registry: registry, ProjectDir: project}
			bundle, err := loadDefinition(opts)
			if err != nil {
				return err
			}
			src, err := orchestrator.SourceOf(opts)
			if err != nil {
				return err
			}
			if runID == "" {
				runID = uuid.Must(uuid.NewV7()).String()
			}
			be, err := openBackend(ctx, bf, log, true)
			if err != nil {
				return err
			}
			defer be.close()
			if fr, ok := be.runs.(fileRuns); ok {
				// One state file holds one run: refuse before anything is written.
				if cur, err := fr.Current(ctx); err == nil && cur.Status == engine.RunRunning && cur.RunID != runID {
					return fmt.Errorf("run %s of workflow %s is still RUNNING in %s: carry it on with praetor workflow resume %s, or give this run another --state-dir",
						cur.RunID, cur.Workflow, fr.StatePath(), cur.RunID)
				}
			}
			if err := refuseTakenRunID(ctx, be.runs, runID); err != nil {
				return err
			}
			if err := be.runs.saveSource(runID, src); err != nil {
				return err
			}
			return carryOn(ctx, g, bf, be, bundle, log, timeout, func(ctx context.Context, x *executor.Executor) (engine.State, error) {
				fmt.Fprintf(g.stderr, "run %s of workflow %s: %d tasks; state in %s\n", runID, bundle.Workflow.Name,
					len(bundle.Plan().Tasks), be.runs.where())
				return x.Run(ctx, bundle, executor.RunOptions{RunID: runID, Seed: seed})
			})
		},
	}
}

// refuseTakenRunID is the usage error of a --run-id that names a run the
// store has: checked before the new run's source is saved, which would
// replace that run's own.
func refuseTakenRunID(ctx context.Context, runs runStore, runID string) error {
	s, err := runs.Load(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return usageError{fmt.Sprintf("%v: run %s of workflow %s (%s) is in %s: give the new run another --run-id, or carry that one on with praetor workflow resume %s",
		executor.ErrRunExists, runID, s.Workflow, s.Status, runs.where(), runID)}
}

func workflowResumeCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var (
		bf                 = defaultBackendFlags()
		workflow, registry string
		timeout            time.Duration
	)
	bind := func(fs *ff.FlagSet) {
		bf.register(fs, true)
		fs.StringVar(&workflow, 0, "workflow", workflow, "the run's workflow file, when it moved since the run started")
		fs.StringVar(&registry, 0, "registry", registry, "agent registry YAML, instead of the one the run started with")
		fs.DurationVar(&timeout, 0, "timeout", timeout, "stop again (resumable) after this long; 0: no limit")
	}
	fs := ff.NewFlagSet("resume").SetParent(parent)
	bind(fs)
	return &ff.Command{
		Name:      "resume",
		Usage:     "praetor workflow resume [FLAGS] [RUN]",
		ShortHelp: "carry on a stopped run: finished tasks are skipped, in-flight ones collected or dispatched again",
		LongHelp: strings.TrimSpace(`
Loads the run (RUN, or the one in the state file) and its workflow from the
files it started with, checks that the workflow's tasks did not change, and
carries it on. Tasks that COMPLETED are not run again; an attempt that was in
flight is dispatched again under its dispatch id, so a command agent still
running from the stopped process is waited for and an answer already sent by
a worker is used, rather than running it a second time.`),
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			args, err := interspersed(parent, "resume", bind, args)
			if err != nil {
				return err
			}
			be, runID, log, err := openRun(ctx, g, bf, "resume", args, true)
			if err != nil {
				return err
			}
			defer be.close()
			src, err := be.runs.source(ctx, runID)
			if err != nil && workflow == "" {
				return fmt.Errorf("run %s: %w (give its workflow file with --workflow)", runID, err)
			}
			opts := src.LoadOptions()
			if workflow != "" {
				opts.Workflow = workflow
			}
			if registry != "" {
				opts.Registry = registry
			}
			bundle, err := loadDefinition(opts)
			if err != nil {
				return err
			}
			return carryOn(ctx, g, bf, be, bundle, log, timeout, func(ctx context.Context, x *executor.Executor) (engine.State, error) {
				s, err := be.runs.Load(ctx, runID)
				if err == nil {
					fmt.Fprintf(g.stderr, "resuming run %s of workflow %s at event %d: %s\n", runID, s.Workflow, s.Seq, countStatuses(s))
				}
				return x.Resume(ctx, bundle, runID)
			})
		},
	}
}

// openRun is how the commands on one run (resume, status) start: at most
// one RUN argument, the backend open, and the run picked.
func openRun(ctx context.Context, g *globals, bf backendFlags, cmd string, args []string, withDispatch bool) (*backend, string, *slog.Logger, error) {
	if len(args) > 1 {
		return nil, "", nil, fmt.Errorf("%s takes at most one run id, got %q", cmd, args)
	}
	if err := bf.check(); err != nil {
		return nil, "", nil, err
	}
	log, err := quietLogger(g)
	if err != nil {
		return nil, "", nil, err
	}
	be, err := openBackend(ctx, bf, log, withDispatch)
	if err != nil {
		return nil, "", nil, err
	}
	runID, err := pickRun(ctx, be.runs, args)
	if err != nil {
		be.close()
		return nil, "", nil, err
	}
	return be, runID, log, nil
}

// pickRun is the run named on the command line, or the latest one.
func pickRun(ctx context.Context, runs runStore, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	id, err := runs.latest(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("no run to pick in %s: name one (praetor workflow status lists them) or start one with praetor workflow run FILE", runs.where())
	}
	return id, err
}

// carryOn builds the executor and runs start (Run or Resume) with live
// progress, then prints the summary.
func carryOn(ctx context.Context, g *globals, bf backendFlags, be *backend, bundle *definition.Bundle, log *slog.Logger,
	timeout time.Duration, start func(context.Context, *executor.Executor) (engine.State, error)) error {
	router, err := runtimes(bundle, be.attempts, log)
	if err != nil {
		return err
	}
	dispatcher := executor.Dispatcher(router)
	if be.dispatcher != nil {
		dispatcher = be.dispatcher
		if be.startWorkers != nil {
			if err := be.startWorkers(ctx, router, router.Agents()); err != nil {
				return err
			}
		}
	}
	p := newProgress(g.stderr, time.Now())
	// The progress lines and the returned error say what the executor's
	// log would; it speaks only when debugging.
	xlog := slog.New(slog.DiscardHandler)
	if log.Enabled(ctx, slog.LevelDebug) {
		xlog = log
	}
	x, err := executor.New(executor.Config{Dispatcher: dispatcher, Store: be.runs, Artifacts: be.runs,
		MaxParallel: cmp.Or(bf.maxParallel, 4), Observe: p.observe, Logger: xlog})
	if err != nil {
		return err
	}
	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("--timeout %s reached", timeout))
		defer cancel()
	}
	s, runErr := start(runCtx, x)
	be.flush(ctx)
	switch {
	case errors.Is(runErr, executor.ErrInterrupted):
		printSummary(g.stdout, s, be.runs.where(), time.Now())
		return &codedError{code: exitInterrupted, err: fmt.Errorf("run %s stopped (%v); carry it on with: praetor workflow resume %s",
			s.RunID, context.Cause(runCtx), s.RunID)}
	case errors.Is(runErr, filestore.ErrRunInProgress):
		return fmt.Errorf("%w\n(praetor workflow status shows it; praetor workflow resume carries it on)", runErr)
	case errors.Is(runErr, executor.ErrRunExists):
		return usageError{fmt.Sprintf("%v: give the new run another --run-id", runErr)}
	case errors.Is(runErr, executor.ErrPlanChanged):
		return fmt.Errorf("%w: the run cannot carry on with a different workflow; start a new run", runErr)
	case runErr != nil:
		if s.RunID != "" {
			printSummary(g.stdout, s, be.runs.where(), time.Now())
		}
		return runErr
	}
	printSummary(g.stdout, s, be.runs.where(), time.Now())
	if s.Status != engine.RunCompleted {
		return fmt.Errorf("run %s %s: %s", s.RunID, s.Status, s.Error)
	}
	if be.attempts != "" {
		_ = command.RemoveRun(be.attempts, s.RunID)
	}
	return nil
}

// progress prints a line per task state change.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	began   time.Time
	started map[string]time.Time // attempt start by task
}

func newProgress(w io.Writer, began time.Time) *progress {
	return &progress{w: w, began: began, started: map[string]time.Time{}}
}

func (p *progress) observe(s engine.State, evs []engine.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range evs {
		at := fmt.Sprintf("%8.2fs", time.Since(p.began).Seconds())
		switch e.Type {
		case engine.EventWorkRequested, engine.EventApprovalRequested:
			p.started[e.TaskID] = e.At
			fmt.Fprintf(p.w, "%s  %-24s RUNNING    attempt %d\n", at, e.TaskID, e.Attempt)
		case engine.EventAgentResponded:
			took := ""
			if t0, ok := p.started[e.TaskID]; ok {
				took = " in " + e.At.Sub(t0).Round(time.Millisecond).String()
			}
			switch engine.TaskStatus(e.Status) {
			case engine.TaskCompleted:
				var outs []string
				for _, o := range e.Outputs {
					outs = append(outs, o.Name)
				}
				line := fmt.Sprintf("%s  %-24s COMPLETED  attempt %d%s", at, e.TaskID, e.Attempt, took)
				if len(outs) > 0 {
					line += " -> " + strings.Join(outs, ", ")
				}
				fmt.Fprintln(p.w, line)
			case engine.TaskPending:
				retry := ""
				if t := s.Tasks[e.TaskID]; t != nil && t.RetryAt != nil {
					retry = " (retry in " + max(time.Until(*t.RetryAt), 0).Round(time.Millisecond).String() + ")"
				}
				fmt.Fprintf(p.w, "%s  %-24s RETRY      attempt %d failed%s%s: %s\n", at, e.TaskID, e.Attempt, took, retry, oneLine(e.Error))
			default:
				fmt.Fprintf(p.w, "%s  %-24s FAILED     attempt %d%s: %s\n", at, e.TaskID, e.Attempt, took, oneLine(e.Error))
			}
		case engine.EventAnnotated:
			fmt.Fprintf(p.w, "%s  %-24s annotated  %s\n", at, cmpOr(e.TaskID, "(run)"), e.Key)
		case engine.EventRunFinalized:
			line := fmt.Sprintf("%s  run %s", at, e.Status)
			if e.Reason != "" {
				line += ": " + e.Reason
			}
			fmt.Fprintln(p.w, line)
		}
	}
}

func oneLine(e *engine.TaskError) string {
	if e == nil {
		return ""
	}
	msg := strings.Join(strings.Fields(e.Message), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return string(e.Kind) + ": " + msg
}

func countStatuses(s engine.State) string {
	n := map[engine.TaskStatus]int{}
	for _, t := range s.Tasks {
		n[t.Status]++
	}
	var parts []string
	for _, st := range []engine.TaskStatus{engine.TaskCompleted, engine.TaskRunning, engine.TaskPending, engine.TaskFailed} {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	return strings.Join(parts, ", ")
}

// printSummary prints a run: its status and a line per task.
func printSummary(w io.Writer, s engine.State, where string, now time.Time) {
	if s.RunID == "" {
		return
	}
	end := now
	if s.FinishedAt != nil {
		end = *s.FinishedAt
	}
	fmt.Fprintf(w, "run %s  workflow %s  %s  %s  (%s)\n", s.RunID, s.Workflow, s.Status,
		end.Sub(s.StartedAt).Round(time.Millisecond), countStatuses(s))
	if s.Error != "" {
		fmt.Fprintf(w, "error: %s\n", s.Error)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPTS\tDURATION\tOUTPUTS\tERROR")
	for _, pt := range s.Plan.Tasks {
		t := s.Tasks[pt.ID]
		dur := "-"
		if t.StartedAt != nil {
			until := now
			if t.CompletedAt != nil {
				until = *t.CompletedAt
			}
			dur = until.Sub(*t.StartedAt).Round(time.Millisecond).String()
		}
		errMsg := ""
		if t.Error != nil {
			errMsg = oneLine(t.Error)
			if len(errMsg) > 80 {
				errMsg = errMsg[:80] + "..."
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", pt.ID, t.Status, t.Iterations, dur, strings.Join(t.Outputs, ","), errMsg)
	}
	tw.Flush()
	if s.Status != engine.RunRunning {
		if h, err := engine.Hash(s); err == nil {
			fmt.Fprintf(w, "state hash %s (%s)\n", h, where)
		}
	}
}

func workflowStatusCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var (
		bf     = defaultBackendFlags()
		asJSON bool
	)
	bind := func(fs *ff.FlagSet) {
		bf.register(fs, false)
		fs.BoolVarDefault(&asJSON, 0, "json", asJSON, "print the run's whole state as JSON")
	}
	fs := ff.NewFlagSet("status").SetParent(parent)
	bind(fs)
	return &ff.Command{
		Name:      "status",
		Usage:     "praetor workflow status [FLAGS] [RUN]",
		ShortHelp: "show a run: its tasks with status, attempts and durations",
		LongHelp: strings.TrimSpace(`
Shows RUN (or the latest run: the one in the state file, or the tenant's
newest in the database): each task's status, attempts, duration, outputs and
last error. It also folds the run's stored events and checks that they
rebuild the stored state (same hash).`),
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			args, err := interspersed(parent, "status", bind, args)
			if err != nil {
				return err
			}
			be, runID, _, err := openRun(ctx, g, bf, "status", args, false)
			if err != nil {
				return err
			}
			defer be.close()
			s, err := be.runs.Load(ctx, runID)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no run %s in %s", runID, be.runs.where())
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			printSummary(g.stdout, s, be.runs.where(), time.Now())
			if note, err := unheldNote(ctx, be.runs, s, time.Now()); err != nil {
				return err
			} else if note != "" {
				fmt.Fprintln(g.stdout, note)
			}
			evs, err := be.runs.events(ctx, runID)
			if err != nil {
				return fmt.Errorf("read the run's events: %w", err)
			}
			folded, err := engine.Fold(evs)
			if err != nil {
				return fmt.Errorf("the run's %d events do not fold: %w", len(evs), err)
			}
			got, _ := engine.Hash(folded)
			want, _ := engine.Hash(s)
			if got != want {
				return fmt.Errorf("the run's %d events fold to hash %s, the stored state has %s", len(evs), got, want)
			}
			fmt.Fprintf(g.stdout, "%d events fold to the stored state (hash %s)\n", len(evs), got)
			return nil
		},
	}
}

// unheldNote says of a RUNNING run that nothing may be carrying it on: its
// state alone would show it RUNNING forever once the process carrying it
// died. A run in the database is carried by the orchestrator holding its
// lease, or by the praetor workflow run that started it (no lease); one in
// files by that command alone. "" when a live lease holds it, or it ended.
func unheldNote(ctx context.Context, runs runStore, s engine.State, now time.Time) (string, error) {
	if s.Status != engine.RunRunning {
		return "", nil
	}
	resume := "praetor workflow resume " + s.RunID
	sr, ok := runs.(sqlRuns)
	if !ok {
		return fmt.Sprintf("RUNNING as far as its state file says: if the praetor workflow run carrying it has ended, carry it on with %s", resume), nil
	}
	h, err := sr.Holder(ctx, s.RunID)
	if err != nil {
		return "", err
	}
	switch {
	case h.Held(now):
		return "", nil
	case h.Until.IsZero():
		return fmt.Sprintf("no orchestrator holds this run (it has no lease): it was started by praetor workflow run, which alone carries it on; "+
			"if that process has ended, carry it on with %s --database-url URL --tenant %s", resume, sr.TenantID()), nil
	}
	return fmt.Sprintf("no live lease holds this run: the lease of %s ran out %s ago (%s); an orchestrator of praetor serve or dev on this database "+
		"takes it over within its lease period, and without one it waits: carry it on with %s --database-url URL --tenant %s",
		h.Owner, now.Sub(h.Until).Round(time.Second), h.Until.Format(time.RFC3339), resume, sr.TenantID()), nil
}

func workflowValidateCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var registry, project string
	bind := func(fs *ff.FlagSet) {
		fs.StringVar(&registry, 0, "registry", registry, "agent registry YAML, instead of the workflow's agents: file")
		fs.StringVar(&project, 0, "project", project, "project directory the inputs are read from")
	}
	fs := ff.NewFlagSet("validate").SetParent(parent)
	bind(fs)
	return &ff.Command{
		Name:      "validate",
		Usage:     "praetor workflow validate [FLAGS] FILE ...",
		ShortHelp: "check workflow files, their registries and constitutions without running anything",
		LongHelp: strings.TrimSpace(`
Reports every problem at once — unknown key, wrong type, duplicate task id,
unknown dependency, dependency cycle (named in full), unknown agent, missing
input or constitution file, bad duration, a command agent's executable that
is not found or not executable here — each with its file, line, column,
field path and rule. Exits 2 when a file is invalid. The JSON Schemas are in
services/orchestrator/schema.`),
		Flags: fs,
		Exec: func(_ context.Context, files []string) error {
			files, err := interspersed(parent, "validate", bind, files)
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return fmt.Errorf("validate needs a workflow file: praetor workflow validate FILE")
			}
			invalid := 0
			for _, f := range files {
				b, err := definition.Load(definition.LoadOptions{Workflow: f, Registry: registry, ProjectDir: project})
				if err == nil {
					err = orchestrator.CheckCommands(b)
				}
				if err != nil {
					invalid++
					fmt.Fprintln(g.stdout, err)
					continue
				}
				agents := map[string]bool{}
				for _, t := range b.Tasks() {
					agents[t.Agent] = true
				}
				names := make([]string, 0, len(agents))
				for a := range agents {
					names = append(names, a)
				}
				sort.Strings(names)
				order := make([]string, 0, len(b.Plan().Tasks))
				for _, t := range b.Plan().Tasks {
					order = append(order, t.ID)
				}
				fmt.Fprintf(g.stdout, "%s: valid: workflow %s, %d tasks (%s), agents %s from %s\n", f, b.Workflow.Name,
					len(order), strings.Join(order, " -> "), strings.Join(names, ", "), b.RegistryFile)
			}
			if invalid > 0 {
				return exitError(exitInvalid)
			}
			return nil
		},
	}
}

// liveRuns is the store of the live runs a workflow replay is checked
// against (praetor replay --workflow RUN --database-url, or the SQLite store
// of a praetor dev's --data-dir).
type liveRuns struct {
	db    store.DB
	where string
}

// openLiveRuns opens the store a workflow replay checks its fold against:
// --database-url's PostgreSQL; else the SQLite store of --data-dir when it
// holds one — unless --nats-url names a server and --data-dir was left at its
// default, as the NATS read need not then be that dev's. nil when neither.
func openLiveRuns(ctx context.Context, databaseURL, natsURL, dataDir string, dataDirSet bool) (*liveRuns, error) {
	if databaseURL != "" {
		db, err := node.OpenStore(ctx, false, "", databaseURL)
		if err != nil {
			return nil, err
		}
		return &liveRuns{db: db, where: "the database"}, nil
	}
	path := filepath.Join(dataDir, "praetor.db")
	if natsURL != "" && !dataDirSet {
		return nil, nil
	}
	if _, err := os.Stat(path); err != nil {
		if dataDirSet {
			return nil, settingErr("data-dir", "%s holds no praetor dev store (%s not found) to check the run against", dataDir, path)
		}
		return nil, nil
	}
	db, err := node.OpenStore(ctx, true, dataDir, "")
	if err != nil {
		return nil, err
	}
	return &liveRuns{db: db, where: "the praetor dev store " + path}, nil
}

func (l *liveRuns) close() {
	if l != nil {
		_ = l.db.Close()
	}
}

// replayWorkflow rebuilds a run from its events on the workflow stream and
// prints the state and its hash (praetor replay --workflow RUN); given the
// live run's store, it checks the fold against the stored run: ok, or
// DIVERGED with the first field that differs (exit 1).
func replayWorkflow(ctx context.Context, bus *events.Bus, tenant, runID string, live *liveRuns, stdout, stderr io.Writer) error {
	s, evs, err := runevents.Rebuild(ctx, bus, tenant, runID)
	if errors.Is(err, runevents.ErrNoEvents) {
		if others := runTenants(ctx, bus, runID); len(others) > 0 {
			return fmt.Errorf("%w; it has events of tenant %s (--tenant)", err, strings.Join(others, ", "))
		}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	h, err := engine.Hash(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "run %s of tenant %s: %d events folded, status %s\n", runID, tenant, len(evs), s.Status)
	fmt.Fprintf(stdout, "state hash %s\n", h)
	if live == nil {
		fmt.Fprintln(stderr, "only the fold was done: no store to check it against the live run "+
			"(--database-url of the run's database, or --data-dir of the praetor dev that ran it)")
		return nil
	}
	return checkLiveRun(ctx, live, tenant, runID, s, h, stderr)
}

// checkLiveRun compares a run folded from the stream with the run in its
// store: the stored state when both are at the same event; when the stored
// run has gone further (its outbox has yet to publish the rest, or it is
// still running), the state its stored events fold to at the stream's last
// event.
func checkLiveRun(ctx context.Context, live *liveRuns, tenant, runID string, folded engine.State, h string, w io.Writer) error {
	st, err := sqlstore.New(sqlstore.Config{DB: live.db, TenantID: tenant})
	if err != nil {
		return err
	}
	where := "tenant " + tenant + " in " + live.where
	want, err := st.Load(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no run %s of %s: the fold could not be checked against the live run (the store of a praetor workflow run is its --database-url)", runID, where)
	}
	if err != nil {
		return fmt.Errorf("load the live run %s of %s: %w", runID, where, err)
	}
	at, liveSeq := "", want.Seq
	if liveSeq > folded.Seq {
		evs, err := st.Events(ctx, runID)
		if err != nil {
			return fmt.Errorf("read the live run's events: %w", err)
		}
		if want, err = engine.Fold(evs[:min(int64(len(evs)), folded.Seq)]); err != nil {
			return fmt.Errorf("the live run's first %d events do not fold: %w", folded.Seq, err)
		}
		at = fmt.Sprintf(" at event %d (the stored run is at %d: the rest is not on the stream yet)", folded.Seq, liveSeq)
	}
	lh, err := engine.Hash(want)
	if err != nil {
		return err
	}
	if lh == h {
		fmt.Fprintf(w, "ok: the live run in %s has the same state%s (hash %s)\n", where, at, lh)
		return nil
	}
	fmt.Fprintf(w, "DIVERGED from the live run in %s%s (hash %s): %s\n", where, at, lh, firstDifference(folded, want))
	return exitError(1)
}

// firstDifference names the first field, in canonical key order, where
// the replayed state differs from the live one, with both values.
func firstDifference(replayed, live engine.State) string {
	decode := func(s engine.State) any {
		raw, err := engine.CanonicalJSON(s)
		if err != nil {
			return nil
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		var v any
		_ = dec.Decode(&v)
		return v
	}
	path, got, want := jsonDifference("", decode(replayed), decode(live))
	if path == "" {
		path = "(the state)"
	}
	return fmt.Sprintf("%s is %s replayed, %s live", path, got, want)
}

// jsonDifference finds the first path under path where a and b differ.
func jsonDifference(path string, a, b any) (string, string, string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := maps.Clone(am)
		maps.Copy(keys, bm)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			x, inA := am[k]
			y, inB := bm[k]
			switch {
			case !inA:
				return joinPath(path, k), "(absent)", shortJSON(y)
			case !inB:
				return joinPath(path, k), shortJSON(x), "(absent)"
			}
			if p, x, y := jsonDifference(joinPath(path, k), x, y); p != "" {
				return p, x, y
			}
		}
		return "", "", ""
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		for i := range max(len(al), len(bl)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(al):
				return p, "(absent)", shortJSON(bl[i])
			case i >= len(bl):
				return p, shortJSON(al[i]), "(absent)"
			}
			if p, x, y := jsonDifference(p, al[i], bl[i]); p != "" {
				return p, x, y
			}
		}
		return "", "", ""
	}
	x, y := shortJSON(a), shortJSON(b)
	if x == y {
		return "", "", ""
	}
	return cmpOr(path, "."), x, y
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shortJSON writes a value as JSON, cut to a line's worth.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// runTenants are the tenants with events of a run on the workflow stream:
// the ones a replay given another tenant could mean.
func runTenants(ctx context.Context, bus *events.Bus, runID string) []string {
	seen := map[string]bool{}
	_ = bus.Replay(ctx, events.ReplayConfig{Stream: contracts.StreamWorkflows, Subjects: runevents.Subjects("*", runID)},
		func(r events.Record) error {
			// praetor.workflow.<event>.<tenant>.<run>[.<partition>]
			if parts := strings.Split(r.Subject, "."); len(parts) > 3 {
				seen[parts[3]] = true
			}
			return nil
		})
	return slices.Sorted(maps.Keys(seen))
}
