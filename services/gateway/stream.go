package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// replySubject carries every turn.responded as published (core NATS sees
// the subject before the stream adds its partition token).
var replySubject = contracts.TurnRespondedSpec.FilterSubject()

// broker hands replies to the requests waiting for a turn and to the
// streams open on a session.
type broker struct {
	mu      sync.Mutex
	turns   map[string][]chan contracts.TurnResponded
	streams map[string]map[chan contracts.TurnResponded]struct{}
	closed  bool
	// done closes with the broker, releasing the requests waiting for a
	// reply.
	done chan struct{}
}

func newBroker() *broker {
	return &broker{turns: map[string][]chan contracts.TurnResponded{},
		streams: map[string]map[chan contracts.TurnResponded]struct{}{}, done: make(chan struct{})}
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

// subscribe opens a stream of a session's replies; the channel closes when
// the broker does.
func (b *broker) subscribe(sessionID string) (<-chan contracts.TurnResponded, func()) {
	ch := make(chan contracts.TurnResponded, 16)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch, func() {}
	}
	if b.streams[sessionID] == nil {
		b.streams[sessionID] = map[chan contracts.TurnResponded]struct{}{}
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

func (b *broker) publish(r contracts.TurnResponded) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.turns[r.TurnID] {
		select {
		case ch <- r:
		default:
		}
	}
	for ch := range b.streams[r.SessionID] {
		select {
		case ch <- r:
		default: // a stream that does not keep up skips a reply; GET gives the state
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
	b.streams = map[string]map[chan contracts.TurnResponded]struct{}{}
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
	g.replies.publish(*r)
}

// stream serves a session's replies as Server-Sent Events: an initial
// "state" event with the session, then a "turn" event per reply, and a
// comment every 15s to keep proxies from closing the connection.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request) {
	s, ok := g.session(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "no_streaming", "this server cannot stream")
		return
	}
	replies, cancel := g.replies.subscribe(s.ID)
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	v, _ := viewSession(s, false)
	writeSSE(w, "state", v)
	flusher.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case reply, open := <-replies:
			if !open {
				return
			}
			c := reply.Completeness
			writeSSE(w, "turn", turnView{TurnID: reply.TurnID, SessionID: reply.SessionID, Status: "answered",
				TurnNumber: reply.TurnNumber, Reply: reply.Text, Phase: reply.Phase, Completeness: &c,
				Sidebar: reply.Sidebar, Degraded: reply.Degraded})
		}
		flusher.Flush()
	}
}

func writeSSE(w http.ResponseWriter, name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
}
