// Package node runs one Praetor process: it connects (or embeds) NATS and
// the relational store, provisions the streams, starts the outbox relay and
// the services asked for, serves health, readiness and metrics over HTTP, and
// drains everything on stop. praetor dev and praetor serve are both a node.
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/praetorhq/praetor/internal/datadir"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/internal/llm/provider"
	"github.com/praetorhq/praetor/internal/llm/record"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/store/postgres"
	"github.com/praetorhq/praetor/internal/store/sqlite"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Service is a long-running part of Praetor (runner, extractor, gateway ...).
type Service interface {
	Start(ctx context.Context) error
	// Stop drains the service; it may be called twice.
	Stop(ctx context.Context) error
}

// Deps is what a node gives the services it starts.
type Deps struct {
	Bus        *events.Bus
	DB         store.DB
	Relay      *delivery.Relay
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Mux is the node's HTTP mux; services may add routes (the gateway does).
	Mux *http.ServeMux
	// Metrics are the event-layer collectors, already registered.
	Metrics *events.Metrics
	// Streams are the stream settings in force, for services that provision
	// streams of their own.
	Streams StreamSettings
	// LLM is the model client: instrumented, and recording every call as
	// llm.call.recorded.
	LLM llm.Client
	// LLMInfo says which provider LLM is, and why.
	LLMInfo provider.Info
	// Offline is the offline provider when it is in use, so services can
	// register their skills on it; nil with a real model.
	Offline *offline.Offline
	// Engines are the loaded engine definitions, and EngineRegistry the
	// evaluators and task handlers they name.
	Engines        *engine.Catalog
	EngineRegistry *engine.Registry
	// Dev is true under praetor dev; DataDir is then its data directory.
	Dev     bool
	DataDir string
	// DatabaseURL is the URL of DB outside dev, for a service to name the
	// store (redacted) in a command it suggests; empty in dev.
	DatabaseURL string
	// DevTenant is the tenant praetor dev serves without a token on loopback.
	DevTenant string
	// AckWait is the consumers' redelivery delay after a process dies.
	AckWait time.Duration
}

// StoreUnavailable returns what tells the failures of the node's store
// that mean its database is down, for the services to wait an outage out
// (their consumers pause, events.ConsumerConfig.Unavailable; the gateway
// answers 503); nil for the embedded SQLite store of dev, which has no
// outage of its own.
func (d Deps) StoreUnavailable() func(error) bool {
	if _, ok := d.DB.(*postgres.DB); ok {
		return postgres.IsUnavailable
	}
	return nil
}

// Factory builds a service from the node's dependencies.
type Factory func(ctx context.Context, deps Deps) (Service, error)

// StreamSettings apply to every catalog stream.
type StreamSettings struct {
	// MaxAge bounds how long events are kept; 0 keeps them forever.
	MaxAge time.Duration
	// Replicas of each stream in a NATS cluster. Default: 1.
	Replicas int
	// Partitions of ordered streams. Default (0): the count they already
	// have, else DevPartitions in dev and ServePartitions otherwise.
	Partitions int
	// Duplicates is the deduplication window, at most MaxAge when that is
	// set (NATS keeps a stream's ids no longer than its events). Default:
	// see DefaultDuplicates, or MaxAge when that is shorter.
	Duplicates time.Duration
	// Compression stores full message blocks compressed: events.CompressionS2
	// (consecutive LLM records share most of their prompts, and the LLM
	// stream takes about a fifteenth of the disk) or events.CompressionNone
	// ("" in a StreamSettings given to Provision). Config's default is
	// DefaultCompression.
	Compression string
}

