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
	in := &lineFilter{in: bufio.NewReader(t.In), out: out, limit: t.MaxLineLength}
	if in.limit <= 0 {
		in.limit = mcp.DefaultMaxLineLength
	}
	return (&mcp.IOTransport{Reader: readCloser{in, t.In}, Writer: out, MaxLineLength: -1}).Connect(ctx)
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
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.next()
		if len(line) > 0 {
			f.pending = append(line, '\n')
			break
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
	msgs := []json.RawMessage{line}
	if line[0] == '[' {
		msgs = nil // Unmarshal would reuse line's array for msgs[0]
		if json.Unmarshal(line, &msgs) != nil || len(msgs) == 0 {
			return nil, f.reply(json.RawMessage("null"), jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch", readErr)
		}
	}
	for _, m := range msgs {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			return nil, f.reply(idOf(m), jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error(), readErr)
		}
	}
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
