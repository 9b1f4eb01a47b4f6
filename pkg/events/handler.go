package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	// Redriven is set when the message is a dead letter's original published
	// again (Bus.Redrive): handle it as a redelivery, since it may have been
	// redriven before.
	Redriven bool
}

type deliveryKey struct{}

// deliveryCtx carries the delivery of the event being handled. It answers
// Value with a pointer to its own copy, so neither putting the delivery in
// the context nor reading it back allocates a boxed copy.
type deliveryCtx struct {
	context.Context
	d Delivery
}

func (c *deliveryCtx) Value(key any) any {
	if _, ok := key.(deliveryKey); ok {
		return &c.d
	}
	return c.Context.Value(key)
}

// DeliveryFrom returns the delivery of the event being handled.
func DeliveryFrom(ctx context.Context) (Delivery, bool) {
	if d, ok := ctx.Value(deliveryKey{}).(*Delivery); ok {
		return *d, true
	}
	return Delivery{}, false
}

func withDelivery(ctx context.Context, d Delivery) context.Context {
	return &deliveryCtx{Context: ctx, d: d}
}

// errPanic is the error of a handler that panicked.
var errPanic = errors.New("handler panic")

// Recover turns a handler panic into a retryable error (the event is naked
// and redelivered; on a consumer without a bound on deliveries it is
// dead-lettered, see ConsumerConfig.MaxDeliver) and counts it.
func Recover(logger *slog.Logger, m *Metrics, service string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) (err error) {
			defer func() {
				if r := recover(); r != nil {
					m.panics.WithLabelValues(service).Inc()
					logger.Error("event handler panicked", "service", service, "event_id", ev.ID(),
						"event_type", ev.Type(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					err = fmt.Errorf("%w: %v", errPanic, r)
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

// Logging logs failures with the event id, type and subject; successes,
// and events postponed on purpose (Postpone), at debug level.
func Logging(logger *slog.Logger, service string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, ev event.Event) error {
			err := next(ctx, ev)
			var re *RetryError
			if errors.As(err, &re) && re.Scheduled {
				if logger.Enabled(ctx, slog.LevelDebug) {
					d, _ := DeliveryFrom(ctx)
					logger.Debug("event postponed", "service", service, "event_id", ev.ID(), "event_type", ev.Type(),
						"subject", d.Subject, "stream_seq", d.StreamSeq, "after", re.After, "why", re.Err)
				}
			} else if err != nil {
				d, _ := DeliveryFrom(ctx)
				logger.Warn("event handler failed", "service", service, "event_id", ev.ID(), "event_type", ev.Type(),
					"subject", d.Subject, "stream_seq", d.StreamSeq, "delivery", d.NumDelivered,
					"permanent", IsPermanent(err), "error", err)
			} else if logger.Enabled(ctx, slog.LevelDebug) {
				d, _ := DeliveryFrom(ctx)
				logger.Debug("event handled", "service", service, "event_id", ev.ID(), "event_type", ev.Type(),
					"subject", d.Subject, "stream_seq", d.StreamSeq)
			}
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
			tp := extString(ev, ExtTraceParent)
			if tp == "" {
				return next(ctx, ev)
			}
			if tc, ok := ParseTraceParent(tp); ok {
				tc.State = extString(ev, ExtTraceState)
				ctx = WithTrace(ctx, tc)
			}
			return next(ctx, ev)
		}
	}
}

// ParseTraceParent parses a W3C traceparent header value: version 00, a
// 32-digit trace id and a 16-digit span id that are not all zeros, and
// 2-digit flags, all lowercase hexadecimal. It reads the value in place; the
// fields of the result share its memory.
func ParseTraceParent(s string) (TraceContext, bool) {
	// 00-<32 hex>-<16 hex>-<2 hex>
	const size = 2 + 1 + 32 + 1 + 16 + 1 + 2
	if len(s) != size || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] != "00" {
		return TraceContext{}, false
	}
	tc := TraceContext{TraceID: s[3:35], SpanID: s[36:52], Flags: s[53:]}
	if !isHex(tc.TraceID) || !isHex(tc.SpanID) || !isHex(tc.Flags) || allZeros(tc.TraceID) || allZeros(tc.SpanID) {
		return TraceContext{}, false
	}
	return tc, true
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

// isHex reports whether s is lowercase hexadecimal, as trace context
// requires.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZeros(s string) bool { return strings.Trim(s, "0") == "" }

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
