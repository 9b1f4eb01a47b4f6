package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/internal/wiring"
	"github.com/praetorhq/praetor/pkg/events"

	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/llm/provider"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/gateway"
)

// Options adjust the node a test starts.
type Options struct {
	// Gateway, when set, edits the gateway's configuration before the
	// gateway is built (a smaller MaxMessageBytes, a clock ...).
	Gateway func(*gateway.Config)
	// Services to run. Default: gateway, extractor and runner. Leave the
	// runner out to keep turns unanswered.
	Services []string
	// StartTimeout bounds how long the node may take to serve. Default: 60s
	// (the race detector on a busy two-core machine is slow).
	StartTimeout time.Duration
}

// Node is a praetor dev node running inside the test: embedded NATS
// JetStream and SQLite in a temporary directory, the gateway, extractor and
// runner, and the offline provider.
type Node struct {
	// URL is the HTTP base, http://127.0.0.1:PORT.
	URL string
	// DB is the node's store, for tests that create tenants and tokens or
	// read rows the API does not show.
	DB store.DB
	// Gateway is the node's gateway, for handler tests that need a request
	// the network cannot make (a non-loopback client).
	Gateway *gateway.Gateway
	// DevTenant is the tenant served without a token on loopback.
	DevTenant string
	// Bus is the node's event bus, for tests that publish on it.
	Bus *events.Bus
	// HTTP is the client the helpers use; its idle connections close with
	// the node.
	HTTP *http.Client

	logs *testenv.Buffer
	stop func() error
}

// Start runs a node until the test ends. The node's log is printed when the
// test fails.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatalf("engine registry: %v", err)
	}
	cat, _, err := builtin.Load(reg)
	if err != nil {
		t.Fatalf("load the shipped engines: %v", err)
	}
	n := &Node{logs: &testenv.Buffer{}, HTTP: &http.Client{Transport: &http.Transport{}, Timeout: 2 * time.Minute}}
	log := slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var (
		mu   sync.Mutex
		deps node.Deps
		gw   *gateway.Gateway
	)
	available := wiring.Services(wiring.Options{
		Gateway: opts.Gateway,
		Started: func(name string, svc node.Service, d node.Deps) {
			if g, ok := svc.(*gateway.Gateway); ok {
				mu.Lock()
				deps, gw = d, g
				mu.Unlock()
			}
		},
	})
	ready := make(chan string, 1)
	cfg := node.Config{
		Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Available: available, Services: opts.Services,
		LLM:     provider.Config{Provider: "offline"},
		Engines: cat, EngineRegistry: reg, Logger: log,
		// Few partitions: provisioning is most of a node's start.
		Streams:      node.StreamSettings{Partitions: 2},
		DrainTimeout: 10 * time.Second,
		Ready:        func(addr string) { ready <- addr },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, cfg) }()
	var (
		stopOnce sync.Once
		stopErr  error
	)
	n.stop = func() error {
		stopOnce.Do(func() {
			n.HTTP.CloseIdleConnections()
			cancel()
			stopErr = <-done
		})
		return stopErr
	}
	t.Cleanup(func() {
		if err := n.stop(); err != nil {
			t.Errorf("node stopped with an error: %v", err)
		}
		if t.Failed() {
			t.Logf("node log:\n%s", n.logs.String())
		}
	})
	select {
	case addr := <-ready:
		n.URL = "http://" + addr
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("node did not start: %v\n%s", err, n.logs.String())
	case <-time.After(timeout):
		t.Fatalf("node did not serve within %s", timeout)
	}
	mu.Lock()
	n.DB, n.Gateway, n.DevTenant, n.Bus = deps.DB, gw, deps.DevTenant, deps.Bus
	mu.Unlock()
	if n.Gateway == nil {
		t.Fatal("the node started without its gateway")
	}
	return n
}

// Stop stops the node before the test ends, as SIGTERM does: readiness off,
// the services drained, the HTTP server shut down. Calling it again, or the
// test's end, does nothing more.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	if err := n.stop(); err != nil {
		t.Errorf("node stopped with an error: %v", err)
	}
}

