package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI is the chat API of a praetor, as far as praetor chat uses it:
// sessions old (which hands off to new) and new; a test says how each
// POST of a turn is answered.
type fakeAPI struct {
	t *testing.T
	// handedOff: the old session has handed off to new, at its turn
	// handoffTurn.
	handedOff   bool
	handoffTurn int
	// answer answers a POST of a turn to a session, the nth of that
	// session (from 1); nil answers it with an echo.
	answer func(w http.ResponseWriter, session string, n int, msg string)

	mu    sync.Mutex
	posts []fakePost
}

type fakePost struct{ session, message, key string }

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	handoff := map[string]any{"target_engine_id": "project-discovery", "target_session_id": "new",
		"reason": "a decision", "target_started": true}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/info":
		writeFake(w, http.StatusOK, map[string]any{"offline": false})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/old":
		f.mu.Lock()
		s := map[string]any{"session_id": "old", "engine_id": "exploration", "status": "active", "phase": "DELIBERATION"}
		if f.handedOff {
			s["status"], s["outbound_handoff"], s["turn_count"] = "handed_off", handoff, f.handoffTurn
		}
		f.mu.Unlock()
		writeFake(w, http.StatusOK, s)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/sessions/") && strings.HasSuffix(r.URL.Path, "/turns"):
		session := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/turns")
		var body struct{ Message string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			f.t.Errorf("POST %s: %v", r.URL.Path, err)
		}
		f.mu.Lock()
		f.posts = append(f.posts, fakePost{session, body.Message, r.Header.Get("Idempotency-Key")})
		n, handedOff := 0, f.handedOff
		for _, p := range f.posts {
			if p.session == session {
				n++
			}
		}
		f.mu.Unlock()
		switch {
		case session == "old" && handedOff:
			writeFake(w, http.StatusConflict, map[string]any{"code": "session_not_active",
				"error": "session old is handed_off; it handed off to project-discovery: post to session new", "handoff": handoff})
		case f.answer != nil:
			f.answer(w, session, n, body.Message)
		default:
			answered(w, session, "you said: "+body.Message)
		}
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

func (f *fakeAPI) sent() []fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakePost(nil), f.posts...)
}

