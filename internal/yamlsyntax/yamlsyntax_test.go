package yamlsyntax

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// decodeErr is the error of decoding every document of data into nodes.
func decodeErr(t *testing.T, data string) error {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(data)))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatalf("%q decodes without error", data)
			}
			return err
		}
	}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		yaml     string
		wantLine int
		wantMsg  string
	}{
		// yaml.v3 says line 3, where the scalar the tab ends began.
		{name: "tab after a scalar", yaml: "a: 1\nb:\n  c: 2\n\td: 3\n", wantLine: 4, wantMsg: "tab character"},
		{name: "tab before a key", yaml: "a: 1\n\tb: 2\n", wantLine: 2, wantMsg: "tab character"},
		// yaml.v3 gives no line to an error on the first.
		{name: "tab on the first line", yaml: "\ta: 1\n", wantLine: 1, wantMsg: "cannot start any token"},
		// yaml.v3 counts the lines of its parser's errors from 0.
		{name: "unclosed brace", yaml: "a: 1\nb: {c: 1\nd: 2\n", wantLine: 2, wantMsg: "did not find expected ',' or '}'"},
		{name: "unclosed bracket", yaml: "a: 1\nb: [1, 2\nd: 2\n", wantLine: 2, wantMsg: "did not find expected ',' or ']'"},
		{name: "sequence in a mapping", yaml: "a: 1\nb: 2\n- c\n", wantLine: 3, wantMsg: "did not find expected key"},
		{name: "bad indentation", yaml: "a: 1\nb:\n  c: 1\n d: 2\n", wantLine: 4, wantMsg: "did not find expected key"},
		{name: "unterminated quote", yaml: "a: 1\nb: \"open\nc: 3\n", wantLine: 2, wantMsg: "end of stream"},
		{name: "no final newline", yaml: "a: 1\nb: @x", wantLine: 2, wantMsg: "cannot start any token"},
		{name: "second document", yaml: "a: 1\n---\nb: [\n", wantLine: 3, wantMsg: "did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			line, msg := Locate([]byte(tt.yaml), decodeErr(t, tt.yaml))
			if line != tt.wantLine || !strings.Contains(msg, tt.wantMsg) || strings.Contains(msg, "line") ||
				strings.HasPrefix(msg, "yaml:") {
				t.Errorf("Locate = %d %q, want %d and a problem with %q and no line", line, msg, tt.wantLine, tt.wantMsg)
			}
		})
	}
}

func TestLocateOtherErrors(t *testing.T) {
	t.Parallel()
	// An error that is not data's syntax error has no line.
	line, msg := Locate([]byte("a: 1\n"), errors.New("read f.yaml: permission denied"))
	if line != 0 || msg != "read f.yaml: permission denied" {
		t.Errorf("Locate = %d %q, want 0 and the error", line, msg)
	}
}