// Config configures a node.
type Config struct {
	// Dev embeds NATS (file storage under DataDir/nats) and SQLite
	// (DataDir/praetor.db); otherwise NATSURL and DatabaseURL are used.
	Dev     bool
	DataDir string
	// NATSListen, in dev, opens the embedded server on this address so other
	// processes (praetor replay, praetor chat) can join; port 0 picks a free
	// one; empty: in-process only.
	NATSListen  string
	NATSURL     string
	DatabaseURL string
	// Migrate applies pending migrations at start (always in dev).
	Migrate bool
	// HTTPAddr serves /healthz, /readyz, the services' routes and, unless
	// MetricsAddr is set, /metrics.
	HTTPAddr string
	// MetricsAddr, when set, serves /metrics on a listener of its own, and
	// HTTPAddr does not: a public API does not expose the node's metrics.
	// Default: "", /metrics on HTTPAddr.
	MetricsAddr string
	// Services to run, by name; all of Available when empty in dev.
	Services []string
	// Available maps service names to their factories.
	Available map[string]Factory
	Streams   StreamSettings
	// LLM selects the model provider.
	LLM provider.Config
	// OmitLLMPrompts leaves the prompts out of the llm.call.recorded events,
	// which keep their hash and the answers: the LLM stream is a fraction of
	// its size and holds no second copy of the users' words. Replay does not
	// need them (it rebuilds each prompt and checks it against the hash);
	// an auditor who wants one rebuilds it the same way.
	OmitLLMPrompts bool
	// Engines and EngineRegistry are the engines the services run.
	Engines        *engine.Catalog
	EngineRegistry *engine.Registry
	Logger         *slog.Logger
	// Registry receives every metric. Default: a new registry.
	Registry *prometheus.Registry
	// DrainTimeout bounds the graceful stop. Default: 30s.
	DrainTimeout time.Duration
	// AckWait is how long the services' consumers wait before redelivering
	// an event whose process died. Default: 30s.
	AckWait time.Duration
	// Ready, when set, receives the bound HTTP address once the node serves.
	Ready func(httpAddr string)
	// MetricsReady, when set with MetricsAddr, receives the bound metrics
	// address once the node serves, before Ready.
	MetricsReady func(metricsAddr string)
	// NATSReady, when set with NATSListen in dev, receives the embedded
	// server's client URL (nats://127.0.0.1:PORT) once the node serves,
	// before Ready: the port NATSListen's port 0 took.
	NATSReady func(natsURL string)
	// Version is the build's version, the label of praetor_build_info.
	// Default: "unknown".
	Version string
}

// DefaultCompression is the streams' compression when none is configured:
// none in dev, s2 otherwise.
//
// In dev the NATS server is embedded: it compresses a stream's block when
// the block is full (8 MB; the LLM stream fills one every few hundred
// turns), reading it back, compressing it and writing it again at once,
// on the cores and the heap of the handlers. On the turn-path benchmark at
// 500 turns/s that burst cost the tail: p99 12.0–26.0 ms against 7.6–16.9
// without compression, lower in 7 of 8 alternating pairs, with 14% less
// allocated a turn and 30 MB less live heap. Under serve the NATS server
// is a process of its own, whose CPU the handlers do not share, and the
// disk the audit log saves is worth it.
func DefaultCompression(dev bool) string {
	if dev {
		return events.CompressionNone
	}
	return events.CompressionS2
}

// DefaultDuplicates is the streams' deduplication window when none is
// configured: in dev the consumers' ack wait and 30 s more (a minute at the
// default ack wait), otherwise NATS's 2 minutes, or that much when the ack
// wait is longer.
//
// The window must outlast the ack wait: a handler that dies mid-event is
// redelivered after it, and its re-run publishes the same derived ids again
// (its LLM records, a dead letter), which the stream should drop. Beyond
// that, the NATS server keeps every message id of the window in memory, and
// in dev it is embedded: at 500 turns/s a 2-minute window is some 300,000
// ids and their entries in the handlers' heap, marked at every collection.
// In four alternating pairs of the steady-state benchmark (5,000 sessions,
// 2 minutes) a 30 s window had 7–22% less live heap than 2 minutes in all
// four and less marking a cycle in three. Correctness does not rest on the
// window: handlers' inboxes drop an event id they have handled, and replay
// takes one copy of a repeated id (of a recorded model call the last, which
// the work that committed used: internal/llm/record); the window keeps
// copies out of the stream.
//
// A stream max age under the window shortens it to the max age (NATS refuses
// a window beyond it); it keeps two copies of an id out of the stream still,
// since the first has expired when the window ends.
func DefaultDuplicates(dev bool, ackWait time.Duration) time.Duration {
	if dev {
		return ackWait + 30*time.Second
	}
	return max(2*time.Minute, ackWait+30*time.Second)
}

