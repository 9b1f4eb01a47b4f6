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
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/loopback"
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
	// BodyTimeout bounds how long a request's body takes to arrive, once its
	// headers have. Default: 30s.
	BodyTimeout time.Duration
	// OpenTenant, when set, serves requests without a token that come from
	// loopback as this tenant (praetor dev).
	OpenTenant string
	// Provider names the LLM provider in use, shown by /v1/info and the page.
	Provider string
	// Offline is true when the offline provider answers.
	Offline bool
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// StreamAuthInterval is how often a stream opened with a token checks
	// it again, and how old the last check may be when an event is sent: a
	// revoked token's streams end within about this long, at one query per
	// token per interval, however many streams it holds, not per event. A
	// token that expires ends its streams at its expiry. Default: 5s.
	StreamAuthInterval time.Duration
	// Registerer takes the gateway's HTTP metrics (requests by route and
	// status, their durations, the open streams). Default: none kept.
	Registerer prometheus.Registerer
	// Unavailable, when set, tells the store's failures that mean the
	// database is down: a request that meets one is answered 503
	// unavailable with a Retry-After, for the client to try again, not 500.
	// Default: none, every store failure is a 500.
	Unavailable func(error) bool
}

func (c Config) withDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, 8<<10)
	c.MaxWait = cmp.Or(c.MaxWait, 60*time.Second)
	c.BodyTimeout = cmp.Or(c.BodyTimeout, 30*time.Second)
	c.StreamAuthInterval = cmp.Or(c.StreamAuthInterval, 5*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if c.DB == nil || c.Bus == nil || c.Engines == nil {
		return errors.New("gateway: DB, Bus and Engines are required")
	}
	if c.MaxMessageBytes < 1 || c.MaxWait <= 0 || c.StreamAuthInterval <= 0 {
		return errors.New("gateway: MaxMessageBytes, MaxWait and StreamAuthInterval must be positive")
	}
	return nil
}

// Gateway serves the chat API.
type Gateway struct {
	cfg     Config
	replies *broker
	recent  *recent // events passed on, to drop republished copies
	subs    []*nats.Subscription
	m       *httpMetrics
	// rechecks answers the streams' checks of their tokens.
	rechecks *streamAuth
}

// New returns a gateway; Start subscribes it to replies.
func New(cfg Config) (*Gateway, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newHTTPMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, replies: newBroker(), recent: newRecent(recentEvents), m: m,
		rechecks: newStreamAuth(cfg.DB, cfg.StreamAuthInterval, cfg.Now)}, nil
}

// httpMetrics are the gateway's HTTP metrics.
type httpMetrics struct {
	requests *prometheus.CounterVec   // route, code
	seconds  *prometheus.HistogramVec // route
	streams  prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "praetor_http_requests_total",
			Help: "API requests answered, by route pattern and status code."}, []string{"route", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "praetor_http_request_duration_seconds",
			Help:    "How long API requests took to answer, by route pattern (a ?wait for the reply included; a stream's whole life).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"route"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "praetor_http_streams_open",
			Help: "Server-Sent Event streams open on sessions."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.seconds, m.streams} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("gateway: metrics: %w", err)
		}
	}
	return m, nil
}

// instrument counts and times a route's requests under its pattern.
func (m *httpMetrics) instrument(pattern string, h http.HandlerFunc) http.HandlerFunc {
	route := prometheus.Labels{"route": pattern}
	return promhttp.InstrumentHandlerDuration(m.seconds.MustCurryWith(route),
		promhttp.InstrumentHandlerCounter(m.requests.MustCurryWith(route), h)).ServeHTTP
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
	mux.Handle("GET /{$}", pageHeaders(http.HandlerFunc(g.page)))
	mux.Handle("GET /static/", pageHeaders(staticHandler()))
	routes := []struct {
		pattern string
		handler http.HandlerFunc
	}{
		{"GET /v1/info", g.info},
		{"GET /v1/engines", g.listEngines},
		{"POST /v1/sessions", g.createSession},
		{"GET /v1/sessions", g.listSessions},
		{"GET /v1/sessions/{id}", g.getSession},
		{"POST /v1/sessions/{id}/turns", g.postTurn},
		{"GET /v1/sessions/{id}/turns", g.listTurns},
		{"GET /v1/sessions/{id}/turns/{turn}", g.getTurn},
		{"GET /v1/sessions/{id}/extractions", g.listExtractions},
		{"GET /v1/sessions/{id}/handoffs", g.listHandoffs},
		{"GET /v1/sessions/{id}/tasks", g.listTasks},
		{"GET /v1/sessions/{id}/stream", g.stream},
	}
	patterns := make([]string, len(routes))
	for i, rt := range routes {
		mux.HandleFunc(rt.pattern, g.m.instrument(rt.pattern, g.auth(rt.handler)))
		patterns[i] = rt.pattern
	}
	list := strings.Join(patterns, ", ")
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { noRoute(mux, list, w, r) })
}

