package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LineTransport serves MCP over newline-delimited JSON, as
// mcp.StdioTransport does, but a line that is not a JSON-RPC message is
// answered with a JSON-RPC error (-32700 parse error, -32600 invalid
// request) and skipped: the SDK's transport ends the session on the first
// bad line, losing every reply still to be written.
//
// The end of In means the client has nothing more to send, not that it
// cancels what it sent: the session goes on until every call read has been
// answered, then ends. The SDK's transport ends it at once, cancelling the
// calls in flight and dropping their answers, so a client that writes its
// requests and closes its end (printf ... | praetor memory mcp) got the
// first answer only. A call of the server's own still unanswered at the end
// of In can never be answered: the session then ends at once, as the SDK's.
type LineTransport struct {
	// In carries the client's lines; Out gets the replies. Required.
	In  io.ReadCloser
	Out io.Writer
	// MaxLineLength bounds a line, in bytes; a longer one is answered
	// -32600 and skipped. Default mcp.DefaultMaxLineLength.
	MaxLineLength int
}

// Connect returns the connection of the transport.
func (t *LineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.In == nil || t.Out == nil {
		return nil, errors.New("mcpserver: LineTransport.In and Out are required")
	}
	out := &lockedWriter{w: t.Out}
	calls := newInFlight()
	in := &lineFilter{in: bufio.NewReader(t.In), out: out, limit: t.MaxLineLength, calls: calls}
	if in.limit <= 0 {
		in.limit = mcp.DefaultMaxLineLength
	}
	return (&mcp.IOTransport{
		Reader:        readCloser{in, closer{calls, t.In}},
		Writer:        &answerWriter{out, calls},
		MaxLineLength: -1,
	}).Connect(ctx)
}

// inFlight counts the client's calls passed on and not answered yet, and
// the server's calls written and not answered yet, so that the end of the
// input waits for the answers it still can get.
type inFlight struct {
	mu      sync.Mutex
	changed *sync.Cond
	client  int  // the client's calls not answered yet
	server  int  // the server's calls the client has not answered yet
	closed  bool // the connection is closed: nothing more will be written
}

func newInFlight() *inFlight {
	f := &inFlight{}
	f.changed = sync.NewCond(&f.mu)
	return f
}

// count adds the calls of msgs to the side that sent them and takes the
// responses off the other side.
func (f *inFlight) count(msgs []jsonrpc.Message, fromClient bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	mine, theirs := &f.client, &f.server
	if !fromClient {
		mine, theirs = theirs, mine
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *jsonrpc.Request:
			if m.IsCall() {
				*mine++
			}
		case *jsonrpc.Response:
			*theirs = max(*theirs-1, 0)
		}
	}
	f.changed.Broadcast()
}

// drain waits until every call of the client has been answered, the server
// waits for an answer the client can no longer send, or the connection is
// closed.
func (f *inFlight) drain() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.client > 0 && f.server == 0 && !f.closed {
		f.changed.Wait()
	}
}

func (f *inFlight) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.changed.Broadcast()
}

// closer ends the wait for answers when the connection closes (a signal,
// a failed write), then closes the input.
type closer struct {
	calls *inFlight
	in    io.Closer
}

func (c closer) Close() error {
	c.calls.close()
	return c.in.Close()
}

// answerWriter counts the messages the SDK writes: each is one Write of one
// line, a message or a batch.
type answerWriter struct {
	out   *lockedWriter
	calls *inFlight
}

func (w *answerWriter) Write(p []byte) (int, error) {
	n, err := w.out.Write(p)
	if msgs, derr := decodeLine(bytes.TrimSpace(p)); derr == nil {
		w.calls.count(msgs, false)
	}
	return n, err
}

func (w *answerWriter) Close() error { return nil }

// decodeLine decodes a line holding a JSON-RPC message or a batch of them.
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	raws := []json.RawMessage{line}
	if len(line) > 0 && line[0] == '[' {
		raws = nil // Unmarshal would reuse line's array for raws[0]
		if err := json.Unmarshal(line, &raws); err != nil {
			return nil, err
		}
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, r := range raws {
		m, err := jsonrpc.DecodeMessage(r)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// lockedWriter keeps the filter's error replies and the SDK's messages
// whole: each is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (w *lockedWriter) Close() error { return nil }

type readCloser struct {
	io.Reader
	io.Closer
}

// lineFilter passes on the lines that are JSON-RPC messages (or batches of
// them) and answers the others on out.
type lineFilter struct {
	in      *bufio.Reader
	out     io.Writer
	limit   int
	pending []byte
	calls   *inFlight // nil: the end of the input does not wait
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.next()
		if len(line) > 0 {
			f.pending = append(line, '\n')
			break
		}
		if errors.Is(err, io.EOF) {
			f.calls.drain()
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next returns the next valid line, or nil after answering a bad one, with
// the error that ended the input.
func (f *lineFilter) next() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := f.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > f.limit+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, f.reply(json.RawMessage("null"), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Invalid Request: a line is longer than %d bytes", f.limit), err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return nil, err
		}
		return f.check(line, err)
	}
}

func (f *lineFilter) check(line []byte, readErr error) ([]byte, error) {
	if !json.Valid(line) {
		return nil, f.reply(json.RawMessage("null"), jsonrpc.CodeParseError, "Parse error: the line is not valid JSON", readErr)
	}
	raws := []json.RawMessage{line}
	if line[0] == '[' {
		raws = nil // Unmarshal would reuse line's array for raws[0]
		if json.Unmarshal(line, &raws) != nil || len(raws) == 0 {
			return nil, f.reply(json.RawMessage("null"), jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch", readErr)
		}
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, r := range raws {
		m, err := jsonrpc.DecodeMessage(r)
		if err != nil {
			return nil, f.reply(idOf(r), jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error(), readErr)
		}
		msgs = append(msgs, m)
	}
	f.calls.count(msgs, true)
	return line, readErr
}

// idOf is the id of a malformed message when it has a usable one, else null.
func idOf(m json.RawMessage) json.RawMessage {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(m, &v) == nil && len(v.ID) > 0 {
		var id any
		if json.Unmarshal(v.ID, &id) == nil {
			if _, err := jsonrpc.MakeID(id); err == nil {
				return v.ID
			}
		}
	}
	return json.RawMessage("null")
}

// reply writes a JSON-RPC error response; it returns readErr unless the
// write failed.
func (f *lineFilter) reply(id json.RawMessage, code int64, message string, readErr error) error {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	if err != nil {
		return err
	}
	if _, err := f.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("mcpserver: answer a malformed line: %w", err)
	}
	return readErr
}
