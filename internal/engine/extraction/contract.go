package extraction

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// State is a session's extraction state as the extractor stores it after
// each turn and publishes it in turn.extracted: the extraction, with the
// prompt version the session runs with beside its fields. A state stored
// before versions were recorded has none, and its session goes on with
// PromptV1; a session with no state yet starts with the newest version its
// extractor runs (CurrentPromptVersion unless configured otherwise).
type State struct {
	engine.Extraction
	PromptVersion PromptVersion `json:"prompt_version,omitempty"`
}

// ErrNewerPromptVersion is DecodeState's error for a state whose prompt
// version is newer than the caller runs: a newer extractor started the
// session, and one that knows its version must extract its turns (during a
// rolling upgrade, another replica).
var ErrNewerPromptVersion = errors.New("the session's extraction prompt version is newer than this extractor knows")

// DecodeState reads a stored state (empty before a session's first turn)
// for an extractor whose newest prompt version is newest: a session without
// a state starts with it, and one recorded with a later version is refused
// with ErrNewerPromptVersion.
func DecodeState(raw []byte, newest PromptVersion) (State, error) {
	st := State{Extraction: engine.NewExtraction(), PromptVersion: newest}
	if len(raw) == 0 {
		return st, nil
	}
	st.PromptVersion = 0
	if err := fastjson.Unmarshal(raw, &st); err != nil {
		return State{}, err
	}
	if st.Fields == nil {
		st.Fields = map[string]engine.ExtractedField{}
	}
	st.PromptVersion = cmp.Or(st.PromptVersion, PromptV1)
	switch {
	case st.PromptVersion > newest:
		return State{}, fmt.Errorf("%w: %d (this one runs up to %d)", ErrNewerPromptVersion, st.PromptVersion, newest)
	case !st.PromptVersion.known():
		return State{}, fmt.Errorf("unknown extraction prompt version %d", st.PromptVersion)
	}
	return st, nil
}

// Contract is the turn.extracted payload of this result, as the extractor
// publishes it for the runner.
func (r Result) Contract(tenantID, sessionID, turnID string, turnNumber int, message string) (contracts.TurnExtracted, error) {
	ext, err := json.Marshal(State{Extraction: r.Extraction, PromptVersion: r.PromptVersion.orCurrent()})
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
