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

// Extraction log types (eng_extractions_log.extraction_type).
const (
	ExtractionNew       = "new"
	ExtractionUpdate    = "update"
	ExtractionSupersede = "supersede"
)

// ExtractionLogEntry is one row of the extraction audit log.
type ExtractionLogEntry struct {
	ID         string          `json:"id"`
	TenantID   string          `json:"-"`
	SessionID  string          `json:"session_id"`
	ProjectID  string          `json:"project_id"`
	MessageID  string          `json:"message_id"`
	EngineID   string          `json:"engine_id"`
	FieldPath  string          `json:"field_path"`
	Value      json.RawMessage `json:"extracted_value"`
	Confidence float64         `json:"confidence"`
	Type       string          `json:"extraction_type"`
	Reasoning  string          `json:"reasoning,omitempty"`
	// SupersededBy is the id of the later entry that replaced this value.
	SupersededBy string    `json:"superseded_by,omitempty"`
	TurnNumber   int       `json:"turn_number"`
	CreatedAt    time.Time `json:"created_at"`
}

// LogExtractions appends entries to the log; an entry whose id is already
// there (a re-run of the same turn derives the same ids) is skipped. A turn's
// entries go in one statement.
func LogExtractions(ctx context.Context, q store.Querier, entries ...ExtractionLogEntry) error {
	const cols = 13
	for len(entries) > 0 {
		batch := entries[:min(len(entries), logBatch)]
		entries = entries[len(batch):]
		var b strings.Builder
		b.WriteString(`INSERT INTO eng_extractions_log (id, tenant_id, session_id, project_id, message_id, engine_id,
			field_path, extracted_value, confidence, extraction_type, reasoning, turn_number, created_at) VALUES `)
		args := make([]any, 0, cols*len(batch))
		for i, e := range batch {
			var value *string
			if len(e.Value) > 0 {
				s := string(e.Value)
				value = &s
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + store.Placeholders(cols*i+1, cols) + ")")
			args = append(args, e.ID, e.TenantID, e.SessionID, e.ProjectID, e.MessageID, e.EngineID, e.FieldPath, value,
				e.Confidence, e.Type, nullString(e.Reasoning), e.TurnNumber, e.CreatedAt.UTC())
		}
		b.WriteString(` ON CONFLICT (id) DO NOTHING`)
		if _, err := q.Exec(ctx, b.String(), args...); err != nil {
			paths := make([]string, len(batch))
			for i, e := range batch {
				paths[i] = e.FieldPath
			}
			return fmt.Errorf("log extractions of %s: %w", strings.Join(paths, ", "), err)
		}
	}
	return nil
}

// logBatch bounds the rows of one insert: 13 parameters a row stays far
// below SQLite's and PostgreSQL's limits.
const logBatch = 500

// MarkSuperseded links an earlier entry to the entry that replaced it.
func MarkSuperseded(ctx context.Context, q store.Querier, tenantID, entryID, byEntryID string) error {
	_, err := q.Exec(ctx, `UPDATE eng_extractions_log SET superseded_by = $3 WHERE tenant_id = $1 AND id = $2`,
		tenantID, entryID, byEntryID)
	if err != nil {
		return fmt.Errorf("mark extraction %s superseded: %w", entryID, err)
	}
	return nil
}

