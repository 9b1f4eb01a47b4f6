package extractor

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// systemPrompts keeps the instructions each session's extraction request
// had, and answers that the message says nothing.
type systemPrompts struct {
	mu   sync.Mutex
	seen map[string]string // by scope: the session
}

func (s *systemPrompts) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[req.Scope] = req.Messages[0].Content
	return &llm.Response{Content: `{"fields":{}}`}, nil
}

func (s *systemPrompts) of(scope string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[scope]
}

// A session keeps the extraction prompt version it started with: one whose
// state was stored before versions were recorded is asked with version 1's
// prompt and goes on recorded at version 1; a new session starts at the
// current version and records it.
func TestSessionKeepsItsPromptVersion(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	ctx := context.Background()
	model := &systemPrompts{seen: map[string]string{}}
	s, err := New(Config{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Engines: rig.Engines, LLM: model, Logger: rig.Logger,
		AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })

	at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	old, fresh := rig.CreateSession(t, "project-discovery", "v-old"), rig.CreateSession(t, "project-discovery", "v-new")
	// A state as the extractor stored it before versions were recorded.
	if err := conversation.SaveExtractionState(ctx, rig.DB, runnertest.Tenant, old, conversation.ExtractionState{TurnNumber: 1,
		Extraction: json.RawMessage(`{"fields":{}}`)}, at); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sid  string
		turn int
		want extraction.PromptVersion
	}{{old, 2, extraction.PromptV1}, {fresh, 1, extraction.CurrentPromptVersion}}
	for _, tt := range tests {
		turnID := fmt.Sprintf("%s-turn-%d", tt.sid, tt.turn)
		rig.Publish(t, turnID, at.Add(time.Minute), contracts.TurnReceived{TenantID: runnertest.Tenant, SessionID: tt.sid,
			TurnID: turnID, Message: "We use Xero and Slack.", ReceivedAt: at.Add(time.Minute)})
		var st conversation.ExtractionState
		runnertest.WaitFor(t, 10*time.Second, "turn "+turnID+" extracted", func() bool {
			st, err = conversation.GetExtractionState(ctx, rig.DB, runnertest.Tenant, tt.sid)
			return err == nil && st.TurnNumber == tt.turn
		})
		var saved struct {
			PromptVersion extraction.PromptVersion `json:"prompt_version"`
		}
		if err := json.Unmarshal(st.Extraction, &saved); err != nil || saved.PromptVersion != tt.want {
			t.Errorf("session %s: state saved %s, want prompt version %d", tt.sid, st.Extraction, tt.want)
		}
		def, _ := rig.Engines.Get("project-discovery")
		want := extraction.BuildRequest(extraction.PromptInput{Def: def, Current: engine.NewExtraction(), Version: tt.want})
		if got := model.of(tt.sid); got != want.Messages[0].Content {
			t.Errorf("session %s was asked with the instructions:\n%s\nwant version %d's:\n%s", tt.sid, got, tt.want,
				want.Messages[0].Content)
		}
	}
}

