package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/peterbourgon/ff/v4"
)

func chatCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var url, token, engineID, project, session string
	fs := ff.NewFlagSet("chat").SetParent(parent)
	fs.StringVar(&url, 0, "url", "http://127.0.0.1:8080", "URL of a running praetor (dev or serve)")
	fs.StringVar(&token, 0, "token", os.Getenv("PRAETOR_TOKEN"), "API token (PRAETOR_TOKEN); none needed for praetor dev on loopback")
	fs.StringVar(&engineID, 0, "engine", "project-discovery", "engine to talk to")
	fs.StringVar(&project, 0, "project", "default", "project id")
	fs.StringVar(&session, 0, "session", "", "continue this session instead of starting one")
	return &ff.Command{
		Name:      "chat",
		Usage:     "praetor chat [--engine ID] [--session ID] [--url URL]",
		ShortHelp: "talk to an engine in the terminal, through a running praetor's API",
		LongHelp: "Each line you type is a turn; the engine's reply follows with the phase and\n" +
			"completeness. Ctrl-D ends the chat. Lines can also be piped in.\n\n" +
			"When the session hands off (or, given with --session, has handed off), the\n" +
			"chat goes on in the target session, and says so. A line that reached the\n" +
			"old session after its handoff (refused, or answered without its engine) is\n" +
			"sent there once, with an Idempotency-Key derived from the line's. A line refused (too long, say) or not\n" +
			"answered within a minute does not end the chat, but the chat then exits 1,\n" +
			"saying how many lines went so. Each line is sent with an Idempotency-Key and\n" +
			"sent again once, with the same key, after a network error: never twice a turn.",
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if err := noArgs("chat", args); err != nil {
				return err
			}
			c := &apiClient{base: strings.TrimRight(url, "/"), token: token, http: &http.Client{Timeout: 90 * time.Second}}
			return chat(ctx, c, engineID, project, session, os.Stdin, g.stdout)
		},
	}
}

type apiClient struct {
	base, token string
	http        *http.Client
}

// apiError is an answer of the API that is not a success.
type apiError struct {
	Status  string
	Code    int
	Message string
	// Handoff is set on a 409 of a session that handed off: the session
	// to post to instead.
	Handoff *chatHandoff
}

func (e *apiError) Error() string { return e.Status + ": " + e.Message }

// transportError is a request that got no answer: a network error, or no
// answer within the client's timeout.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	return c.request(ctx, method, path, nil, body, out)
}

// request is do with headers; an answer that is not a success is an
// *apiError, no answer a *transportError.
func (c *apiClient) request(ctx context.Context, method, path string, header http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &transportError{fmt.Errorf("%w (is praetor running at %s? start it with praetor dev)", err, c.base)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return &transportError{fmt.Errorf("%s %s: read the answer: %w", method, path, err)}
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error   string       `json:"error"`
			Handoff *chatHandoff `json:"handoff"`
		}
		ae := &apiError{Status: resp.Status, Code: resp.StatusCode, Message: strings.TrimSpace(string(data))}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			ae.Message, ae.Handoff = e.Error, e.Handoff
		}
		return ae
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

type chatSession struct {
	SessionID    string  `json:"session_id"`
	EngineID     string  `json:"engine_id"`
	Status       string  `json:"status"`
	Phase        string  `json:"phase"`
	Completeness float64 `json:"completeness"`
	// TurnCount is the number of the last turn the engine processed: once
	// the session has handed off, the turn that made the handoff.
	TurnCount int `json:"turn_count"`
	// OutboundHandoff is set once the session handed off: its target is
	// where the conversation goes on.
	OutboundHandoff *chatHandoff `json:"outbound_handoff"`
}

type chatHandoff struct {
	TargetEngineID  string `json:"target_engine_id"`
	TargetSessionID string `json:"target_session_id"`
	Reason          string `json:"reason"`
	TargetStarted   bool   `json:"target_started"`
}

type chatTurn struct {
	Status       string   `json:"status"`
	TurnNumber   int      `json:"turn_number"`
	Reply        string   `json:"reply"`
	Phase        string   `json:"phase"`
	Completeness *float64 `json:"completeness"`
	Degraded     bool     `json:"degraded"`
	// Handoff is set on the turn whose exit transition fired, and on a
	// turn that reached the session after it (numbered after the turn
	// that made it), which the source engine did not answer.
	Handoff *chatHandoff `json:"handoff"`
}

