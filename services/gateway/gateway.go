// Package gateway is Praetor's chat gateway: the HTTP API a chat product
// calls (create a session, post a turn, read state, stream replies), the web
// page served by praetor dev, and the bridge from HTTP to the event log. A
// posted turn is recorded and its turn.received event written to the outbox
// in one transaction; replies come back as turn.responded, which the gateway
// hands to waiting requests and Server-Sent Events streams.
//
// Every request is scoped to a tenant by its bearer token; a token never sees
// another tenant's sessions (404, not 403). In dev the gateway may run open
// on loopback, as the local tenant.
//
// When an engine hands the conversation to another engine, the turn that
// did it carries the handoff (with the target session), the session shows
// it (outbound_handoff; the target shows inbound_handoff with its I-PASS
// verification), GET /v1/sessions/{id}/handoffs lists them with their
// payloads, the stream sends a "handoff" event once the target session has
// started, and the old session refuses further messages (409) naming the
// session to post to: the user's next message goes to the new engine,
// whose first reply picks the handoff up. A session's background tasks are
// in its state and at GET /v1/sessions/{id}/tasks, and the stream sends a
// "task" event, with the new sidebar, each time one's outcome is merged.
//
// A client that may retry a post sends an Idempotency-Key header: the same
// key in the same session names the same turn, so a retry is answered with
// that turn and never makes a second one; the same key with another message
// is refused (422). Every API error is a JSON {"error", "code"}: the error
// says what to fix, the code is stable for programs.
package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/events"
)

// Bus is what the gateway needs of the event bus: encoding events for the
// outbox and the connection replies arrive on.
type Bus interface {
	delivery.Encoder
	Conn() *nats.Conn
}

// Config configures a Gateway.
type Config struct {
	DB  store.DB
	Bus Bus
	// Relay publishes the events the gateway commits to the outbox, as soon
	// as they are committed (Relay.PublishCommitted); without one they wait
	// for another process's relay.
	Relay   *delivery.Relay
	Engines *engine.Catalog
	// Registry holds the evaluators the engines' conditions name.
	Registry *engine.Registry
	Logger   *slog.Logger
	// MaxMessageBytes bounds a user message. Default: 8 KiB.
	MaxMessageBytes int
	// MaxWait bounds ?wait on a turn. Default: 60s.
	MaxWait time.Duration
	// OpenTenant, when set, serves requests without a token that come from
	// loopback as this tenant (praetor dev).
	OpenTenant string
	// Provider names the LLM provider in use, shown by /v1/info and the page.
	Provider string
	// Offline is true when the offline provider answers.
	Offline bool
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, 8<<10)
	c.MaxWait = cmp.Or(c.MaxWait, 60*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if c.DB == nil || c.Bus == nil || c.Engines == nil {
		return errors.New("gateway: DB, Bus and Engines are required")
	}
	if c.MaxMessageBytes < 1 || c.MaxWait <= 0 {
		return errors.New("gateway: MaxMessageBytes and MaxWait must be positive")
	}
	return nil
}

// Gateway serves the chat API.
type Gateway struct {
	cfg     Config
	replies *broker
	recent  *recent // events passed on, to drop republished copies
	subs    []*nats.Subscription
}

// New returns a gateway; Start subscribes it to replies.
func New(cfg Config) (*Gateway, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, replies: newBroker(), recent: newRecent(recentEvents)}, nil
}

// Start subscribes to turn.responded, session.started and task.merged:
// every gateway replica sees every reply, started session and merged task,
// and hands them to the requests and streams it holds.
func (g *Gateway) Start(context.Context) error {
	for _, s := range []struct {
		subject string
		h       nats.MsgHandler
	}{{replySubject, g.onReply}, {startedSubject, g.onStarted}, {mergedSubject, g.onMerged}} {
		sub, err := g.cfg.Bus.Conn().Subscribe(s.subject, g.once(s.h))
		if err != nil {
			_ = g.Stop(context.Background())
			return fmt.Errorf("gateway: subscribe to %s: %w", s.subject, err)
		}
		g.subs = append(g.subs, sub)
	}
	return nil
}

// once passes a message on to h only the first time its event id is seen.
func (g *Gateway) once(h nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		if id := m.Header.Get(events.HeaderMsgID); id != "" && !g.recent.first(id) {
			return
		}
		h(m)
	}
}

// Stop unsubscribes and ends the open streams; calling it twice is harmless.
func (g *Gateway) Stop(context.Context) error {
	for _, sub := range g.subs {
		_ = sub.Unsubscribe()
	}
	g.subs = nil
	g.replies.close()
	return nil
}

