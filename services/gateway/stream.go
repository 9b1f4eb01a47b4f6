package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Subjects the gateway listens to on core NATS (which sees a subject before
// the stream adds its partition token): every turn.responded, for the
// replies; every session.started, for the sessions handoffs start; every
// task.merged, for the background tasks' progress.
var (
	replySubject   = contracts.TurnRespondedSpec.FilterSubject()
	startedSubject = contracts.SessionStartedSpec.FilterSubject()
	mergedSubject  = contracts.TaskMergedSpec.FilterSubject()
)

// sseEvent is one Server-Sent Event for a session's streams.
type sseEvent struct {
	name string
	id   string // the SSE id, which a client reconnecting sends back as Last-Event-ID: a turn's
	data any
	// resolve, when set, gives the data in the stream's goroutine, before
	// the event is written: what needs the store (a reply's handoff) is
	// read there, not in the bus's callback.
	resolve func(ctx context.Context) any
}

// broker hands replies to the requests waiting for a turn, and events to
// the streams open on a session.
type broker struct {
	mu      sync.Mutex
	turns   map[string][]chan contracts.TurnResponded
	streams map[string]map[chan sseEvent]struct{}
	closed  bool
	// done closes with the broker, releasing the requests waiting for a
	// reply.
	done chan struct{}
}

func newBroker() *broker {
	return &broker{turns: map[string][]chan contracts.TurnResponded{},
		streams: map[string]map[chan sseEvent]struct{}{}, done: make(chan struct{})}
}

func (b *broker) awaitTurn(turnID string) (<-chan contracts.TurnResponded, func()) {
	ch := make(chan contracts.TurnResponded, 1)
	b.mu.Lock()
	b.turns[turnID] = append(b.turns[turnID], ch)
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		waiters := b.turns[turnID]
		for i, c := range waiters {
			if c == ch {
				waiters = append(waiters[:i], waiters[i+1:]...)
				break
			}
		}
		if len(waiters) == 0 {
			delete(b.turns, turnID)
		} else {
			b.turns[turnID] = waiters
		}
	}
}

// subscribe opens a stream of a session's events; the channel closes when
// the broker does.
func (b *broker) subscribe(sessionID string) (<-chan sseEvent, func()) {
	ch := make(chan sseEvent, 16)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch, func() {}
	}
	if b.streams[sessionID] == nil {
		b.streams[sessionID] = map[chan sseEvent]struct{}{}
	}
	b.streams[sessionID][ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.streams[sessionID][ch]; ok {
			delete(b.streams[sessionID], ch)
			close(ch)
		}
		if len(b.streams[sessionID]) == 0 {
			delete(b.streams, sessionID)
		}
	}
}

// publish hands a reply to the requests waiting for its turn, and as a
// "turn" event to the session's streams, shaped by what view returns when
// a stream writes it (nil: as it is).
func (b *broker) publish(r contracts.TurnResponded, respondedAt time.Time, view func(context.Context) func(turnView) turnView) {
	b.mu.Lock()
	for _, ch := range b.turns[r.TurnID] {
		select {
		case ch <- r:
		default:
		}
	}
	b.mu.Unlock()
	c := r.Completeness
	tv := turnView{TurnID: r.TurnID, SessionID: r.SessionID, Status: "answered", TurnNumber: r.TurnNumber, Reply: r.Text,
		Phase: r.Phase, Completeness: &c, Sidebar: r.Sidebar, Degraded: r.Degraded, RespondedAt: &respondedAt}
	ev := sseEvent{name: "turn", id: r.TurnID, data: tv}
	if view != nil {
		ev.resolve = func(ctx context.Context) any { return view(ctx)(tv) }
	}
	b.send(r.SessionID, ev)
}

// send hands an event to the streams open on a session.
func (b *broker) send(sessionID string, ev sseEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.streams[sessionID] {
		select {
		case ch <- ev:
		default: // a stream that does not keep up skips an event; GET gives the state
		}
	}
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
	for _, set := range b.streams {
		for ch := range set {
			close(ch)
		}
	}
	b.streams = map[string]map[chan sseEvent]struct{}{}
}

func (g *Gateway) onReply(msg *nats.Msg) {
	ev, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		g.cfg.Logger.Warn("unreadable reply on the bus", "subject", msg.Subject, "error", err)
		return
	}
	r, err := contracts.DecodeAs[contracts.TurnResponded](ev)
	if err != nil {
		g.cfg.Logger.Warn("reply breaks its contract", "subject", msg.Subject, "error", err)
		return
	}
	g.replies.publish(*r, ev.Time().UTC(), g.replyHandoff(*r))
}

