package events

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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
	// Source() formats a URL each time: call it once.
	source := ev.Source()
	if err := checkRequired(ev.SpecVersion(), ev.ID(), source, ev.Type()); err != nil {
		return nil, fmt.Errorf("encode cloudevent: %w", err)
	}
	var exts map[string]any
	if ec, ok := ev.Context.(*event.EventContextV1); ok {
		exts = ec.Extensions // read in place: Extensions() copies
	} else {
		exts = ev.Extensions()
	}
	// One backing array for the header values: one allocation, not one per header.
	vals := make([]string, 0, 9+len(exts))
	h := make(nats.Header, 9+len(exts))
	set := func(name, value string) {
		vals = append(vals, value)
		h[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	set("ce-specversion", ev.SpecVersion())
	set("ce-id", percentEncode(ev.ID()))
	set("ce-source", percentEncode(source))
	set("ce-type", percentEncode(ev.Type()))
	if s := ev.Subject(); s != "" {
		set("ce-subject", percentEncode(s))
	}
	if t := ev.Time(); !t.IsZero() {
		set("ce-time", t.UTC().Format(time.RFC3339Nano))
	}
	if s := ev.DataSchema(); s != "" {
		set("ce-dataschema", percentEncode(s))
	}
	for name, v := range exts {
		s, ok := v.(string)
		if !ok {
			var err error
			if s, err = types.Format(v); err != nil {
				return nil, fmt.Errorf("encode cloudevent: extension %s: %w", name, err)
			}
		}
		set(headerPrefix+name, percentEncode(s))
	}
	if ct := ev.DataContentType(); ct != "" {
		set(HeaderContentType, ct)
	}
	set(HeaderMsgID, ev.ID())
	return &nats.Msg{Subject: subject, Header: h, Data: ev.Data()}, nil
}

func checkRequired(spec, id, source, typ string) error {
	switch {
	case spec != event.CloudEventsVersionV1:
		return fmt.Errorf("specversion %q, want %q", spec, event.CloudEventsVersionV1)
	case id == "":
		return errors.New("id is required")
	case source == "":
		return errors.New("source is required")
	case typ == "":
		return errors.New("type is required")
	}
	return nil
}

// decoded holds an event's context with the optional attributes it points
// at, so that decoding costs one allocation for all of them instead of one
// each.
type decoded struct {
	ec                   event.EventContextV1
	subject, contentType string
	time                 types.Timestamp
}

// Decode reads a NATS message in binary content mode as a CloudEvent. It fails
// (wrapping ErrDecode) on a missing required attribute, a malformed value or
// an invalid extension name.
func Decode(h nats.Header, data []byte) (event.Event, error) {
	var spec, source string
	d := &decoded{}
	ec := &d.ec
	for name, vs := range h {
		if len(vs) == 0 || len(name) <= len(headerPrefix) || !strings.EqualFold(name[:len(headerPrefix)], headerPrefix) {
			continue
		}
		attr := name[len(headerPrefix):]
		if !isLower(attr) {
			attr = strings.ToLower(attr)
		}
		v, err := percentDecode(vs[0])
		if err != nil {
			return event.Event{}, fmt.Errorf("%w: %s: %v", ErrDecode, name, err)
		}
		switch attr {
		case "specversion":
			spec = v
		case "id":
			ec.ID = v
		case "source":
			ref, ok := parseSource(v)
			if !ok {
				return event.Event{}, fmt.Errorf("%w: ce-source %q is not a URI reference", ErrDecode, v)
			}
			ec.Source, source = ref, v
		case "type":
			ec.Type = v
		case "subject":
			d.subject = v
			ec.Subject = &d.subject
		case "dataschema":
			u := types.ParseURI(v)
			if u == nil {
				return event.Event{}, fmt.Errorf("%w: ce-dataschema %q is not a URI", ErrDecode, v)
			}
			ec.DataSchema = u
		case "datacontenttype":
			d.contentType = v
			ec.DataContentType = &d.contentType
		case "time":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return event.Event{}, fmt.Errorf("%w: ce-time %q: %v", ErrDecode, v, err)
			}
			d.time.Time = t
			ec.Time = &d.time
		default:
			if !event.IsExtensionNameValid(attr) {
				return event.Event{}, fmt.Errorf("%w: invalid extension name %q", ErrDecode, attr)
			}
			if ec.Extensions == nil {
				ec.Extensions = make(map[string]any, 4)
			}
			ec.Extensions[attr] = v
		}
	}
	// The source as sent, not ec.Source.String(): re-serialising a URL
	// costs more than the rest of the check.
	if err := checkRequired(spec, ec.ID, source, ec.Type); err != nil {
		return event.Event{}, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	if ct := h[HeaderContentType]; len(ct) > 0 && ct[0] != "" {
		d.contentType = ct[0]
		ec.DataContentType = &d.contentType
	}
	ev := event.Event{Context: ec}
	if len(data) > 0 {
		ev.DataEncoded = data
	}
	return ev, nil
}

// sources caches parsed event sources: a system has a handful, and parsing
// a URI is most of decoding an event's attributes.
var (
	sources      sync.Map // string → types.URIRef
	sourcesCount atomic.Int64
)

// maxCachedSources bounds the cache against a publisher inventing sources.
const maxCachedSources = 1024

func parseSource(v string) (types.URIRef, bool) {
	if ref, ok := sources.Load(v); ok {
		return ref.(types.URIRef), true
	}
	ref := types.ParseURIRef(v)
	if ref == nil {
		return types.URIRef{}, false
	}
	if len(v) <= 256 && sourcesCount.Load() < maxCachedSources {
		if _, loaded := sources.LoadOrStore(v, *ref); !loaded {
			sourcesCount.Add(1)
		}
	}
	return *ref, true
}

func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return false
		}
	}
	return true
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
