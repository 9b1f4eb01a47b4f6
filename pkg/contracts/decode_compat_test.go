package contracts_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// TestDecodeNestingLimit: Decode refuses data nested deeper than
// encoding/json allows (10000 arrays and objects), as it did when it decoded
// with encoding/json. segmentio's decoder has no such limit and recurses
// once per level: a few megabytes of brackets grow the consumer goroutine's
// stack past the runtime's 1 GB limit, a fatal error that no recover stops,
// and the redelivered event kills the process again.
func TestDecodeNestingLimit(t *testing.T) {
	ev := contracts.MustEvent(contracts.Meta{ID: "e1", Time: time.Unix(0, 0)}, contracts.TaskDispatched{
		TenantID: "acme", TaskID: "t1", Kind: "research", Handler: "research", OwnerID: "s1", Attempt: 1,
		Input: json.RawMessage(`{}`)})
	withInput := func(depth int) []byte {
		input := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		data := strings.Replace(string(ev.Data()), `"input":{}`, `"input":`+input, 1)
		if !strings.Contains(data, input) {
			t.Fatalf("no input in %s", ev.Data())
		}
		return []byte(data)
	}
	// The payload's own object is one level: an input 9999 deep makes 10000.
	for _, c := range []struct {
		depth int
		ok    bool
	}{{9999, true}, {10000, false}, {50000, false}} {
		data := withInput(c.depth)
		var std contracts.TaskDispatched
		if stdErr := json.Unmarshal(data, &std); (stdErr == nil) != c.ok {
			t.Fatalf("depth %d: encoding/json says %v", c.depth, stdErr)
		}
		e := ev.Clone()
		e.DataEncoded = data
		_, err := contracts.Decode(e)
		switch {
		case c.ok && err != nil:
			t.Errorf("input %d deep: %v", c.depth, err)
		case !c.ok && err == nil:
			t.Errorf("input %d deep decoded; encoding/json refuses it", c.depth)
		case !c.ok && (!errors.Is(err, contracts.ErrContract) || !events.IsPermanent(err)):
			t.Errorf("input %d deep: %v, want a permanent contract violation", c.depth, err)
		}
	}
}