// replyHandoff returns what adds to the "turn" event of a reply the
// handoff the reply names (handoff_id: the turn made it, or came after
// it), as the store's turns carry it (handedOff); nil for a reply that
// names none. The store is asked once, by the first of the session's
// streams to write the event, not in the bus's callback: a slow store
// holds up the streams of that session, not every reply the gateway hands
// on after it.
func (g *Gateway) replyHandoff(r contracts.TurnResponded) func(context.Context) func(turnView) turnView {
	if r.HandoffID == "" {
		return nil
	}
	var (
		once sync.Once
		with = func(v turnView) turnView { return v }
	)
	return func(ctx context.Context) func(turnView) turnView {
		once.Do(func() {
			// Not cancelled with the first stream: the answer is every
			// stream's.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			h, at, err := g.madeHandoff(ctx, r.TenantID, r.HandoffID)
			if err != nil {
				g.cfg.Logger.Warn("handoff of a reply unreadable; its turn event goes without it", "session_id", r.SessionID,
					"turn_id", r.TurnID, "handoff_id", r.HandoffID, "error", err)
				return
			}
			with = withMadeHandoff(h, at)
		})
		return with
	}
}

// degradedHandedOff is the degraded_reason of a turn the session answered
// without processing it, because it came after the turn that handed the
// session off: its message is to be sent again to the handoff's target.
const degradedHandedOff = "handed_off"

// withMadeHandoff adds the handoff h, made by the session's turn at, to the
// turns it concerns: the one that made it and the later ones, which the
// session answered (degraded, degraded_reason "handed_off") without
// processing them.
func withMadeHandoff(h *handoffSummary, at int) func(turnView) turnView {
	return func(v turnView) turnView {
		if v.Status != "answered" || at <= 0 || v.TurnNumber < at {
			return v
		}
		v.Handoff = h
		if v.TurnNumber > at && v.Degraded {
			v.DegradedReason = degradedHandedOff
		}
		return v
	}
}

// handoffEvent is the SSE "handoff" event: the session handed off, and the
// session to follow.
type handoffEvent struct {
	HandoffID       string `json:"handoff_id"`
	SourceSessionID string `json:"source_session_id"`
	TargetSessionID string `json:"target_session_id"`
	TargetEngineID  string `json:"target_engine_id"`
	Reason          string `json:"reason"`
}

// onStarted tells the streams of a session that handed off that its target
// session now exists (its session.started), so clients switch to a session
// they can post to.
func (g *Gateway) onStarted(msg *nats.Msg) {
	ev, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		g.cfg.Logger.Warn("unreadable session.started on the bus", "subject", msg.Subject, "error", err)
		return
	}
	st, err := contracts.DecodeAs[contracts.SessionStarted](ev)
	if err != nil || st.InboundHandoffID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := conversation.GetHandoff(ctx, g.cfg.DB, st.TenantID, st.InboundHandoffID)
	if err != nil {
		g.cfg.Logger.Warn("handoff of a started session not found", "session_id", st.SessionID,
			"handoff_id", st.InboundHandoffID, "error", err)
		return
	}
	// The target as the session that started names itself.
	h.TargetSessionID, h.TargetEngineID = st.SessionID, st.EngineID
	g.replies.send(h.SourceSessionID, handoffEventOf(summarize(h, true)))
}

// handoffEventOf is the "handoff" event of a handoff whose target started.
func handoffEventOf(h *handoffSummary) sseEvent {
	return sseEvent{name: "handoff", data: handoffEvent{HandoffID: h.HandoffID, SourceSessionID: h.SourceSessionID,
		TargetSessionID: h.TargetSessionID, TargetEngineID: h.TargetEngineID, Reason: h.Reason}}
}

// taskEvent is the SSE "task" event: a background task's new status, and
// the session's sidebar after it.
type taskEvent struct {
	SessionID string          `json:"session_id"`
	TaskID    string          `json:"task_id"`
	Attempt   int             `json:"attempt"`
	Status    string          `json:"status"`
	Note      string          `json:"note,omitempty"`
	Sidebar   json.RawMessage `json:"sidebar,omitempty"`
}

// onMerged tells a session's streams that a background task's outcome was
// merged into it.
func (g *Gateway) onMerged(msg *nats.Msg) {
	ev, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		g.cfg.Logger.Warn("unreadable task.merged on the bus", "subject", msg.Subject, "error", err)
		return
	}
	m, err := contracts.DecodeAs[contracts.TaskMerged](ev)
	if err != nil {
		g.cfg.Logger.Warn("task.merged breaks its contract", "subject", msg.Subject, "error", err)
		return
	}
	g.replies.send(m.SessionID, sseEvent{name: "task", data: taskEvent{SessionID: m.SessionID, TaskID: m.TaskID,
		Attempt: m.Attempt, Status: m.Status, Note: m.Note, Sidebar: m.Sidebar}})
}

