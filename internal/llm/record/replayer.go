package record

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// ErrNotRecorded: a replay asked for a call that has no record (left).
var ErrNotRecorded = errors.New("record: call not recorded")

// NotRecordedError says which call a replay could not serve.
type NotRecordedError struct {
	TenantID, Scope, RequestHash string
	// Purpose and CallID name the call as the replay made it (CallID from
	// the request or llm.WithWork; "" when neither says).
	Purpose, CallID string
	// Served counts the records of this request already served; more than
	// zero means the replay asked more often than the run did.
	Served int
	// LiveHash is the request the live run recorded under CallID, when it
	// asked another: the replay's prompt is not the live run's (the engine
	// or the state before the call differs).
	LiveHash string
}

func (e *NotRecordedError) Error() string {
	call := "request " + e.RequestHash
	if e.Purpose != "" {
		call = e.Purpose + " " + call
	}
	if e.CallID != "" {
		call += " (call " + e.CallID + ")"
	}
	switch {
	case e.Served > 0:
		return fmt.Sprintf("%s: %s in %s/%s asked again after its %d recorded answers were served",
			ErrNotRecorded, call, e.TenantID, e.Scope, e.Served)
	case e.LiveHash != "":
		return fmt.Sprintf("%s: %s in %s/%s differs from the live run's, which asked request %s: the prompt is not the one the live run sent",
			ErrNotRecorded, call, e.TenantID, e.Scope, e.LiveHash)
	}
	return fmt.Sprintf("%s: %s in %s/%s has no record (expired from the stream, or never published)",
		ErrNotRecorded, call, e.TenantID, e.Scope)
}

// Unwrap makes errors.Is(err, ErrNotRecorded) true.
func (e *NotRecordedError) Unwrap() error { return ErrNotRecorded }

// ReplayedError is a recorded failure served again.
type ReplayedError struct {
	// Outcome is the recorded llm.Outcome of the failure.
	Outcome string
	// Message is the recorded error message.
	Message string
}

func (e *ReplayedError) Error() string { return "replayed " + e.Outcome + ": " + e.Message }

// Unwrap gives the failure its category back (llm.ErrRateLimited ...).
func (e *ReplayedError) Unwrap() error { return llm.OutcomeErr(e.Outcome) }

// Replayer is an llm.Client that answers from records and never calls a
// model. It is safe for concurrent use.
type Replayer struct {
	mu     sync.Mutex
	queues map[string][]contracts.LLMCallRecorded
	served map[string]int
	// byCall is the last request hash recorded under each (tenant, scope,
	// CallID): what the live run asked, for a replay that asks otherwise.
	byCall map[string]string
	// missed is the first call not served since Missed was last asked.
	missed *NotRecordedError
}

var _ llm.Client = (*Replayer)(nil)

// NewReplayer serves records, which must be in recorded (stream) order. It
// keeps what it serves by: the answers, not the requests (the prompts, tens
// of kilobytes a call, found by their hash).
func NewReplayer(records []contracts.LLMCallRecorded) *Replayer {
	r := &Replayer{queues: map[string][]contracts.LLMCallRecorded{}, served: map[string]int{}, byCall: map[string]string{}}
	for _, rec := range records {
		rec.Request = nil
		k := replayKey(rec.TenantID, rec.Scope, rec.RequestHash)
		r.queues[k] = append(r.queues[k], rec)
		if rec.CallID != "" {
			r.byCall[replayKey(rec.TenantID, rec.Scope, rec.CallID)] = rec.RequestHash
		}
	}
	return r
}

// NewReplayerFromEvents serves the llm.call.recorded events among evs (in
// stream order), skipping other types. Of the copies of an event id, the
// last is served, in the place of the first: within the stream's duplicate
// window a call redone is answered with its first record and leaves no
// copy, but redone past it (a redrive, a crash late in a slow turn) the
// model answers anew and that answer, stored as a second copy, is the one
// the work that committed used — only the last run of a turn commits. An
// llm.call.recorded event that breaks its contract is an error: a replay
// with a hole in it would not be the same run.
func NewReplayerFromEvents(evs []event.Event) (*Replayer, error) {
	at := map[string]int{}
	var records []contracts.LLMCallRecorded
	for _, ev := range evs {
		if ev.Type() != contracts.LLMCallRecordedSpec.Type {
			continue
		}
		rec, err := contracts.DecodeAs[contracts.LLMCallRecorded](ev)
		if err != nil {
			return nil, fmt.Errorf("record: event %s: %w", ev.ID(), err)
		}
		if i, ok := at[ev.ID()]; ok {
			records[i] = *rec
			continue
		}
		at[ev.ID()] = len(records)
		records = append(records, *rec)
	}
	return NewReplayer(records), nil
}

// Complete serves the next record of req's tenant, scope and hash.
func (r *Replayer) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	tenant, scope := ownerOf(ctx, req)
	hash := llm.Hash(req)
	k := replayKey(tenant, scope, hash)

	r.mu.Lock()
	q := r.queues[k]
	if len(q) == 0 {
		callID := llm.CallIDOf(ctx, req)
		e := &NotRecordedError{TenantID: tenant, Scope: scope, RequestHash: hash, Purpose: req.Purpose, CallID: callID,
			Served: r.served[k]}
		if callID != "" {
			e.LiveHash = r.byCall[replayKey(tenant, scope, callID)]
		}
		if r.missed == nil {
			r.missed = e
		}
		r.mu.Unlock()
		return nil, e
	}
	rec := q[0]
	r.queues[k] = q[1:]
	r.served[k]++
	r.mu.Unlock()
	return answerOf(rec)
}

// answerOf is what a recorded call answered: its response, or its failure
// as a *ReplayedError.
func answerOf(rec contracts.LLMCallRecorded) (*llm.Response, error) {
	if rec.Error != "" {
		outcome, msg, _ := strings.Cut(rec.Error, ": ")
		return nil, &ReplayedError{Outcome: outcome, Message: msg}
	}
	return &llm.Response{
		Content:      rec.Content,
		Usage:        llm.Usage(rec.Usage),
		Latency:      rec.Latency,
		Model:        rec.Model,
		Provider:     rec.Provider,
		FinishReason: rec.FinishReason,
	}, nil
}

// Missed returns the first call the replayer could not serve since Missed
// was last called, nil when it served them all. A caller that degrades
// on a model failure, as a turn does, would otherwise take the replay
// elsewhere than the live run without a word: a replay asks after each
// step.
func (r *Replayer) Missed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.missed
	r.missed = nil
	if e == nil {
		return nil
	}
	return e
}

// Remaining counts the records not served yet; a replay that reproduced its
// run ends with none.
func (r *Replayer) Remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.queues {
		n += len(q)
	}
	return n
}

func replayKey(tenant, scope, hash string) string {
	return tenant + "\x00" + scope + "\x00" + hash
}
