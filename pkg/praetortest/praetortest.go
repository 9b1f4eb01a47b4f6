package praetortest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/llm/provider"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/internal/wiring"
)

const (
	// Tenant is the tenant made for the test, whose bearer token is
	// Node.Token; NewSession and Turn act as it.
	Tenant = "test"
	// OpenTenant is the tenant of a request without a token, as praetor
	// dev serves it: from the test's machine, to the node's loopback URL.
	// The page at Node.URL acts as it.
	OpenTenant = node.DevTenantID
)

// The bounds of a node's start and stop, and of one Turn. They are waits
// for the node's own signals (ready, stopped, answered), not sleeps: the
// race detector on a busy machine makes a start take seconds.
const (
	startTimeout = 2 * time.Minute
	drainTimeout = 10 * time.Second
	// stopTimeout outlasts the drain and the HTTP server's shutdown (5s).
	stopTimeout = drainTimeout + 20*time.Second
	turnTimeout = 3 * time.Minute
	// turnWait is the longest wait the API grants a request.
	turnWait = "60s"
)

// Option adjusts the node Start runs.
type Option func(*options) error

type options struct {
	enginesDirs []string
	logger      *slog.Logger
}

// WithEnginesDir loads the engine YAML files of dir besides the shipped
// engines, as praetor dev --engines-dir does; an engine with a shipped id
// overrides it. It may be given more than once. An invalid engine fails
// the start, naming the file, line and rule.
func WithEnginesDir(dir string) Option {
	return func(o *options) error {
		if strings.TrimSpace(dir) == "" {
			return errors.New("praetortest: WithEnginesDir: empty directory")
		}
		o.enginesDirs = append(o.enginesDirs, dir)
		return nil
	}
}

// WithLogger sends the node's log to logger, as it is written. Without it
// the log is kept and printed with the test's when the test fails.
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) error {
		if logger == nil {
			return errors.New("praetortest: WithLogger: nil logger")
		}
		o.logger = logger
		return nil
	}
}

// Node is a Praetor node running inside a test.
type Node struct {
	t       testing.TB
	url     string
	natsURL string
	token   string
	http    *http.Client
}

