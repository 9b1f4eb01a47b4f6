package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/phase"
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
	SessionID     string  `json:"session_id"`
	EngineID      string  `json:"engine_id"`
	EngineVersion string  `json:"engine_version"`
	ProjectID     string  `json:"project_id"`
	Status        string  `json:"status"`
	Phase         string  `json:"phase"`
	Completeness  float64 `json:"completeness"`
	// TurnCount is the number of the last turn the engine processed (the
	// state's), not how many turns the session has: a turn answered without
	// being processed (taken just before a handoff committed, or set aside)
	// is listed among its turns all the same.
	TurnCount   int                              `json:"turn_count"`
	Sidebar     json.RawMessage                  `json:"sidebar,omitempty"`
	Extraction  map[string]engine.ExtractedField `json:"extraction,omitzero"` // {} in a full view before anything is extracted
	Obligations []engine.ObligationItem          `json:"obligations,omitempty"`
	StateHash   string                           `json:"state_hash,omitempty"`
	// Handoffs are the ids of the handoffs the session started with
	// (inbound) and made (outbound); InboundHandoff and OutboundHandoff say
	// more, with the session to follow.
	Handoffs        *handoffView    `json:"handoffs,omitempty"`
	InboundHandoff  *handoffSummary `json:"inbound_handoff,omitempty"`
	OutboundHandoff *handoffSummary `json:"outbound_handoff,omitempty"`
	// HandoffRejection is the last exit transition whose handoff failed
	// validation (not written; the session went on).
	HandoffRejection *engine.HandoffRejection `json:"handoff_rejection,omitempty"`
	// BackgroundTasks is the session's background tasks.
	BackgroundTasks *tasksView `json:"background_tasks,omitempty"`
	// PhaseBlockedBy says why an active session's phase does not move on
	// although one of its transition triggers holds, as the last turn's
	// turn.responded did: a mandatory checkpoint not satisfied, an entry
	// condition of the next phase, a background task still running or
	// stalled. Empty when nothing holds the phase.
	PhaseBlockedBy []string  `json:"phase_blocked_by,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

type handoffView struct {
	Inbound  string `json:"inbound,omitempty"`
	Outbound string `json:"outbound,omitempty"`
}

// handoffSummary is a handoff as a session's view shows it.
type handoffSummary struct {
	HandoffID       string `json:"handoff_id"`
	SourceEngineID  string `json:"source_engine_id"`
	SourceSessionID string `json:"source_session_id"`
	TargetEngineID  string `json:"target_engine_id"`
	TargetSessionID string `json:"target_session_id"`
	Reason          string `json:"reason"`
	// TargetStarted is true once the target session exists: the next
	// message goes there.
	TargetStarted bool `json:"target_started"`
	// Verified and Verification are the I-PASS check of the target's first
	// reply (Verification is absent until that reply).
	Verified     bool            `json:"verified"`
	Verification json.RawMessage `json:"verification_result,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
}

func summarize(h conversation.Handoff, started bool) *handoffSummary {
	return &handoffSummary{HandoffID: h.ID, SourceEngineID: h.SourceEngineID, SourceSessionID: h.SourceSessionID,
		TargetEngineID: h.TargetEngineID, TargetSessionID: h.TargetSessionID, Reason: h.TransitionReason,
		TargetStarted: started, Verified: h.Verified, Verification: h.Verification, CreatedAt: h.CreatedAt}
}

// handoffOf loads a handoff of the tenant and whether its target session
// has started.
func (g *Gateway) handoffOf(ctx context.Context, tenant, id string) (*handoffSummary, error) {
	h, _, err := g.madeHandoff(ctx, tenant, id)
	return h, err
}