// ListExtractions returns a session's extraction log in turn order.
func ListExtractions(ctx context.Context, q store.Querier, tenantID, sessionID string) ([]ExtractionLogEntry, error) {
	rows, err := q.Query(ctx, `SELECT id, tenant_id, session_id, project_id, message_id, engine_id, field_path,
		extracted_value, confidence, extraction_type, reasoning, superseded_by, turn_number, created_at
		FROM eng_extractions_log WHERE tenant_id = $1 AND session_id = $2 ORDER BY turn_number, field_path, id`,
		tenantID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list extractions: %w", err)
	}
	defer rows.Close()
	out := []ExtractionLogEntry{}
	for rows.Next() {
		var (
			e                            ExtractionLogEntry
			value, reasoning, superseded *string
		)
		if err := rows.Scan(&e.ID, &e.TenantID, &e.SessionID, &e.ProjectID, &e.MessageID, &e.EngineID, &e.FieldPath,
			&value, &e.Confidence, &e.Type, &reasoning, &superseded, &e.TurnNumber, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("list extractions: %w", err)
		}
		if value != nil {
			e.Value = json.RawMessage(*value)
		}
		if reasoning != nil {
			e.Reasoning = *reasoning
		}
		if superseded != nil {
			e.SupersededBy = *superseded
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ExtractionState is the extractor's state of one session.
type ExtractionState struct {
	// TurnNumber is the last turn extracted (0 before the first).
	TurnNumber int
	// Extraction is the extraction after that turn, as JSON.
	Extraction json.RawMessage
}

// GetExtractionState returns a session's extraction state; the zero state
// when the session has had no turn yet.
func GetExtractionState(ctx context.Context, q store.Querier, tenantID, sessionID string) (ExtractionState, error) {
	var (
		st  ExtractionState
		ext store.Large
	)
	err := q.QueryRow(ctx, `SELECT turn_number, extraction_json FROM eng_extraction_state WHERE tenant_id = $1 AND session_id = $2`,
		tenantID, sessionID).Scan(&st.TurnNumber, &ext)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ExtractionState{}, nil
	case err != nil:
		return ExtractionState{}, fmt.Errorf("extraction state of %s: %w", sessionID, err)
	}
	st.Extraction = json.RawMessage(ext)
	return st, nil
}

var extractionInputQuery = `SELECT ` + workColumns("s") + `, e.turn_number, e.extraction_json, ` + handledExpr + `
	FROM elicitation_sessions s LEFT JOIN eng_extraction_state e ON e.session_id = s.id AND e.tenant_id = s.tenant_id
	WHERE s.tenant_id = $1 AND s.id = $2`

// GetSessionExtraction reads, in one round trip, what the extractor needs
// to extract a turn of a session: the session (without its sidebar, as
// GetSessionForEvent reads it), its extraction state (zero before the first
// turn) and whether consumer has handled eventID already (its inbox row; see
// delivery.InboxConfig.CheckInWork).
func GetSessionExtraction(ctx context.Context, q store.Querier, tenantID, sessionID, consumer, eventID string) (Session, ExtractionState, bool, error) {
	var (
		number  *int
		ext     store.Large
		handled bool
	)
	s, err := scanSession(q.QueryRow(ctx, extractionInputQuery, tenantID, sessionID, consumer, eventID), &number, &ext, &handled)
	if errors.Is(err, store.ErrNotFound) {
		// No session; the event may still be one handled before.
		if handled, herr := store.Handled(ctx, q, consumer, eventID); herr != nil || handled {
			return Session{}, ExtractionState{}, handled, herr
		}
	}
	if err != nil {
		return Session{}, ExtractionState{}, false, fmt.Errorf("session %s: %w", sessionID, err)
	}
	var st ExtractionState
	if number != nil {
		st.TurnNumber = *number
	}
	st.Extraction = json.RawMessage(ext)
	return s, st, handled, nil
}

// ErrStaleExtraction is SaveExtractionState's error when the stored state
// is at the turn being saved or past it: another delivery numbered that
// turn meanwhile (a stale one still runs after its event was given up).
var ErrStaleExtraction = errors.New("the extraction state has moved past this turn")

// SaveExtractionState writes a session's extraction state after turn
// st.TurnNumber, which must be later than the stored one's
// (ErrStaleExtraction).
func SaveExtractionState(ctx context.Context, q store.Querier, tenantID, sessionID string, st ExtractionState, at time.Time) error {
	n, err := q.Exec(ctx, `INSERT INTO eng_extraction_state (session_id, tenant_id, turn_number, extraction_json, updated_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id) DO UPDATE SET turn_number = excluded.turn_number,
		extraction_json = excluded.extraction_json, updated_at = excluded.updated_at
		WHERE eng_extraction_state.turn_number < excluded.turn_number`,
		sessionID, tenantID, st.TurnNumber, store.Large(st.Extraction), at.UTC())
	if err != nil {
		return fmt.Errorf("save extraction state of %s: %w", sessionID, err)
	}
	if n == 0 {
		return fmt.Errorf("save extraction state of %s at turn %d: %w", sessionID, st.TurnNumber, ErrStaleExtraction)
	}
	return nil
}

// Checkpoint is a snapshot of a session's working memory.
type Checkpoint struct {
	ID            string          `json:"id"`
	TenantID      string          `json:"-"`
	SessionID     string          `json:"session_id"`
	AtTurn        int             `json:"at_turn"`
	Reason        string          `json:"reason"`
	Snapshot      json.RawMessage `json:"state_snapshot"`
	ContextTokens int             `json:"context_tokens_at_checkpoint"`
	CreatedAt     time.Time       `json:"created_at"`
}

// SaveCheckpoint stores a checkpoint; the same id twice is stored once.
func SaveCheckpoint(ctx context.Context, q store.Querier, c Checkpoint) error {
	_, err := q.Exec(ctx, `INSERT INTO eng_state_checkpoints (id, tenant_id, session_id, at_turn, reason, state_snapshot,
		context_tokens_at_checkpoint, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
		c.ID, c.TenantID, c.SessionID, c.AtTurn, c.Reason, store.Large(c.Snapshot), c.ContextTokens, c.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("save checkpoint of %s at turn %d: %w", c.SessionID, c.AtTurn, err)
	}
	return nil
}

// ListCheckpoints returns a session's checkpoints in turn order.
func ListCheckpoints(ctx context.Context, q store.Querier, tenantID, sessionID string) ([]Checkpoint, error) {
	rows, err := q.Query(ctx, `SELECT id, tenant_id, session_id, at_turn, reason, state_snapshot, context_tokens_at_checkpoint,
		created_at FROM eng_state_checkpoints WHERE tenant_id = $1 AND session_id = $2 ORDER BY at_turn, id`, tenantID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	defer rows.Close()
	var out []Checkpoint
	for rows.Next() {
		var (
			c      Checkpoint
			snap   store.Large
			tokens *int
		)
		if err := rows.Scan(&c.ID, &c.TenantID, &c.SessionID, &c.AtTurn, &c.Reason, &snap, &tokens, &c.CreatedAt); err != nil {
			return nil, fmt.Errorf("list checkpoints: %w", err)
		}
		c.Snapshot = json.RawMessage(snap)
		if tokens != nil {
			c.ContextTokens = *tokens
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
