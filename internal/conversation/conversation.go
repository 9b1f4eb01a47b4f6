// Package conversation stores conversations in the relational store: the
// sessions (elicitation_sessions, with their working memory), the turns the
// gateway receives and the runner answers, the extractor's extraction state,
// the extraction audit log, state checkpoints and engine handoffs (seed 000,
// "Database Schema"). The gateway, the extractor and the runner share it;
// every function takes a store.Querier so it runs in the caller's
// transaction, and every query is scoped by tenant.
package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/store"
)

// Session statuses.
const (
	StatusActive    = "active"
	StatusHandedOff = "handed_off"
	StatusClosed    = "closed"
)

// Session is a conversation with one engine.
type Session struct {
	ID            string
	TenantID      string
	ProjectID     string
	EngineID      string
	EngineVersion string
	Status        string
	Phase         string
	Completeness  float64
	TurnCount     int
	// State is the working memory, as JSON.
	State     json.RawMessage
	StateHash string
	// Sidebar is the last sidebar state built, as JSON.
	Sidebar           json.RawMessage
	InboundHandoffID  string
	OutboundHandoffID string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	// Version counts the writes of the row; SaveSession writes only over the
	// version it was read at.
	Version int
}

// ErrStale is returned by SaveSession when the session was written since it
// was read: redo the work on the fresh row.
var ErrStale = errors.New("the session changed since it was read")

const sessionColumns = `id, tenant_id, project_id, engine_id, engine_version, status, phase, completeness, turn_count,
	state_json, state_hash, sidebar_json, inbound_handoff_id, outbound_handoff_id, created_at, updated_at, version`

