package gatewaytest

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Event is one Server-Sent Event.
type Event struct {
	Name string
	ID   string // the id: line's, empty when it has none
	Data string
}

// Stream is an open GET /v1/sessions/{id}/stream.
type Stream struct {
	Header http.Header
	events chan Event
}

// MustOpenStream is OpenStream for a stream that must open: anything but
// 200 fails the test.
func (n *Node) MustOpenStream(t testing.TB, sessionID, token string) *Stream {
	t.Helper()
	stream, res := n.OpenStream(t, sessionID, token)
	if stream == nil {
		t.Fatalf("open the stream of %s: status %d: %s", sessionID, res.Status, res.Body)
	}
	return stream
}

// OpenStream opens a session's event stream. When the gateway answers
// anything but 200 the stream is nil and the response says why; otherwise
// the stream closes when the test ends.
func (n *Node) OpenStream(t testing.TB, sessionID, token string) (*Stream, Response) {
	t.Helper()
	return n.OpenStreamAfter(t, sessionID, token, "")
}

// OpenStreamAfter is OpenStream for a client that reconnects: lastEventID,
// when set, is sent as Last-Event-ID.
func (n *Node) OpenStreamAfter(t testing.TB, sessionID, token, lastEventID string) (*Stream, Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.URL+"/v1/sessions/"+sessionID+"/stream", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// Streams get a client of their own: n.HTTP's timeout would cut them.
	client := &http.Client{Transport: n.HTTP.Transport}
	res, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("open the stream of %s: %v", sessionID, err)
	}
	if res.StatusCode != http.StatusOK {
		defer cancel()
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return nil, Response{Status: res.StatusCode, Header: res.Header, Body: b}
	}
	s := &Stream{Header: res.Header, events: make(chan Event, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.events)
		defer res.Body.Close()
		readEvents(ctx, res.Body, s.events)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s, Response{Status: res.StatusCode, Header: res.Header}
}

// readEvents parses the text/event-stream format: "id:", "event:" and "data:"
// lines, an empty line ending each event, ":" lines being comments.
func readEvents(ctx context.Context, r io.Reader, out chan<- Event) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var ev Event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Name != "" || len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				if ev.Name == "" {
					ev.Name = "message"
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
			ev, data = Event{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			ev.Name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// Next returns the next event, failing the test when none comes within
// timeout or the stream ends.
func (s *Stream) Next(t testing.TB, timeout time.Duration) Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal(ErrClosed)
		}
		return ev
	case <-timer.C:
		t.Fatalf("no event on the stream within %s", timeout)
		return Event{}
	}
}

// WaitEnd waits for the gateway to end the stream, failing the test when
// an event comes first or the stream is still open after timeout.
func (s *Stream) WaitEnd(t testing.TB, timeout time.Duration) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("the stream sent %s %s, want it ended", ev.Name, ev.Data)
		}
	case <-timer.C:
		t.Fatalf("the stream is still open after %s", timeout)
	}
}
