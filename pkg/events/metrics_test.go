package events_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/pkg/events"
)

// Handlers run for minutes (the runner's and the extractor's up to 5, a
// background task's up to 11, a workflow attempt's up to an hour and a
// minute): praetor_event_handle_seconds tells such runs apart in finite
// buckets, so a p99 above 30s is a figure and not +Inf.
func TestHandleSecondsBucketsCoverLongHandlers(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := events.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Each in a bucket of its own, none in +Inf.
	runs := []time.Duration{20 * time.Second, 45 * time.Second, 90 * time.Second, 4 * time.Minute,
		8 * time.Minute, 20 * time.Minute, 50 * time.Minute}
	for _, d := range runs {
		m.ObserveHandle("svc", d.String(), d)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	upper := map[string]float64{} // type → the bound of the bucket its run fell in
	for _, f := range families {
		if f.GetName() != "praetor_event_handle_seconds" {
			continue
		}
		for _, metric := range f.GetMetric() {
			var typ string
			for _, l := range metric.GetLabel() {
				if l.GetName() == "type" {
					typ = l.GetValue()
				}
			}
			upper[typ] = math.Inf(1)
			for _, b := range metric.GetHistogram().GetBucket() {
				if b.GetCumulativeCount() == 1 {
					upper[typ] = b.GetUpperBound()
					break
				}
			}
		}
	}
	seen := map[float64]time.Duration{}
	for _, d := range runs {
		le, ok := upper[d.String()]
		switch {
		case !ok:
			t.Fatalf("no praetor_event_handle_seconds series for a run of %s", d)
		case math.IsInf(le, 1):
			t.Errorf("a run of %s falls in +Inf", d)
		case seen[le] != 0:
			t.Errorf("runs of %s and %s fall in the same bucket (le %g)", seen[le], d, le)
		}
		seen[le] = d
	}
}
