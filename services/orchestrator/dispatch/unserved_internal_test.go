package dispatch

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/store/testdb"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/orchestrator/internal/orchtest"
	"github.com/praetorhq/praetor/services/orchestrator/sqlstore"
)

// An agent is served when a consumer of the task stream filters its
// attempts' subject, with or without wildcards; one consumer's filter is no
// other agent's.
func TestServedLooksAtTheConsumersFilters(t *testing.T) {
	t.Parallel()
	n := orchtest.StartNATS(t)
	bus := n.Bus(t)
	d, err := New(Config{Bus: bus, Results: sqlstore.NewResults(testdb.SQLite(t))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stream, err := bus.JetStream().Stream(ctx, contracts.StreamTasks)
	if err != nil {
		t.Fatal(err)
	}
	prefix := contracts.TaskDispatchedSpec.SubjectPrefix()
	for name, filter := range map[string]string{"pool-writer": prefix + ".*.writer", "pool-acme": prefix + ".acme.>"} {
		if _, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, FilterSubject: filter,
			AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		tenant, agent string
		want          bool
	}{{"other", "writer", true}, {"acme", "anyone", true}, {"other", "ghost", false}} {
		got, err := d.served(ctx, c.tenant, c.agent)
		if err != nil || got != c.want {
			t.Errorf("served(%s, %s) = %v, %v, want %v", c.tenant, c.agent, got, err, c.want)
		}
	}
}
