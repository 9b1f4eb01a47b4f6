package extraction

import (
	"encoding/json"

	"github.com/praetorhq/praetor/pkg/contracts"
)

// Contract is the turn.extracted payload of this result, as the extractor
// publishes it for the runner.
func (r Result) Contract(tenantID, sessionID, turnID string, turnNumber int, message string) (contracts.TurnExtracted, error) {
	ext, err := json.Marshal(r.Extraction)
	if err != nil {
		return contracts.TurnExtracted{}, err
	}
	te := contracts.TurnExtracted{
		TenantID: tenantID, SessionID: sessionID, TurnID: turnID, TurnNumber: turnNumber, Message: message,
		Extraction: ext, FieldsUpdated: r.FieldsUpdated, NewConceptCount: r.NewConceptCount,
		SensitiveInfoShared: r.SensitiveInfoShared, Degraded: r.Degraded, DegradedReason: r.DegradedReason,
	}
	for _, s := range r.Superseded {
		te.Superseded = append(te.Superseded, contracts.Supersession{FieldPath: s.FieldPath,
			OldValue: s.OldValue, NewValue: s.NewValue, Reason: s.Reason})
	}
	return te, nil
}
