package events_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// An event put back on purpose (Postpone: not due yet) is no failure: the
// log says so at debug level, and warns only of real failures, a
// RetryAfter and a PassOn among them.
func TestLoggingTellsAPostponementFromAFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want slog.Level
	}{
		{"postponed", events.Postpone(errors.New("not due yet"), time.Minute), slog.LevelDebug},
		{"rate limited", events.RetryAfter(errors.New("rate limited"), time.Minute), slog.LevelWarn},
		// An event passed on to a newer replica holds its partition while a
		// rollout lasts: the operator sees it.
		{"passed on", events.PassOn(t.Context(), errors.New("a newer version"), events.PassOnDeliveries), slog.LevelWarn},
		{"failed", errors.New("boom"), slog.LevelWarn},
	} {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		h := events.Logging(logger, "svc")(func(context.Context, event.Event) error { return c.err })
		if err := h(t.Context(), eventstest.NewEvent("e1", "k", 1)); err != c.err {
			t.Errorf("%s: the handler's error %v did not come back: %v", c.name, c.err, err)
		}
		if got := buf.String(); !strings.Contains(got, "level="+c.want.String()) || strings.Count(got, "\n") != 1 {
			t.Errorf("%s: logged %q, want one line at %s", c.name, got, c.want)
		}
	}
}
