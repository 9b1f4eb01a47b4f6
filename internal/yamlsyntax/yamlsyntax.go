// Package yamlsyntax says where a YAML syntax error is.
//
// gopkg.in/yaml.v3 reports a syntax error at the line of its context, not
// of its problem, and counts the lines of its parser's errors from 0: a tab
// on line 19 inside a scalar begun on line 18 is "line 18", an unclosed
// '{' on line 29 is "line 28", and an error on the first line has no line
// at all. Its marks are not exported, so Locate finds the line again: the
// first line at whose end the document already fails with the same problem.
package yamlsyntax

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

var prefix = regexp.MustCompile(`^yaml: (?:line \d+: )?`)

// Locate returns the 1-based line of data on which err, the error of
// decoding data's YAML documents into nodes, is, and the parser's problem
// without the parser's own (misplaced) line. line is 0 when err is not a
// syntax error of data.
func Locate(data []byte, err error) (line int, problem string) {
	msg := strings.TrimSpace(err.Error())
	m := prefix.FindString(msg)
	if m == "" {
		return 0, msg
	}
	problem = msg[len(m):]
	var ends []int // the end of each line, its newline included
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(i int) bool { return problemOf(data[:ends[i]]) == problem }
	if !fails(len(ends) - 1) {
		return 0, problem
	}
	return sort.Search(len(ends), fails) + 1, problem
}

// problemOf decodes every document of data and returns the problem of the
// first syntax error, or "" when there is none.
func problemOf(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		switch {
		case errors.Is(err, io.EOF):
			return ""
		case err != nil:
			msg := strings.TrimSpace(err.Error())
			return msg[len(prefix.FindString(msg)):]
		}
	}
}
