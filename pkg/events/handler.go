package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// Handler handles one event. A nil error acknowledges it; an error marked
// Permanent dead-letters it; any other error redelivers it after a backoff.
type Handler func(ctx context.Context, ev event.Event) error

// Middleware wraps a handler with cross-cutting behaviour.
type Middleware func(Handler) Handler

// Chain applies middleware so that the first one given is the outermost.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// Delivery describes the message an event arrived in.
type Delivery struct {
	Stream string
	// Consumer is the durable consumer (the service role) that received it.
	Consumer string
	Subject  string
	// StreamSeq is the message's sequence in its stream.
	StreamSeq uint64
	// NumDelivered counts deliveries of this message, 1 on the first.
	NumDelivered uint64
	// Timestamp is when the stream stored the message.
	Timestamp time.Time
}

type deliveryKey struct{}

// DeliveryFrom returns the delivery of the event being handled.
func DeliveryFrom(ctx context.Context) (Delivery, bool) {
	d, ok := ctx.Value(deliveryKey{}).(Delivery)
	return d, ok
}

func withDelivery(ctx context.Context, d Delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}

// Recover turns a handler panic into a retryable error (the event is naked
// and redelivered) and counts it.
func Recover(logger *slog.Logger, m *Metrics, service string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) (err error) {
			defer func() {
				if r := recover(); r != nil {
					m.panics.WithLabelValues(service).Inc()
					logger.Error("event handler panicked", "service", service, "event_id", ev.ID(),
						"event_type", ev.Type(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					err = fmt.Errorf("handler panic: %v", r)
				}
			}()
			return next(ctx, ev)
		}
	}
}

// Timeout bounds a handler's run; a handler that overruns gets a cancelled
// context and its event is redelivered.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next(ctx, ev)
		}
	}
}

// Validate checks each event against its contract before the handler sees it;
// a violation is permanent, so the event is dead-lettered with the reason.
func Validate(check func(event.Event) error) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) error {
			if err := check(ev); err != nil {
				return Permanent(err)
			}
			return next(ctx, ev)
		}
	}
}

// Logging logs failures with the event id, type and subject; successes at
// debug level.
func Logging(logger *slog.Logger, service string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) error {
			err := next(ctx, ev)
			d, _ := DeliveryFrom(ctx)
			if err != nil {
				logger.Warn("event handler failed", "service", service, "event_id", ev.ID(), "event_type", ev.Type(),
					"subject", d.Subject, "stream_seq", d.StreamSeq, "delivery", d.NumDelivered,
					"permanent", IsPermanent(err), "error", err)
			} else if logger.Enabled(ctx, slog.LevelDebug) {
				logger.Debug("event handled", "service", service, "event_id", ev.ID(), "event_type", ev.Type(),
					"subject", d.Subject, "stream_seq", d.StreamSeq)
			}
			return err
		}
	}
}

// Measure records the handler's duration.
func Measure(m *Metrics, service string) Middleware {
	sm := m.forService(service)
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) error {
			start := time.Now()
			err := next(ctx, ev)
			sm.of(ev.Type()).seconds.Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// ExtTraceParent and ExtTraceState are the CloudEvents distributed-tracing
// extension attributes, holding W3C trace context.
const (
	ExtTraceParent = "traceparent"
	ExtTraceState  = "tracestate"
)

// TraceContext is W3C trace context carried from event to event.
type TraceContext struct {
	TraceID, SpanID string
	Flags           string
	State           string
}

type traceKey struct{}

// TraceFrom returns the trace context of the event being handled.
func TraceFrom(ctx context.Context) (TraceContext, bool) {
	tc, ok := ctx.Value(traceKey{}).(TraceContext)
	return tc, ok
}

// WithTrace returns ctx carrying tc, so events published under it continue the trace.
func WithTrace(ctx context.Context, tc TraceContext) context.Context {
	return context.WithValue(ctx, traceKey{}, tc)
}

// Trace puts the event's traceparent into the handler's context, so the events
// the handler publishes continue the same trace.
func Trace() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) error {
			if tc, ok := ParseTraceParent(extString(ev, ExtTraceParent)); ok {
				tc.State = extString(ev, ExtTraceState)
				ctx = WithTrace(ctx, tc)
			}
			return next(ctx, ev)
		}
	}
}

// ParseTraceParent parses a W3C traceparent header value.
func ParseTraceParent(s string) (TraceContext, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return TraceContext{}, false
	}
	if !isHex(parts[1]) || !isHex(parts[2]) || !isHex(parts[3]) ||
		parts[1] == strings.Repeat("0", 32) || parts[2] == strings.Repeat("0", 16) {
		return TraceContext{}, false
	}
	return TraceContext{TraceID: parts[1], SpanID: parts[2], Flags: parts[3]}, true
}

// Child returns the trace context of a new span in the same trace.
func (tc TraceContext) Child() TraceContext {
	return TraceContext{TraceID: tc.TraceID, SpanID: randomHex(8), Flags: tc.Flags, State: tc.State}
}

// NewTrace starts a trace.
func NewTrace() TraceContext {
	return TraceContext{TraceID: randomHex(16), SpanID: randomHex(8), Flags: "01"}
}

// TraceParent formats tc as a traceparent value.
func (tc TraceContext) TraceParent() string {
	return "00-" + tc.TraceID + "-" + tc.SpanID + "-" + tc.Flags
}

// propagateTrace stamps ev with a child span of the context's trace when ev
// carries no trace of its own.
func propagateTrace(ctx context.Context, ev *event.Event) {
	if _, has := Extension(*ev, ExtTraceParent); has {
		return
	}
	tc, ok := TraceFrom(ctx)
	if !ok {
		return
	}
	child := tc.Child()
	ev.SetExtension(ExtTraceParent, child.TraceParent())
	if child.State != "" {
		ev.SetExtension(ExtTraceState, child.State)
	}
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func extString(ev event.Event, name string) string {
	v, _ := Extension(ev, name)
	s, _ := v.(string)
	return s
}

// Extension returns one extension attribute of ev. Unlike ev.Extensions(),
// which copies the whole map of a CloudEvents 1.0 event, it reads in place.
func Extension(ev event.Event, name string) (any, bool) {
	if ec, ok := ev.Context.(*event.EventContextV1); ok {
		v, ok := ec.Extensions[name]
		return v, ok
	}
	v, ok := ev.Extensions()[name]
	return v, ok
}

// ExtensionString is Extension for a string attribute ("" when absent).
func ExtensionString(ev event.Event, name string) string { return extString(ev, name) }
