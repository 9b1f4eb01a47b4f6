package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/gctune"
	"github.com/praetorhq/praetor/internal/llm/provider"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/wiring"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/orchestrator"
)

// nodeFlags are the settings praetor dev and praetor serve share.
type nodeFlags struct {
	httpAddr        string
	metricsAddr     string
	services        string
	partitions      int
	maxAge          time.Duration
	replicas        int
	duplicates      time.Duration
	compression     string
	drainTimeout    time.Duration
	llmProvider     string
	llmModel        string
	llmBaseURL      string
	llmSeed         int
	llmLatency      time.Duration
	llmOmitPrompts  bool
	llmCheck        bool
	enginesDirs     []string
	ackWait         time.Duration
	maxMessageBytes int
}

func (f *nodeFlags) register(fs *ff.FlagSet, httpAddr string) {
	fs.StringVar(&f.httpAddr, 0, "http-addr", httpAddr, "address of the HTTP API, page, health and (without --metrics-addr) metrics")
	fs.StringVar(&f.metricsAddr, 0, "metrics-addr", "", "address that serves /metrics alone, which --http-addr then does not (keep a public API from exposing the node's metrics); empty: /metrics on --http-addr")
	fs.StringVar(&f.services, 0, "services", "", "comma-separated services to run (dev: all); available: "+strings.Join(wiring.Names(), ", "))
	fs.IntVar(&f.partitions, 0, "partitions", 0, "partitions of the ordered streams (per-key order, parallel keys); 0: the streams' own count when they exist, else 4 in dev and 16 in serve")
	fs.DurationVar(&f.maxAge, 0, "stream-max-age", 0, "how long streams keep events (0: forever, the audit log; longer than --ack-wait)")
	fs.IntVar(&f.replicas, 0, "stream-replicas", 1, "replicas of each stream in a NATS cluster")
	fs.DurationVar(&f.duplicates, 0, "duplicate-window", 0, "window in which the streams drop a republished event id (0: the ack wait and 30s more in dev, whose embedded NATS server keeps the window's ids in the services' heap; 2m in serve, or that much when the ack wait is longer; at most --stream-max-age)")
	fs.StringVar(&f.compression, 0, "stream-compression", "", "how streams store full message blocks: s2 (compressed: the LLM stream takes ~1/15 of the disk) or none (default: none in dev, whose embedded NATS server would compress on the handlers' cores; s2 in serve)")
	fs.DurationVar(&f.drainTimeout, 0, "drain-timeout", 30*time.Second, "how long a stop waits for in-flight events")
	fs.StringVar(&f.llmProvider, 0, "llm-provider", "", "auto, openai or offline (auto: openai when an API key is set, else offline)")
	fs.StringVar(&f.llmModel, 0, "llm-model", "", "model name for the openai provider (default: gpt-4o-mini)")
	fs.StringVar(&f.llmBaseURL, 0, "llm-base-url", "", "OpenAI-compatible base URL (also OPENAI_BASE_URL); the key comes only from PRAETOR_LLM_API_KEY or OPENAI_API_KEY")
	fs.IntVar(&f.llmSeed, 0, "llm-seed", 0, "seed of the offline provider")
	fs.DurationVar(&f.llmLatency, 0, "llm-offline-latency", 0, "delay every offline answer by this much, to stand in for a model in load tests")
	fs.BoolVar(&f.llmOmitPrompts, 0, "llm-omit-prompts", "leave the prompts out of the recorded LLM calls (llm.call.recorded keeps their hash and the answers; replay does not need them)")
	fs.BoolVarDefault(&f.llmCheck, 0, "llm-check", true, "with the openai provider, check the key and base URL at start (GET {base}/models, no tokens): a refused key or a base URL with no API there stops the start; false for a server without /models")
	fs.IntVar(&f.maxMessageBytes, 0, "max-message-bytes", 8<<10, "largest user message the gateway accepts, in bytes")
	fs.DurationVar(&f.ackWait, 0, "ack-wait", 30*time.Second, "how long a consumer waits before redelivering an event whose process died")
	fs.StringListVar(&f.enginesDirs, 0, "engines-dir", "directory of engine YAML files to load besides the shipped ones (repeatable)")
}

func (f *nodeFlags) apply(cfg *node.Config) error {
	cfg.Version = releaseVersion()
	cfg.HTTPAddr = f.httpAddr
	cfg.MetricsAddr = f.metricsAddr
	cfg.Services = splitList(f.services)
	cfg.Streams = node.StreamSettings{MaxAge: f.maxAge, Replicas: f.replicas, Partitions: f.partitions, Duplicates: f.duplicates,
		Compression: f.compression}
	cfg.DrainTimeout = f.drainTimeout
	llmCfg, err := provider.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	llmCfg.Provider = cmpOr(f.llmProvider, llmCfg.Provider)
	llmCfg.Model = cmpOr(f.llmModel, llmCfg.Model)
	llmCfg.BaseURL = cmpOr(f.llmBaseURL, llmCfg.BaseURL)
	if f.llmSeed != 0 {
		llmCfg.Seed = int64(f.llmSeed)
	}
	llmCfg.OfflineLatency = f.llmLatency
	if err := llmCfg.Validate(); err != nil {
		return err
	}
	cfg.OmitLLMPrompts = f.llmOmitPrompts
	cfg.AckWait = f.ackWait
	cfg.LLM = llmCfg
	return wiring.Configure(cfg, wiring.Options{Gateway: func(g *gateway.Config) { g.MaxMessageBytes = f.maxMessageBytes }},
		f.enginesDirs, os.Stderr)
}