// A session whose state records a prompt version newer than this build
// knows was started by a newer extractor (an upgrade rolling out): its turn
// is retried, for a replica that knows the version, not dead-lettered; a
// state that is not JSON is refused for good.
func TestNewerPromptVersionIsRetried(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	ctx := context.Background()
	s, err := New(Config{DB: rig.DB, Bus: rig.Bus, Relay: rig.Relay, Engines: rig.Engines, LLM: &systemPrompts{seen: map[string]string{}},
		Logger: rig.Logger, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		state     string
		permanent bool
	}{
		{fmt.Sprintf(`{"fields":{},"prompt_version":%d}`, extraction.CurrentPromptVersion+1), false},
		{`{"fields":{},"prompt_version":-1}`, true},
	} {
		sid := rig.CreateSession(t, "project-discovery", fmt.Sprintf("v-%t", tt.permanent))
		if err := conversation.SaveExtractionState(ctx, rig.DB, runnertest.Tenant, sid, conversation.ExtractionState{TurnNumber: 1,
			Extraction: json.RawMessage(tt.state)}, at); err != nil {
			t.Fatal(err)
		}
		ev, err := contracts.NewEvent(contracts.Meta{ID: sid + "-turn-2", Source: "test", Time: at}, contracts.TurnReceived{
			TenantID: runnertest.Tenant, SessionID: sid, TurnID: sid + "-turn-2", Message: "We use Xero.", ReceivedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.work(ctx, ev)
		if err == nil || events.IsPermanent(err) != tt.permanent {
			t.Errorf("state %s: work = %v (permanent %t), want an error, permanent %t", tt.state, err, events.IsPermanent(err), tt.permanent)
		}
	}
}

// An upgrade rolling out: a newer replica started a session (its state
// records the current prompt version), and the session's next turn comes to
// an older replica, which runs only the version before. The older one puts
// the turn back, delivery after delivery, past the consumers' default bound
// of five; once a replica that knows the version pulls, it extracts the
// turn, once, and nothing is dead-lettered.
func TestTurnOfANewerSessionWaitsForANewerReplica(t *testing.T) {
	rig := runnertest.New(t, runnertest.Options{})
	ctx := context.Background()
	at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	sid := rig.CreateSession(t, "project-discovery", "rollout")
	if err := conversation.SaveExtractionState(ctx, rig.DB, runnertest.Tenant, sid, conversation.ExtractionState{TurnNumber: 1,
		Extraction: json.RawMessage(fmt.Sprintf(`{"fields":{},"prompt_version":%d}`, extraction.CurrentPromptVersion))}, at); err != nil {
		t.Fatal(err)
	}
	start := func(v extraction.PromptVersion, model *systemPrompts) *Service {
		t.Helper()
		s, err := New(Config{DB: rig.DB, Bus: rig.NewProcess(t).Bus, Relay: rig.Relay, Engines: rig.Engines, LLM: model,
			Logger: rig.Logger, AckWait: time.Second, PromptVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
		return s
	}
	oldModel, newModel := &systemPrompts{seen: map[string]string{}}, &systemPrompts{seen: map[string]string{}}
	old := start(extraction.CurrentPromptVersion-1, oldModel)

	turnID := runnertest.TurnID(sid, 2)
	rig.Publish(t, turnID, at.Add(time.Minute), contracts.TurnReceived{TenantID: runnertest.Tenant, SessionID: sid,
		TurnID: turnID, Message: "We use Xero and Slack.", ReceivedAt: at.Add(time.Minute)})
	const defaultMaxDeliver = 5
	runnertest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d deliveries to the older replica", defaultMaxDeliver), func() bool {
		return rig.Delivered(Consumer) >= defaultMaxDeliver
	})
	// The older replica leaves (its last delivery settled), and a newer one
	// pulls.
	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if dls := rig.Events(t, events.DeadLetterStream, events.DeadLetterType); len(dls) > 0 {
		dl, _ := events.AsDeadLetter(dls[0])
		t.Fatalf("the older replica dead-lettered the turn (%d dead letters), reason: %s", len(dls), dl.Reason)
	}
	start(extraction.CurrentPromptVersion, newModel)
	runnertest.WaitFor(t, 30*time.Second, "turn 2 extracted", func() bool {
		st, err := conversation.GetExtractionState(ctx, rig.DB, runnertest.Tenant, sid)
		return err == nil && st.TurnNumber == 2
	})
	if got := oldModel.of(sid); got != "" {
		t.Error("the older replica asked the model about a session of a newer prompt version")
	}
	def, _ := rig.Engines.Get("project-discovery")
	want := extraction.BuildRequest(extraction.PromptInput{Def: def, Current: engine.NewExtraction(), Version: extraction.CurrentPromptVersion})
	if got := newModel.of(sid); got != want.Messages[0].Content {
		t.Errorf("the newer replica asked with the instructions:\n%s\nwant version %d's", got, extraction.CurrentPromptVersion)
	}
	runnertest.WaitFor(t, 10*time.Second, "turn.extracted published", func() bool {
		return len(rig.Events(t, contracts.StreamTurns, contracts.TurnExtractedSpec.Type)) > 0
	})
	if got := rig.Events(t, contracts.StreamTurns, contracts.TurnExtractedSpec.Type); len(got) != 1 {
		t.Errorf("turn.extracted published %d times, want once", len(got))
	} else if p, err := contracts.Decode(got[0]); err != nil {
		t.Errorf("turn.extracted: %v", err)
	} else if te := p.(*contracts.TurnExtracted); !te.ReceivedAt.Equal(at.Add(time.Minute)) {
		// The runner bounds the reply's model call by the turn's budget,
		// counted from when the gateway received it.
		t.Errorf("turn.extracted says received_at %s, want turn.received's %s", te.ReceivedAt, at.Add(time.Minute))
	}
	if dls := rig.Events(t, events.DeadLetterStream, events.DeadLetterType); len(dls) > 0 {
		t.Errorf("%d dead letters, want none", len(dls))
	}
}
