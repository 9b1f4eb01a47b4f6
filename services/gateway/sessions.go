package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/sidebar"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

const source = "/praetor/gateway"

func (g *Gateway) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"tenant_id": tenantOf(r), "llm_provider": g.cfg.Provider, "offline": g.cfg.Offline,
		"max_message_bytes": g.cfg.MaxMessageBytes,
	})
}

type engineView struct {
	EngineID    string      `json:"engine_id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	EngineType  string      `json:"engine_type"`
	Phases      []phaseView `json:"phases"`
	Obligations int         `json:"obligations"`
}

type phaseView struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	Order       int    `json:"order"`
}

func viewEngine(d *engine.Definition) engineView {
	v := engineView{EngineID: d.EngineID, Name: d.Name, Description: d.Description, Version: d.Version,
		EngineType: string(d.EngineType), Obligations: len(d.Obligations), Phases: []phaseView{}}
	for _, p := range d.Phases {
		v.Phases = append(v.Phases, phaseView{ID: p.ID, DisplayName: p.DisplayName, Order: p.Order})
	}
	return v
}

func (g *Gateway) listEngines(w http.ResponseWriter, _ *http.Request) {
	out := []engineView{}
	for _, d := range g.cfg.Engines.All() {
		out = append(out, viewEngine(d))
	}
	writeJSON(w, http.StatusOK, map[string]any{"engines": out})
}

type createSessionRequest struct {
	EngineID  string `json:"engine_id"`
	ProjectID string `json:"project_id"`
}

// sessionView is a session as the API shows it.
type sessionView struct {
	SessionID     string                           `json:"session_id"`
	EngineID      string                           `json:"engine_id"`
	EngineVersion string                           `json:"engine_version"`
	ProjectID     string                           `json:"project_id"`
	Status        string                           `json:"status"`
	Phase         string                           `json:"phase"`
	Completeness  float64                          `json:"completeness"`
	TurnCount     int                              `json:"turn_count"`
	Sidebar       json.RawMessage                  `json:"sidebar,omitempty"`
	Extraction    map[string]engine.ExtractedField `json:"extraction,omitempty"`
	Obligations   []engine.ObligationItem          `json:"obligations,omitempty"`
	StateHash     string                           `json:"state_hash,omitempty"`
	Handoffs      *handoffView                     `json:"handoffs,omitempty"`
	CreatedAt     time.Time                        `json:"created_at"`
	UpdatedAt     time.Time                        `json:"updated_at"`
}

type handoffView struct {
	Inbound  string `json:"inbound,omitempty"`
	Outbound string `json:"outbound,omitempty"`
}

func viewSession(s conversation.Session, full bool) (sessionView, error) {
	v := sessionView{SessionID: s.ID, EngineID: s.EngineID, EngineVersion: s.EngineVersion, ProjectID: s.ProjectID,
		Status: s.Status, Phase: s.Phase, Completeness: s.Completeness, TurnCount: s.TurnCount, Sidebar: s.Sidebar,
		StateHash: s.StateHash, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if s.InboundHandoffID != "" || s.OutboundHandoffID != "" {
		v.Handoffs = &handoffView{Inbound: s.InboundHandoffID, Outbound: s.OutboundHandoffID}
	}
	if full {
		var m engine.WorkingMemory
		if err := json.Unmarshal(s.State, &m); err != nil {
			return v, fmt.Errorf("session %s: working memory: %w", s.ID, err)
		}
		v.Extraction, v.Obligations = m.Extraction.Fields, m.Obligations.Items
	}
	return v, nil
}

var validToken = contracts.ValidToken

func (g *Gateway) createSession(w http.ResponseWriter, r *http.Request) {
	var req createSessionRequest
	if !decodeBody(w, r, 4<<10, `{"engine_id": "project-discovery", "project_id": "default"}`, &req) {
		return
	}
	if req.EngineID == "" {
		writeError(w, http.StatusBadRequest, "missing_engine_id",
			"engine_id is required; engines: "+strings.Join(g.cfg.Engines.IDs(), ", "))
		return
	}
	def, ok := g.cfg.Engines.Get(req.EngineID)
	if !ok {
		writeError(w, http.StatusNotFound, "unknown_engine",
			fmt.Sprintf("no engine %q; engines: %s", req.EngineID, strings.Join(g.cfg.Engines.IDs(), ", ")))
		return
	}
	if req.ProjectID == "" {
		req.ProjectID = "default"
	}
	if !validToken(req.ProjectID) {
		writeError(w, http.StatusBadRequest, "bad_project_id", "project_id must be 1-128 characters of [A-Za-z0-9_-]")
		return
	}
	tenant, now := tenantOf(r), g.cfg.Now().UTC()
	id := uuid.Must(uuid.NewV7()).String()
	mem := engine.NewWorkingMemory(def, id, req.ProjectID)
	mem.UpdatedAt = now
	s, err := newSession(tenant, def, mem, sidebar.Build(def, mem, g.cfg.Registry), now)
	if err != nil {
		g.internal(w, "create session", err)
		return
	}
	started, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(id, "started"), Source: source, Time: now},
		contracts.SessionStarted{TenantID: tenant, SessionID: id, ProjectID: req.ProjectID, EngineID: def.EngineID,
			EngineVersion: def.Version, StartedAt: now})
	if err != nil {
		g.internal(w, "create session", err)
		return
	}
	err = g.cfg.DB.Tx(r.Context(), func(tx store.Querier) error {
		if err := conversation.CreateSession(r.Context(), tx, s); err != nil {
			return err
		}
		return delivery.Emit(r.Context(), tx, g.cfg.Bus, started)
	})
	if err != nil {
		g.internal(w, "create session", err)
		return
	}
	g.kick()
	v, _ := viewSession(s, false)
	writeJSON(w, http.StatusCreated, v)
}

// newSession is the row of a new session of def holding mem.
func newSession(tenant string, def *engine.Definition, mem *engine.WorkingMemory, sb sidebar.State, now time.Time) (conversation.Session, error) {
	state, err := json.Marshal(mem)
	if err != nil {
		return conversation.Session{}, err
	}
	hash, err := engine.StateHash(mem)
	if err != nil {
		return conversation.Session{}, err
	}
	side, err := json.Marshal(sb)
	if err != nil {
		return conversation.Session{}, err
	}
	return conversation.Session{ID: mem.SessionID, TenantID: tenant, ProjectID: mem.ProjectID, EngineID: def.EngineID,
		EngineVersion: def.Version, Status: conversation.StatusActive, Phase: mem.Phase.Current, State: state,
		StateHash: hash, Sidebar: side, CreatedAt: now, UpdatedAt: now}, nil
}

func (g *Gateway) listSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := conversation.ListSessions(r.Context(), g.cfg.DB, tenantOf(r), 100)
	if err != nil {
		g.internal(w, "list sessions", err)
		return
	}
	out := []sessionView{}
	for _, s := range ss {
		v, _ := viewSession(s, false)
		v.Sidebar = nil
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// session loads the path's session of the request's tenant, answering 404
// for any other.
func (g *Gateway) session(w http.ResponseWriter, r *http.Request) (conversation.Session, bool) {
	id := r.PathValue("id")
	s, err := conversation.GetSession(r.Context(), g.cfg.DB, tenantOf(r), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "unknown_session", fmt.Sprintf("no session %q", id))
		return s, false
	}
	if err != nil {
		g.internal(w, "load session", err)
		return s, false
	}
	return s, true
}

func (g *Gateway) getSession(w http.ResponseWriter, r *http.Request) {
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	v, err := viewSession(s, true)
	if err != nil {
		g.internal(w, "read session", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type postTurnRequest struct {
	Message string `json:"message"`
}

// turnView is a turn as the API shows it: the reply fields are set once the
// runner has answered.
type turnView struct {
	TurnID       string          `json:"turn_id"`
	SessionID    string          `json:"session_id"`
	Status       string          `json:"status"`
	Message      string          `json:"message,omitempty"`
	TurnNumber   int             `json:"turn_number,omitempty"`
	Reply        string          `json:"reply,omitempty"`
	Phase        string          `json:"phase,omitempty"`
	Completeness *float64        `json:"completeness,omitempty"`
	Sidebar      json.RawMessage `json:"sidebar,omitempty"`
	Degraded     bool            `json:"degraded,omitempty"`
	ReceivedAt   time.Time       `json:"received_at"`
	RespondedAt  *time.Time      `json:"responded_at,omitempty"`
}

func viewTurn(t conversation.Turn) turnView {
	v := turnView{TurnID: t.ID, SessionID: t.SessionID, Status: "pending", Message: t.Message, ReceivedAt: t.ReceivedAt}
	if t.Answered() {
		c := t.Completeness
		v.Status, v.TurnNumber, v.Reply, v.Phase, v.Completeness = "answered", t.TurnNumber, t.Reply, t.Phase, &c
		v.Sidebar, v.Degraded, v.RespondedAt = t.Sidebar, t.Degraded, t.RespondedAt
	}
	return v
}

// maxEscape is how many bytes of JSON one byte of a message can take
// (\u00XX): a body that holds a message at the limit can be this much larger.
const maxEscape = 6

func (g *Gateway) postTurn(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, "bad_wait", fmt.Sprintf("wait %q is not a duration like 30s", q))
			return
		}
		wait = min(d, g.cfg.MaxWait)
	}
	var req postTurnRequest
	if !decodeBody(w, r, int64(g.cfg.MaxMessageBytes)*maxEscape+1024, `{"message": "..."}`, &req) {
		return
	}
	msg := strings.TrimSpace(req.Message)
	switch {
	case msg == "":
		writeError(w, http.StatusBadRequest, "empty_message", "message is empty; send the user's words")
		return
	case len(msg) > g.cfg.MaxMessageBytes:
		writeError(w, http.StatusRequestEntityTooLarge, "message_too_large",
			fmt.Sprintf("message is %d bytes; the limit is %d: split it into several turns", len(msg), g.cfg.MaxMessageBytes))
		return
	case !utf8.ValidString(msg):
		writeError(w, http.StatusBadRequest, "bad_message", "message is not valid UTF-8")
		return
	}
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	if s.Status != conversation.StatusActive {
		detail := fmt.Sprintf("session %s is %s", s.ID, s.Status)
		if s.OutboundHandoffID != "" {
			detail += "; it handed off (" + s.OutboundHandoffID + "): continue in the target session"
		}
		writeError(w, http.StatusConflict, "session_not_active", detail)
		return
	}
	tenant, now := tenantOf(r), g.cfg.Now().UTC()
	turnID := uuid.Must(uuid.NewV7()).String()
	key := r.Header.Get("Idempotency-Key")
	if key != "" {
		turnID = events.DeriveID(s.ID, "turn/"+key)
	}
	var replies <-chan contracts.TurnResponded
	if wait > 0 {
		var cancel func()
		replies, cancel = g.replies.awaitTurn(turnID)
		defer cancel()
	}
	turn := conversation.Turn{ID: turnID, TenantID: tenant, SessionID: s.ID, Message: msg, ReceivedAt: now}
	received, err := contracts.NewEvent(contracts.Meta{ID: turnID, Source: source, Time: now},
		contracts.TurnReceived{TenantID: tenant, SessionID: s.ID, TurnID: turnID, Message: msg, ReceivedAt: now})
	if err != nil {
		g.internal(w, "post turn", err)
		return
	}
	err = g.cfg.DB.Tx(r.Context(), func(tx store.Querier) error {
		if err := conversation.CreateTurn(r.Context(), tx, turn); err != nil {
			return err
		}
		return delivery.Emit(r.Context(), tx, g.cfg.Bus, received)
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		// A retry with the same Idempotency-Key: answer as for the first,
		// unless the key now comes with another message.
		first, err := conversation.GetTurn(r.Context(), g.cfg.DB, tenant, turnID)
		if err != nil {
			g.internal(w, "read turn", err)
			return
		}
		if first.Message != msg {
			writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused",
				fmt.Sprintf("Idempotency-Key %q was sent with another message in this session (turn %s); use a new key for a new message",
					key, turnID))
			return
		}
		if first.Answered() {
			writeJSON(w, http.StatusOK, viewTurn(first))
			return
		}
		turn = first
	case err != nil:
		g.internal(w, "post turn", err)
		return
	default:
		g.kick()
	}
	if wait == 0 {
		writeJSON(w, http.StatusAccepted, viewTurn(turn))
		return
	}
	g.awaitReply(w, r, turn, replies, wait)
}

// awaitReply answers with the turn's reply when it comes within wait, else
// 202 with the turn still pending. The reply normally arrives on the
// subscription; the store is also polled, so a reply the subscription missed
// (a reconnect, another replica's restart) is still found.
func (g *Gateway) awaitReply(w http.ResponseWriter, r *http.Request, turn conversation.Turn,
	replies <-chan contracts.TurnResponded, wait time.Duration) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	for {
		timedOut := false
		select {
		case <-replies:
			// The reply event carries what the turn row now holds.
		case <-poll.C:
		case <-deadline.C:
			timedOut = true
		case <-g.replies.done:
			// The gateway is stopping: the turn is safe in the store and will
			// be answered; the client reads it later.
			timedOut = true
		case <-r.Context().Done():
			return
		}
		t, err := conversation.GetTurn(r.Context(), g.cfg.DB, turn.TenantID, turn.ID)
		if err != nil {
			g.internal(w, "read turn", err)
			return
		}
		if t.Answered() {
			writeJSON(w, http.StatusOK, viewTurn(t))
			return
		}
		if timedOut {
			writeJSON(w, http.StatusAccepted, viewTurn(t))
			return
		}
	}
}

func (g *Gateway) listTurns(w http.ResponseWriter, r *http.Request) {
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	ts, err := conversation.ListTurns(r.Context(), g.cfg.DB, tenantOf(r), s.ID)
	if err != nil {
		g.internal(w, "list turns", err)
		return
	}
	out := []turnView{}
	for _, t := range ts {
		out = append(out, viewTurn(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": out})
}

func (g *Gateway) listExtractions(w http.ResponseWriter, r *http.Request) {
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	log, err := conversation.ListExtractions(r.Context(), g.cfg.DB, tenantOf(r), s.ID)
	if err != nil {
		g.internal(w, "list extractions", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"extractions": log})
}

func (g *Gateway) kick() {
	if g.cfg.Relay != nil {
		g.cfg.Relay.Kick()
	}
}

func (g *Gateway) internal(w http.ResponseWriter, what string, err error) {
	g.cfg.Logger.Error("gateway request failed", "op", what, "error", err)
	writeError(w, http.StatusInternalServerError, "internal", what+" failed; see the server log")
}