// CreateSession inserts a new session; store.ErrConflict when its id is taken.
func CreateSession(ctx context.Context, q store.Querier, s Session) error {
	if s.ID == "" || s.TenantID == "" || s.EngineID == "" || len(s.State) == 0 {
		return errors.New("create session: id, tenant, engine and state are required")
	}
	n, err := q.Exec(ctx, `INSERT INTO elicitation_sessions (`+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT (id) DO NOTHING`,
		s.ID, s.TenantID, s.ProjectID, s.EngineID, s.EngineVersion, s.Status, s.Phase, s.Completeness, s.TurnCount,
		store.Large(s.State), s.StateHash, nullJSON(s.Sidebar), nullString(s.InboundHandoffID), nullString(s.OutboundHandoffID),
		s.CreatedAt.UTC(), s.UpdatedAt.UTC(), s.Version)
	if err != nil {
		return fmt.Errorf("create session %s: %w", s.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("create session %s: %w", s.ID, store.ErrConflict)
	}
	return nil
}

// GetSession returns a tenant's session; store.ErrNotFound when the tenant
// has no such session (whoever else might).
func GetSession(ctx context.Context, q store.Querier, tenantID, id string) (Session, error) {
	row := q.QueryRow(ctx, `SELECT `+sessionColumns+` FROM elicitation_sessions WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	s, err := scanSession(row)
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	return s, nil
}

// GetSessionHead is GetSession without the session's state and sidebar
// (State and Sidebar are nil): what a caller that needs only its identity,
// status and handoffs reads, without the kilobytes of working memory.
func GetSessionHead(ctx context.Context, q store.Querier, tenantID, id string) (Session, error) {
	var (
		s       Session
		in, out *string
	)
	err := q.QueryRow(ctx, `SELECT id, tenant_id, project_id, engine_id, engine_version, status, phase, completeness,
		turn_count, state_hash, inbound_handoff_id, outbound_handoff_id, created_at, updated_at, version
		FROM elicitation_sessions WHERE tenant_id = $1 AND id = $2`, tenantID, id).
		Scan(&s.ID, &s.TenantID, &s.ProjectID, &s.EngineID, &s.EngineVersion, &s.Status, &s.Phase, &s.Completeness,
			&s.TurnCount, &s.StateHash, &in, &out, &s.CreatedAt, &s.UpdatedAt, &s.Version)
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	s.InboundHandoffID, s.OutboundHandoffID = deref(in), deref(out)
	return s, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// handledExpr is true when the consumer $3 has handled the event $4: the
// inbox look-up of internal/delivery (store.Handled), folded into a read a
// handler makes anyway (delivery.InboxConfig.CheckInWork).
const handledExpr = `EXISTS (SELECT 1 FROM inbox WHERE consumer = $3 AND event_id = $4)`

// GetSessionForEvent is GetSession for a handler of an event, without the
// sidebar (Sidebar is nil: a handler only replaces it, and SaveSession keeps
// the stored one when it has none); it also says whether consumer has
// handled eventID already (its inbox row), in the same round trip.
func GetSessionForEvent(ctx context.Context, q store.Querier, tenantID, id, consumer, eventID string) (Session, bool, error) {
	var handled bool
	row := q.QueryRow(ctx, sessionForEventQuery, tenantID, id, consumer, eventID)
	s, err := scanSession(row, &handled)
	if errors.Is(err, store.ErrNotFound) {
		// No session; the event may still be one handled before.
		if handled, herr := store.Handled(ctx, q, consumer, eventID); herr != nil || handled {
			return Session{}, handled, herr
		}
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("session %s: %w", id, err)
	}
	return s, handled, nil
}

var sessionForEventQuery = `SELECT ` + workColumns("") + `, ` + handledExpr + ` FROM elicitation_sessions
	WHERE tenant_id = $1 AND id = $2`

// ListSessions returns a tenant's sessions, newest first.
func ListSessions(ctx context.Context, q store.Querier, tenantID string, limit int) ([]Session, error) {
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM elicitation_sessions WHERE tenant_id = $1
		ORDER BY created_at DESC, id LIMIT $2`, tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// SaveSession writes a session's state after a turn or a merge: status,
// phase, completeness, turn count, working memory, hash, sidebar (unless
// s.Sidebar is nil: the stored one stays), engine version (unless empty:
// the version its last turn ran, which moves on to the newest) and handoff
// ids. It writes only
// over s.Version, the version the session was read at, and bumps it; when
// the row has moved on it writes nothing and returns ErrStale, so a
// read-modify-write never loses another's update.
func SaveSession(ctx context.Context, q store.Querier, s Session) error {
	n, err := q.Exec(ctx, `UPDATE elicitation_sessions SET status = $3, phase = $4, completeness = $5, turn_count = $6,
		state_json = $7, state_hash = $8, sidebar_json = coalesce($9, sidebar_json), inbound_handoff_id = $10,
		outbound_handoff_id = $11, updated_at = $12, engine_version = coalesce($14, engine_version),
		version = version + 1
		WHERE tenant_id = $1 AND id = $2 AND version = $13`,
		s.TenantID, s.ID, s.Status, s.Phase, s.Completeness, s.TurnCount, store.Large(s.State), s.StateHash,
		nullJSON(s.Sidebar), nullString(s.InboundHandoffID), nullString(s.OutboundHandoffID), s.UpdatedAt.UTC(), s.Version,
		nullString(s.EngineVersion))
	if err != nil {
		return fmt.Errorf("save session %s: %w", s.ID, err)
	}
	if n > 0 {
		return nil
	}
	var version int
	switch err := q.QueryRow(ctx, `SELECT version FROM elicitation_sessions WHERE tenant_id = $1 AND id = $2`,
		s.TenantID, s.ID).Scan(&version); {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("save session %s: %w", s.ID, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("save session %s: %w", s.ID, err)
	}
	return fmt.Errorf("save session %s read at version %d, now %d: %w", s.ID, s.Version, version, ErrStale)
}

// workColumns are sessionColumns, of the table aliased alias ("" for
// none), as a handler of a turn or a task reads them: the sidebar, kilobytes
// that it only replaces, reads as NULL.
func workColumns(alias string) string {
	cols := strings.Split(sessionColumns, ",")
	for i, c := range cols {
		c = strings.TrimSpace(c)
		switch {
		case c == "sidebar_json":
			c = "NULL"
		case alias != "":
			c = alias + "." + c
		}
		cols[i] = c
	}
	return strings.Join(cols, ", ")
}

// scanSession scans sessionColumns (or workColumns), then the extra columns
// that follow them into extra.
func scanSession(row store.Row, extra ...any) (Session, error) {
	var (
		s              Session
		state, sidebar store.Large
		in, out        *string
	)
	err := row.Scan(append([]any{&s.ID, &s.TenantID, &s.ProjectID, &s.EngineID, &s.EngineVersion, &s.Status, &s.Phase,
		&s.Completeness, &s.TurnCount, &state, &s.StateHash, &sidebar, &in, &out, &s.CreatedAt, &s.UpdatedAt, &s.Version},
		extra...)...)
	if err != nil {
		return Session{}, err
	}
	s.State, s.Sidebar = json.RawMessage(state), json.RawMessage(sidebar)
	s.InboundHandoffID, s.OutboundHandoffID = deref(in), deref(out)
	return s, nil
}

// Turn is one user message and, once answered, the reply.
type Turn struct {
	ID         string
	TenantID   string
	SessionID  string
	Message    string
	TurnNumber int // 0 until the extractor numbers it
	// Reply and what came with it; empty until answered.
	Reply        string
	Phase        string
	Completeness float64
	Sidebar      json.RawMessage
	Degraded     bool
	ReceivedAt   time.Time
	RespondedAt  *time.Time
}

// Answered reports whether the runner has replied.
func (t Turn) Answered() bool { return t.RespondedAt != nil }

// turnFrom reads turns with their replies (turn_replies, a row once
// answered): the reply is an insert of its own, not an update that would
// grow the turn's row (see migration 00011).
const turnFrom = `SELECT t.id, t.tenant_id, t.session_id, t.message, r.turn_number, r.reply, r.phase, r.completeness,
	r.sidebar_json, coalesce(r.degraded, false), t.received_at, r.responded_at
	FROM turns t LEFT JOIN turn_replies r ON r.turn_id = t.id`

// CreateTurn records a received user message; recording the same turn id
// twice is a store.ErrConflict.
func CreateTurn(ctx context.Context, q store.Querier, t Turn) error {
	n, err := q.Exec(ctx, `INSERT INTO turns (id, tenant_id, session_id, message, received_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`, t.ID, t.TenantID, t.SessionID, t.Message, t.ReceivedAt.UTC())
	if err != nil {
		return fmt.Errorf("create turn %s: %w", t.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("create turn %s: %w", t.ID, store.ErrConflict)
	}
	return nil
}

// AnswerTurn records the reply to a turn.
func AnswerTurn(ctx context.Context, q store.Querier, t Turn) error {
	at := time.Now().UTC()
	if t.RespondedAt != nil {
		at = t.RespondedAt.UTC()
	}
	n, err := q.Exec(ctx, `INSERT INTO turn_replies (turn_id, turn_number, reply, phase, completeness, sidebar_json,
		degraded, responded_at)
		SELECT id, $3, $4, $5, $6, $7, $8, $9 FROM turns WHERE tenant_id = $1 AND id = $2
		ON CONFLICT (turn_id) DO UPDATE SET turn_number = excluded.turn_number, reply = excluded.reply,
			phase = excluded.phase, completeness = excluded.completeness, sidebar_json = excluded.sidebar_json,
			degraded = excluded.degraded, responded_at = excluded.responded_at`,
		t.TenantID, t.ID, t.TurnNumber, t.Reply, t.Phase, t.Completeness, nullJSON(t.Sidebar), t.Degraded, at)
	if err != nil {
		return fmt.Errorf("answer turn %s: %w", t.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("answer turn %s: %w", t.ID, store.ErrNotFound)
	}
	return nil
}

// GetTurn returns one turn of a tenant.
func GetTurn(ctx context.Context, q store.Querier, tenantID, id string) (Turn, error) {
	t, err := scanTurn(q.QueryRow(ctx, turnFrom+` WHERE t.tenant_id = $1 AND t.id = $2`, tenantID, id))
	if err != nil {
		return Turn{}, fmt.Errorf("turn %s: %w", id, err)
	}
	return t, nil
}

// ListTurns returns a session's turns in the order they arrived.
func ListTurns(ctx context.Context, q store.Querier, tenantID, sessionID string) ([]Turn, error) {
	rows, err := q.Query(ctx, turnFrom+` WHERE t.tenant_id = $1 AND t.session_id = $2
		ORDER BY t.received_at, t.id`, tenantID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list turns: %w", err)
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, fmt.Errorf("list turns: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func scanTurn(row store.Row) (Turn, error) {
	var (
		t            Turn
		number       *int
		reply, phase *string
		completeness *float64
		sidebar      store.Large
	)
	err := row.Scan(&t.ID, &t.TenantID, &t.SessionID, &t.Message, &number, &reply, &phase, &completeness, &sidebar,
		&t.Degraded, &t.ReceivedAt, &t.RespondedAt)
	if err != nil {
		return Turn{}, err
	}
	if number != nil {
		t.TurnNumber = *number
	}
	if reply != nil {
		t.Reply = *reply
	}
	if phase != nil {
		t.Phase = *phase
	}
	if completeness != nil {
		t.Completeness = *completeness
	}
	t.Sidebar = json.RawMessage(sidebar)
	return t, nil
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullJSON is a JSON column's argument: NULL when empty.
func nullJSON(b json.RawMessage) store.Large {
	if len(b) == 0 {
		return nil
	}
	return store.Large(b)
}