func (c Config) withDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 30*time.Second)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.Streams.Replicas = cmp.Or(c.Streams.Replicas, 1)
	if c.Streams.Duplicates == 0 {
		c.Streams.Duplicates = DefaultDuplicates(c.Dev, c.AckWait)
		if c.Streams.MaxAge > 0 {
			c.Streams.Duplicates = min(c.Streams.Duplicates, c.Streams.MaxAge)
		}
	}
	c.Streams.Compression = cmp.Or(c.Streams.Compression, DefaultCompression(c.Dev))
	if c.Dev && len(c.Services) == 0 {
		for name := range c.Available {
			c.Services = append(c.Services, name)
		}
		sort.Strings(c.Services)
	}
	return c
}

// SettingError names the setting that is wrong and what to do about it.
type SettingError struct {
	Setting string
	Problem string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("invalid setting --%s (%s): %s", e.Setting, EnvVar(e.Setting), e.Problem)
}

// EnvVar is the environment variable of a setting: PRAETOR_ and the flag name
// in capitals, or the conventional name where there is one.
func EnvVar(setting string) string {
	switch setting {
	case "nats-url":
		return "NATS_URL"
	case "database-url":
		return "DATABASE_URL"
	}
	return "PRAETOR_" + strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))
}

func (c Config) validate() error {
	var errs []error
	bad := func(setting, format string, args ...any) {
		errs = append(errs, &SettingError{Setting: setting, Problem: fmt.Sprintf(format, args...)})
	}
	if c.Dev {
		if c.DataDir == "" {
			bad("data-dir", "empty: give a directory for the embedded NATS and SQLite data")
		}
	} else {
		if c.NATSURL == "" {
			bad("nats-url", "empty: set NATS_URL (e.g. nats://nats:4222)")
		}
		if c.DatabaseURL == "" {
			bad("database-url", "empty: set DATABASE_URL (e.g. postgres://user:pass@host:5432/praetor)")
		}
		if len(c.Services) == 0 {
			bad("services", "empty: name the services to run, from: %s", names(c.Available))
		}
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		bad("http-addr", "%q is not host:port (%v)", c.HTTPAddr, err)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			bad("metrics-addr", "%q is not host:port (%v)", c.MetricsAddr, err)
		} else if sameListener(c.MetricsAddr, c.HTTPAddr) {
			bad("metrics-addr", "%q listens where --http-addr %q does: give the metrics another port, or leave it empty to serve /metrics on --http-addr", c.MetricsAddr, c.HTTPAddr)
		}
	}
	if c.NATSListen != "" {
		if _, _, err := net.SplitHostPort(c.NATSListen); err != nil {
			bad("nats-listen", "%q is not host:port (%v)", c.NATSListen, err)
		}
	}
	if err := events.CheckCompression(c.Streams.Compression); err != nil {
		bad("stream-compression", "%v", err)
	}
	for _, s := range c.Services {
		if _, ok := c.Available[s]; !ok {
			bad("services", "unknown service %q; available: %s", s, names(c.Available))
		}
	}
	if c.Streams.Partitions < 0 || c.Streams.Partitions > 1024 {
		bad("partitions", "%d is negative or above 1024 (0: the streams' own count, else the default)", c.Streams.Partitions)
	}
	if c.Streams.Replicas < 1 || c.Streams.Replicas > 5 {
		bad("stream-replicas", "%d is outside [1, 5]", c.Streams.Replicas)
	}
	if c.AckWait < time.Second {
		bad("ack-wait", "%s is under 1s", c.AckWait)
	}
	if c.Streams.MaxAge < 0 {
		bad("stream-max-age", "must not be negative")
	}
	if c.Streams.MaxAge > 0 && c.Streams.MaxAge <= c.AckWait {
		// An event whose handler died is delivered again after the ack
		// wait: one that expires first is lost, with no dead letter.
		bad("stream-max-age", "%s is not longer than --ack-wait %s: an event whose worker dies would expire before it "+
			"is delivered again; keep events longer than the ack wait (for replay and audit, days)", c.Streams.MaxAge, c.AckWait)
	}
	if c.Streams.MaxAge > 0 && c.Streams.Duplicates > c.Streams.MaxAge {
		bad("duplicate-window", "%s is longer than --stream-max-age %s: set it to at most %[2]s, or leave it unset for the max age",
			c.Streams.Duplicates, c.Streams.MaxAge)
	}
	return errors.Join(errs...)
}

