package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/gateway/gatewaytest"
)

// explorationScript carries an exploration session to its handoff.
var explorationScript = enginetest.ExplorationScript

type handoffSummary struct {
	HandoffID       string          `json:"handoff_id"`
	SourceEngineID  string          `json:"source_engine_id"`
	SourceSessionID string          `json:"source_session_id"`
	TargetEngineID  string          `json:"target_engine_id"`
	TargetSessionID string          `json:"target_session_id"`
	Reason          string          `json:"reason"`
	TargetStarted   bool            `json:"target_started"`
	Verified        bool            `json:"verified"`
	Verification    json.RawMessage `json:"verification_result"`
	Direction       string          `json:"direction"`
	Payload         struct {
		Metadata struct {
			SessionID string `json:"session_id"`
			TurnCount int    `json:"turn_count"`
		} `json:"metadata"`
		ActionList struct {
			DecisionsReached []struct {
				Decision  string `json:"decision"`
				Reasoning string `json:"reasoning"`
			} `json:"decisions_reached"`
			ConstraintsIdentified []struct {
				Constraint string `json:"constraint"`
			} `json:"constraints_identified"`
		} `json:"action_list"`
	} `json:"payload"`
}

type handoffSession struct {
	SessionID       string          `json:"session_id"`
	EngineID        string          `json:"engine_id"`
	Status          string          `json:"status"`
	InboundHandoff  *handoffSummary `json:"inbound_handoff"`
	OutboundHandoff *handoffSummary `json:"outbound_handoff"`
	Handoffs        struct {
		Inbound  string `json:"inbound"`
		Outbound string `json:"outbound"`
	} `json:"handoffs"`
	BackgroundTasks struct {
		Tasks []struct {
			TaskID string          `json:"task_id"`
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		} `json:"tasks"`
	} `json:"background_tasks"`
}

