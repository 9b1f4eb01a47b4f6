package events

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/redact"
)

// ServerConfig configures an embedded NATS server with JetStream.
type ServerConfig struct {
	// StoreDir is where JetStream keeps its file storage. Required.
	StoreDir string
	// Listen opens a TCP listener so other processes can join; without it
	// the server only takes in-process connections.
	Listen bool
	// Host and Port of the listener. Defaults: 127.0.0.1 and 4222; Port -1
	// picks a free port.
	Host string
	Port int
	// Name of the server. Default: "praetor".
	Name string
	// Logger receives the server's own log lines (warnings and errors).
	// Default: discarded.
	Logger *slog.Logger
	// ReadyTimeout bounds the start. Default: 10s.
	ReadyTimeout time.Duration
}

// Server is an embedded NATS server, as praetor dev and the tests run it. It
// is the real server, in-process.
type Server struct {
	ns     *server.Server
	listen bool
}

// StartServer starts an embedded server and waits until it takes connections.
func StartServer(cfg ServerConfig) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("events: embedded server needs a StoreDir for JetStream file storage")
	}
	opts := &server.Options{
		ServerName: cmp.Or(cfg.Name, "praetor"),
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      cfg.Logger == nil,
		DontListen: !cfg.Listen,
		Host:       cmp.Or(cfg.Host, "127.0.0.1"),
		Port:       cmp.Or(cfg.Port, 4222),
		// Room for large LLM payloads in events.
		MaxPayload: 8 << 20,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("events: embedded server: %w", err)
	}
	if cfg.Logger != nil {
		ns.SetLogger(slogAdapter{cfg.Logger}, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(cmp.Or(cfg.ReadyTimeout, 10*time.Second)) {
		ns.Shutdown()
		return nil, fmt.Errorf("events: embedded server not ready (store %s; is another server using it, or the port %d taken?)", cfg.StoreDir, opts.Port)
	}
	return &Server{ns: ns, listen: cfg.Listen}, nil
}

// ClientURL is the URL other processes connect to; empty without a listener.
func (s *Server) ClientURL() string {
	if !s.listen {
		return ""
	}
	return s.ns.ClientURL()
}

// Connect opens a client connection to the server, in-process.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("praetor")}, opts...)
	return nats.Connect("", opts...)
}

// Shutdown stops the server and waits for it; calling it twice is harmless.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// Connect dials a NATS server by URL with the options a long-running service
// wants: endless reconnects and a name in the server's connection list.
func Connect(url, name string, opts ...nats.Option) (*nats.Conn, error) {
	base := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("events: connect to NATS at %s: %w (is NATS_URL right?)", redact.URL(url), redact.Error(err, url))
	}
	return nc, nil
}

// slogAdapter writes the server's logs to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) {
	a.l.Debug(fmt.Sprintf(format, v...), "component", "nats")
}
func (a slogAdapter) Warnf(format string, v ...any) {
	a.l.Warn(fmt.Sprintf(format, v...), "component", "nats")
}
func (a slogAdapter) Fatalf(format string, v ...any) {
	a.l.Error(fmt.Sprintf(format, v...), "component", "nats")
}
func (a slogAdapter) Errorf(format string, v ...any) {
	a.l.Error(fmt.Sprintf(format, v...), "component", "nats")
}
func (a slogAdapter) Debugf(format string, v ...any) {
	a.l.Debug(fmt.Sprintf(format, v...), "component", "nats")
}
func (a slogAdapter) Tracef(format string, v ...any) {}