func names(m map[string]Factory) string {
	if len(m) == 0 {
		return "(none)"
	}
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Validate checks a configuration without running it.
func Validate(c Config) error { return c.withDefaults().validate() }

// sameListener reports whether two host:port addresses cannot both be
// listened on: the same port (by number: "http" is 80), not 0, which
// takes a free one, on the same host or where either host is unspecified
// (":8080", "0.0.0.0:8080", "[::]:8080" take the port on every
// interface). Hosts are compared as written (an IP by value), not
// resolved.
func sameListener(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return false
	}
	na, errA := net.LookupPort("tcp", pa)
	nb, errB := net.LookupPort("tcp", pb)
	if errA != nil || errB != nil || na != nb || na == 0 {
		return false
	}
	unspecified := func(h string) bool { ip := net.ParseIP(h); return h == "" || ip != nil && ip.IsUnspecified() }
	if unspecified(ha) || unspecified(hb) {
		return true
	}
	if ia, ib := net.ParseIP(ha), net.ParseIP(hb); ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return strings.EqualFold(ha, hb)
}

// Run runs the node until ctx ends, then drains and returns. An error before
// the node serves means it never started.
func Run(ctx context.Context, cfg Config) (err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	log := cfg.Logger
	var closers []func()
	defer func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}()

	// The HTTP port is taken first: a node that cannot serve its health
	// and API fails before its relay publishes or any service joins its
	// consumer group.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return &SettingError{Setting: "http-addr", Problem: fmt.Sprintf("cannot listen on %s: %v (is another praetor running?)", cfg.HTTPAddr, err)}
	}
	closers = append(closers, func() { _ = ln.Close() })
	var metricsLn net.Listener
	if cfg.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return &SettingError{Setting: "metrics-addr", Problem: fmt.Sprintf("cannot listen on %s: %v (is another praetor running?)", cfg.MetricsAddr, err)}
		}
		closers = append(closers, func() { _ = metricsLn.Close() })
	}

	nc, natsURL, stopNATS, err := connectNATS(cfg, log)
	if err != nil {
		return err
	}
	closers = append(closers, stopNATS)

	db, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	closers = append(closers, func() { _ = db.Close() })
	if err := checkMigrations(ctx, cfg, db, log); err != nil {
		return err
	}

	reg := cfg.Registry
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(cmp.Or(cfg.Version, "unknown")))
	metrics, err := events.NewMetrics(reg)
	if err != nil {
		return err
	}
	if db, ok := db.(*sqlite.DB); ok {
		registerTxStats(reg, db)
	}
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject, Logger: log, Metrics: metrics})
	if err != nil {
		return err
	}
	streams := cfg.Streams
	def := ServePartitions
	if cfg.Dev {
		def = DevPartitions
	}
	if streams.Partitions, err = ResolvePartitions(ctx, bus, streams.Partitions, def); err != nil {
		return err
	}
	if cfg.Streams.Partitions == 0 && streams.Partitions != def {
		log.Info("the ordered streams keep the partition count they were made with (new streams of a fresh server get the default)",
			"partitions", streams.Partitions, "default", def)
	}
	if err := Provision(ctx, bus, streams); err != nil {
		return err
	}

	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: bus, Logger: log,
		Registerer: reg, Service: strings.Join(cfg.Services, ",")})
	if err != nil {
		return err
	}
	if err := relay.Start(ctx); err != nil {
		return err
	}

	mux := http.NewServeMux()
	var ready atomic.Bool
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := notReady(r.Context(), &ready, nc, db); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	metricsMux := mux
	if metricsLn != nil {
		metricsMux = http.NewServeMux()
	}
	metricsMux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	client, base, info, err := newLLM(cfg, bus, reg, log)
	if err != nil {
		return err
	}
	deps := Deps{Bus: bus, DB: db, Relay: relay, Logger: log, Registerer: reg, Mux: mux, Metrics: metrics,
		Streams: streams, LLM: client, LLMInfo: info, Engines: cfg.Engines, EngineRegistry: cfg.EngineRegistry, Dev: cfg.Dev, DataDir: cfg.DataDir, AckWait: cfg.AckWait}
	if cfg.Dev {
		if deps.DevTenant, err = devTenant(ctx, db, log); err != nil {
			return err
		}
	} else {
		deps.DatabaseURL = cfg.DatabaseURL
	}
	deps.Offline, _ = base.(*offline.Offline)
	var services []namedService
	var stopOnce sync.Once
	stopAll := func() {
		stopOnce.Do(func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout)
			defer cancel()
			// Every consumer of every service stops taking events at
			// once, and their in-flight handlers share the drain timeout;
			// stopped one service after another, the last ones would take
			// events while the first drained, and get what time was left.
			if err := bus.Close(dctx); err != nil {
				log.Warn("consumers did not drain cleanly", "error", err)
			}
			for _, s := range slices.Backward(services) {
				if err := s.Stop(dctx); err != nil {
					log.Warn("service did not stop cleanly", "service", s.name, "error", err)
				}
			}
			_ = relay.Stop(dctx)
		})
	}
	defer stopAll()
	for _, name := range cfg.Services {
		s, err := cfg.Available[name](ctx, deps)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		if err := s.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		services = append(services, namedService{name, s})
		log.Info("service started", "service", name)
	}

	// No ReadTimeout or WriteTimeout: replies are waited for (?wait=) and
	// streams stay open for as long as the client wants. A body has its own
	// deadline (the gateway's), and a connection idle between requests is
	// closed after IdleTimeout.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 2)
	go func() { served <- fmt.Errorf("http server: %w", srv.Serve(ln)) }()
	// The metrics server stops last: a scrape during the drain still sees it.
	var metricsSrv *http.Server
	if metricsLn != nil {
		metricsSrv = &http.Server{Handler: metricsMux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		closers = append(closers, func() { _ = metricsSrv.Close() })
		go func() { served <- fmt.Errorf("metrics server: %w", metricsSrv.Serve(metricsLn)) }()
	}
	ready.Store(true)
	attrs := []any{"http", "http://" + ln.Addr().String(), "services", strings.Join(cfg.Services, ","), "dev", cfg.Dev}
	if metricsLn != nil {
		attrs = append(attrs, "metrics", "http://"+metricsLn.Addr().String()+"/metrics")
		if cfg.MetricsReady != nil {
			cfg.MetricsReady(metricsLn.Addr().String())
		}
	}
	if natsURL != "" && cfg.NATSReady != nil {
		cfg.NATSReady(natsURL)
	}
	log.Info("praetor is ready", attrs...)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	log.Info("stopping: readiness off, draining consumers")
	ready.Store(false)
	stopAll()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(sctx)
	}
	log.Info("praetor stopped")
	return nil
}