// Exploration → Project Discovery through the real services over
// JetStream: the decision fires the exit transition, the handoff is written
// and published, the gateway tells the stream and the API which session to
// follow (the old one refuses messages and names it), the target session
// starts with the handoff, its first reply acknowledges it, and the I-PASS
// verdict is stored.
func TestExplorationHandsOffToProjectDiscovery(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	src := n.CreateSession(t, "", "exploration")
	stream := n.MustOpenStream(t, src, "")

	type turn struct {
		gatewaytest.Turn
		Handoff *handoffSummary `json:"handoff"`
	}
	var last turn
	decision := func() gatewaytest.Response { // the last turn, which hands off; the client may retry it
		return n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions/" + src + "/turns?wait=30s",
			Header: http.Header{"Idempotency-Key": {"the-decision"}}, Body: map[string]string{"message": explorationScript[len(explorationScript)-1]}})
	}
	for i, msg := range explorationScript {
		var res gatewaytest.Response
		if i == len(explorationScript)-1 {
			res = decision()
		} else {
			res = n.Post(t, "/v1/sessions/"+src+"/turns?wait=30s", "", map[string]string{"message": msg})
		}
		if res.Status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i+1, res.Status, res.Body)
		}
		res.Decode(t, &last)
		if last.Handoff != nil && i < len(explorationScript)-1 {
			t.Fatalf("handed off at turn %d, before the decision", i+1)
		}
	}
	h := last.Handoff
	if h == nil || h.TargetEngineID != "project-discovery" || h.SourceSessionID != src || h.TargetSessionID == "" ||
		!strings.Contains(last.Reply, "handing you over") {
		t.Fatalf("the decision's turn = %+v (reply %q)", h, last.Reply)
	}

	// The stream says where to go once the target session exists.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ev := stream.Next(t, time.Until(deadline))
		if ev.Name != "handoff" {
			continue // the replies and background tasks before it
		}
		var he handoffSummary
		if err := json.Unmarshal([]byte(ev.Data), &he); err != nil || he.TargetSessionID != h.TargetSessionID ||
			he.TargetEngineID != "project-discovery" || he.Reason == "" || he.HandoffID != h.HandoffID {
			t.Fatalf("handoff event %s (%v), want target %s", ev.Data, err, h.TargetSessionID)
		}
		break
	}

	var s handoffSession
	n.Get(t, "/v1/sessions/"+src, "").Decode(t, &s)
	if s.Status != conversation.StatusHandedOff || s.OutboundHandoff == nil || s.OutboundHandoff.TargetSessionID != h.TargetSessionID ||
		!s.OutboundHandoff.TargetStarted || s.Handoffs.Outbound != h.HandoffID {
		t.Fatalf("source session = %+v", s)
	}
	// The old session refuses messages and names the one to use.
	res := n.Post(t, "/v1/sessions/"+src+"/turns", "", map[string]string{"message": "Hello?"})
	var refused struct {
		Code    string          `json:"code"`
		Error   string          `json:"error"`
		Handoff *handoffSummary `json:"handoff"`
	}
	res.Decode(t, &refused)
	if res.Status != http.StatusConflict || refused.Code != "session_not_active" || refused.Handoff == nil ||
		refused.Handoff.TargetSessionID != h.TargetSessionID || !strings.Contains(refused.Error, h.TargetSessionID) {
		t.Fatalf("posting to the handed-off session: %d %s", res.Status, res.Body)
	}

	// But a retry of the turn that handed off (the client lost its answer)
	// is answered as that turn was: with the handoff that says where to go.
	var retried turn
	if res := decision(); res.Status != http.StatusOK {
		t.Fatalf("retrying the decision's turn after the handoff: %d %s", res.Status, res.Body)
	} else {
		res.Decode(t, &retried)
	}
	if retried.TurnID != last.TurnID || retried.Reply != last.Reply || retried.Handoff == nil ||
		retried.Handoff.TargetSessionID != h.TargetSessionID {
		t.Fatalf("the retried decision's turn = %+v, want %+v", retried, last)
	}

	target := h.TargetSessionID
	var ts handoffSession
	n.Get(t, "/v1/sessions/"+target, "").Decode(t, &ts)
	if ts.EngineID != "project-discovery" || ts.Status != conversation.StatusActive || ts.InboundHandoff == nil ||
		ts.InboundHandoff.SourceSessionID != src || ts.InboundHandoff.Verified || len(ts.InboundHandoff.Verification) != 0 {
		t.Fatalf("target session = %+v", ts)
	}
	var list struct {
		Handoffs []handoffSummary `json:"handoffs"`
	}
	n.Get(t, "/v1/sessions/"+target+"/handoffs", "").Decode(t, &list)
	if len(list.Handoffs) != 1 || list.Handoffs[0].Direction != "inbound" {
		t.Fatalf("target's handoffs = %+v", list.Handoffs)
	}
	p := list.Handoffs[0].Payload
	if p.Metadata.SessionID != src || p.Metadata.TurnCount != len(explorationScript) || len(p.ActionList.DecisionsReached) != 1 ||
		p.ActionList.DecisionsReached[0].Decision != "off-the-shelf tool" || len(p.ActionList.DecisionsReached[0].Reasoning) <= 20 ||
		len(p.ActionList.ConstraintsIdentified) == 0 {
		t.Fatalf("handoff payload = %+v", p)
	}

	// The target engine's first reply acknowledges the handoff; the
	// verification is stored with the handoff.
	first := n.Say(t, "", target, "Yes, let's define the requirements.")
	if !strings.Contains(first.Reply, "Picking up from") || !strings.Contains(first.Reply, "off-the-shelf tool") {
		t.Errorf("the first reply does not acknowledge the handoff: %q", first.Reply)
	}
	n.Get(t, "/v1/sessions/"+target, "").Decode(t, &ts)
	if !ts.InboundHandoff.Verified || !json.Valid(ts.InboundHandoff.Verification) {
		t.Fatalf("after the first reply: %+v", ts.InboundHandoff)
	}
	var v struct {
		Verified bool    `json:"verified"`
		Score    float64 `json:"score"`
		Details  struct {
			IdentityMatch         bool    `json:"identity_match"`
			ProjectMatch          bool    `json:"project_match"`
			DecisionsAcknowledged float64 `json:"decisions_acknowledged"`
			OverallAcknowledgment float64 `json:"overall_acknowledgment"`
		} `json:"details"`
	}
	if err := json.Unmarshal(ts.InboundHandoff.Verification, &v); err != nil || !v.Verified || !v.Details.IdentityMatch ||
		!v.Details.ProjectMatch || v.Details.DecisionsAcknowledged <= 0.5 || v.Details.OverallAcknowledgment <= 0.5 {
		t.Errorf("verification = %s (%v)", ts.InboundHandoff.Verification, err)
	}
	row, err := conversation.GetHandoff(context.Background(), n.DB, n.DevTenant, h.HandoffID)
	if err != nil || !row.Verified || row.TargetSessionID != target {
		t.Errorf("eng_handoffs row = %+v, %v", row, err)
	}
	// A second reply is not checked again.
	n.Say(t, "", target, "It is for our yoga studio's bookings.")
	again, _ := conversation.GetHandoff(context.Background(), n.DB, n.DevTenant, h.HandoffID)
	if string(again.Verification) != string(row.Verification) {
		t.Error("the verification changed after the second reply")
	}

	// The background research the exploration ran came back into it.
	gatewaytest.WaitFor(t, 30*time.Second, "the landscape research", func() bool {
		var tv struct {
			Tasks []struct {
				TaskID string `json:"task_id"`
				Status string `json:"status"`
			} `json:"tasks"`
		}
		n.Get(t, "/v1/sessions/"+src+"/tasks", "").Decode(t, &tv)
		for _, task := range tv.Tasks {
			if task.TaskID == "landscape_research" && task.Status == "completed" {
				return true
			}
		}
		return false
	})
}

