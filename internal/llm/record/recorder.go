package record

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/internal/bufpool"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// Defaults for calls that do not say whose they are.
const (
	// DefaultTenant owns calls whose Request.TenantID is empty.
	DefaultTenant = "default"
	// DefaultScope holds calls whose Request.Scope is empty.
	DefaultScope = "unscoped"
	// DefaultSource is the CloudEvents source of records.
	DefaultSource = "/praetor/llm"
)

// Defaults of Config.
const (
	DefaultPublishTimeout = 5 * time.Second
	DefaultMaxTracked     = 100_000
)

// MetricRecordFailures counts records that could not be published.
const MetricRecordFailures = "praetor_llm_record_failures_total"

var (
	// ErrRecordFailed wraps a failed publish in Strict mode.
	ErrRecordFailed = errors.New("record: publishing the call record failed")
	// ErrInvalidOwner: the request's tenant or scope cannot be a subject
	// token, so the call could never be recorded.
	ErrInvalidOwner = errors.New("record: invalid tenant or scope")
)

// idSpace is the UUID namespace of record event ids.
var idSpace = uuid.MustParse("3f1c5c2e-6d0b-5a53-9a6e-7c1b8f0a4d21")

// Publisher publishes one event; pkg/events' publisher is one. It must not
// keep the event's data once Publish has returned: the recorder writes the
// next record into the same buffer. (The bus copies it into the
// connection's buffer as it sends it.)
type Publisher interface {
	Publish(ctx context.Context, ev event.Event) error
}

// AckPublisher is a Publisher that says where an event went and reads
// stored events back; *events.Bus is one. Through one, a call made again
// under the same CallID with the same request is answered with its first
// record (see the package documentation).
type AckPublisher interface {
	Publisher
	PublishAck(ctx context.Context, ev event.Event) (events.Ack, error)
	Stored(ctx context.Context, stream string, seq uint64) (event.Event, error)
}

// Config configures a Recorder.
type Config struct {
	// Provider names the wrapped client in records of failed calls, when the
	// error does not. Default "unknown".
	Provider string
	// Source is the CloudEvents source. Default DefaultSource.
	Source string
	// Strict fails a call whose record cannot be published. Default false:
	// log, count, and return the answer.
	Strict bool
	// OmitRequest leaves the canonical request out of records, keeping only
	// its hash, where prompts are too large or too sensitive to copy.
	OmitRequest bool
	// PublishTimeout bounds a publish. Default 5s.
	PublishTimeout time.Duration
	// MaxTracked bounds the per-hash call counters (see the package
	// documentation). Default 100,000.
	MaxTracked int
	// Logger reports failed publishes. Default: discard.
	Logger *slog.Logger
	// Registerer, when set, gets the record failure counter.
	Registerer prometheus.Registerer
	// Now stamps the events. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	c.Provider = cmp.Or(c.Provider, "unknown")
	c.Source = cmp.Or(c.Source, DefaultSource)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, DefaultPublishTimeout)
	c.MaxTracked = cmp.Or(c.MaxTracked, DefaultMaxTracked)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if c.PublishTimeout < 0 {
		return fmt.Errorf("record: publish timeout %s must be positive", c.PublishTimeout)
	}
	if c.MaxTracked < 0 {
		return fmt.Errorf("record: max tracked %d must be positive", c.MaxTracked)
	}
	return nil
}

// Recorder is an llm.Client that records every call of the client it wraps.
// It is safe for concurrent use.
type Recorder struct {
	next     llm.Client
	pub      Publisher
	cfg      Config
	failures prometheus.Counter

	mu sync.Mutex
	// counts holds the calls so far by SHA-256 of tenant/scope/hash: a
	// fixed-size key, so the map holds no pointers and the collector does
	// not mark its (up to MaxTracked) entries at every cycle.
	counts map[[sha256.Size]byte]int
}

var _ llm.Client = (*Recorder)(nil)

// NewRecorder wraps next so its calls are published through pub.
func NewRecorder(next llm.Client, pub Publisher, cfg Config) (*Recorder, error) {
	if next == nil || pub == nil {
		return nil, errors.New("record: a client and a publisher are required")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricRecordFailures,
		Help: "LLM calls whose llm.call.recorded event could not be published.",
	})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(failures); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("record: %w", err)
			}
			existing, ok := are.ExistingCollector.(prometheus.Counter)
			if !ok {
				return nil, fmt.Errorf("record: %w", err)
			}
			failures = existing
		}
	}
	return &Recorder{next: next, pub: pub, cfg: cfg, failures: failures, counts: map[[sha256.Size]byte]int{}}, nil
}

// Owner returns the tenant and scope a request is recorded under.
func Owner(req llm.Request) (tenant, scope string) {
	return cmp.Or(req.TenantID, DefaultTenant), cmp.Or(req.Scope, DefaultScope)
}

// ownerOf is Owner with the owner of ctx (llm.WithOwner) filling what the
// request leaves empty.
func ownerOf(ctx context.Context, req llm.Request) (tenant, scope string) {
	if t, s, ok := llm.OwnerFrom(ctx); ok {
		req.TenantID, req.Scope = cmp.Or(req.TenantID, t), cmp.Or(req.Scope, s)
	}
	return Owner(req)
}