// buildInfo is praetor_build_info{version,goversion}, always 1: what a
// dashboard joins on to tell which build each pod runs.
func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "praetor_build_info",
		Help:        "The build the process runs, in its labels; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	g.Set(1)
	return g
}

// newLLM builds the model client: the configured provider, measured, with
// every call recorded on the bus.
func newLLM(cfg Config, bus *events.Bus, reg prometheus.Registerer, log *slog.Logger) (client, base llm.Client, info provider.Info, err error) {
	base, info, err = provider.New(cfg.LLM, log)
	if err != nil {
		return nil, nil, info, err
	}
	measured, err := llm.Instrument(base, info.Provider, reg)
	if err != nil {
		return nil, nil, info, err
	}
	rec, err := record.NewRecorder(measured, bus, record.Config{Provider: info.Provider, Logger: log, Registerer: reg,
		OmitRequest: cfg.OmitLLMPrompts})
	if err != nil {
		return nil, nil, info, err
	}
	if cfg.OmitLLMPrompts {
		log.Info("llm calls are recorded without their prompts (--llm-omit-prompts): hashes and answers only")
	}
	return rec, base, info, nil
}

// DevTenantID is the tenant of praetor dev.
const DevTenantID = "local"

// devTenant makes sure the dev tenant exists and prints a fresh token for
// clients that are not on loopback (loopback needs none).
func devTenant(ctx context.Context, db store.DB, log *slog.Logger) (string, error) {
	if _, err := store.GetTenant(ctx, db, DevTenantID); errors.Is(err, store.ErrNotFound) {
		if err := store.CreateTenant(ctx, db, store.Tenant{ID: DevTenantID, Name: "Local development", CreatedAt: time.Now()}); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	exp := time.Now().Add(30 * 24 * time.Hour)
	secret, _, err := store.CreateToken(ctx, db, DevTenantID, "praetor dev", &exp)
	if err != nil {
		return "", err
	}
	log.Info("dev API token (loopback needs none)", "tenant", DevTenantID, "token", secret)
	return DevTenantID, nil
}

type namedService struct {
	name string
	Service
}

func notReady(ctx context.Context, ready *atomic.Bool, nc *nats.Conn, db store.DB) string {
	if !ready.Load() {
		return "not ready: starting or draining"
	}
	if !nc.IsConnected() {
		return "not ready: NATS disconnected"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := db.Ping(ctx); err != nil {
		return "not ready: database: " + err.Error()
	}
	return ""
}

// connectNATS connects to NATS, or starts the embedded server in dev, and
// returns the embedded server's client URL when it listens.
func connectNATS(cfg Config, log *slog.Logger) (*nats.Conn, string, func(), error) {
	if !cfg.Dev {
		nc, err := events.Connect(cfg.NATSURL, "praetor")
		if err != nil {
			return nil, "", nil, err
		}
		return nc, "", func() { _ = nc.Drain(); nc.Close() }, nil
	}
	sc := events.ServerConfig{StoreDir: filepath.Join(cfg.DataDir, "nats"), Logger: log}
	if cfg.NATSListen != "" {
		host, port, _ := net.SplitHostPort(cfg.NATSListen)
		p, err := net.LookupPort("tcp", port)
		if err != nil {
			return nil, "", nil, &SettingError{Setting: "nats-listen", Problem: err.Error()}
		}
		if p == 0 {
			p = -1 // the server's free port: its port 0 is its default, 4222
		}
		sc.Listen, sc.Host, sc.Port = true, host, p
	}
	// The embedded server does not lock its store: the data directory's
	// lock keeps a second server (another dev, a tool) off it.
	owner := datadir.Owner{PID: os.Getpid(), Command: "praetor dev"}
	lock, err := datadir.Acquire(cfg.DataDir, owner)
	if inUse, ok := datadir.IsInUse(err); ok {
		return nil, "", nil, &SettingError{Setting: "data-dir", Problem: fmt.Sprintf(
			"%s is in use by %s: stop it (or let it finish), or give this one another --data-dir", cfg.DataDir, inUse.Owner)}
	}
	if err != nil {
		return nil, "", nil, &SettingError{Setting: "data-dir", Problem: err.Error()}
	}
	if len(lock.Tightened) > 0 {
		log.Warn("data directory was readable by other users; made it and its files private", "dir", cfg.DataDir, "paths", lock.Tightened)
	}
	srv, err := events.StartServer(sc)
	if err != nil {
		lock.Release()
		return nil, "", nil, err
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		lock.Release()
		return nil, "", nil, err
	}
	url := srv.ClientURL()
	if url != "" {
		log.Info("embedded NATS listening", "url", url)
		owner.NATSURL = url
		if err := lock.Record(owner); err != nil {
			log.Warn("cannot record the NATS address in the data directory's lock; tools will not find it", "error", err)
		}
	}
	return nc, url, func() { nc.Close(); srv.Shutdown(); lock.Release() }, nil
}

// OpenStore opens the relational store of a configuration: SQLite under the
// data directory in dev, PostgreSQL otherwise.
func OpenStore(ctx context.Context, dev bool, dataDir, databaseURL string) (store.DB, error) {
	if dev {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, &SettingError{Setting: "data-dir", Problem: err.Error()}
		}
		return sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dataDir, "praetor.db")})
	}
	db, err := postgres.Open(ctx, postgres.Config{URL: databaseURL})
	if err != nil {
		return nil, fmt.Errorf("%w (check DATABASE_URL)", err)
	}
	return db, nil
}