func writeFake(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func answered(w http.ResponseWriter, session, reply string) {
	writeFake(w, http.StatusOK, map[string]any{"session_id": session, "status": "answered", "reply": reply,
		"phase": "P", "completeness": 0.5})
}

// runChat runs praetor chat against f with lines piped in.
func runChat(t *testing.T, f *fakeAPI, session, lines string) (string, error) {
	t.Helper()
	f.t = t
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	c := &apiClient{base: srv.URL, http: &http.Client{Timeout: 10 * time.Second}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out strings.Builder
	err := chat(ctx, c, "exploration", "default", session, strings.NewReader(lines), &out)
	return out.String(), err
}

// Given a session that has handed off, chat goes on in its target, and
// says so: no line is posted to the old session.
func TestChatContinuesASessionThatHandedOffInItsTarget(t *testing.T) {
	f := &fakeAPI{handedOff: true}
	out, err := runChat(t, f, "old", "Members book from phones.\n")
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	if !strings.Contains(out, "continuing in session new with project-discovery") ||
		!strings.Contains(out, "project-discovery> you said: Members book from phones.") {
		t.Errorf("chat did not go on in the handoff's target:\n%s", out)
	}
	if got := f.sent(); len(got) != 1 || got[0].session != "new" {
		t.Errorf("posts = %+v, want the line posted to new alone", got)
	}
}

// A line the session refuses because it handed off meanwhile (409 with
// the handoff) is posted once to the target, and the chat goes on there.
func TestChatPostsALineRefusedForAHandoffToItsTarget(t *testing.T) {
	f := &fakeAPI{}
	f.answer = func(w http.ResponseWriter, session string, n int, msg string) {
		if session == "old" { // the handoff commits as the line comes
			f.mu.Lock()
			f.handedOff = true
			f.mu.Unlock()
			writeFake(w, http.StatusConflict, map[string]any{"code": "session_not_active", "error": "session old is handed_off",
				"handoff": map[string]any{"target_engine_id": "project-discovery", "target_session_id": "new", "target_started": true}})
			return
		}
		answered(w, session, "you said: "+msg)
	}
	out, err := runChat(t, f, "old", "Members book from phones.\nAbout 300 members.\n")
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	got := f.sent()
	want := []fakePost{{"old", "Members book from phones.", got[0].key}, {"new", "Members book from phones.", forwardedKey(got[0].key, "new")},
		{"new", "About 300 members.", ""}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2].session != "new" || got[2].message != want[2].message {
		t.Fatalf("posts = %+v, want %+v", got, want)
	}
	if strings.Count(out, "project-discovery> you said:") != 2 || !strings.Contains(out, "continuing in session new") ||
		strings.Contains(out, "error:") {
		t.Errorf("chat output:\n%s", out)
	}
}

// A line refused (413) or not answered in time (202) does not end the
// chat, but the chat ends in an error that counts them.
func TestChatFailsWhenALineIsRefusedOrUnanswered(t *testing.T) {
	f := &fakeAPI{answer: func(w http.ResponseWriter, session string, n int, msg string) {
		switch msg {
		case "too long":
			writeFake(w, http.StatusRequestEntityTooLarge, map[string]any{"code": "message_too_large", "error": "message is 9000 bytes"})
		case "slow":
			writeFake(w, http.StatusAccepted, map[string]any{"session_id": session, "status": "pending"})
		default:
			answered(w, session, "ok")
		}
	}}
	out, err := runChat(t, f, "old", "first\ntoo long\nslow\nlast\n")
	if err == nil || !strings.Contains(err.Error(), "2 of 4 lines") {
		t.Fatalf("chat: %v, want an error counting 2 of 4 lines\n%s", err, out)
	}
	if n := len(f.sent()); n != 4 {
		t.Errorf("%d lines posted, want 4: the chat goes on after a bad line", n)
	}
	if strings.Count(out, "exploration> ok") != 2 || !strings.Contains(out, "413") || !strings.Contains(out, "no reply within") {
		t.Errorf("chat output:\n%s", out)
	}
}

// A POST that gets no answer is sent again once with the same
// Idempotency-Key; each line has a key of its own.
func TestChatRetriesALineWithItsIdempotencyKey(t *testing.T) {
	f := &fakeAPI{}
	f.answer = func(w http.ResponseWriter, session string, n int, msg string) {
		if n == 1 {
			// The connection drops in the middle of the answer (before
			// any, net/http's transport would send the request again
			// itself, on a connection used before).
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_, _ = conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"status\""))
			conn.Close()
			return
		}
		answered(w, session, "you said: "+msg)
	}
	out, err := runChat(t, f, "old", "first\nsecond\n")
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	got := f.sent()
	if len(got) != 3 || got[0].key == "" || got[1].key != got[0].key || got[1].message != "first" ||
		got[2].key == "" || got[2].key == got[0].key {
		t.Fatalf("posts = %+v, want first twice with one key, then second with another", got)
	}
	if strings.Count(out, "exploration> you said:") != 2 || strings.Contains(out, "error:") {
		t.Errorf("chat output:\n%s", out)
	}
}

// A line that reached the session after another turn handed it off is
// answered there without its engine (degraded, numbered after the turn
// that handed off, with the handoff): chat posts it once to the target,
// with a key derived from its own, and goes on there; the line was lost.
func TestChatSendsALineTheHandoffOvertookToItsTarget(t *testing.T) {
	f := &fakeAPI{}
	f.answer = func(w http.ResponseWriter, session string, n int, msg string) {
		if session == "old" { // another client's turn 4 handed off first
			f.mu.Lock()
			f.handedOff, f.handoffTurn = true, 4
			f.mu.Unlock()
			writeFake(w, http.StatusOK, map[string]any{"session_id": "old", "status": "answered", "turn_number": 5,
				"reply": "This message reached me after I had handed our conversation over, so I did not answer it here.",
				"phase": "P", "completeness": 0.5, "degraded": true,
				"handoff": map[string]any{"target_engine_id": "project-discovery", "target_session_id": "new", "target_started": true}})
			return
		}
		answered(w, session, "you said: "+msg)
	}
	out, err := runChat(t, f, "old", "Members book from phones.\nAbout 300 members.\n")
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	got := f.sent()
	if len(got) != 3 || got[0] != (fakePost{"old", "Members book from phones.", got[0].key}) ||
		got[1] != (fakePost{"new", "Members book from phones.", forwardedKey(got[0].key, "new")}) ||
		got[2].session != "new" || got[2].message != "About 300 members." || got[2].key == got[1].key {
		t.Fatalf("posts = %+v, want the first line to old, then once to new with a derived key, then the second to new", got)
	}
	if strings.Count(out, "project-discovery> you said:") != 2 || !strings.Contains(out, "continuing in session new") ||
		strings.Contains(out, "did not answer it here") || strings.Contains(out, "error:") {
		t.Errorf("chat output:\n%s", out)
	}
}
