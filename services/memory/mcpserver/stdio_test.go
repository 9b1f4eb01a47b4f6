package mcpserver

import (
	"bufio"
	"io"
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