// registerTxStats exports the SQLite store's transactions and commits: their
// ratio is the mean batch of its group commit.
func registerTxStats(reg prometheus.Registerer, db *sqlite.DB) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "praetor_sqlite_transactions_total",
			Help: "Transactions the SQLite store committed."},
			func() float64 { return float64(db.TxStats().Transactions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "praetor_sqlite_commits_total",
			Help: "Commits of the SQLite store's transactions (writes outside transactions not counted): concurrent transactions commit together (group commit)."},
			func() float64 { return float64(db.TxStats().Commits) }))
}

func openStore(ctx context.Context, cfg Config) (store.DB, error) {
	return OpenStore(ctx, cfg.Dev, cfg.DataDir, cfg.DatabaseURL)
}

func checkMigrations(ctx context.Context, cfg Config, db store.DB, log *slog.Logger) error {
	if cfg.Dev || cfg.Migrate {
		applied, err := store.Migrate(ctx, db)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if len(applied) > 0 {
			log.Info("migrations applied", "versions", applied)
		}
		return nil
	}
	status, err := store.Status(ctx, db)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	// A database a newer build migrated: this one would start ready and
	// fail every query that touches the newer schema.
	if err := store.CheckNotNewer(status); err != nil {
		return err
	}
	for _, s := range status {
		if !s.Applied {
			return fmt.Errorf("the database lacks migration %s: run `praetor migrate` (or start with --migrate)", s.Name)
		}
	}
	return nil
}

