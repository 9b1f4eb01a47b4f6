// Package wiring builds Praetor's services from a node's dependencies: the
// one list of what the praetor binary can run, shared by the binary and by
// tests that run a real node in process.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"sync"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/services/background"
	"github.com/praetorhq/praetor/services/extractor"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/runner"
)

// Options adjust the services built.
type Options struct {
	// Gateway, when set, edits the gateway's configuration before it is built.
	Gateway func(*gateway.Config)
	// Started, when set, is told of each service built, with the node's
	// dependencies (tests use it to reach a service).
	Started func(name string, svc node.Service, deps node.Deps)
	// LookupEnv reads the PRAETOR_WORKFLOW_* and NEO4J_* settings. Default:
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Services returns the factory of every service, by name.
func Services(opts Options) map[string]node.Factory {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	observe := func(name string, f node.Factory) node.Factory {
		return func(ctx context.Context, d node.Deps) (node.Service, error) {
			svc, err := f(ctx, d)
			if err == nil && opts.Started != nil {
				opts.Started(name, svc, d)
			}
			return svc, err
		}
	}
	all := map[string]node.Factory{
		"gateway":   func(ctx context.Context, d node.Deps) (node.Service, error) { return newGateway(d, opts.Gateway) },
		"extractor": newExtractor,
		"runner": func(ctx context.Context, d node.Deps) (node.Service, error) {
			return newRunner(ctx, d, opts.LookupEnv)
		},
		// orchestrator consumes workflow.requested and carries the runs on;
		// agent-worker runs their attempts. PRAETOR_WORKFLOW_* configure both.
		"orchestrator": orchestrator.ServiceFactory(opts.LookupEnv),
		"agent-worker": orchestrator.WorkerFactory(opts.LookupEnv),
		// background runs the engines' background tasks (research).
		"background": background.Factory,
		// memory answers memory.write.requested and serves MCP at /mcp; its
		// graph is embedded in dev, Neo4j (NEO4J_URI) in serve.
		"memory": memory.ServiceFactory(opts.LookupEnv),
	}
	for name, f := range all {
		all[name] = observe(name, f)
	}
	return all
}

// Names lists the services, sorted.
func Names() []string {
	var out []string
	for n := range Services(Options{}) {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Configure gives cfg what every node of the praetor binary runs: the
// factory of every service (Services(opts)) and the engines, shipped and
// those of enginesDirs (LoadEngines, printing to w). praetor dev, praetor
// serve and pkg/praetortest's node are configured by it.
func Configure(cfg *node.Config, opts Options, enginesDirs []string, w io.Writer) error {
	cat, reg, err := LoadEngines(enginesDirs, w)
	if err != nil {
		return err
	}
	cfg.Available = Services(opts)
	cfg.Engines, cfg.EngineRegistry = cat, reg
	return nil
}

// LoadEngines loads the shipped engines and those of dirs (the
// --engines-dir flags), printing the warnings and errors to w; invalid
// engines stop the start, with an error that counts the errors listed
// rather than listing them again.
func LoadEngines(dirs []string, w io.Writer) (*engine.Catalog, *engine.Registry, error) {
	for _, d := range dirs {
		if err := checkEnginesDir(d); err != nil {
			return nil, nil, err
		}
	}
	reg, err := builtin.Registry()
	if err != nil {
		return nil, nil, err
	}
	cat, report, err := builtin.Load(reg, dirs...)
	for _, issue := range report.Warnings {
		fmt.Fprintln(w, issue)
	}
	for _, issue := range report.Errors {
		fmt.Fprintln(w, issue)
	}
	var invalid *engine.InvalidError
	if errors.As(err, &invalid) {
		return nil, nil, listedError{invalid}
	}
	if err != nil {
		return nil, nil, err
	}
	return cat, reg, nil
}

// checkEnginesDir says what is wrong with an --engines-dir that is not a
// directory, in the words of the flag.
func checkEnginesDir(dir string) error {
	fi, err := os.Stat(dir)
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--engines-dir %s: no such directory", dir)
	case errors.As(err, &pathErr):
		return fmt.Errorf("--engines-dir %s: %w", dir, pathErr.Err)
	case err != nil:
		return fmt.Errorf("--engines-dir %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("--engines-dir %s: not a directory", dir)
	}
	return nil
}

// listedError is an InvalidError whose issues were printed already: it
// counts them.
type listedError struct{ err *engine.InvalidError }

func (e listedError) Error() string {
	n := len(e.err.Issues)
	noun := "errors"
	if n == 1 {
		noun = "error"
	}
	return fmt.Sprintf("%s: %d %s listed above (praetor validate DIR checks a directory)", engine.ErrInvalid, n, noun)
}

func (e listedError) Unwrap() error { return e.err }

// useOfflineSkills lets the offline provider drive the engines.
func useOfflineSkills(d node.Deps) {
	if d.Offline == nil {
		return
	}
	for purpose, skill := range offlineskill.Skills() {
		d.Offline.Handle(purpose, skill)
	}
}

func newGateway(d node.Deps, edit func(*gateway.Config)) (node.Service, error) {
	cfg := gateway.Config{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Engines: d.Engines, Registry: d.EngineRegistry,
		Logger: d.Logger, OpenTenant: d.DevTenant, Provider: d.LLMInfo.Provider, Offline: d.LLMInfo.Offline,
		Registerer: d.Registerer, Unavailable: d.StoreUnavailable()}
	if edit != nil {
		edit(&cfg)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return nil, err
	}
	g.Routes(d.Mux)
	return g, nil
}

func newExtractor(_ context.Context, d node.Deps) (node.Service, error) {
	useOfflineSkills(d)
	return extractor.New(extractor.Config{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Engines: d.Engines, LLM: d.LLM,
		Logger: d.Logger, Registerer: d.Registerer, AckWait: d.AckWait, Unavailable: d.StoreUnavailable()})
}

// newRunner builds the runner service. It reads the project's graph memory
// as background intelligence (the memory service's graph: embedded in dev,
// Neo4j from NEO4J_URI in serve); a serve node without NEO4J_URI runs
// without it.
func newRunner(ctx context.Context, d node.Deps, lookup func(string) (string, bool)) (node.Service, error) {
	useOfflineSkills(d)
	cfg := runner.Config{LLM: d.LLM, Registry: d.EngineRegistry, Logger: d.Logger}
	if d.Offline == nil {
		cfg.Summarizer = contextasm.LLMSummarizer{LLM: d.LLM}
	}
	intel, closeIntel, err := memory.OpenBackground(ctx, d, lookup)
	var unset *memory.SettingError
	switch {
	case errors.As(err, &unset):
		d.Logger.Info("runner: no background intelligence from memory", "reason", err)
		closeIntel = func(context.Context) error { return nil }
	case err != nil:
		return nil, fmt.Errorf("runner: memory for background intelligence: %w", err)
	default:
		cfg.Intelligence = intel
	}
	svc, err := func() (node.Service, error) {
		r, err := runner.New(cfg)
		if err != nil {
			return nil, err
		}
		return runner.NewService(runner.ServiceConfig{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Engines: d.Engines, Runner: r,
			Logger: d.Logger, Registerer: d.Registerer, AckWait: d.AckWait, Unavailable: d.StoreUnavailable()})
	}()
	if err != nil {
		_ = closeIntel(ctx)
		return nil, err
	}
	return &closing{Service: svc, close: closeIntel}, nil
}

// closing is a service that releases a resource after it stopped.
type closing struct {
	node.Service
	close func(context.Context) error
	once  sync.Once
}

func (c *closing) Stop(ctx context.Context) error {
	err := c.Service.Stop(ctx)
	c.once.Do(func() { err = errors.Join(err, c.close(ctx)) })
	return err
}
