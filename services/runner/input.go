package runner

import (
	"bytes"
	"fmt"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// Input is one user turn after extraction. Steps 2 (extraction) and 3's
// input (the new concept count) come from the extractor service, which runs
// the extraction pipeline and publishes turn.extracted; the runner applies
// the result and runs the rest.
type Input struct {
	// TenantID scopes LLM calls for recording.
	TenantID  string
	SessionID string
	ProjectID string
	// TurnID identifies the user message; it is the message id of the
	// extraction log.
	TurnID string
	// TurnNumber must be the memory's turn number plus one.
	TurnNumber int
	Message    string

	// Extraction is the whole extraction state after this turn.
	Extraction          engine.Extraction
	FieldsUpdated       []string
	Superseded          []extraction.Supersession
	NewConceptCount     int
	SensitiveInfoShared bool
	// Now is the turn's time; when zero the runner's clock is read. The
	// service passes the turn.extracted event's time, so a replay of the
	// events gives the same time.
	Now time.Time
	// ReceivedAt is when the gateway received the turn: the reply's model
	// call gets what is left of Config.TurnBudget after it. Zero: unknown,
	// the call is bounded by its provider alone.
	ReceivedAt time.Time

	// ExtractionDegraded is true when the extractor could not use the
	// model's answer; the turn is answered all the same.
	ExtractionDegraded       bool
	ExtractionDegradedReason string

	// AcceptGap lets the turn follow a state turns behind it: the turns
	// between never reached the runner (the service's consumer
	// dead-lettered them, and a session's turns come in order, so they will
	// not), and the session goes on without them rather than stop. Without
	// it (a replay, which has every turn) a gap is ErrTurnGap.
	AcceptGap bool
}

// FromExtraction builds the input of a turn from the extraction pipeline's
// result, as the extractor computed it.
func FromExtraction(turnID string, turnNumber int, message string, r extraction.Result) Input {
	return Input{
		TurnID: turnID, TurnNumber: turnNumber, Message: message,
		Extraction: r.Extraction, FieldsUpdated: r.FieldsUpdated, Superseded: r.Superseded,
		NewConceptCount: r.NewConceptCount, SensitiveInfoShared: r.SensitiveInfoShared,
		ExtractionDegraded: r.Degraded, ExtractionDegradedReason: r.DegradedReason,
	}
}

// FromContract decodes a turn.extracted event. Its extraction is the JSON of
// an engine.Extraction (as extraction.Result.Extraction encodes); project
// id is not part of the event and comes from the session.
func FromContract(te contracts.TurnExtracted, projectID string) (Input, error) {
	in := Input{
		TenantID: te.TenantID, SessionID: te.SessionID, ProjectID: projectID, TurnID: te.TurnID,
		TurnNumber: te.TurnNumber, Message: te.Message, FieldsUpdated: te.FieldsUpdated,
		NewConceptCount: te.NewConceptCount, SensitiveInfoShared: te.SensitiveInfoShared,
		ExtractionDegraded: te.Degraded, ExtractionDegradedReason: te.DegradedReason,
		Extraction: engine.NewExtraction(), ReceivedAt: te.ReceivedAt,
	}
	if len(bytes.TrimSpace(te.Extraction)) > 0 {
		if err := fastjson.Unmarshal(te.Extraction, &in.Extraction); err != nil {
			return Input{}, fmt.Errorf("turn.extracted %s: extraction: %w", te.TurnID, err)
		}
		if in.Extraction.Fields == nil {
			in.Extraction.Fields = map[string]engine.ExtractedField{}
		}
	}
	for _, s := range te.Superseded {
		in.Superseded = append(in.Superseded, extraction.Supersession{FieldPath: s.FieldPath,
			OldValue: s.OldValue, NewValue: s.NewValue, Reason: s.Reason})
	}
	return in, nil
}
