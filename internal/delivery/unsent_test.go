package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// While NATS takes nothing, the events committed wait in the outbox, and
// praetor_outbox_unsent says how many: something an alert can watch. Once
// they are published it comes back to 0.
func TestRelayGaugesTheUnsentMessages(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, open func(*testing.T) store.DB) {
		r := newRig(t, open)
		ctx := context.Background()
		pub := &publisher{bus: r.bus, sent: map[string]int{}}
		pub.fail.Store(true)
		reg := prometheus.NewPedanticRegistry()
		rl, err := delivery.NewRelay(delivery.RelayConfig{DB: r.db, Publisher: pub, Interval: 10 * time.Millisecond,
			Registerer: reg, Service: "gateway", CountInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Enqueue(ctx, r.db, r.outboxRow(t, "e0", ""), r.outboxRow(t, "e1", ""), r.outboxRow(t, "e2", "")); err != nil {
			t.Fatal(err)
		}
		if err := rl.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rl.Stop(context.Background()) })
		gauge := func() float64 {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != "praetor_outbox_unsent" {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "service" && l.GetValue() == "gateway" {
							return m.GetGauge().GetValue()
						}
					}
				}
			}
			return -1
		}
		eventstest.Eventually(t, 10*time.Second, "praetor_outbox_unsent{service=gateway} to be 3 during the outage", func() bool {
			return gauge() == 3
		})
		pub.fail.Store(false)
		rl.Kick()
		eventstest.Eventually(t, 10*time.Second, "praetor_outbox_unsent to be 0 once published", func() bool { return gauge() == 0 })
		if n, err := testutil.GatherAndCount(reg, "praetor_outbox_unsent"); err != nil || n != 1 {
			t.Errorf("praetor_outbox_unsent series = %d, %v; want one", n, err)
		}
	})
}