// checkLLM checks the model's key and base URL once, unless --llm-check=false.
func (f *nodeFlags) checkLLM(ctx context.Context, cfg node.Config) error {
	if !f.llmCheck {
		return nil
	}
	return provider.Check(ctx, cfg.LLM, cfg.Logger)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func serveCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var (
		nf          nodeFlags
		natsURL     string
		databaseURL string
		migrate     bool
	)
	fs := ff.NewFlagSet("serve").SetParent(parent)
	nf.register(fs, "0.0.0.0:8080")
	fs.StringVar(&natsURL, 0, "nats-url", os.Getenv("NATS_URL"), "NATS server URL (NATS_URL)")
	fs.StringVar(&databaseURL, 0, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL)")
	fs.BoolVar(&migrate, 0, "migrate", "apply pending database migrations at start (otherwise they must be applied by praetor migrate)")
	return &ff.Command{
		Name:      "serve",
		Usage:     "praetor serve --services runner,extractor [FLAGS]",
		ShortHelp: "run the named services against NATS and PostgreSQL (production)",
		LongHelp: strings.TrimSpace(`
Each service is a durable consumer group: run more replicas of a service to
add workers. Logs are JSON by default. SIGINT or SIGTERM turns readiness off,
drains the consumers and exits 0.`) + "\n\n" + workflowSettingsHelp(),
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("serve takes no arguments, got %q", args)
			}
			log, err := g.logger("json")
			if err != nil {
				return err
			}
			tuneGC(log)
			cfg := node.Config{NATSURL: natsURL, DatabaseURL: databaseURL, Migrate: migrate, Logger: log}
			if err := nf.apply(&cfg); err != nil {
				return err
			}
			if err := nf.checkLLM(ctx, cfg); err != nil {
				return err
			}
			return node.Run(ctx, cfg)
		},
	}
}

// defaultNATSListen is where praetor dev's embedded NATS takes other
// processes, and where a tool without a --data-dir store looks for it.
const defaultNATSListen = "127.0.0.1:4222"

func devCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var (
		nf         nodeFlags
		dataDir    string
		natsListen string
	)
	fs := ff.NewFlagSet("dev").SetParent(parent)
	nf.register(fs, "127.0.0.1:8080")
	fs.StringVar(&dataDir, 0, "data-dir", "./.praetor", "directory of the embedded NATS and SQLite data")
	fs.StringVar(&natsListen, 0, "nats-listen", defaultNATSListen, "address where the embedded NATS takes other processes: praetor replay and dlq (which find it from --data-dir), "+
		"praetor workflow run --nats-url, any NATS client; praetor chat talks HTTP (--url), not NATS; empty: in-process only")
	return &ff.Command{
		Name:      "dev",
		Usage:     "praetor dev [FLAGS]",
		ShortHelp: "run every service in one process, with NATS and SQLite embedded",
		LongHelp: strings.TrimSpace(`
Nothing else to install: NATS JetStream (file storage) and SQLite live under
--data-dir, migrations are applied at start, and the HTTP API, web page,
/healthz, /readyz and /metrics are served on --http-addr (/metrics on
--metrics-addr instead when it is set).`) + "\n\n" + workflowSettingsHelp(),
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("dev takes no arguments, got %q", args)
			}
			log, err := g.logger("text")
			if err != nil {
				return err
			}
			tuneGC(log)
			cfg := node.Config{Dev: true, DataDir: dataDir, NATSListen: natsListen, Logger: log}
			if err := nf.apply(&cfg); err != nil {
				return err
			}
			if err := nf.checkLLM(ctx, cfg); err != nil {
				return err
			}
			return node.Run(ctx, cfg)
		},
	}
}

// workflowSettingsHelp lists the settings of the orchestrator and
// agent-worker services, which are environment variables only, from the
// table their settings are read by.
func workflowSettingsHelp() string {
	var b strings.Builder
	b.WriteString("The orchestrator and agent-worker services read these environment variables\n(no flags):\n")
	for _, v := range orchestrator.Variables {
		fmt.Fprintf(&b, "\n  %s\n      %s", v.Name, v.Help)
	}
	return b.String()
}

// tuneGC sets the runtime's defaults of a process that runs services (see
// gctune: GOGC 400, a limit under the container's, and one processor more
// than the cores, unless GOGC, GOMEMLIMIT and GOMAXPROCS say otherwise) and
// logs them.
func tuneGC(log *slog.Logger) {
	s, err := gctune.Apply(os.Getenv)
	if err != nil {
		log.Warn("garbage collector: no container memory limit taken", "err", err)
	}
	log.Info("garbage collector", "gc", s)
}