// madeHandoff is handoffOf, with the number of the source session's turn
// that made the handoff: one query.
func (g *Gateway) madeHandoff(ctx context.Context, tenant, id string) (*handoffSummary, int, error) {
	h, started, err := conversation.GetHandoffStarted(ctx, g.cfg.DB, tenant, id)
	if err != nil {
		return nil, 0, err
	}
	var payload struct {
		Metadata struct {
			TurnCount int `json:"turn_count"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(h.Payload, &payload); err != nil {
		return nil, 0, fmt.Errorf("handoff %s: payload: %w", id, err)
	}
	return summarize(h, started), payload.Metadata.TurnCount, nil
}

// viewSession is a session as the API shows it: with its handoffs, and
// when full its extraction, obligations, background tasks and handoff
// rejection too.
func (g *Gateway) viewSession(ctx context.Context, s conversation.Session, full bool) (sessionView, error) {
	v := sessionView{SessionID: s.ID, EngineID: s.EngineID, EngineVersion: s.EngineVersion, ProjectID: s.ProjectID,
		Status: s.Status, Phase: s.Phase, Completeness: s.Completeness, TurnCount: s.TurnCount, Sidebar: s.Sidebar,
		StateHash: s.StateHash, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if s.InboundHandoffID != "" || s.OutboundHandoffID != "" {
		v.Handoffs = &handoffView{Inbound: s.InboundHandoffID, Outbound: s.OutboundHandoffID}
	}
	var err error
	if s.InboundHandoffID != "" {
		if v.InboundHandoff, err = g.handoffOf(ctx, s.TenantID, s.InboundHandoffID); err != nil {
			return v, fmt.Errorf("session %s: inbound handoff: %w", s.ID, err)
		}
	}
	if s.OutboundHandoffID != "" {
		if v.OutboundHandoff, err = g.handoffOf(ctx, s.TenantID, s.OutboundHandoffID); err != nil {
			return v, fmt.Errorf("session %s: outbound handoff: %w", s.ID, err)
		}
	}
	if full {
		var m engine.WorkingMemory
		if err := json.Unmarshal(s.State, &m); err != nil {
			return v, fmt.Errorf("session %s: working memory: %w", s.ID, err)
		}
		v.Extraction, v.Obligations = m.Extraction.Fields, m.Obligations.Items
		if v.Extraction == nil {
			v.Extraction = map[string]engine.ExtractedField{}
		}
		v.HandoffRejection = m.HandoffRejection
		tv := g.viewTasks(s.EngineID, m.BackgroundTasks)
		v.BackgroundTasks = &tv
		if def, ok := g.cfg.Engines.Get(s.EngineID); ok && s.Status == conversation.StatusActive {
			v.PhaseBlockedBy = phaseHeldBy(def, g.cfg.Registry, &m)
		}
	}
	return v, nil
}

// phaseHeldBy says why the phase of m does not move on although one of its
// transition triggers holds, as the runner's steps 6-7 do (Result's
// PhaseBlockedBy): what CanTransition refuses, and the stalled tasks.
func phaseHeldBy(def *engine.Definition, reg *engine.Registry, m *engine.WorkingMemory) []string {
	machine := phase.New(def, reg)
	ev := machine.EvaluateTransition(m)
	if !ev.ShouldTransition {
		return nil
	}
	_, why := machine.CanTransition(ev.From, ev.Target, m)
	for _, t := range m.BackgroundTasks.Stalled() {
		name := t.TaskID
		for _, d := range def.BackgroundTasks {
			if d.TaskID == t.TaskID {
				name = cmp.Or(d.DisplayName, name)
			}
		}
		why = append(why, fmt.Sprintf("waiting for background task %s (stalled)", name))
	}
	return why
}

// taskView is a background task as the API shows it.
type taskView struct {
	TaskID      string `json:"task_id"`
	DisplayName string `json:"display_name"`
	Handler     string `json:"handler"`
	// Status is pending, retrying, stalled, completed, degraded or
	// proceed-with-gap.
	Status           string          `json:"status"`
	Attempt          int             `json:"attempt"`
	DispatchedAtTurn int             `json:"dispatched_at_turn"`
	SettledAtTurn    int             `json:"settled_at_turn,omitempty"`
	NotBefore        *time.Time      `json:"not_before,omitempty"`
	Note             string          `json:"note,omitempty"`
	Error            string          `json:"error,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	// BlocksPhase is true when the task keeps the phase from advancing
	// while it runs (block_phase_transition, or stalled).
	BlocksPhase bool `json:"blocks_phase"`
}

// tasksView is a session's background tasks.
type tasksView struct {
	Tasks []taskView `json:"tasks"`
	// Gaps are tasks that failed under proceed-with-gap.
	Gaps []string `json:"gaps"`
	// Stalled: progress waits for these tasks.
	Stalled []string `json:"stalled"`
	// Intelligence are the lines of background intelligence the session has.
	Intelligence []string `json:"intelligence"`
}

func (g *Gateway) viewTasks(engineID string, bt engine.BackgroundTaskState) tasksView {
	def, _ := g.cfg.Engines.Get(engineID)
	out := tasksView{Tasks: []taskView{}, Gaps: append([]string{}, bt.Gaps...), Stalled: []string{},
		Intelligence: append([]string{}, bt.Intelligence...)}
	for _, list := range [][]engine.TaskRecord{bt.Pending, bt.Completed} {
		for _, t := range list {
			v := taskView{TaskID: t.TaskID, DisplayName: t.TaskID, Handler: t.Handler, Status: cmp.Or(t.Status, engine.TaskPending),
				Attempt: t.Attempt, DispatchedAtTurn: t.DispatchedAtTurn, SettledAtTurn: t.SettledAtTurn, Note: t.Note,
				Error: t.Error, Result: t.Result}
			if !t.NotBefore.IsZero() {
				nb := t.NotBefore
				v.NotBefore = &nb
			}
			if def != nil {
				for _, d := range def.BackgroundTasks {
					if d.TaskID == t.TaskID {
						v.DisplayName = cmp.Or(d.DisplayName, t.TaskID)
						v.BlocksPhase = d.BlockPhaseTransition && bt.IsPending(t.TaskID)
					}
				}
			}
			if t.Status == engine.TaskStalled {
				v.BlocksPhase = true
				out.Stalled = append(out.Stalled, t.TaskID)
			}
			out.Tasks = append(out.Tasks, v)
		}
	}
	return out
}

func (g *Gateway) listHandoffs(w http.ResponseWriter, r *http.Request) {
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	hs, err := conversation.ListHandoffs(r.Context(), g.cfg.DB, tenantOf(r), s.ID)
	if err != nil {
		g.internal(w, "list handoffs", err)
		return
	}
	type handoffDetail struct {
		handoffSummary
		// Direction is inbound (the session started with it) or outbound
		// (the session made it).
		Direction string          `json:"direction"`
		Payload   json.RawMessage `json:"payload"`
	}
	out := []handoffDetail{}
	for _, h := range hs {
		_, err := conversation.GetSession(r.Context(), g.cfg.DB, h.TenantID, h.TargetSessionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			g.internal(w, "list handoffs", err)
			return
		}
		d := handoffDetail{handoffSummary: *summarize(h, err == nil), Direction: "outbound", Payload: h.Payload}
		if h.TargetSessionID == s.ID {
			d.Direction = "inbound"
		}
		out = append(out, d)
	}
	writeJSON(w, http.StatusOK, map[string]any{"handoffs": out})
}

func (g *Gateway) listTasks(w http.ResponseWriter, r *http.Request) {
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	var m engine.WorkingMemory
	if err := json.Unmarshal(s.State, &m); err != nil {
		g.internal(w, "read session", fmt.Errorf("session %s: working memory: %w", s.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, g.viewTasks(s.EngineID, m.BackgroundTasks))
}

var validToken = contracts.ValidToken

func (g *Gateway) createSession(w http.ResponseWriter, r *http.Request) {
	var req createSessionRequest
	if !g.decodeBody(w, r, 4<<10, `{"engine_id": "project-discovery", "project_id": "default"}`, "", &req) {
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
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	tenant, now := tenantOf(r), g.cfg.Now().UTC()
	id := uuid.Must(uuid.NewV7()).String()
	if key != "" {
		// A retry with the same key names the same session.
		id = events.DeriveID(tenant, "session/"+key)
	}
	mem := engine.NewWorkingMemory(def, id, req.ProjectID)
	mem.UpdatedAt = now
	s, err := newSession(tenant, def, mem, sidebar.Build(def, mem, g.cfg.Registry), now)
	if err != nil {
		g.internal(w, "create session", err)
		return
	}
	started, err := contracts.NewEvent(contracts.Meta{ID: events.DeriveID(id, "started"), Source: source, Time: now},
		contracts.SessionStarted{TenantID: tenant, SessionID: id, ProjectID: req.ProjectID, EngineID: def.EngineID,
			EngineVersion: def.Version, MemoryVersion: mem.SchemaVersion, StartedAt: now})
	if err != nil {
		g.internal(w, "create session", err)
		return
	}
	var emitted []store.OutboxMessage
	err = g.cfg.DB.Tx(r.Context(), func(tx store.Querier) error {
		if err := conversation.CreateSession(r.Context(), tx, s); err != nil {
			return err
		}
		emitted, err = delivery.Emit(r.Context(), tx, g.cfg.Bus, started)
		return err
	})
	status := http.StatusCreated
	switch {
	case errors.Is(err, store.ErrConflict) && key != "":
		// A retry of a creation with the same Idempotency-Key: answered
		// with the session it created, unless the key now asks for another.
		first, err := conversation.GetSession(r.Context(), g.cfg.DB, tenant, id)
		if err != nil {
			g.internal(w, "read session", err)
			return
		}
		if first.EngineID != def.EngineID || first.ProjectID != req.ProjectID {
			writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused",
				fmt.Sprintf("Idempotency-Key %q created session %s of %s in project %s; use a new key for another session",
					key, first.ID, first.EngineID, first.ProjectID))
			return
		}
		g.publishUnsent(r.Context(), started) // the first attempt may have failed to
		s, status = first, http.StatusOK
	case err != nil:
		g.internal(w, "create session", err)
		return
	default:
		g.publish(r.Context(), emitted, false)
	}
	v, _ := g.viewSession(r.Context(), s, false)
	w.Header().Set("Location", "/v1/sessions/"+v.SessionID)
	writeJSON(w, status, v)
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
		// The list shows handoff ids; GET /v1/sessions/{id} the details.
		v := sessionView{SessionID: s.ID, EngineID: s.EngineID, EngineVersion: s.EngineVersion, ProjectID: s.ProjectID,
			Status: s.Status, Phase: s.Phase, Completeness: s.Completeness, TurnCount: s.TurnCount,
			StateHash: s.StateHash, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
		if s.InboundHandoffID != "" || s.OutboundHandoffID != "" {
			v.Handoffs = &handoffView{Inbound: s.InboundHandoffID, Outbound: s.OutboundHandoffID}
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// session loads the path's session of the request's tenant, answering 404
// for any other.
func (g *Gateway) session(w http.ResponseWriter, r *http.Request) (conversation.Session, bool) {
	return g.sessionWith(w, r, conversation.GetSession)
}

// sessionWith is session with another reader: conversation.GetSessionHead
// for a handler that needs no state.
func (g *Gateway) sessionWith(w http.ResponseWriter, r *http.Request,
	get func(context.Context, store.Querier, string, string) (conversation.Session, error)) (conversation.Session, bool) {
	id := r.PathValue("id")
	if !contracts.ValidToken(id) {
		// Not an id any session has (nor one a store could be asked for:
		// PostgreSQL refuses a NUL or bytes that are not UTF-8).
		writeError(w, http.StatusNotFound, "unknown_session", fmt.Sprintf("no session %q", id))
		return conversation.Session{}, false
	}
	s, err := get(r.Context(), g.cfg.DB, tenantOf(r), id)
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
	v, err := g.viewSession(r.Context(), s, true)
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
	ReceivedAt   time.Time       `json:"received_at,omitzero"` // zero in a stream's "turn" event, which has only the reply
	RespondedAt  *time.Time      `json:"responded_at,omitempty"`
	// Handoff is set on the answered turn whose exit transition handed the
	// session off: the next message goes to its target session.
	Handoff *handoffSummary `json:"handoff,omitempty"`

	// DegradedReason says why a degraded turn was, when the API knows:
	// "handed_off" for a turn the session answered without processing it,
	// having handed off (Handoff says where to send it again).
	DegradedReason string `json:"degraded_reason,omitempty"`
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

// maxIdempotencyKey bounds an Idempotency-Key, in bytes.
const maxIdempotencyKey = 255

// idempotencyKey returns the request's Idempotency-Key, "" without one, or
// answers 400 and false when it has several or a bad one.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	keys := r.Header.Values("Idempotency-Key")
	switch {
	case len(keys) == 0:
		return "", true
	case len(keys) > 1:
		writeError(w, http.StatusBadRequest, "bad_idempotency_key", fmt.Sprintf("%d Idempotency-Key headers; send one", len(keys)))
		return "", false
	case len(keys[0]) > maxIdempotencyKey || strings.TrimSpace(keys[0]) == "":
		writeError(w, http.StatusBadRequest, "bad_idempotency_key",
			fmt.Sprintf("the Idempotency-Key must be 1 to %d bytes, not blank; a UUID will do", maxIdempotencyKey))
		return "", false
	}
	return keys[0], true
}

// maxEscape is how many bytes of JSON one byte of a message can take
// (\u00XX): a body that holds a message at the limit can be this much larger.
const maxEscape = 6

func (g *Gateway) postTurn(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := time.ParseDuration(q)
		switch {
		case err != nil:
			writeError(w, http.StatusBadRequest, "bad_wait", fmt.Sprintf("wait %q is not a duration like 30s", q))
			return
		case d < 0:
			writeError(w, http.StatusBadRequest, "bad_wait", fmt.Sprintf("wait %q is negative; give how long to wait for the reply, like 30s", q))
			return
		}
		wait = min(d, g.cfg.MaxWait)
	}
	var req postTurnRequest
	if !g.decodeBody(w, r, int64(g.cfg.MaxMessageBytes)*maxEscape+1024, `{"message": "..."}`,
		fmt.Sprintf("a message may have %d bytes (--max-message-bytes); split it into several turns", g.cfg.MaxMessageBytes), &req) {
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
	case strings.ContainsRune(msg, 0):
		// No store takes it in text (PostgreSQL refuses it), and no one types it.
		writeError(w, http.StatusBadRequest, "bad_message", "message contains a NUL character (U+0000); send text")
		return
	}
	s, ok := g.sessionWith(w, r, conversation.GetSessionHead) // the state is the runner's business
	if !ok {
		return
	}
	tenant, now := tenantOf(r), g.cfg.Now().UTC()
	turnID := uuid.Must(uuid.NewV7()).String()
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	if key != "" {
		turnID = events.DeriveID(s.ID, "turn/"+key)
	}
	var replies <-chan contracts.TurnResponded
	if wait > 0 {
		var cancel func()
		replies, cancel = g.replies.awaitTurn(turnID)
		defer cancel()
	}
	received, err := contracts.NewEvent(contracts.Meta{ID: turnID, Source: source, Time: now},
		contracts.TurnReceived{TenantID: tenant, SessionID: s.ID, TurnID: turnID, Message: msg, ReceivedAt: now})
	if err != nil {
		g.internal(w, "post turn", err)
		return
	}
	// A retry with the same Idempotency-Key is answered as the first was,
	// even when that turn ended the session (its handoff): the client may
	// have lost the very reply that says where to go.
	if key != "" {
		first, err := conversation.GetTurn(r.Context(), g.cfg.DB, tenant, turnID)
		switch {
		case err == nil:
			g.retried(w, r, first, received, msg, key, replies, wait)
			return
		case !errors.Is(err, store.ErrNotFound):
			g.internal(w, "read turn", err)
			return
		}
	}
	if s.Status != conversation.StatusActive {
		g.notActive(w, r, s)
		return
	}
	turn := conversation.Turn{ID: turnID, TenantID: tenant, SessionID: s.ID, Message: msg, ReceivedAt: now}
	var emitted []store.OutboxMessage
	err = g.cfg.DB.Tx(r.Context(), func(tx store.Querier) error {
		if err := conversation.CreateTurn(r.Context(), tx, turn); err != nil {
			return err
		}
		emitted, err = delivery.Emit(r.Context(), tx, g.cfg.Bus, received)
		return err
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		// The same Idempotency-Key in a concurrent request, whose turn
		// committed first.
		first, err := conversation.GetTurn(r.Context(), g.cfg.DB, tenant, turnID)
		if err != nil {
			g.internal(w, "read turn", err)
			return
		}
		g.retried(w, r, first, received, msg, key, replies, wait)
		return
	case err != nil:
		g.internal(w, "post turn", err)
		return
	}
	g.publish(r.Context(), emitted, true)
	if wait == 0 {
		writePending(w, viewTurn(turn))
		return
	}
	g.awaitReply(w, r, turn, replies, wait)
}

// writePending answers 202 with a turn not yet answered, and where to read
// it (GET its Location until its status is "answered", or open the
// session's stream).
func writePending(w http.ResponseWriter, v turnView) {
	w.Header().Set("Location", "/v1/sessions/"+v.SessionID+"/turns/"+v.TurnID)
	writeJSON(w, http.StatusAccepted, v)
}

// getTurn serves one turn of a session: pending, or answered with its
// reply (and the handoff it made, if it made one).
func (g *Gateway) getTurn(w http.ResponseWriter, r *http.Request) {
	s, ok := g.sessionWith(w, r, conversation.GetSessionHead)
	if !ok {
		return
	}
	id := r.PathValue("turn")
	var (
		t   conversation.Turn
		err = store.ErrNotFound
	)
	if contracts.ValidToken(id) {
		t, err = conversation.GetTurn(r.Context(), g.cfg.DB, tenantOf(r), id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && t.SessionID != s.ID:
		writeError(w, http.StatusNotFound, "unknown_turn", fmt.Sprintf("no turn %q in session %s", id, s.ID))
		return
	case err != nil:
		g.internal(w, "read turn", err)
		return
	}
	writeJSON(w, http.StatusOK, g.handedOff(r.Context(), s)(viewTurn(t)))
}

// retried answers a request whose Idempotency-Key names a turn already
// stored (first) as that turn's first request was answered: its reply, or
// 202 (or a wait for the reply) while it is pending; unless the key now
// comes with another message, which is refused.
func (g *Gateway) retried(w http.ResponseWriter, r *http.Request, first conversation.Turn, received event.Event, msg, key string,
	replies <-chan contracts.TurnResponded, wait time.Duration) {
	if first.Message != msg {
		writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused",
			fmt.Sprintf("Idempotency-Key %q was sent with another message in this session (turn %s); use a new key for a new message",
				key, first.ID))
		return
	}
	if first.Answered() {
		writeJSON(w, http.StatusOK, g.withHandoff(r.Context(), viewTurn(first)))
		return
	}
	// The first attempt may have failed to publish it, or ended before.
	g.publishUnsent(r.Context(), received)
	if wait == 0 {
		writePending(w, viewTurn(first))
		return
	}
	g.awaitReply(w, r, first, replies, wait)
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
			writeJSON(w, http.StatusOK, g.withHandoff(r.Context(), viewTurn(t)))
			return
		}
		if timedOut {
			writePending(w, viewTurn(t))
			return
		}
	}
}

// notActive refuses a message to a session that is not active; a session
// that handed off names the session to post to instead.
func (g *Gateway) notActive(w http.ResponseWriter, r *http.Request, s conversation.Session) {
	body := struct {
		apiError
		Handoff *handoffSummary `json:"handoff,omitempty"`
	}{apiError: apiError{Code: "session_not_active", Error: fmt.Sprintf("session %s is %s", s.ID, s.Status)}}
	if s.OutboundHandoffID != "" {
		h, err := g.handoffOf(r.Context(), s.TenantID, s.OutboundHandoffID)
		if err != nil {
			g.internal(w, "read the handoff", err)
			return
		}
		body.Handoff = h
		body.Error += fmt.Sprintf("; it handed off to %s (handoff %s): post to session %s", h.TargetEngineID, h.HandoffID,
			h.TargetSessionID)
		if !h.TargetStarted {
			body.Error += ", which is starting: retry in a moment"
		}
	}
	writeJSON(w, http.StatusConflict, body)
}

// withHandoff adds to an answered turn of a session the handoff it made or
// answered (handedOff).
func (g *Gateway) withHandoff(ctx context.Context, v turnView) turnView {
	s, err := conversation.GetSessionHead(ctx, g.cfg.DB, tenantOfTurn(ctx), v.SessionID)
	if err != nil {
		g.cfg.Logger.Warn("session of a turn unreadable", "session_id", v.SessionID, "error", err)
		return v
	}
	return g.handedOff(ctx, s)(v)
}

// handedOff returns what adds to a turn of s the handoff s made, when s
// handed off (one query; otherwise none): to the turn that made it, and to
// the turns the gateway took before that turn committed, which the session
// answered (degraded) without processing them. Each tells its client where
// to post next. Other turns are returned as they are.
func (g *Gateway) handedOff(ctx context.Context, s conversation.Session) func(turnView) turnView {
	unchanged := func(v turnView) turnView { return v }
	if s.OutboundHandoffID == "" {
		return unchanged
	}
	h, at, err := g.madeHandoff(ctx, s.TenantID, s.OutboundHandoffID)
	if err != nil {
		g.cfg.Logger.Warn("handoff of a session unreadable", "session_id", s.ID, "handoff_id", s.OutboundHandoffID, "error", err)
		return unchanged
	}
	return withMadeHandoff(h, at)
}

func tenantOfTurn(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c.tenant
}

// listTurns serves a session's turns; those that made or answered its
// handoff carry it, as GET of each does.
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
	withHandoff := g.handedOff(r.Context(), s)
	out := []turnView{}
	for _, t := range ts {
		out = append(out, withHandoff(viewTurn(t)))
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

// publish publishes the events a request has just committed to the outbox,
// before it is answered: the events reach the stream without waiting for a
// relay pass, and a client that waits for the answer before its next
// request has its turns in the stream in the order it sent them.
//
// With inOrder, the first event must not overtake an earlier one of its
// subject (a session's turns: the extractor numbers them in stream order)
// still unpublished, because its own publish failed or is under way. Then,
// or when that cannot be told, a catch-up publishes every unsent event in
// outbox order instead. The look-up reads the committed outbox, outside the
// request's transaction: inside, a serializable PostgreSQL transaction
// reading the unsent rows conflicts with every concurrent post.
//
// A publish that fails leaves the events in the outbox for the relay's
// passes; the request is answered all the same, as its events are saved,
// and the session's next turn goes through a catch-up.
func (g *Gateway) publish(ctx context.Context, msgs []store.OutboxMessage, inOrder bool) {
	if g.cfg.Relay == nil || len(msgs) == 0 || !g.connected(msgs[0].EventID) {
		return
	}
	// A client that hangs up does not cut a publish short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	m := msgs[0]
	if inOrder && g.behind(ctx, m.Subject, m.EventID) {
		g.catchUp(ctx, m.Subject, m.EventID)
		return
	}
	if err := g.cfg.Relay.PublishCommitted(ctx, msgs); err != nil {
		g.cfg.Logger.Warn("gateway: publishing a committed event failed; the outbox relay publishes it",
			"subject", m.Subject, "event", m.EventID, "events", len(msgs), "error", err)
		g.cfg.Relay.Kick()
	}
}

// publishUnsent publishes ev if it is in the outbox unsent: the event of a
// request retried with its Idempotency-Key, which the first attempt
// committed but may not have published.
func (g *Gateway) publishUnsent(ctx context.Context, ev event.Event) {
	if g.cfg.Relay == nil || !g.connected(ev.ID()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	m, err := g.cfg.Bus.Encode(ctx, ev)
	if err != nil {
		g.cfg.Logger.Warn("gateway: cannot encode a retried request's event to look it up in the outbox; the outbox relay publishes it",
			"event", ev.ID(), "error", err)
		g.cfg.Relay.Kick()
		return
	}
	if g.behind(ctx, m.Subject, "") {
		g.catchUp(ctx, m.Subject, ev.ID())
	}
}

// connected reports whether the bus is connected to NATS. While it is not
// (an outage, a reconnection), a publish would only wait for its timeout:
// the request is answered at once, and the relay publishes the event once
// NATS is back, in order with the session's later ones (which catch up
// behind it).
func (g *Gateway) connected(eventID string) bool {
	if g.cfg.Bus.Conn().IsConnected() {
		return true
	}
	g.cfg.Logger.Warn("gateway: NATS is not connected; the outbox relay publishes the event once it is",
		"event", eventID, "nats_status", g.cfg.Bus.Conn().Status().String())
	g.cfg.Relay.Kick()
	return false
}

// behind reports whether an event on subject other than eventID is in the
// outbox unpublished: unsent, and not among those this process has
// published and not yet marked (Relay.Published). True when it cannot
// tell, as a catch-up is then the safe way.
func (g *Gateway) behind(ctx context.Context, subject, eventID string) bool {
	ids, err := store.UnsentOn(ctx, g.cfg.DB, subject, eventID, behindLimit)
	if err != nil {
		g.cfg.Logger.Warn("gateway: cannot tell whether an earlier event of the subject is unpublished; publishing the outbox in order",
			"subject", subject, "event", eventID, "error", err)
		return true
	}
	if len(ids) == behindLimit {
		return true // more may follow, unpublished
	}
	for _, id := range ids {
		if !g.cfg.Relay.Published(id) {
			return true
		}
	}
	return false
}

// behindLimit bounds the unsent events of a subject behind looks at: a
// session's events awaiting their sent mark are a few at most.
const behindLimit = 16

// catchUp publishes every unsent event of the outbox, in order (eventID's
// among them).
func (g *Gateway) catchUp(ctx context.Context, subject, eventID string) {
	if err := g.cfg.Relay.CatchUp(ctx); err != nil {
		g.cfg.Logger.Warn("gateway: publishing the outbox in order, behind an unpublished event of the subject, failed or timed out "+
			"(it may have waited for another catch-up); the outbox relay publishes it",
			"subject", subject, "event", eventID, "error", err)
		g.cfg.Relay.Kick()
	}
}

// publishTimeout bounds the wait for a publish before a request is
// answered: an acknowledgement takes milliseconds.
const publishTimeout = 2 * time.Second

// retryAfterUnavailable is the Retry-After of a 503 for a database that is
// down: a failover takes seconds to minutes, and clients that retry sooner
// only add to the load of the one coming back.
const retryAfterUnavailable = "5"

func (g *Gateway) internal(w http.ResponseWriter, what string, err error) {
	if g.cfg.Unavailable != nil && g.cfg.Unavailable(err) {
		g.cfg.Logger.Warn("gateway request failed: the database is unavailable", "op", what, "error", err)
		w.Header().Set("Retry-After", retryAfterUnavailable)
		writeError(w, http.StatusServiceUnavailable, "unavailable",
			what+" failed: the database is unavailable; try again in a few seconds")
		return
	}
	g.cfg.Logger.Error("gateway request failed", "op", what, "error", err)
	writeError(w, http.StatusInternalServerError, "internal", what+" failed; see the server log")
}