// stream serves a session's events as Server-Sent Events: an initial
// "state" event with the session, then a "turn" event per reply (shaped as
// GET of the turn shows it, less the message and received_at: the turn
// that handed the session off and those answered after it carry the
// handoff), a "task" event per background task outcome merged, a
// "handoff" event once the session's handoff has started its target
// session (follow target_session_id: the next message goes there), and a
// comment every 15s to keep proxies from closing the connection.
//
// A stream open when its session hands off stays open after the "handoff"
// event (a turn queued behind the handoff is still answered there, and
// background tasks merged). A stream opened on a session that has already
// handed off, which takes no new turns, ends once it has sent its
// "handoff" event (right after the state, and the turns missed with
// Last-Event-ID, when the target session has started, else when it starts)
// and the answers of the turns still queued behind the handoff (those the
// store has unanswered when the stream opens; "turn" events with
// degraded_reason handed_off).
//
// A stream opened with a token lasts as long as the token: it is checked
// again every Config.StreamAuthInterval, before an event when the last check
// is older, and at its expiry; once it no longer authenticates (revoked,
// expired) the stream sends an "error" event, {"error", "code":
// "unauthenticated"}, and ends.
//
// A "turn" event's id is its turn's: a client that reconnects with it as
// Last-Event-ID (as EventSource does) first gets the turns answered after
// that one, so no reply is lost between two connections.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "no_streaming", "this server cannot stream")
		return
	}
	// Subscribed before the session is read: a reply that comes in between
	// is in the state and in a "turn" event, not in neither. (A path that
	// names no session of the tenant is answered 404 and unsubscribed.)
	replies, cancel := g.replies.subscribe(r.PathValue("id"))
	defer cancel()
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	g.m.streams.Inc()
	defer g.m.streams.Dec()
	v, err := g.viewSession(r.Context(), s, false)
	if err != nil {
		g.internal(w, "read session", err)
		return
	}
	var missed []turnView
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if missed, err = g.answeredAfter(r.Context(), s, last); err != nil {
			g.internal(w, "read turns", err)
			return
		}
	}
	handedOff := v.OutboundHandoff != nil
	var queued map[string]bool // the turns a handed-off stream waits the answers of
	if handedOff {
		// Read after subscribing: a turn unanswered here has its answer
		// come on the subscription.
		if queued, err = g.unanswered(r.Context(), s); err != nil {
			g.internal(w, "read turns", err)
			return
		}
	}
	// The guard counts its interval from before the first event: a client
	// that reads the state has the token's last check behind it, not one
	// still to come.
	guard := g.newTokenGuard(callerOf(r))
	defer guard.stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	writeSSE(w, sseEvent{name: "state", data: v})
	sent := map[string]bool{}
	for _, t := range missed {
		writeSSE(w, sseEvent{name: "turn", id: t.TurnID, data: t})
		sent[t.TurnID] = true
	}
	handoffSent := false
	if handedOff && v.OutboundHandoff.TargetStarted {
		writeSSE(w, handoffEventOf(v.OutboundHandoff))
		handoffSent = true
		if len(queued) == 0 {
			flusher.Flush()
			return
		}
	}
	flusher.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case <-guard.tick:
			if !guard.check(r.Context(), w) {
				flusher.Flush()
				return
			}
		case <-guard.expiry:
			if !guard.check(r.Context(), w) {
				flusher.Flush()
				return
			}
		case ev, open := <-replies:
			if !open {
				return
			}
			if ev.id != "" && sent[ev.id] {
				continue // sent from the store already
			}
			if handedOff && ev.name == "handoff" {
				if handoffSent {
					continue // sent after the state already
				}
				handoffSent = true
			}
			if guard.stale() && !guard.check(r.Context(), w) {
				flusher.Flush()
				return
			}
			if ev.resolve != nil {
				ev.data = ev.resolve(r.Context())
			}
			writeSSE(w, ev)
			if ev.name == "turn" {
				delete(queued, ev.id)
			}
			if handedOff && handoffSent && len(queued) == 0 {
				flusher.Flush()
				return
			}
		}
		flusher.Flush()
	}
}

