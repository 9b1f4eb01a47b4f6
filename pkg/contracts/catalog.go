package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/praetorhq/praetor/pkg/events"
)

// Streams of the catalog. Each holds the subjects praetor.<domain>.*.*.*.
const (
	StreamTurns     = "PRAETOR_TURNS"
	StreamHandoffs  = "PRAETOR_HANDOFFS"
	StreamTasks     = "PRAETOR_TASKS"
	StreamMemory    = "PRAETOR_MEMORY"
	StreamWorkflows = "PRAETOR_WORKFLOWS"
	StreamSim       = "PRAETOR_SIM"
	StreamLLM       = "PRAETOR_LLM"
)

// Extension attribute names carried by every Praetor event.
const (
	// ExtTenant holds the tenant that owns the event.
	ExtTenant = "tenant"
	// ExtPartitionKey holds the ordering key (CloudEvents partitioning extension).
	ExtPartitionKey = "partitionkey"
)

// typePrefix and typeSuffix frame every CloudEvents type of the catalog.
const (
	typePrefix = "dev.praetor."
	typeSuffix = ".v1"
)

// Spec describes one event type of the catalog.
type Spec struct {
	// Name is the short name, e.g. "turn.received".
	Name string
	// Type is the CloudEvents type, e.g. "dev.praetor.turn.received.v1".
	Type string
	// Stream is the JetStream stream the event is stored in.
	Stream string
	// Domain and Event are the second and third subject tokens.
	Domain, Event string
	// Key names what the ordering key (the fifth subject token) is.
	Key string
	// Producer and Consumer document who publishes and who handles the event.
	Producer, Consumer string

	newPayload func() Payload
}

// SubjectPrefix is the subject without its tenant and key tokens.
func (s *Spec) SubjectPrefix() string { return "praetor." + s.Domain + "." + s.Event }

// FilterSubject matches every event of this type, of every tenant and key.
func (s *Spec) FilterSubject() string { return s.SubjectPrefix() + ".*.*" }

// Payload is the data of a catalog event.
type Payload interface {
	// Spec returns the catalog entry of the payload's event type.
	Spec() *Spec
	// Partition returns the tenant and the ordering key of the event.
	Partition() (tenant, key string)
	// Validate reports the first way the payload breaks its contract.
	Validate() error
}

// StreamDef is the provisioning view of a catalog stream.
type StreamDef struct {
	Name string
	// Subjects the stream captures.
	Subjects []string
	// Ordered is true when consumers of the stream need per-key order, so the
	// stream is partitioned on (tenant, key).
	Ordered bool
}

var (
	specs   = map[string]*Spec{}
	streams = map[string]StreamDef{
		StreamTurns:     {Name: StreamTurns, Subjects: []string{"praetor.turn.*.*.*"}, Ordered: true},
		StreamHandoffs:  {Name: StreamHandoffs, Subjects: []string{"praetor.handoff.*.*.*"}, Ordered: true},
		StreamTasks:     {Name: StreamTasks, Subjects: []string{"praetor.task.*.*.*"}},
		StreamMemory:    {Name: StreamMemory, Subjects: []string{"praetor.memory.*.*.*"}, Ordered: true},
		StreamWorkflows: {Name: StreamWorkflows, Subjects: []string{"praetor.workflow.*.*.*"}, Ordered: true},
		StreamSim:       {Name: StreamSim, Subjects: []string{"praetor.sim.*.*.*"}, Ordered: true},
		StreamLLM:       {Name: StreamLLM, Subjects: []string{"praetor.llm.*.*.*"}},
	}
)

// define registers an event type; it panics on a catalog mistake, which only a
// change to this package can cause.
func define[T any, PT interface {
	*T
	Payload
}](name, stream, event, key, producer, consumer string) *Spec {
	domain, _, _ := strings.Cut(name, ".")
	return defineIn[T, PT](domain, name, stream, event, key, producer, consumer)
}

// defineIn is define for a type whose subject domain is not its name's
// first part (session.started travels with the turns of its session).
func defineIn[T any, PT interface {
	*T
	Payload
}](domain, name, stream, event, key, producer, consumer string) *Spec {
	s := &Spec{
		Name: name, Type: typePrefix + name + typeSuffix, Stream: stream,
		Domain: domain, Event: event, Key: key, Producer: producer, Consumer: consumer,
		newPayload: func() Payload { return PT(new(T)) },
	}
	if _, dup := specs[s.Type]; dup {
		panic("contracts: duplicate type " + s.Type)
	}
	if _, ok := streams[stream]; !ok {
		panic("contracts: unknown stream " + stream)
	}
	specs[s.Type] = s
	return s
}