// Complete calls the wrapped client and records the call.
func (r *Recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	tenant, scope := ownerOf(ctx, req)
	if !contracts.ValidToken(tenant) || !contracts.ValidToken(scope) {
		return nil, fmt.Errorf("%w: tenant %q and scope %q must be 1-128 characters of [A-Za-z0-9_-]", ErrInvalidOwner, tenant, scope)
	}
	// The canonical request, tens of kilobytes a call, is encoded into a
	// reused buffer: publish copies what it keeps.
	buf := bufs.Get()
	canonical := llm.AppendCanonicalJSON(*buf, req)
	defer bufs.Put(buf, canonical)
	hash := llm.HashCanonical(canonical)
	resp, callErr := r.next.Complete(ctx, req)
	if callErr != nil && ctx.Err() != nil {
		// The caller gave up; there is no outcome to replay.
		return nil, callErr
	}

	rec := contracts.LLMCallRecorded{
		TenantID:    tenant,
		Scope:       scope,
		RequestHash: hash,
		Purpose:     req.Purpose,
	}
	if !r.cfg.OmitRequest {
		rec.Request = canonical
	}
	if callErr != nil {
		rec.Provider, rec.Model = r.cfg.Provider, req.Model
		var apiErr *llm.APIError
		if errors.As(callErr, &apiErr) {
			rec.Provider, rec.Model = cmp.Or(apiErr.Provider, rec.Provider), cmp.Or(apiErr.Model, rec.Model)
		}
		rec.Error = llm.Outcome(callErr) + ": " + callErr.Error()
	} else {
		rec.Provider = cmp.Or(resp.Provider, r.cfg.Provider)
		rec.Model = resp.Model
		rec.Content = resp.Content
		rec.Usage = contracts.LLMUsage(resp.Usage)
		rec.Latency = resp.Latency
		rec.FinishReason = resp.FinishReason
	}
	rec.CallID = llm.CallIDOf(ctx, req)

	first, err := r.publish(ctx, rec, r.eventID(tenant, scope, hash, rec.CallID))
	if err == nil && first != nil {
		// This call was made and recorded before (work redone: a stale
		// write, a redelivery): its record is what a replay serves, so it
		// is the answer, not this one.
		return answerOf(*first)
	}
	if err != nil {
		r.failures.Inc()
		r.cfg.Logger.LogAttrs(ctx, slog.LevelError, "llm call not recorded",
			slog.String("tenant", tenant),
			slog.String("scope", scope),
			slog.String("request_hash", hash),
			slog.String("purpose", req.Purpose),
			slog.Bool("strict", r.cfg.Strict),
			slog.Any("error", err))
		if r.cfg.Strict {
			return nil, errors.Join(fmt.Errorf("%w: %w", ErrRecordFailed, err), callErr)
		}
	}
	return resp, callErr
}

// bufs holds the buffers of canonical requests and of records, up to a
// megabyte each.
var bufs = bufpool.New(1 << 20)

// publish publishes the record. When the stream already held its id (a
// CallID recorded before) and rec is the same request, it returns that
// first record; nil otherwise.
func (r *Recorder) publish(ctx context.Context, rec contracts.LLMCallRecorded, id string) (*contracts.LLMCallRecorded, error) {
	// The request, tens of kilobytes of prompt, is already compact JSON
	// (llm.CanonicalJSON): it is appended to the encoded record as it is,
	// rather than scanned and copied again by the encoder.
	request := rec.Request
	rec.Request = nil
	// The record, as large as the request, is written into a reused
	// buffer too.
	buf := bufs.Get()
	ev, err := contracts.AppendEventRaw(*buf, contracts.Meta{ID: id, Source: r.cfg.Source, Time: r.cfg.Now()}, rec,
		"request", request)
	if err != nil {
		bufs.Put(buf, *buf)
		return nil, err
	}
	defer bufs.Put(buf, ev.DataEncoded)
	// The answer is already paid for: record it even if the caller's
	// context ends right after the call.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout)
	defer cancel()
	ap, ok := r.pub.(AckPublisher)
	if !ok || rec.CallID == "" {
		return nil, r.pub.Publish(pctx, ev)
	}
	ack, err := ap.PublishAck(pctx, ev)
	if err != nil || !ack.Duplicate {
		return nil, err
	}
	stored, err := ap.Stored(pctx, ack.Stream, ack.Seq)
	if err != nil {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "llm call recorded before, but its record could not be read; answering with this call's",
			slog.String("call_id", rec.CallID), slog.Any("error", err))
		return nil, nil
	}
	first, err := contracts.DecodeAs[contracts.LLMCallRecorded](stored)
	if err != nil || first.RequestHash != rec.RequestHash {
		// Not this request's record (an id derived from the same CallID and
		// hash cannot be another's): answer with this call.
		return nil, nil
	}
	return first, nil
}

// eventID derives the record's event id; see the package documentation.
func (r *Recorder) eventID(tenant, scope, hash, callID string) string {
	if callID != "" {
		// The hash too: the same CallID asking something else (the work
		// redone on a state that changed meanwhile) is another call.
		return uuid.NewSHA1(idSpace, []byte("call\x00"+tenant+"\x00"+scope+"\x00"+callID+"\x00"+hash)).String()
	}
	key := tenant + "\x00" + scope + "\x00" + hash
	sum := sha256.Sum256([]byte(key))
	r.mu.Lock()
	if len(r.counts) >= r.cfg.MaxTracked {
		clear(r.counts)
	}
	n := r.counts[sum]
	r.counts[sum] = n + 1
	r.mu.Unlock()
	return uuid.NewSHA1(idSpace, []byte("hash\x00"+key+"\x00"+strconv.Itoa(n))).String()
}