// noRoute answers a request no API route takes with the JSON error every
// other API answer has: 405 with Allow when the path exists under another
// method, else 404 with the routes there are.
func noRoute(mux *http.ServeMux, routes string, w http.ResponseWriter, r *http.Request) {
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
	writeError(w, http.StatusNotFound, "no_route", fmt.Sprintf("no API route %s %s; the routes: %s", r.Method, r.URL.Path, routes))
}

// caller is whom a request acts for: its tenant and, when it sent one, its
// token, which an open stream checks again.
type caller struct {
	tenant string
	// secret is the bearer token, "" for the open tenant.
	secret string
	// expires is when the token stops authenticating; zero: never.
	expires time.Time
}

type callerKey struct{}

func callerOf(r *http.Request) caller { return r.Context().Value(callerKey{}).(caller) }

func tenantOf(r *http.Request) string { return callerOf(r).tenant }

// auth resolves the request's tenant from its bearer token.
func (g *Gateway) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := g.caller(r)
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
		next(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}
}

// authError is a request the gateway does not let in, with what to fix.
type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }

func (g *Gateway) caller(r *http.Request) (caller, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		if g.cfg.OpenTenant != "" && loopback.Remote(r) {
			if why := loopback.Foreign(r); why != "" {
				return caller{}, &authError{why + "; a request without a token must come from this machine, to a loopback name " +
					"(localhost, 127.0.0.1), from the page this server serves: send Authorization: Bearer <token> " +
					"(praetor tenant token issue)"}
			}
			return caller{tenant: g.cfg.OpenTenant}, nil
		}
		return caller{}, &authError{"send Authorization: Bearer <token>"}
	}
	// The scheme is case-insensitive (RFC 9110 §11.1).
	scheme, secret, _ := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return caller{}, &authError{"the Authorization header must be Bearer <token>"}
	}
	tok, err := store.Authenticate(r.Context(), g.cfg.DB, secret, g.cfg.Now())
	if err != nil {
		if errors.Is(err, store.ErrUnauthenticated) {
			return caller{}, &authError{"the token is unknown, revoked or expired"}
		}
		return caller{}, err // store.Authenticate's error names what failed
	}
	c := caller{tenant: tok.TenantID, secret: secret}
	if tok.ExpiresAt != nil {
		c.expires = *tok.ExpiresAt
	}
	return c, nil
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
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // an API's text, not a page's: "Bearer <token>" as written
	_ = enc.Encode(v)
}

// decodeBody reads a JSON object of at most max bytes into v, rejecting
// unknown fields, anything after the object and text that is not UTF-8, and
// answers 400 or 413 with what to fix when the body is not what example
// shows (limit, when set, says what bounds the body).
//
// The body has Config.BodyTimeout to arrive: a client that sends its headers and
// then trickles its body, or stops, does not hold a connection and a
// handler for ever (the server has no ReadTimeout, which would end the
// long waits and streams).
func (g *Gateway) decodeBody(w http.ResponseWriter, r *http.Request, max int64, example, limit string, v any) bool {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.cfg.BodyTimeout)) // not supported by every ResponseWriter (tests')
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var timeout net.Error
	if errors.As(err, &timeout) && timeout.Timeout() {
		// The deadline stays: the server then closes the connection rather
		// than wait for the rest of the body to keep it.
		writeError(w, http.StatusRequestTimeout, "body_timeout", fmt.Sprintf("the body did not arrive within %s", g.cfg.BodyTimeout))
		return false
	}
	_ = rc.SetReadDeadline(time.Time{}) // the wait for a reply, or a stream, may be long
	if err == nil {
		err = decodeJSON(raw, v)
	}
	if err == nil {
		if err = checkText(raw); err != nil {
			writeError(w, http.StatusBadRequest, "bad_text", err.Error()+"; send text as UTF-8")
			return false
		}
		return true
	}
	var (
		tooBig    *http.MaxBytesError
		typeError *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		msg := fmt.Sprintf("the body is larger than %d bytes", max)
		if limit != "" {
			msg += ": " + limit
		}
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", msg)
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

// decodeJSON decodes one JSON object from raw into v, with nothing after
// it and no field v does not have.
func decodeJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// One object, nothing after it: a second value or stray text means the
	// client sent something other than it thinks.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// checkText reports what in a JSON text that decoded is not text:
// encoding/json takes bytes that are not UTF-8, and \u escapes of lone
// UTF-16 surrogates, and puts U+FFFD in their place, so the words stored
// would not be the words sent.
func checkText(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("the body is not valid UTF-8")
	}
	// In a JSON text that decoded, a backslash only occurs in a string, and
	// starts an escape: \uXXXX holds four hex digits.
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++
			continue
		}
		r := escaped(raw[i:])
		i += 5
		if !utf16.IsSurrogate(r) {
			continue
		}
		if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' && utf16.DecodeRune(r, escaped(raw[i+1:])) != unicode.ReplacementChar {
			i += 6 // a high surrogate and its low one: one character
			continue
		}
		return fmt.Errorf("the body has the escape \\u%04x, half of a UTF-16 surrogate pair without its other half", r)
	}
	return nil
}

// escaped is the rune of the \uXXXX escape b begins with (its hex digits
// checked by the JSON decoder).
func escaped(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n)
}