// Catalog returns every event type, sorted by name.
func Catalog() []*Spec {
	out := make([]*Spec, 0, len(specs))
	for _, s := range specs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the spec of a CloudEvents type.
func Lookup(ceType string) (*Spec, bool) {
	s, ok := specs[ceType]
	return s, ok
}

// Streams returns the catalog streams, sorted by name.
func Streams() []StreamDef {
	out := make([]StreamDef, 0, len(streams))
	for _, s := range streams {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Stream returns one catalog stream by name.
func Stream(name string) (StreamDef, bool) {
	s, ok := streams[name]
	return s, ok
}

// token is what a tenant id or an ordering key may hold: it becomes a subject
// token, so no dots, wildcards or spaces.
var token = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidToken reports whether s can be a tenant id or ordering key.
func ValidToken(s string) bool { return token.MatchString(s) }

// Meta is what a producer decides about an event besides its data.
type Meta struct {
	// ID is the event id. Derive it from the input (events.DeriveID) when a
	// handler emits the event, so a re-run emits the same id; empty means a
	// new random (time-ordered) id.
	ID string
	// Source names the producer, e.g. "/praetor/runner".
	Source string
	// Time is when the event happened; zero means now. Pure code passes its
	// injected clock.
	Time time.Time
}

// NewEvent builds the CloudEvent of a payload, validating it first.
func NewEvent(m Meta, p Payload) (event.Event, error) {
	spec := p.Spec()
	if err := p.Validate(); err != nil {
		return event.Event{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	tenant, key := p.Partition()
	id := m.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	at := m.Time
	if at.IsZero() {
		at = time.Now()
	}
	ev := event.New()
	ev.SetID(id)
	ev.SetType(spec.Type)
	ev.SetSource(cmpOr(m.Source, "/praetor"))
	ev.SetTime(at.UTC())
	ev.SetExtension(ExtTenant, tenant)
	ev.SetExtension(ExtPartitionKey, key)
	if err := ev.SetData(event.ApplicationJSON, p); err != nil {
		return event.Event{}, fmt.Errorf("%s: encode data: %w", spec.Name, err)
	}
	if err := ev.Validate(); err != nil {
		return event.Event{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	return ev, nil
}

// NewEventRaw is NewEvent for a payload that carries raw JSON too large to
// be scanned and copied again by the encoder, which validates and compacts
// every json.RawMessage (a sidebar, an extraction state, a prompt): p is
// encoded with that field empty (a json.RawMessage tagged omitempty, left
// nil), and raw is appended to the data as the field named field. raw must
// be valid JSON, as json.Marshal writes it; it is not checked. A payload
// without that field, or with it set, is refused: the data would hold the
// key twice.
func NewEventRaw(m Meta, p Payload, field string, raw json.RawMessage) (event.Event, error) {
	return AppendEventRaw(nil, m, p, field, raw)
}

// AppendEventRaw is NewEventRaw writing the event's data into buf, from its
// start (a larger one is allocated when it is too small): a caller done
// with an event, once it is published, can give its DataEncoded to the
// next. raw must not share memory with buf, which is written first. Without
// raw the data is NewEvent's, and buf is not used.
func AppendEventRaw(buf []byte, m Meta, p Payload, field string, raw json.RawMessage) (event.Event, error) {
	if !rawField.MatchString(field) {
		return event.Event{}, fmt.Errorf("%s: field name %q: want letters, digits and underscores", p.Spec().Name, field)
	}
	if err := emptyField(p, field); err != nil {
		return event.Event{}, fmt.Errorf("%s: %w", p.Spec().Name, err)
	}
	ev, err := NewEvent(m, p)
	if err != nil || len(raw) == 0 {
		return ev, err
	}
	data := ev.Data()
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return event.Event{}, fmt.Errorf("%s: %s: the payload is not a JSON object", p.Spec().Name, field)
	}
	out := slices.Grow(buf[:0], len(data)+len(field)+4+len(raw))
	out = append(out, data[:len(data)-1]...) // without the closing brace
	if len(data) > 2 {
		out = append(out, ',')
	}
	out = append(append(append(out, '"'), field...), `":`...)
	out = append(append(out, raw...), '}')
	ev.DataEncoded = out
	return ev, nil
}

// emptyField checks that the payload struct p has a field encoded as name
// and that it is empty.
func emptyField(p Payload, name string) error {
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return fmt.Errorf("field %s: the payload is not a struct", name)
	}
	for i := range v.NumField() {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if tag != name {
			continue
		}
		if f := v.Field(i); f.Kind() != reflect.Slice || f.Len() != 0 {
			return fmt.Errorf("field %s is set in the payload, and would be written twice", name)
		}
		return nil
	}
	return fmt.Errorf("the payload has no field %s", name)
}

// rawField is the form of a field name NewEventRaw writes: one that needs
// no escaping.
var rawField = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// MustEvent is NewEvent for payloads known to be valid, as in tests and examples.
func MustEvent(m Meta, p Payload) event.Event {
	ev, err := NewEvent(m, p)
	if err != nil {
		panic(err)
	}
	return ev
}

// Subject returns the NATS subject of a catalog event:
// praetor.<domain>.<event>.<tenant>.<key>.
func Subject(ev event.Event) (string, error) {
	spec, ok := specs[ev.Type()]
	if !ok {
		return "", fmt.Errorf("subject: unknown event type %q", ev.Type())
	}
	tenant, key := extString(ev, ExtTenant), extString(ev, ExtPartitionKey)
	if !ValidToken(tenant) || !ValidToken(key) {
		return "", fmt.Errorf("subject: %s needs %s and %s extensions made of [A-Za-z0-9_-]", spec.Name, ExtTenant, ExtPartitionKey)
	}
	return spec.SubjectPrefix() + "." + tenant + "." + key, nil
}

// ErrContract is wrapped by every contract violation found by Decode.
var ErrContract = errors.New("contract violation")

// Decode reads the payload of a catalog event and checks its contract: known
// type, JSON data that decodes into the type's struct, a valid payload, and
// tenant and partition-key extensions that match the data. A violation is a
// permanent error (events.IsPermanent), so the event goes to the dead-letter
// stream instead of being retried.
func Decode(ev event.Event) (Payload, error) {
	spec, ok := specs[ev.Type()]
	if !ok {
		return nil, violation("unknown event type %q", ev.Type())
	}
	if mt := ev.DataMediaType(); mt != "" && mt != event.ApplicationJSON {
		return nil, violation("%s: data content type %q, want %s", spec.Name, mt, event.ApplicationJSON)
	}
	p := spec.newPayload()
	// segmentio's decoder reads what encoding/json writes as encoding/json
	// does, at about twice the speed (decoding was an eighth of a turn's
	// CPU); encoding stays with encoding/json (segmentio lacks omitzero, and
	// hashes need its bytes). segmentio has no nesting limit, though: data
	// that may nest deeper than encoding/json's goes to encoding/json, which
	// refuses it, instead of growing the consumer's stack until the runtime
	// kills the process.
	data := ev.Data()
	unmarshal := fastjson.Unmarshal
	if len(data) > maxNesting && bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) > maxNesting {
		unmarshal = json.Unmarshal
	}
	if err := unmarshal(data, p); err != nil {
		// segmentio's syntax errors end in ": " and the input left, which
		// is none when the data ends early: the reason ends at the error.
		return nil, violation("%s: decode data: %s", spec.Name, strings.TrimSuffix(err.Error(), ": "))
	}
	if err := p.Validate(); err != nil {
		return nil, violation("%s: %v", spec.Name, err)
	}
	tenant, key := p.Partition()
	if got := extString(ev, ExtTenant); got != tenant {
		return nil, violation("%s: %s extension %q does not match data tenant %q", spec.Name, ExtTenant, got, tenant)
	}
	if got := extString(ev, ExtPartitionKey); got != key {
		return nil, violation("%s: %s extension %q does not match data key %q", spec.Name, ExtPartitionKey, got, key)
	}
	return p, nil
}

// DecodeAs is Decode for a known payload type:
//
//	turn, err := contracts.DecodeAs[contracts.TurnReceived](ev)
func DecodeAs[T any, PT interface {
	*T
	Payload
}](ev event.Event) (*T, error) {
	p, err := Decode(ev)
	if err != nil {
		return nil, err
	}
	v, ok := p.(PT)
	if !ok {
		return nil, violation("event type %q is not %T", ev.Type(), PT(nil))
	}
	return (*T)(v), nil
}

// Validate checks an event against its contract; it is Decode without the result.
func Validate(ev event.Event) error {
	_, err := Decode(ev)
	return err
}

// maxNesting is encoding/json's limit on the nesting of arrays and objects.
const maxNesting = 10000

func violation(format string, args ...any) error {
	return events.Permanent(fmt.Errorf("%w: %s", ErrContract, fmt.Sprintf(format, args...)))
}

func extString(ev event.Event, name string) string { return events.ExtensionString(ev, name) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// need returns an error naming the first empty required field.
func need(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if strings.TrimSpace(fields[i+1]) == "" {
			return fmt.Errorf("%s is required", fields[i])
		}
	}
	return nil
}

// needTokens is need for fields that become subject tokens.
func needTokens(fields ...string) error {
	if err := need(fields...); err != nil {
		return err
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if !ValidToken(fields[i+1]) {
			return fmt.Errorf("%s %q must be 1-128 characters of [A-Za-z0-9_-]", fields[i], fields[i+1])
		}
	}
	return nil
}

func oneOf(field, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("%s %q is not one of %s", field, v, strings.Join(allowed, ", "))
	}
	return nil
}