// Routes registers the API and the page on mux.
func (g *Gateway) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", g.page)
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /v1/info", g.auth(g.info))
	mux.HandleFunc("GET /v1/engines", g.auth(g.listEngines))
	mux.HandleFunc("POST /v1/sessions", g.auth(g.createSession))
	mux.HandleFunc("GET /v1/sessions", g.auth(g.listSessions))
	mux.HandleFunc("GET /v1/sessions/{id}", g.auth(g.getSession))
	mux.HandleFunc("POST /v1/sessions/{id}/turns", g.auth(g.postTurn))
	mux.HandleFunc("GET /v1/sessions/{id}/turns", g.auth(g.listTurns))
	mux.HandleFunc("GET /v1/sessions/{id}/extractions", g.auth(g.listExtractions))
	mux.HandleFunc("GET /v1/sessions/{id}/handoffs", g.auth(g.listHandoffs))
	mux.HandleFunc("GET /v1/sessions/{id}/tasks", g.auth(g.listTasks))
	mux.HandleFunc("GET /v1/sessions/{id}/stream", g.auth(g.stream))
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { noRoute(mux, w, r) })
}

// noRoute answers a request no API route takes with the JSON error every
// other API answer has: 405 with Allow when the path exists under another
// method, else 404.
func noRoute(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/v1/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s %s is not served; use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
		return
	}
	writeError(w, http.StatusNotFound, "no_route", fmt.Sprintf("no API route %s %s; GET /v1/engines, POST /v1/sessions, "+
		"GET /v1/sessions/{id}, POST /v1/sessions/{id}/turns, GET /v1/sessions/{id}/extractions, GET /v1/sessions/{id}/handoffs, "+
		"GET /v1/sessions/{id}/tasks, GET /v1/sessions/{id}/stream",
		r.Method, r.URL.Path))
}

type tenantKey struct{}

func tenantOf(r *http.Request) string { return r.Context().Value(tenantKey{}).(string) }

// auth resolves the request's tenant from its bearer token.
func (g *Gateway) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, err := g.tenant(r)
		var denied *authError
		switch {
		case errors.As(err, &denied):
			w.Header().Set("WWW-Authenticate", `Bearer realm="praetor"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", denied.msg)
			return
		case err != nil:
			// The store could not say: the client is not at fault, and a 401
			// would send it off to find another token.
			g.internal(w, "check the token", err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	}
}

// authError is a request the gateway does not let in, with what to fix.
type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }

func (g *Gateway) tenant(r *http.Request) (string, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		if g.cfg.OpenTenant != "" && fromLoopback(r) {
			return g.cfg.OpenTenant, nil
		}
		return "", &authError{"send Authorization: Bearer <token>"}
	}
	// The scheme is case-insensitive (RFC 9110 §11.1).
	scheme, secret, _ := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return "", &authError{"the Authorization header must be Bearer <token>"}
	}
	tok, err := store.Authenticate(r.Context(), g.cfg.DB, secret, g.cfg.Now())
	if err != nil {
		if errors.Is(err, store.ErrUnauthenticated) {
			return "", &authError{"the token is unknown, revoked or expired"}
		}
		return "", fmt.Errorf("authenticate: %w", err)
	}
	return tok.TenantID, nil
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiError is the body of every error response.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeBody reads a JSON object of at most max bytes into v, rejecting
// unknown fields and anything after the object, and answers 400 or 413 with
// what to fix when the body is not what example shows.
func decodeBody(w http.ResponseWriter, r *http.Request, max int64, example string, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, max)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// One object, nothing after it: a second value or stray text means the
		// client sent something other than it thinks.
		var tooBig *http.MaxBytesError
		switch _, extra := dec.Token(); {
		case errors.As(extra, &tooBig):
			err = extra
		case !errors.Is(extra, io.EOF):
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err == nil {
		return true
	}
	var (
		tooBig    *http.MaxBytesError
		typeError *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is larger than %d bytes", max))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "bad_json", "the body is empty; send a JSON object like "+example)
	case errors.As(err, &typeError) && typeError.Field == "":
		writeError(w, http.StatusBadRequest, "bad_json", fmt.Sprintf("the body is a JSON %s; send a JSON object like %s", typeError.Value, example))
	case errors.As(err, &typeError):
		writeError(w, http.StatusBadRequest, "bad_json",
			fmt.Sprintf("field %q must be a JSON %s, not %s; send a JSON object like %s", typeError.Field, typeError.Type, typeError.Value, example))
	default:
		writeError(w, http.StatusBadRequest, "bad_json", "the body is not the JSON expected ("+err.Error()+"); send a JSON object like "+example)
	}
	return false
}
