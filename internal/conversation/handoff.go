package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/praetorhq/praetor/internal/store"
)

// Handoff is a row of eng_handoffs: one engine handing a conversation to
// another, with the I-PASS verification of the receiver's first reply.
type Handoff struct {
	ID              string          `json:"handoff_id"`
	TenantID        string          `json:"-"`
	ProjectID       string          `json:"project_id"`
	SourceEngineID  string          `json:"source_engine_id"`
	SourceSessionID string          `json:"source_session_id"`
	TargetEngineID  string          `json:"target_engine_id"`
	TargetSessionID string          `json:"target_session_id"`
	Payload         json.RawMessage `json:"payload"`
	// Verified and Verification are set once the target's first reply is
	// checked; Verification stays empty until then.
	Verified         bool            `json:"verified"`
	Verification     json.RawMessage `json:"verification_result,omitempty"`
	TransitionReason string          `json:"transition_reason"`
	CreatedAt        time.Time       `json:"created_at"`
}

const handoffColumns = `id, tenant_id, project_id, source_engine_id, source_session_id, target_engine_id, target_session_id,
	handoff_payload, verified, verification_result, transition_reason, created_at`

// CreateHandoff records a handoff; recording the same id again is a no-op
// (a re-run of the turn that made it derives the same id). A session hands
// off once: a second handoff of the same source session is store.ErrConflict.
func CreateHandoff(ctx context.Context, q store.Querier, h Handoff) error {
	if h.ID == "" || h.TenantID == "" || h.SourceSessionID == "" || len(h.Payload) == 0 {
		return errors.New("create handoff: id, tenant, source session and payload are required")
	}
	n, err := q.Exec(ctx, `INSERT INTO eng_handoffs (`+handoffColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, false, NULL, $9, $10) ON CONFLICT DO NOTHING`,
		h.ID, h.TenantID, h.ProjectID, h.SourceEngineID, h.SourceSessionID, h.TargetEngineID, nullString(h.TargetSessionID),
		string(h.Payload), nullString(h.TransitionReason), h.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("create handoff %s: %w", h.ID, err)
	}
	if n == 0 {
		prev, err := GetHandoff(ctx, q, h.TenantID, h.ID)
		switch {
		case err == nil && prev.SourceSessionID == h.SourceSessionID:
			return nil // this very handoff, recorded before
		case err == nil || errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("create handoff %s: session %s has handed off already: %w", h.ID, h.SourceSessionID, store.ErrConflict)
		default:
			return err
		}
	}
	return nil
}

// GetHandoff returns one handoff of a tenant.
func GetHandoff(ctx context.Context, q store.Querier, tenantID, id string) (Handoff, error) {
	h, err := scanHandoff(q.QueryRow(ctx, `SELECT `+handoffColumns+` FROM eng_handoffs WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return Handoff{}, fmt.Errorf("handoff %s: %w", id, err)
	}
	return h, nil
}

// GetHandoffStarted is GetHandoff, and whether the handoff's target session
// exists yet (the runner starts it after the turn that handed off), in one
// query.
func GetHandoffStarted(ctx context.Context, q store.Querier, tenantID, id string) (Handoff, bool, error) {
	var started int64
	h, err := scanHandoff(q.QueryRow(ctx, `SELECT `+handoffColumns+`, (SELECT COUNT(*) FROM elicitation_sessions s
			WHERE s.tenant_id = eng_handoffs.tenant_id AND s.id = eng_handoffs.target_session_id)
		FROM eng_handoffs WHERE tenant_id = $1 AND id = $2`, tenantID, id), &started)
	if err != nil {
		return Handoff{}, false, fmt.Errorf("handoff %s: %w", id, err)
	}
	return h, started > 0, nil
}

// ListHandoffs returns a session's handoffs, inbound (it is the target) and
// outbound (it is the source), oldest first.
func ListHandoffs(ctx context.Context, q store.Querier, tenantID, sessionID string) ([]Handoff, error) {
	rows, err := q.Query(ctx, `SELECT `+handoffColumns+` FROM eng_handoffs
		WHERE tenant_id = $1 AND (source_session_id = $2 OR target_session_id = $2) ORDER BY created_at, id`, tenantID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list handoffs: %w", err)
	}
	defer rows.Close()
	out := []Handoff{}
	for rows.Next() {
		h, err := scanHandoff(rows)
		if err != nil {
			return nil, fmt.Errorf("list handoffs: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// RecordVerification stores the I-PASS verdict on a handoff's first reply.
func RecordVerification(ctx context.Context, q store.Querier, tenantID, id string, verified bool, result json.RawMessage) error {
	n, err := q.Exec(ctx, `UPDATE eng_handoffs SET verified = $3, verification_result = $4 WHERE tenant_id = $1 AND id = $2`,
		tenantID, id, verified, string(result))
	if err != nil {
		return fmt.Errorf("record verification of handoff %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("record verification of handoff %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// scanHandoff scans a row of handoffColumns, then extra.
func scanHandoff(row store.Row, extra ...any) (Handoff, error) {
	var (
		h                      Handoff
		payload                string
		target, result, reason *string
	)
	dest := append([]any{&h.ID, &h.TenantID, &h.ProjectID, &h.SourceEngineID, &h.SourceSessionID, &h.TargetEngineID, &target,
		&payload, &h.Verified, &result, &reason, &h.CreatedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Handoff{}, err
	}
	h.Payload = json.RawMessage(payload)
	if target != nil {
		h.TargetSessionID = *target
	}
	if result != nil {
		h.Verification = json.RawMessage(*result)
	}
	if reason != nil {
		h.TransitionReason = *reason
	}
	return h, nil
}
