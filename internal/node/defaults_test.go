package node_test

import (
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
)

// The duplicate window outlasts the ack wait, after which a redelivered
// handler publishes its derived ids again; in dev it is no longer than that
// (the embedded server keeps the window's ids in the services' heap).
func TestDefaultDuplicates(t *testing.T) {
	for _, c := range []struct {
		dev     bool
		ackWait time.Duration
		want    time.Duration
	}{
		{true, 30 * time.Second, time.Minute},
		{true, 5 * time.Minute, 5*time.Minute + 30*time.Second},
		{false, 30 * time.Second, 2 * time.Minute},
		{false, 5 * time.Minute, 5*time.Minute + 30*time.Second},
	} {
		if got := node.DefaultDuplicates(c.dev, c.ackWait); got != c.want {
			t.Errorf("DefaultDuplicates(dev %v, ack wait %v) = %v, want %v", c.dev, c.ackWait, got, c.want)
		}
	}
}