// Tenant creates a tenant and returns a bearer token for it that never
// expires.
func (n *Node) Tenant(t testing.TB, id string) string {
	t.Helper()
	ctx := context.Background()
	if err := store.CreateTenant(ctx, n.DB, store.Tenant{ID: id, Name: "Tenant " + id}); err != nil {
		t.Fatalf("create tenant %s: %v", id, err)
	}
	secret, _, err := store.CreateToken(ctx, n.DB, id, "test", nil)
	if err != nil {
		t.Fatalf("create a token for %s: %v", id, err)
	}
	return secret
}

// Response is an answer of the API.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v, failing the test when it is not JSON.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("response %d is not JSON (%v): %s", r.Status, err, r.Body)
	}
}

// Map is the body as a JSON object.
func (r Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// Call is one request to the API.
type Call struct {
	Method string
	Path   string
	// Body is sent as is when it is a string or []byte, else as JSON.
	Body any
	// Token, when set, is sent as a bearer token.
	Token  string
	Header http.Header
}

// Do sends c and reads the whole answer.
func (n *Node) Do(t testing.TB, c Call) Response {
	t.Helper()
	var body io.Reader
	switch b := c.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode the request body: %v", err)
		}
		body = bytes.NewReader(j)
	}
	req, err := http.NewRequest(c.Method, n.URL+c.Path, body)
	if err != nil {
		t.Fatalf("request %s %s: %v", c.Method, c.Path, err)
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	res, err := n.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read the body: %v", c.Method, c.Path, err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// Get is Do of a GET.
func (n *Node) Get(t testing.TB, path, token string) Response {
	t.Helper()
	return n.Do(t, Call{Method: http.MethodGet, Path: path, Token: token})
}

// Post is Do of a POST of a JSON body.
func (n *Node) Post(t testing.TB, path, token string, body any) Response {
	t.Helper()
	return n.Do(t, Call{Method: http.MethodPost, Path: path, Token: token, Body: body})
}

// CreateSession starts a session of engine and returns its id, failing the
// test on anything but 201.
func (n *Node) CreateSession(t testing.TB, token, engineID string) string {
	t.Helper()
	res := n.Post(t, "/v1/sessions", token, map[string]string{"engine_id": engineID, "project_id": "test"})
	if res.Status != http.StatusCreated {
		t.Fatalf("create a %s session: status %d, want 201: %s", engineID, res.Status, res.Body)
	}
	var s struct {
		SessionID string `json:"session_id"`
	}
	res.Decode(t, &s)
	if s.SessionID == "" {
		t.Fatalf("create a session: no session_id in %s", res.Body)
	}
	return s.SessionID
}

// Turn is an answered turn as the API returns it.
type Turn struct {
	TurnID       string          `json:"turn_id"`
	SessionID    string          `json:"session_id"`
	Status       string          `json:"status"`
	Message      string          `json:"message"`
	TurnNumber   int             `json:"turn_number"`
	Reply        string          `json:"reply"`
	Phase        string          `json:"phase"`
	Completeness *float64        `json:"completeness"`
	Sidebar      json.RawMessage `json:"sidebar"`
	Degraded     bool            `json:"degraded"`
	ReceivedAt   *time.Time      `json:"received_at"`
	RespondedAt  *time.Time      `json:"responded_at"`
}

// Say posts message to a session, waits for the reply and returns it,
// failing the test on anything but 200 with an answered turn.
func (n *Node) Say(t testing.TB, token, sessionID, message string) Turn {
	t.Helper()
	res := n.Post(t, "/v1/sessions/"+sessionID+"/turns?wait=30s", token, map[string]string{"message": message})
	if res.Status != http.StatusOK {
		t.Fatalf("post %q: status %d, want 200: %s", message, res.Status, res.Body)
	}
	var turn Turn
	res.Decode(t, &turn)
	if turn.Status != "answered" || turn.Reply == "" {
		t.Fatalf("post %q: not answered: %s", message, res.Body)
	}
	return turn
}

// WaitFor polls cond until it holds or the timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an outcome
	}
}

// ErrClosed is returned by Stream.Next once the stream has ended.
var ErrClosed = errors.New("gatewaytest: stream closed")