// The partitions of new ordered streams when none are configured. Each
// partition is a durable consumer per keyed service, with its own state the
// NATS server rewrites up to ten times a second: dev runs every service in
// one process, where 4 keep a machine's cores busy (measured against 16 on
// 2 cores: a third less p99 at 500 turns/s, and less CPU); serve shares the
// partitions among replicas, so 16 let up to 16 replicas of a service work.
const (
	DevPartitions   = 4
	ServePartitions = 16
)

// ResolvePartitions returns the partition count of the ordered streams:
// configured when above 0; else the count the ordered streams already have,
// so that a restart never asks for another (a stream's count cannot change
// in place); else def.
func ResolvePartitions(ctx context.Context, bus *events.Bus, configured, def int) (int, error) {
	if configured > 0 {
		return configured, nil
	}
	for _, d := range contracts.Streams() {
		if !d.Ordered {
			continue
		}
		n, err := bus.Partitions(ctx, d.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			continue
		case err != nil:
			return 0, err
		case n > 0:
			return n, nil
		}
	}
	return def, nil
}

// Provision creates or updates every catalog stream and the dead-letter
// streams, idempotently.
func Provision(ctx context.Context, bus *events.Bus, s StreamSettings) error {
	for _, def := range contracts.Streams() {
		sc := events.StreamConfig{
			Name: def.Name, Subjects: def.Subjects, MaxAge: s.MaxAge, Replicas: s.Replicas, Duplicates: s.Duplicates,
			Compression: s.Compression,
		}
		if def.Ordered {
			sc.Partitions = s.Partitions
		}
		if err := bus.EnsureStream(ctx, sc); err != nil {
			return err
		}
	}
	return bus.EnsureDeadLetterStreams(ctx, events.StreamConfig{Replicas: s.Replicas, Duplicates: s.Duplicates,
		Compression: s.Compression})
}