// A turn the gateway took just before the decision's handoff committed is
// answered, degraded, by the session it reached: that answer, the turn that
// handed off, and both in the list of the session's turns carry the
// handoff, so a client knows where to post next. The session's turn_count
// stays the number of the last turn its engine processed.
func TestTurnsOfAHandoffCarryIt(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	type turn struct {
		gatewaytest.Turn
		Handoff        *handoffSummary `json:"handoff"`
		DegradedReason string          `json:"degraded_reason"`
	}
	const queued = "Members book from phones."
	var (
		src       string
		live      *gatewaytest.Stream
		decision  turn
		behind    turn
		attempted int
	)
	// The queued turn must reach the gateway before the runner commits the
	// handoff; should the runner be quicker (the queued turn is then
	// refused, 409, as TestExplorationHandsOffToProjectDiscovery checks),
	// the conversation is held again.
	for behind.TurnID == "" {
		if attempted++; attempted > 3 {
			t.Fatal("the runner committed the handoff before the queued turn reached the gateway, three times")
		}
		src = n.CreateSession(t, "", "exploration")
		live = n.MustOpenStream(t, src, "")
		for _, msg := range explorationScript[:len(explorationScript)-1] {
			n.Say(t, "", src, msg)
		}
		res := n.Post(t, "/v1/sessions/"+src+"/turns", "", map[string]string{"message": explorationScript[len(explorationScript)-1]})
		if res.Status != http.StatusAccepted {
			t.Fatalf("the decision: %d %s", res.Status, res.Body)
		}
		res.Decode(t, &decision)
		res = n.Post(t, "/v1/sessions/"+src+"/turns?wait=30s", "", map[string]string{"message": queued})
		switch res.Status {
		case http.StatusOK:
			res.Decode(t, &behind)
		case http.StatusConflict:
		default:
			t.Fatalf("the turn queued behind the decision: %d %s", res.Status, res.Body)
		}
	}
	// It says why it is degraded: not a model's failure, the handoff.
	if !behind.Degraded || behind.DegradedReason != "handed_off" || behind.TurnNumber != len(explorationScript)+1 ||
		behind.Handoff == nil || behind.Handoff.TargetEngineID != "project-discovery" || behind.Handoff.TargetSessionID == "" ||
		behind.Handoff.SourceSessionID != src {
		t.Fatalf("the turn queued behind the decision = %+v, handoff %+v; want it degraded (handed_off) with the handoff",
			behind, behind.Handoff)
	}
	h := behind.Handoff

	var one turn
	n.Get(t, "/v1/sessions/"+src+"/turns/"+decision.TurnID, "").Decode(t, &one)
	if one.Handoff == nil || one.Handoff.HandoffID != h.HandoffID || one.DegradedReason != "" {
		t.Fatalf("GET of the decision's turn: handoff %+v, degraded_reason %q; want %s and none", one.Handoff,
			one.DegradedReason, h.HandoffID)
	}
	n.Get(t, "/v1/sessions/"+src+"/turns/"+behind.TurnID, "").Decode(t, &one)
	if one.Handoff == nil || one.Handoff.HandoffID != h.HandoffID || one.DegradedReason != "handed_off" {
		t.Fatalf("GET of the queued turn: handoff %+v, degraded_reason %q; want %s and handed_off", one.Handoff,
			one.DegradedReason, h.HandoffID)
	}
	// The live stream says the same of both.
	for streamed := map[string]bool{}; !streamed[decision.TurnID] || !streamed[behind.TurnID]; {
		ev := live.Next(t, 30*time.Second)
		if ev.Name != "turn" || (ev.ID != decision.TurnID && ev.ID != behind.TurnID) {
			continue
		}
		streamed[ev.ID] = true
		var st turn
		if err := json.Unmarshal([]byte(ev.Data), &st); err != nil || st.Handoff == nil || st.Handoff.HandoffID != h.HandoffID ||
			(st.DegradedReason == "handed_off") != (ev.ID == behind.TurnID) {
			t.Fatalf("live turn event %s (%v): want the handoff %s, and degraded_reason handed_off on the queued turn alone",
				ev.Data, err, h.HandoffID)
		}
	}

	var list struct {
		Turns []turn `json:"turns"`
	}
	n.Get(t, "/v1/sessions/"+src+"/turns", "").Decode(t, &list)
	if len(list.Turns) != len(explorationScript)+1 {
		t.Fatalf("%d turns listed, want %d", len(list.Turns), len(explorationScript)+1)
	}
	for _, lt := range list.Turns {
		carries := lt.TurnNumber >= len(explorationScript)
		switch {
		case carries && (lt.Handoff == nil || lt.Handoff.HandoffID != h.HandoffID || lt.Handoff.TargetSessionID != h.TargetSessionID):
			t.Errorf("listed turn %d: handoff %+v, want %s", lt.TurnNumber, lt.Handoff, h.HandoffID)
		case (lt.DegradedReason == "handed_off") != (lt.TurnNumber > len(explorationScript)):
			t.Errorf("listed turn %d: degraded_reason %q, want handed_off on the turn after the decision alone",
				lt.TurnNumber, lt.DegradedReason)
		case !carries && lt.Handoff != nil:
			t.Errorf("listed turn %d, before the decision, carries the handoff %+v", lt.TurnNumber, lt.Handoff)
		}
	}

	// A stream reopened after the turn before the decision sends the two
	// turns it missed from the store, with the handoff.
	stream, res := n.OpenStreamAfter(t, src, "", list.Turns[len(explorationScript)-2].TurnID)
	if stream == nil {
		t.Fatalf("reopen the stream: %d %s", res.Status, res.Body)
	}
	if ev := stream.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event %s, want state", ev.Name)
	}
	for range 2 {
		ev := stream.Next(t, 10*time.Second)
		var st turn
		if err := json.Unmarshal([]byte(ev.Data), &st); err != nil || ev.Name != "turn" || st.Handoff == nil ||
			st.Handoff.HandoffID != h.HandoffID {
			t.Fatalf("missed turn sent on reconnecting: %s %s (%v), want it with the handoff %s", ev.Name, ev.Data, err, h.HandoffID)
		}
	}

	var s struct {
		TurnCount int `json:"turn_count"`
	}
	n.Get(t, "/v1/sessions/"+src, "").Decode(t, &s)
	if s.TurnCount != len(explorationScript) {
		t.Errorf("turn_count = %d, want %d: the last turn the engine processed", s.TurnCount, len(explorationScript))
	}
}

