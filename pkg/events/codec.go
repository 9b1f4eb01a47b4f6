package events

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
)

// Header names of the binary content mode. Every CloudEvents attribute but
// datacontenttype travels as a "ce-" header; datacontenttype is Content-Type.
const (
	headerPrefix      = "ce-"
	HeaderContentType = "Content-Type"
	// HeaderMsgID is JetStream's deduplication header; it carries the event id.
	HeaderMsgID = "Nats-Msg-Id"
)

// ErrDecode is wrapped by every failure to read a message as a CloudEvent.
var ErrDecode = errors.New("decode cloudevent")

// Encode writes ev as a NATS message in binary content mode: attributes as
// percent-encoded ce- headers, data as the body, datacontenttype as
// Content-Type and the event id as Nats-Msg-Id.
func Encode(subject string, ev event.Event) (*nats.Msg, error) {
	if err := ev.Validate(); err != nil {
		return nil, fmt.Errorf("encode cloudevent: %w", err)
	}
	h := make(nats.Header, 8+len(ev.Extensions()))
	set := func(name, value string) { h[headerPrefix+name] = []string{percentEncode(value)} }
	set("specversion", ev.SpecVersion())
	set("id", ev.ID())
	set("source", ev.Source())
	set("type", ev.Type())
	if s := ev.Subject(); s != "" {
		set("subject", s)
	}
	if t := ev.Time(); !t.IsZero() {
		set("time", t.UTC().Format(time.RFC3339Nano))
	}
	if s := ev.DataSchema(); s != "" {
		set("dataschema", s)
	}
	for name, v := range ev.Extensions() {
		s, err := types.Format(v)
		if err != nil {
			return nil, fmt.Errorf("encode cloudevent: extension %s: %w", name, err)
		}
		set(name, s)
	}
	if ct := ev.DataContentType(); ct != "" {
		h[HeaderContentType] = []string{ct}
	}
	h[HeaderMsgID] = []string{ev.ID()}
	return &nats.Msg{Subject: subject, Header: h, Data: ev.Data()}, nil
}

// Decode reads a NATS message in binary content mode as a CloudEvent. It fails
// (wrapping ErrDecode) on a missing required attribute, a malformed value or
// an invalid extension name.
func Decode(h nats.Header, data []byte) (event.Event, error) {
	get := func(name string) (string, error) {
		vs := h[headerPrefix+name]
		if len(vs) == 0 {
			return "", nil
		}
		return percentDecode(vs[0])
	}
	spec, err := get("specversion")
	if err != nil {
		return event.Event{}, fmt.Errorf("%w: ce-specversion: %v", ErrDecode, err)
	}
	if spec != event.CloudEventsVersionV1 {
		return event.Event{}, fmt.Errorf("%w: ce-specversion %q, want %q", ErrDecode, spec, event.CloudEventsVersionV1)
	}
	ev := event.New(spec)
	for name, vs := range h {
		if len(vs) == 0 || len(name) <= len(headerPrefix) || !strings.EqualFold(name[:len(headerPrefix)], headerPrefix) {
			continue
		}
		attr := strings.ToLower(name[len(headerPrefix):])
		v, err := percentDecode(vs[0])
		if err != nil {
			return event.Event{}, fmt.Errorf("%w: %s: %v", ErrDecode, name, err)
		}
		switch attr {
		case "specversion":
		case "id":
			ev.SetID(v)
		case "source":
			ev.SetSource(v)
		case "type":
			ev.SetType(v)
		case "subject":
			ev.SetSubject(v)
		case "dataschema":
			ev.SetDataSchema(v)
		case "datacontenttype":
			ev.SetDataContentType(v)
		case "time":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return event.Event{}, fmt.Errorf("%w: ce-time %q: %v", ErrDecode, v, err)
			}
			ev.SetTime(t)
		default:
			if !event.IsExtensionNameValid(attr) {
				return event.Event{}, fmt.Errorf("%w: invalid extension name %q", ErrDecode, attr)
			}
			ev.SetExtension(attr, v)
		}
	}
	if ct := h.Get(HeaderContentType); ct != "" {
		ev.SetDataContentType(ct)
	}
	if len(data) > 0 {
		ev.DataEncoded = data
	}
	if err := ev.Validate(); err != nil {
		return event.Event{}, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return ev, nil
}

// percentEncode applies the binding's rule: space, double quote, percent and
// every byte outside printable ASCII are written as %XX of their UTF-8 bytes.
func percentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func needsEscape(c byte) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '%' }

func percentDecode(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated percent escape in %q", s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("bad percent escape %q", s[i:i+3])
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
