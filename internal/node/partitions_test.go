package node_test

import (
	"context"
	"testing"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// The partitions of the ordered streams: as configured; else those the
// streams already have, so that a restart of a data directory made with
// another count provisions it as it is; else the default.
func TestResolvePartitions(t *testing.T) {
	nc := eventstest.Connect(t, eventstest.StartServer(t))
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resolve := func(configured, def int) int {
		t.Helper()
		n, err := node.ResolvePartitions(ctx, bus, configured, def)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := resolve(0, node.DevPartitions); n != node.DevPartitions {
		t.Fatalf("no streams yet: %d partitions, want the default %d", n, node.DevPartitions)
	}
	if n := resolve(7, node.DevPartitions); n != 7 {
		t.Fatalf("configured 7: got %d", n)
	}
	settings := node.StreamSettings{Partitions: 16, Replicas: 1}
	if err := node.Provision(ctx, bus, settings); err != nil {
		t.Fatal(err)
	}
	n := resolve(0, node.DevPartitions)
	if n != 16 {
		t.Fatalf("streams made with 16: resolved %d", n)
	}
	settings.Partitions = n
	if err := node.Provision(ctx, bus, settings); err != nil {
		t.Fatalf("provisioning again with the streams' own count: %v", err)
	}
	// What the resolution spares: a count the streams do not have is refused.
	settings.Partitions = node.DevPartitions
	if err := node.Provision(ctx, bus, settings); err == nil {
		t.Fatal("provisioning 16-partition streams with 4 succeeded; the check this test relies on is gone")
	}
}