func chat(ctx context.Context, c *apiClient, engineID, project, sessionID string, in io.Reader, out io.Writer) error {
	var s chatSession
	if sessionID == "" {
		if err := c.do(ctx, http.MethodPost, "/v1/sessions", map[string]string{"engine_id": engineID, "project_id": project}, &s); err != nil {
			return err
		}
		fmt.Fprintf(out, "session %s with %s (%s). Type your message; Ctrl-D to end.\n", s.SessionID, s.EngineID, s.Phase)
	} else {
		if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+sessionID, nil, &s); err != nil {
			return err
		}
		fmt.Fprintf(out, "continuing session %s with %s (%s, %.0f%%).\n", s.SessionID, s.EngineID, s.Phase, s.Completeness*100)
	}
	// moveTo moves the chat to the target of the session's handoff.
	moveTo := func(next *chatHandoff) {
		fmt.Fprintf(out, "(handed off to %s: %s)\ncontinuing in session %s with %s.\n",
			next.TargetEngineID, next.Reason, next.TargetSessionID, next.TargetEngineID)
		s.SessionID, s.EngineID = next.TargetSessionID, next.TargetEngineID
	}
	if s.OutboundHandoff != nil {
		next, _, err := followHandoff(ctx, c, s.SessionID)
		if err != nil {
			return err
		}
		moveTo(next)
	}
	var info struct {
		Offline bool `json:"offline"`
	}
	if c.do(ctx, http.MethodGet, "/v1/info", nil, &info) == nil && info.Offline {
		fmt.Fprintln(out, "(the offline provider is answering: deterministic stand-ins, not a model)")
	}
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	// A person at a terminal gets a prompt; lines piped in are echoed
	// after it instead, so the output reads as the conversation.
	typed := isTerminal(in)
	sent, failed := 0, 0
	for {
		if typed {
			fmt.Fprint(out, "you> ")
		}
		if !lines.Scan() {
			if typed {
				fmt.Fprintln(out)
			}
			if err := lines.Err(); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d lines were refused or not answered (see above)", failed, sent)
			}
			return nil
		}
		msg := strings.TrimSpace(lines.Text())
		if msg == "" {
			continue
		}
		if !typed {
			fmt.Fprintf(out, "you> %s\n", msg)
		}
		sent++
		key := uuid.NewString()
		t, err := postLine(ctx, c, s.SessionID, msg, key)
		var next *chatHandoff // set when the line goes to the handoff's target instead
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Code == http.StatusConflict && ae.Handoff != nil {
			// The session handed off before this line reached it.
			if next, _, err = followHandoff(ctx, c, s.SessionID); err != nil {
				return err
			}
		} else if err == nil && t.Status == "answered" && t.Handoff != nil {
			h, made, err := followHandoff(ctx, c, s.SessionID)
			if err != nil {
				return err
			}
			if t.TurnNumber <= made {
				// The turn that handed off: its reply, then the target.
				printReply(out, s.EngineID, t)
				moveTo(h)
				continue
			}
			// The line reached the session after the turn that handed
			// off, and the source engine did not answer it.
			next = h
		}
		if next != nil {
			moveTo(next)
			t, err = postLine(ctx, c, s.SessionID, msg, forwardedKey(key, s.SessionID))
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintln(out, "error:", err)
			failed++
			continue
		}
		if t.Status != "answered" {
			fmt.Fprintln(out, "(no reply within a minute; it will be in the session's turns)")
			failed++
			continue
		}
		printReply(out, s.EngineID, t)
		if t.Handoff != nil {
			// The line, sent on to the target, handed off again.
			h, _, err := followHandoff(ctx, c, s.SessionID)
			if err != nil {
				return err
			}
			moveTo(h)
		}
	}
}

// printReply prints an answered turn's reply, phase and completeness.
func printReply(out io.Writer, engineID string, t chatTurn) {
	note := ""
	if t.Degraded {
		note = ", degraded"
	}
	completeness := 0.0
	if t.Completeness != nil {
		completeness = *t.Completeness
	}
	fmt.Fprintf(out, "%s> %s\n   [%s · %.0f%%%s]\n", engineID, t.Reply, t.Phase, completeness*100, note)
}

// forwardedKey is the Idempotency-Key of a line sent on to the target
// session of a handoff: derived from the line's own, so a retry of the
// forward is one turn of the target too, and never the key of another
// line.
func forwardedKey(key, targetSessionID string) string {
	return key + "/" + targetSessionID
}

// postLine posts a line as a turn of a session and waits for its reply. A
// request that gets no answer is sent again once with the same
// Idempotency-Key: the server answers a retry as the first request, so a
// turn is never taken twice.
func postLine(ctx context.Context, c *apiClient, sessionID, msg, key string) (chatTurn, error) {
	var t chatTurn
	header := http.Header{"Idempotency-Key": {key}}
	path := "/v1/sessions/" + sessionID + "/turns?wait=60s"
	err := c.request(ctx, http.MethodPost, path, header, map[string]string{"message": msg}, &t)
	if te := (*transportError)(nil); errors.As(err, &te) && ctx.Err() == nil {
		t = chatTurn{}
		err = c.request(ctx, http.MethodPost, path, header, map[string]string{"message": msg}, &t)
	}
	return t, err
}

// followHandoff waits until the target session of a session's handoff
// exists (the runner starts it right after the turn that fired it) and
// returns the handoff and the number of the turn that made it.
func followHandoff(ctx context.Context, c *apiClient, sessionID string) (*chatHandoff, int, error) {
	const wait = 30 * time.Second
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		var now chatSession
		err := c.do(ctx, http.MethodGet, "/v1/sessions/"+sessionID, nil, &now)
		if err == nil && now.OutboundHandoff != nil && now.OutboundHandoff.TargetStarted {
			return now.OutboundHandoff, now.TurnCount, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("its target session did not start within %s", wait)
			}
			return nil, 0, fmt.Errorf("session %s handed off, but %w (GET /v1/sessions/%s shows it)", sessionID, err, sessionID)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// isTerminal reports whether r is a terminal (a character device).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
