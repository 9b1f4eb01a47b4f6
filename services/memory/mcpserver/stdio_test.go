package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"io"
	"slices"
	"strings"
	"testing"
)

// The filter passes JSON-RPC messages on, one a line, and answers the
// rest: a line that is not JSON, one that is not a message, an empty batch
// and a line past the limit.
func TestLineFilter(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"`,
		``,
		`{"id":"x"}`,
		`[]`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":4,"method":"` + strings.Repeat("p", 100) + `"}`,
		`  {"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, "\n") // the last line has no newline
	var out strings.Builder
	f := &lineFilter{in: bufio.NewReaderSize(strings.NewReader(in), 16), out: &out, limit: 64}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
		`[{"jsonrpc":"2.0","id":3,"method":"ping"}]` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	if string(got) != want {
		t.Errorf("passed on %q, want %q", got, want)
	}
	wantOut := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not valid JSON"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"Invalid Request: invalid message version tag \"\"; expected \"2.0\""}}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an empty batch"}}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a line is longer than 64 bytes"}}` + "\n"
	if out.String() != wantOut {
		t.Errorf("answered %q, want %q", out.String(), wantOut)
	}
}

// stdioServer is a server with a tool that asks the client for its roots,
// an answer a client whose input has ended can never give.
func stdioServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := req.Session.ListRoots(ctx, nil); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{}, nil
		})
	return s
}

// serveLines runs the server on the lines, the input ending after them, and
// returns its answers by id and the methods it called or notified.
func serveLines(t *testing.T, s *mcp.Server, lines ...string) (answers map[string]string, methods []string) {
	t.Helper()
	var out strings.Builder
	in := io.NopCloser(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err := s.Run(context.Background(), &LineTransport{In: in, Out: &out}); err != nil &&
		!errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("Run: %v", err)
	}
	answers = map[string]string{}
	for line := range strings.Lines(out.String()) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		if m.Method == "" {
			answers[string(m.ID)] = line
		} else {
			methods = append(methods, m.Method)
		}
	}
	return answers, methods
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// The end of the input is the client done sending: every call read before
// it is answered, a malformed line included, before the session ends.
func TestLineTransportAnswersEveryCallBeforeEOF(t *testing.T) {
	t.Parallel()
	got, _ := serveLines(t, stdioServer(),
		initializeLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"three","method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
	)
	for _, id := range []string{`1`, `2`, `"three"`, `4`, `null`, `6`} {
		if got[id] == "" {
			t.Errorf("no answer to id %s; answers: %v", id, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("answers = %v, want six", got)
	}
	if !strings.Contains(got["2"], `"name":"roots"`) {
		t.Errorf("tools/list = %s, want the roots tool", got["2"])
	}
}

// A call waiting for an answer of the client when its input ends can never
// get it: the session ends rather than waiting for ever.
func TestLineTransportEndsWhenTheClientCanNoLongerAnswer(t *testing.T) {
	t.Parallel()
	got, methods := serveLines(t, stdioServer(),
		initializeLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"roots","arguments":{}}}`,
	)
	if got["1"] == "" {
		t.Errorf("no answer to initialize; answers: %v", got)
	}
	if !slices.Contains(methods, "roots/list") {
		t.Errorf("the server sent %v, want a roots/list call", methods)
	}
}