// tokenGuard checks an open stream's token again: one interval
// (Config.StreamAuthInterval) after the answer it last had (tick), at the
// token's expiry (expiry), and before an event when that answer is older
// than the interval (stale). The answers come from the gateway's
// streamAuth, which asks the store once an interval for all the streams of
// a token: a stream that checks when the answer it had runs out gets one
// asked after it, so a revocation ends every stream of the token within an
// interval. A stream of the open tenant has no token: its channels are nil.
type tokenGuard struct {
	g       *Gateway
	secret  string
	checked time.Time // when the store was asked for the last answer
	tick    <-chan time.Time
	expiry  <-chan time.Time
	timer   *time.Timer
	stop    func()
}

func (g *Gateway) newTokenGuard(c caller) *tokenGuard {
	t := &tokenGuard{g: g, secret: c.secret, checked: g.cfg.Now(), stop: func() {}}
	if c.secret == "" {
		return t
	}
	t.timer = time.NewTimer(g.cfg.StreamAuthInterval)
	t.tick, t.stop = t.timer.C, func() { t.timer.Stop() }
	if !c.expires.IsZero() {
		expiry := time.NewTimer(c.expires.Sub(g.cfg.Now()))
		t.expiry = expiry.C
		t.stop = func() { t.timer.Stop(); expiry.Stop() }
	}
	return t
}

// stale reports whether the token is to be checked before an event is sent.
func (t *tokenGuard) stale() bool {
	return t.secret != "" && t.g.cfg.Now().Sub(t.checked) >= t.g.cfg.StreamAuthInterval
}

// check authenticates the token again. When it no longer does, it writes
// the "error" event that ends the stream and returns false. When the store
// cannot say, the stream goes on (the token is not known to be revoked) and
// the next check asks again.
func (t *tokenGuard) check(ctx context.Context, w http.ResponseWriter) bool {
	if t.secret == "" {
		return true
	}
	at, err := t.g.rechecks.check(ctx, t.secret)
	t.checked = at
	// The next check falls when this answer runs out, whoever asked for it.
	t.timer.Reset(max(at.Add(t.g.cfg.StreamAuthInterval).Sub(t.g.cfg.Now()), 0))
	var denied *store.TokenError
	switch {
	case errors.As(err, &denied):
		what := map[store.TokenReason]string{store.TokenRevoked: "was revoked", store.TokenExpired: "expired"}[denied.Reason]
		writeSSE(w, sseEvent{name: "error", data: apiError{Code: "unauthenticated",
			Error: "the token " + cmp.Or(what, "is no longer known") + ": the stream ends; open it again with a valid token"}})
		return false
	case err != nil && ctx.Err() == nil:
		t.g.cfg.Logger.Warn("stream: check the token again", "error", err)
	}
	return true
}

// answeredAfter returns the session's turns answered after the turn lastID
// (by the time of their answer, then their number: a turn set aside is
// answered after later ones), none when it is not an answered turn of the
// session. Read from the store, the turns that made or answered the
// session's handoff carry it, as their live "turn" events do.
func (g *Gateway) answeredAfter(ctx context.Context, s conversation.Session, lastID string) ([]turnView, error) {
	turns, err := conversation.ListTurns(ctx, g.cfg.DB, s.TenantID, s.ID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(turns, func(t conversation.Turn) bool { return t.ID == lastID })
	if i < 0 || !turns[i].Answered() {
		return nil, nil
	}
	order := func(a, b conversation.Turn) int {
		return cmp.Or(a.RespondedAt.Compare(*b.RespondedAt), cmp.Compare(a.TurnNumber, b.TurnNumber), cmp.Compare(a.ID, b.ID))
	}
	last := turns[i]
	var after []conversation.Turn
	for _, t := range turns {
		if t.Answered() && order(t, last) > 0 {
			after = append(after, t)
		}
	}
	slices.SortFunc(after, order)
	withHandoff := g.handedOff(ctx, s)
	out := make([]turnView, len(after))
	for i, t := range after {
		out[i] = withHandoff(viewTurn(t))
	}
	return out, nil
}

// unanswered returns the session's turns not answered yet.
func (g *Gateway) unanswered(ctx context.Context, s conversation.Session) (map[string]bool, error) {
	turns, err := conversation.ListTurns(ctx, g.cfg.DB, s.TenantID, s.ID)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, t := range turns {
		if !t.Answered() {
			out[t.ID] = true
		}
	}
	return out, nil
}

func writeSSE(w http.ResponseWriter, ev sseEvent) {
	b, _ := json.Marshal(ev.data)
	if ev.id != "" {
		fmt.Fprintf(w, "id: %s\n", ev.id)
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, b)
}