// Start runs a node until the test ends and returns it once it is ready:
// it serves the API, its services take events, and its tenants exist. A
// node that does not start fails the test. At the test's end the node
// stops as on SIGTERM (readiness off, consumers drained, servers shut
// down), and a node that fails to stop, or stops with an error, fails it.
func Start(t testing.TB, opts ...Option) *Node {
	t.Helper()
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			t.Fatalf("praetortest: %v", err)
		}
	}
	log, logs := o.logger, (*testenv.Buffer)(nil)
	if log == nil {
		logs = &testenv.Buffer{}
		log = slog.New(slog.NewTextHandler(logs, nil))
	}
	var (
		mu sync.Mutex
		db store.DB
	)
	ready, natsReady := make(chan string, 1), make(chan string, 1)
	cfg := node.Config{
		// A directory of the node's making, private from the start (made
		// by another, dev warns that it was readable by others).
		Dev: true, DataDir: filepath.Join(t.TempDir(), "praetor"), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
		// Offline whatever the environment says: no test calls a model.
		LLM:          provider.Config{Provider: provider.Offline},
		Logger:       log,
		DrainTimeout: drainTimeout,
		Version:      "praetortest",
		NATSReady:    func(u string) { natsReady <- u },
		Ready:        func(addr string) { ready <- addr },
	}
	var issues bytes.Buffer
	started := func(name string, _ node.Service, d node.Deps) {
		if name == "gateway" {
			mu.Lock()
			db = d.DB
			mu.Unlock()
		}
	}
	if err := wiring.Configure(&cfg, wiring.Options{Started: started}, o.enginesDirs, &issues); err != nil {
		t.Fatalf("praetortest: load the engines: %v\n%s", err, issues.String())
	}
	if issues.Len() > 0 {
		log.Warn("engine warnings", "issues", strings.TrimSpace(issues.String()))
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, cfg) }()
	n := &Node{t: t, http: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		n.http.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("praetortest: the node stopped with an error: %v", err)
			}
		case <-time.After(stopTimeout):
			t.Errorf("praetortest: the node did not stop within %s", stopTimeout)
		}
		if logs != nil && t.Failed() {
			t.Logf("praetortest: the node's log:\n%s", logs.String())
		}
	})
	// NATSReady is sent before Ready; both within the start's bound.
	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	for n.url == "" || n.natsURL == "" {
		select {
		case addr := <-ready:
			n.url = "http://" + addr
		case u := <-natsReady:
			n.natsURL = u
		case err := <-done:
			done <- nil // the cleanup has nothing more to say
			t.Fatalf("praetortest: the node did not start: %v", err)
		case <-timeout.C:
			t.Fatalf("praetortest: the node was not ready within %s", startTimeout)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if db == nil {
		t.Fatal("praetortest: the node started without its gateway")
	}
	if err := store.CreateTenant(ctx, db, store.Tenant{ID: Tenant, Name: "praetortest", CreatedAt: time.Now()}); err != nil {
		t.Fatalf("praetortest: create the tenant %s: %v", Tenant, err)
	}
	secret, _, err := store.CreateToken(ctx, db, Tenant, "praetortest", nil)
	if err != nil {
		t.Fatalf("praetortest: create a token of %s: %v", Tenant, err)
	}
	n.token = secret
	return n
}

// URL is the base of the node's HTTP API and page, http://127.0.0.1:PORT.
func (n *Node) URL() string { return n.url }

// Token is a bearer token of the tenant Tenant, for the Authorization
// header ("Bearer " + Token()). It lasts as long as the node.
func (n *Node) Token() string { return n.token }

// NATSURL is where the node's NATS server takes clients, nats://127.0.0.1:PORT:
// a test may read the node's events (subjects praetor.>).
func (n *Node) NATSURL() string { return n.natsURL }

// NewSession starts a session of the engine for the project, as the tenant
// Tenant, and returns its id. Anything but the API's 201 fails the test.
// Like Turn, it must be called from the test's goroutine.
func (n *Node) NewSession(engineID, projectID string) string {
	n.t.Helper()
	var s struct {
		SessionID string `json:"session_id"`
	}
	status, body := n.post("/v1/sessions", "", map[string]string{"engine_id": engineID, "project_id": projectID}, &s)
	if status != http.StatusCreated || s.SessionID == "" {
		n.t.Fatalf("praetortest: create a session of %s: status %d, want 201 with a session_id: %s", engineID, status, body)
	}
	return s.SessionID
}

// Reply is an answered turn, as POST /v1/sessions/{id}/turns answers it.
type Reply struct {
	// TurnID identifies the turn; TurnNumber is its number in the session,
	// from 1.
	TurnID     string `json:"turn_id"`
	SessionID  string `json:"session_id"`
	TurnNumber int    `json:"turn_number"`
	// Message is the user's message, trimmed; Reply the engine's answer.
	Message string `json:"message"`
	Reply   string `json:"reply"`
	// Phase is the engine's phase after the turn, and Completeness how
	// complete its obligations are, from 0 to 1.
	Phase        string  `json:"phase"`
	Completeness float64 `json:"completeness"`
	// Sidebar is the engine's sidebar after the turn, as the API gives it.
	Sidebar json.RawMessage `json:"sidebar"`
	// Degraded is true when the reply was made without the model's answer:
	// it failed, or the message was cut, or the session had handed off
	// before it came to the turn (DegradedReason).
	Degraded bool `json:"degraded"`
	// DegradedReason says why a degraded reply is, when the API knows:
	// "handed_off" for a turn queued behind the turn that handed the
	// session off, answered without being processed (send its message
	// again to Handoff.TargetSessionID). "" otherwise: a model's failure
	// is in the node's log.
	DegradedReason string `json:"degraded_reason"`
	// Handoff is set when the turn handed the session off, or came after
	// the turn that did: the next message goes to Handoff.TargetSessionID.
	Handoff *Handoff `json:"handoff"`
}

// Handoff is the session a conversation went on in.
type Handoff struct {
	HandoffID       string `json:"handoff_id"`
	TargetEngineID  string `json:"target_engine_id"`
	TargetSessionID string `json:"target_session_id"`
	Reason          string `json:"reason"`
}

// Turn sends message to the session, as the tenant Tenant, waits for the
// engine's reply and returns it. A turn the API refuses, or that is not
// answered within minutes, fails the test. Like NewSession, it must be
// called from the test's goroutine.
func (n *Node) Turn(sessionID, message string) Reply {
	n.t.Helper()
	// The API waits at most a minute; asked again with the same key, it
	// answers the same turn, and waits again.
	key := rand.Text()
	deadline := time.Now().Add(turnTimeout)
	for {
		var r struct {
			Reply
			Status string `json:"status"`
		}
		status, body := n.post("/v1/sessions/"+sessionID+"/turns?wait="+turnWait, key, map[string]string{"message": message}, &r)
		switch {
		case status == http.StatusOK && r.Status == "answered":
			return r.Reply
		case status != http.StatusOK && status != http.StatusAccepted:
			n.t.Fatalf("praetortest: turn %q of session %s: status %d: %s", message, sessionID, status, body)
		case time.Now().After(deadline):
			n.t.Fatalf("praetortest: turn %q of session %s: not answered within %s: %s", message, sessionID, turnTimeout, body)
		}
	}
}

// post sends body as JSON with the node's token and decodes a JSON answer
// into out; it returns the status and the body.
func (n *Node) post(path, idempotencyKey string, body, out any) (int, []byte) {
	n.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		n.t.Fatalf("praetortest: encode the body of %s: %v", path, err)
	}
	req, err := http.NewRequest(http.MethodPost, n.url+path, bytes.NewReader(b))
	if err != nil {
		n.t.Fatalf("praetortest: POST %s: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+n.token)
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := n.http.Do(req)
	if err != nil {
		n.t.Fatalf("praetortest: POST %s: %v", path, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		n.t.Fatalf("praetortest: POST %s: read the answer: %v", path, err)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(got, out); err != nil {
			n.t.Fatalf("praetortest: POST %s: status %d, the answer is not the API's JSON (%v): %s", path, res.StatusCode, err, got)
		}
	}
	return res.StatusCode, got
}
