package events

import (
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

func TestPercentEncoding(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain-value_1.2", "plain-value_1.2"},
		{"a b", "a%20b"},
		{`say "hi"`, "say%20%22hi%22"},
		{"100%", "100%25"},
		{"é", "%C3%A9"},
		{"tab\there", "tab%09here"},
		{"\x7f", "%7F"},
		{"", ""},
	}
	for _, c := range cases {
		got := percentEncode(c.in)
		if got != c.want {
			t.Errorf("percentEncode(%q) = %q, want %q", c.in, got, c.want)
		}
		back, err := percentDecode(got)
		if err != nil || back != c.in {
			t.Errorf("percentDecode(%q) = %q, %v; want %q", got, back, err, c.in)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz", "a%g1"} {
		if _, err := percentDecode(bad); err == nil {
			t.Errorf("percentDecode(%q) accepted a malformed escape", bad)
		}
	}
}

func testEvent() event.Event {
	ev := event.New()
	ev.SetID("id-1")
	ev.SetType("dev.praetor.test.v1")
	ev.SetSource("/test")
	ev.SetTime(time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC))
	ev.SetSubject("sub ject")
	ev.SetExtension("tenant", "acme")
	_ = ev.SetData(event.ApplicationJSON, map[string]string{"hello": "wörld"})
	return ev
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	ev := testEvent()
	msg, err := Encode("s.t", ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Header.Get(HeaderMsgID); got != "id-1" {
		t.Errorf("Nats-Msg-Id = %q, want the event id", got)
	}
	if got := msg.Header.Get(HeaderContentType); got != event.ApplicationJSON {
		t.Errorf("Content-Type = %q", got)
	}
	back, err := Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != ev.String() {
		t.Errorf("round trip:\n got %s\nwant %s", back, ev)
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := Encode("s", testEvent())
	cases := map[string]func(h nats.Header){
		"missing specversion": func(h nats.Header) { delete(h, "ce-specversion") },
		"wrong specversion":   func(h nats.Header) { h["ce-specversion"] = []string{"0.3"} },
		"missing id":          func(h nats.Header) { delete(h, "ce-id") },
		"missing type":        func(h nats.Header) { delete(h, "ce-type") },
		"missing source":      func(h nats.Header) { delete(h, "ce-source") },
		"bad time":            func(h nats.Header) { h["ce-time"] = []string{"yesterday"} },
		"bad escape":          func(h nats.Header) { h["ce-subject"] = []string{"50%"} },
		"bad extension name":  func(h nats.Header) { h["ce-Bad_Name"] = []string{"x"} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			h := nats.Header{}
			for k, v := range good.Header {
				h[k] = append([]string(nil), v...)
			}
			mutate(h)
			if _, err := Decode(h, good.Data); err == nil {
				t.Fatal("decoded a malformed event")
			}
		})
	}
}

// FuzzDecode feeds arbitrary header values and bodies: Decode must never
// panic, and whatever it accepts must encode and decode to the same event.
func FuzzDecode(f *testing.F) {
	f.Add("1.0", "id", "/src", "t.v1", "2026-01-01T00:00:00Z", "ext-value", []byte(`{"a":1}`))
	f.Add("1.0", "%", "", "", "", "%zz", []byte{0xff})
	f.Fuzz(func(t *testing.T, spec, id, source, typ, tm, ext string, data []byte) {
		h := nats.Header{}
		h["ce-specversion"] = []string{spec}
		h["ce-id"] = []string{id}
		h["ce-source"] = []string{source}
		h["ce-type"] = []string{typ}
		h["ce-time"] = []string{tm}
		h["ce-ext"] = []string{ext}
		ev, err := Decode(h, data)
		if err != nil {
			return
		}
		msg, err := Encode("s", ev)
		if err != nil {
			t.Fatalf("accepted event does not encode: %v", err)
		}
		back, err := Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if back.String() != ev.String() {
			t.Fatalf("round trip changed the event:\n%s\n%s", back, ev)
		}
	})
}

func TestPartitionTransform(t *testing.T) {
	tr, err := partitionTransform("praetor.turn.*.*.*", 16)
	if err != nil {
		t.Fatal(err)
	}
	want := "praetor.turn.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{partition(16,2,3)}}"
	if tr.Destination != want || tr.Source != "praetor.turn.*.*.*" {
		t.Errorf("transform = %+v, want dest %s", tr, want)
	}
	for _, bad := range []string{"a.>", "a.*", "a.*.b", "a.b.c"} {
		if _, err := partitionTransform(bad, 4); err == nil {
			t.Errorf("partitionTransform(%q) accepted a subject without tenant and key wildcards", bad)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := ConsumerConfig{BackoffBase: time.Second, BackoffMax: 10 * time.Second}
	for _, tc := range []struct {
		delivered uint64
		min, max  time.Duration
	}{{1, time.Second, 1200 * time.Millisecond}, {2, 2 * time.Second, 2400 * time.Millisecond},
		{4, 8 * time.Second, 9600 * time.Millisecond}, {9, 10 * time.Second, 12 * time.Second}} {
		got := c.backoff(tc.delivered)
		if got < tc.min || got > tc.max {
			t.Errorf("backoff(%d) = %s, want within [%s, %s]", tc.delivered, got, tc.min, tc.max)
		}
	}
}

func TestServiceOf(t *testing.T) {
	for in, want := range map[string]string{"runner-p007": "runner", "runner": "runner", "a-pool": "a-pool", "x-p12": "x-p12"} {
		if got := serviceOf(in); got != want {
			t.Errorf("serviceOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := serviceOf(PartitionConsumer("extractor", 3)); got != "extractor" {
		t.Errorf("serviceOf(PartitionConsumer) = %q", got)
	}
}

func TestTraceParent(t *testing.T) {
	tc, ok := ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !ok || tc.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || tc.SpanID != "00f067aa0ba902b7" {
		t.Fatalf("parse = %+v, %v", tc, ok)
	}
	child := tc.Child()
	if child.TraceID != tc.TraceID || child.SpanID == tc.SpanID {
		t.Errorf("child %+v must keep the trace and change the span", child)
	}
	if _, ok := ParseTraceParent(child.TraceParent()); !ok {
		t.Errorf("child traceparent %q does not parse", child.TraceParent())
	}
	for _, bad := range []string{"", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-XYZ-00f067aa0ba902b7-01"} {
		if _, ok := ParseTraceParent(bad); ok {
			t.Errorf("ParseTraceParent(%q) accepted it", bad)
		}
	}
}