// A client reading "turn" events gets the turn that handed the session off
// in one shape, live or sent again after a reconnect (Last-Event-ID): with
// the handoff. A stream opened on the session once it has handed off, which
// takes no new turns, sends the state, the turns missed, the "handoff" event
// a live stream got, and the answers of the turns still queued behind the
// handoff, and ends.
func TestStreamAroundAHandoff(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	src := n.CreateSession(t, "", "exploration")
	live := n.MustOpenStream(t, src, "")
	var turns []gatewaytest.Turn
	for _, msg := range explorationScript {
		turns = append(turns, n.Say(t, "", src, msg))
	}
	decision := turns[len(turns)-1]

	var liveTurn map[string]any
	var liveHandoff string
	for deadline := time.Now().Add(30 * time.Second); liveTurn == nil || liveHandoff == ""; {
		switch ev := live.Next(t, time.Until(deadline)); {
		case ev.Name == "turn" && ev.ID == decision.TurnID:
			if err := json.Unmarshal([]byte(ev.Data), &liveTurn); err != nil {
				t.Fatalf("live turn event %s: %v", ev.Data, err)
			}
		case ev.Name == "handoff":
			liveHandoff = ev.Data
		}
	}

	reopened, res := n.OpenStreamAfter(t, src, "", turns[len(turns)-2].TurnID)
	if reopened == nil {
		t.Fatalf("reopen the stream: %d %s", res.Status, res.Body)
	}
	if ev := reopened.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event %s, want state", ev.Name)
	}
	ev := reopened.Next(t, 10*time.Second)
	var sentAgain map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &sentAgain); err != nil || ev.Name != "turn" || ev.ID != decision.TurnID {
		t.Fatalf("after the state: %s %s %s (%v), want the decision's turn", ev.Name, ev.ID, ev.Data, err)
	}
	// Sent again from the store, a turn has its message and received_at
	// too, and the time the store recorded its answer at; and its handoff's
	// target has started meanwhile (target_started, the state of the
	// handoff when the event is sent).
	for _, field := range []string{"message", "received_at", "responded_at"} {
		delete(sentAgain, field)
		delete(liveTurn, field)
	}
	for _, tv := range []map[string]any{liveTurn, sentAgain} {
		if h, ok := tv["handoff"].(map[string]any); ok {
			delete(h, "target_started")
		}
	}
	if liveTurn["handoff"] == nil || !reflect.DeepEqual(liveTurn, sentAgain) {
		t.Fatalf("the decision's turn:\nlive       %v\nsent again %v\nwant them equal, with the handoff", liveTurn, sentAgain)
	}
	if ev := reopened.Next(t, 10*time.Second); ev.Name != "handoff" || ev.Data != liveHandoff {
		t.Fatalf("after the missed turns: %s %s, want the handoff %s", ev.Name, ev.Data, liveHandoff)
	}
	reopened.WaitEnd(t, 10*time.Second)

	// Opened without Last-Event-ID: the state, then where to go.
	fresh := n.MustOpenStream(t, src, "")
	if ev := fresh.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event %s, want state", ev.Name)
	}
	if ev := fresh.Next(t, 10*time.Second); ev.Name != "handoff" || ev.Data != liveHandoff {
		t.Fatalf("after the state: %s %s, want the handoff %s", ev.Name, ev.Data, liveHandoff)
	}
	fresh.WaitEnd(t, 10*time.Second)

	// A turn still queued behind the handoff (taken before the handoff
	// committed, not answered yet) is answered on this session: a stream
	// opened meanwhile sends the handoff, stays open for that turn's
	// answer, with the handoff and degraded_reason handed_off, and ends.
	var h handoffSummary
	if err := json.Unmarshal([]byte(liveHandoff), &h); err != nil {
		t.Fatal(err)
	}
	queued := conversation.Turn{ID: "queued-behind-the-handoff", TenantID: n.DevTenant, SessionID: src,
		Message: "Members book from phones.", ReceivedAt: time.Now()}
	if err := conversation.CreateTurn(context.Background(), n.DB, queued); err != nil {
		t.Fatal(err)
	}
	waiting := n.MustOpenStream(t, src, "")
	for _, want := range []string{"state", "handoff"} {
		if ev := waiting.Next(t, 10*time.Second); ev.Name != want {
			t.Fatalf("stream with a turn queued behind the handoff: %s %s, want %s", ev.Name, ev.Data, want)
		}
	}
	at := time.Now()
	queued.TurnNumber, queued.Reply, queued.Phase, queued.Degraded, queued.RespondedAt =
		len(explorationScript)+1, "This conversation has moved on.", "DECISION", true, &at
	if err := conversation.AnswerTurn(context.Background(), n.DB, queued); err != nil {
		t.Fatal(err)
	}
	reply, err := contracts.NewEvent(contracts.Meta{ID: "reply-" + queued.ID, Source: "/test", Time: at},
		contracts.TurnResponded{TenantID: n.DevTenant, SessionID: src, TurnID: queued.ID, TurnNumber: queued.TurnNumber,
			Text: queued.Reply, Phase: queued.Phase, Degraded: true, HandoffID: h.HandoffID})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Bus.Publish(context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	ev = waiting.Next(t, 10*time.Second)
	var answered struct {
		Handoff        *handoffSummary `json:"handoff"`
		DegradedReason string          `json:"degraded_reason"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &answered); err != nil || ev.Name != "turn" || ev.ID != queued.ID ||
		answered.Handoff == nil || answered.Handoff.HandoffID != h.HandoffID || answered.DegradedReason != "handed_off" {
		t.Fatalf("after the handoff: %s %s %s (%v), want the queued turn's answer, degraded (handed_off), with the handoff %s",
			ev.Name, ev.ID, ev.Data, err, h.HandoffID)
	}
	waiting.WaitEnd(t, 10*time.Second)
}

// heldHandoffDB holds the reads of one handoff until released.
type heldHandoffDB struct {
	store.DB
	id       string
	entered  chan struct{} // closed when the held read starts
	release  chan struct{}
	returned atomic.Bool
	once     sync.Once
	freed    sync.Once
}

// free releases the held read.
func (db *heldHandoffDB) free() { db.freed.Do(func() { close(db.release) }) }

func (db *heldHandoffDB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if strings.Contains(query, "FROM eng_handoffs") && slices.Contains(args, any(db.id)) {
		db.once.Do(func() { close(db.entered) })
		select {
		case <-db.release:
		case <-ctx.Done():
		}
		defer db.returned.Store(true)
	}
	return db.DB.QueryRow(ctx, query, args...)
}

// A reply naming a handoff has the handoff looked up for its turn event
// off the bus's callback: while that read is held (a slow store), the
// replies of other sessions still reach their streams.
func TestSlowHandoffLookupHoldsNoOtherReply(t *testing.T) {
	t.Parallel()
	held := &heldHandoffDB{id: "held-handoff", entered: make(chan struct{}), release: make(chan struct{})}
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}, Gateway: func(c *gateway.Config) {
		held.DB = c.DB
		c.DB = held
	}})
	t.Cleanup(held.free) // before the node stops: cleanups run last first
	slow, other := n.CreateSession(t, "", "exploration"), n.CreateSession(t, "", "exploration")
	slowStream, otherStream := n.MustOpenStream(t, slow, ""), n.MustOpenStream(t, other, "")
	for _, s := range []*gatewaytest.Stream{slowStream, otherStream} {
		if ev := s.Next(t, 10*time.Second); ev.Name != "state" {
			t.Fatalf("first event %s, want state", ev.Name)
		}
	}
	publish := func(sessionID, turnID, handoffID string) {
		t.Helper()
		ev, err := contracts.NewEvent(contracts.Meta{ID: "reply-" + turnID, Source: "/test", Time: time.Now()},
			contracts.TurnResponded{TenantID: n.DevTenant, SessionID: sessionID, TurnID: turnID, TurnNumber: 1,
				Text: "Who uses it?", Phase: "OPENING", HandoffID: handoffID})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Bus.Publish(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	publish(slow, "slow-turn", held.id)
	select {
	case <-held.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the reply naming a handoff was not looked up")
	}
	publish(other, "other-turn", "")
	if ev := otherStream.Next(t, 30*time.Second); ev.Name != "turn" || ev.ID != "other-turn" {
		t.Fatalf("the other session's stream: %s %s, want its turn", ev.Name, ev.ID)
	}
	if held.returned.Load() {
		t.Fatal("the other session's reply came only once the held handoff read had returned: it waited behind it")
	}
	held.free()
	if ev := slowStream.Next(t, 30*time.Second); ev.Name != "turn" || ev.ID != "slow-turn" {
		t.Fatalf("the slow session's stream: %s %s, want its turn, once the handoff read returns", ev.Name, ev.ID)
	}
}
